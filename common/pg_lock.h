/* pg_lock.h: the lock of a stream's state and of a region's in-flight set, taken on every
 * tracked copy. A mutex on a futex word
 * (0 free, 1 held, 2 held with waiters): taking a free lock is one compare-and-swap and
 * releasing it one exchange, inline, where glibc's pthread_mutex_lock/unlock cost about 65
 * instructions a pair (docs/PERFORMANCE.md). Contended, it sleeps in the kernel like a mutex
 * (a stream's lock is held across the runtime's cudaLaunchHostFunc, so it must not spin). Not
 * recursive; no owner, so a fork child may release what its parent's thread took before the fork
 * (pg_tracker_atfork_*). The acquire and release orders make it a lock for ThreadSanitizer too. */
#ifndef PG_LOCK_H
#define PG_LOCK_H

#include <stdatomic.h>

typedef struct pg_lock {
  atomic_int v;
} pg_lock_t;

#define PG_LOCK_INIT {0}

void pg_lock_wait(pg_lock_t *l);  /* contended: sleeps until it holds l */
void pg_lock_wake(pg_lock_t *l);  /* released with waiters: wakes one */

static inline void pg_lock(pg_lock_t *l) {
  int free_ = 0;
  if (__builtin_expect(atomic_compare_exchange_strong_explicit(&l->v, &free_, 1,
                                                               memory_order_acquire,
                                                               memory_order_relaxed),
                       1))
    return;
  pg_lock_wait(l);
}

/* Takes l if it is free; never waits. */
static inline _Bool pg_trylock(pg_lock_t *l) {
  int free_ = 0;
  return atomic_compare_exchange_strong_explicit(&l->v, &free_, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

static inline void pg_unlock(pg_lock_t *l) {
  if (__builtin_expect(atomic_exchange_explicit(&l->v, 0, memory_order_release) != 2, 1)) return;
  pg_lock_wake(l);
}

#endif /* PG_LOCK_H */
