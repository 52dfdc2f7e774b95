/* pinguard.h: the annotation API an engine calls to tell pinguard what it is about to do with a
 * pinned buffer. Each call costs one predictable branch when pinguard is not preloaded: the
 * functions are weak references that resolve to libpinguard.so when it is in the process, and the
 * macros below turn a call into a no-op (returning 0) when they resolve to nothing. */
#ifndef PINGUARD_H
#define PINGUARD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "I am about to recycle [p, p+n)": a caching allocator calls this on its free path.
 * enforce: waits for every in-flight GPU access to the range; audit: reports
 * release-during-device-access for each one. Returns the number of in-flight accesses found. */
int pinguard_release(const void *p, size_t n) __attribute__((weak));

/* "I am about to read or publish [p, p+n)": a serializer or transport calls this before it
 * commits a buffer. enforce: waits for in-flight GPU writes to the range; audit: reports
 * commit-during-device-write. Returns the number of in-flight device writes found. */
int pinguard_commit(const void *p, size_t n) __attribute__((weak));

/* Waits for every GPU access to [p, p+n) that nothing ordered yet, without reporting anything, in
 * any mode but off; like a synchronize, this orders the program after them (and after what their
 * streams did before them). Returns the number of such accesses found. */
int pinguard_wait(const void *p, size_t n) __attribute__((weak));

#ifdef __cplusplus
}
#endif

/* libpinguard.so defines PINGUARD_IMPLEMENTATION to see the plain declarations above. Everyone
 * else calls through these guards, so a missing shim means "do nothing" rather than a call to
 * address 0. A function-like macro does not expand inside its own body, so the inner name is the
 * real (weak) function. */
#ifndef PINGUARD_IMPLEMENTATION
#define pinguard_release(p, n) (pinguard_release ? pinguard_release((p), (n)) : 0)
#define pinguard_commit(p, n) (pinguard_commit ? pinguard_commit((p), (n)) : 0)
#define pinguard_wait(p, n) (pinguard_wait ? pinguard_wait((p), (n)) : 0)
/* Non-zero when libpinguard.so is loaded into this process. */
#define pinguard_present() (pinguard_wait != 0)
#endif

#endif /* PINGUARD_H */
