/* test_hooks.c: the hook table (shim/pg_hooks.inc) and its resolver (shim/pg_resolve.c), linked
 * directly into this program, which plays libpinguard.so: it defines two wrappers of its own,
 * a libcudart one (PG_INTERCEPT) and a libc one (PG_WRAPPER), and no libcudart is loaded.
 * Covered: each row finds pinguard's own wrapper by id and by name (NULL where pinguard has
 * none), an address inside this object is recognised as ours (the resolver refuses it), a libc
 * row resolves to libc's function and stays resolved, and a missing libcudart row warns once. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/random.h>
#include <unistd.h>

#include "pg_intercept.h"
#include "pg_shim.h"

static int warnings;
void pg_shim_warn(const char *fmt, ...) {
  (void)fmt;
  warnings++;
}

PG_INTERCEPT(cudaError_t, cudaStreamQuery, cudaStream_t s) {
  (void)s;
  return cudaErrorNotReady;
}

int getentropy(void *buf, size_t n) {
  __typeof__(&getentropy) real = PG_REAL(getentropy);
  return real ? real(buf, n) : -1;
}
PG_WRAPPER(getentropy, getentropy);

Test(hooks, wrapper_by_id_and_by_name) {
  cr_expect_eq(pg_hook_wrapper_id(PG_HOOK_ID_cudaStreamQuery), (const void *)&cudaStreamQuery);
  cr_expect_eq(pg_hook_wrapper("cudaStreamQuery"), (const void *)&cudaStreamQuery);
  cr_expect_eq(pg_hook_wrapper("getentropy"), (const void *)&getentropy);
  cr_expect_eq(pg_hook_wrapper_id(PG_HOOK_ID_getentropy), (const void *)&getentropy);
}

Test(hooks, no_wrapper_reads_null) {
  cr_expect_null(pg_hook_wrapper("cudaEventQuery"));  /* a row pinguard only calls */
  cr_expect_null(pg_hook_wrapper_id(PG_HOOK_ID_write)); /* a row this program defines no wrapper for */
  cr_expect_null(pg_hook_wrapper("cudaNoSuchFunction"));
  cr_expect_null(pg_hook_wrapper(NULL));
  cr_expect_null(pg_hook_wrapper_id(PG_HOOK_COUNT));
}

Test(hooks, own_addresses_are_refused) {
  cr_expect(pg_hook_is_own((const void *)&cudaStreamQuery));
  cr_expect(pg_hook_is_own((const void *)&warnings));
  void *libc_write = dlsym(RTLD_NEXT, "write");
  cr_assert_not_null(libc_write);
  cr_expect_not(pg_hook_is_own(libc_write));
  cr_expect_not(pg_hook_is_own(NULL));
}

Test(hooks, libc_row_resolves_to_libc_and_stays) {
  void *fn = pg_real(PG_HOOK_ID_write);
  cr_assert_not_null(fn);
  cr_expect_eq(fn, dlsym(RTLD_NEXT, "write"));
  cr_expect_eq(atomic_load(&pg_hook_real_fn[PG_HOOK_ID_write]), fn);
  cr_expect_eq(PG_REAL(write), fn);
  /* libc's getentropy, never this program's own definition */
  void *ge = pg_real(PG_HOOK_ID_getentropy);
  cr_assert_not_null(ge);
  cr_expect_neq(ge, (void *)&getentropy);
  cr_expect_not(pg_hook_is_own(ge));
  cr_expect_eq(warnings, 0);
}

Test(hooks, missing_cudart_row_warns_once) {
  cr_expect_null(pg_real(PG_HOOK_ID_cudaStreamQuery)); /* only our own exists: refused */
  cr_expect_null(PG_REAL(cudaStreamQuery));
  cr_expect_eq(PG_FORWARD(cudaStreamQuery, 0), cudaErrorSharedObjectSymbolNotFound);
  cr_expect_eq(warnings, 1);
}
