/* unit.guard_decide.registered: the mapping classification (core/pg_procmaps.c) and the guard
 * decision (core/pg_guard_decide.c) on memory registered with cudaHostRegister, as the driver
 * leaves it: malloc and MAP_PRIVATE|MAP_ANONYMOUS memory is still private anonymous after the
 * registration (same mapping, same bounds), so it is guarded on a fixed kernel and not on an
 * affected one; MAP_SHARED memory is shared. Also, on this machine's kernel, the round trip the
 * decision guards against: protect, unprotect, a CPU store, then a device-to-host copy must land
 * in the page the CPU sees (unless the kernel is one of the affected ones). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "pg_guard_decide.h"
#include "pg_procmaps.h"

#define BYTES (1u << 20)

static pg_mapping_t mapping_of(const void *p) {
  pg_mapping_t m;
  cr_assert_eq(pg_maps_query(p, &m), 1, "%p is mapped", p);
  return m;
}

/* Registers [p, p + n) and checks that its mapping is what it was: its kind, and for a mapping
 * of its own (bounds: nothing else maps next to it meanwhile, unlike the heap) its bounds. */
static pg_mapping_t register_keeps_mapping(void *p, size_t n, bool bounds) {
  cr_assert_eq(cudaFree(NULL), cudaSuccess); /* the runtime's own mappings are made by now */
  pg_mapping_t before = mapping_of(p);
  cr_assert_eq(cudaHostRegister(p, n, cudaHostRegisterDefault), cudaSuccess);
  pg_mapping_t after = mapping_of(p);
  cr_assert_eq(after.shared, before.shared, "registration changed the mapping's sharing");
  cr_assert_eq(after.anon, before.anon);
  if (bounds) {
    cr_assert_eq(after.lo, before.lo, "registration replaced or split the mapping");
    cr_assert_eq(after.hi, before.hi, "registration replaced or split the mapping");
  }
  cr_assert_eq(pg_maps_scan_is_shared(p), after.shared, "the maps text says the same");
  return after;
}

static void private_anonymous(void *p, size_t n, bool bounds, const char *what) {
  pg_mapping_t m = register_keeps_mapping(p, n, bounds);
  cr_assert_eq(m.shared, 0, "registered %s memory is private", what);
  cr_assert_eq(m.anon, 1, "registered %s memory is anonymous", what);
  cr_assert_eq(pg_guard_verdict(&m, "5.15.0-91-generic"), PG_GUARD_NO_COW, "%s", what);
  cr_assert_eq(pg_guard_verdict(&m, "6.8.0"), PG_GUARD_YES, "%s", what);
  cr_assert_eq(cudaHostUnregister(p), cudaSuccess);
  m = mapping_of(p);
  cr_assert_eq(m.shared, 0, "still private after cudaHostUnregister");
}

Test(guard_decide_registered, malloc_is_private_anonymous) {
  char *big = malloc(4 * BYTES); /* its own mmap */
  char *small = malloc(4096);    /* the heap, with neighbours on its page */
  cr_assert(big && small);
  memset(big, 1, 4 * BYTES);
  private_anonymous(big + 100, 4 * BYTES - 200, false, "large malloc");
  private_anonymous(small, 4096, false, "small malloc");
  free(big);
  free(small);
}

Test(guard_decide_registered, private_anonymous_mmap) {
  void *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  private_anonymous(p, BYTES, true, "MAP_PRIVATE|MAP_ANONYMOUS");
  munmap(p, BYTES);
}

Test(guard_decide_registered, shared_mmap_is_shared) {
  void *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  pg_mapping_t m = register_keeps_mapping(p, BYTES, true);
  cr_assert_eq(m.shared, 1);
  cr_assert_eq(pg_guard_verdict(&m, "5.15.0-91-generic"), PG_GUARD_YES);
  cr_assert_eq(pg_guard_verdict(&m, "6.8.0"), PG_GUARD_YES);
  cr_assert_eq(cudaHostUnregister(p), cudaSuccess);
  munmap(p, BYTES);
}

/* What the decision is about, on the kernel this runs on: the device writes the pinned page; a
 * guard round trip and a CPU store must not leave the CPU on another page. */
Test(guard_decide_registered, round_trip_keeps_the_pinned_page) {
  struct utsname u;
  uname(&u);
  if (pg_guard_release_copies_on_write(u.release))
    cr_skip_test("Linux %s copies the page after a round trip: the decision keeps guards off",
                 u.release);
  unsigned char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  memset(p, 0, BYTES);
  cr_assert_eq(cudaHostRegister(p, BYTES, cudaHostRegisterDefault), cudaSuccess);
  void *dev;
  cr_assert_eq(cudaMalloc(&dev, BYTES), cudaSuccess);
  cr_assert_eq(cudaMemset(dev, 0x5a, BYTES), cudaSuccess);
  cr_assert_eq(mprotect(p, BYTES, PROT_NONE), 0);
  cr_assert_eq(cudaMemcpy(p, dev, BYTES, cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(mprotect(p, BYTES, PROT_READ | PROT_WRITE), 0);
  cr_assert_eq(p[4096], 0x5a, "the copy under PROT_NONE landed");
  p[4096] = 1; /* the store that would copy the page on an affected kernel */
  cr_assert_eq(cudaMemset(dev, 0x77, BYTES), cudaSuccess);
  cr_assert_eq(cudaMemcpy(p, dev, BYTES, cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(p[4096], 0x77, "the device wrote the page the CPU sees");
  cr_assert_eq(p[BYTES - 1], 0x77);
  cr_assert_eq(cudaHostUnregister(p), cudaSuccess);
  cr_assert_eq(cudaFree(dev), cudaSuccess);
  munmap(p, BYTES);
}
