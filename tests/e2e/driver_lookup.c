/* driver_lookup.c: how clients that reach the driver without the runtime find its functions,
 * and what pinguard must hand them (shim/pg_lookup.c, shim/pg_dlsym.S):
 *   - dlsym(handle of libcuda.so.1, "cu...") of a function pinguard wraps: pinguard's wrapper;
 *     of one it does not wrap: the driver's own, untouched;
 *   - the same lookup again: the same answer;
 *   - cuGetProcAddress_v2 as dlsym handed it: the same swap for what it returns;
 *   - every other lookup keeps its meaning, RTLD_NEXT included: glibc answers it relative to
 *     the caller, which must still be this program, not libpinguard.so;
 *   - a lookup made from inside the driver (simcuda_driver_self_lookup: dlsym on its own handle,
 *     and the cuGetProcAddress_v2 this program was handed, called from the driver's code) gets
 *     the driver's own function, never a wrapper that would call back into it.
 * Run under the preload it checks the swaps; without it (argument "plain") it checks that every
 * answer is the driver's. Prints one line per check and exits 1 on the first failure. */
// TEST: driver_lookup.preloaded
//   COMMAND env LD_PRELOAD=${PG_PRELOAD} $<TARGET_FILE:e2e_driver_lookup>
//   BARE TIMEOUT 30 ENV LD_LIBRARY_PATH=${SIMCUDA_LIB_DIR} ASAN_OPTIONS=detect_leaks=0
//   PINGUARD_OPTIONS=mode=audit
//   PASS_REGEX "all lookups as expected" FAIL_REGEX "FAIL"
// TEST: driver_lookup.plain ARGS plain
//   BARE TIMEOUT 30 ENV LD_LIBRARY_PATH=${SIMCUDA_LIB_DIR} ASAN_OPTIONS=detect_leaks=0
//   PINGUARD_OPTIONS=mode=audit
//   PASS_REGEX "all lookups as expected" FAIL_REGEX "FAIL"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static int failures;

static const char *object(const void *p) {
  Dl_info info;
  if (!p || !dladdr(p, &info) || !info.dli_fname) return "(none)";
  const char *base = strrchr(info.dli_fname, '/');
  return base ? base + 1 : info.dli_fname;
}

static void expect_in(const char *what, const void *p, const char *prefix) {
  const char *obj = object(p);
  bool ok = strncmp(obj, prefix, strlen(prefix)) == 0;
  printf("%s: %s %s\n", ok ? "ok" : "FAIL", what, obj);
  if (!ok) failures++;
}

int main(int argc, char **argv) {
  bool preloaded = !(argc > 1 && strcmp(argv[1], "plain") == 0);
  int version = 0; /* links the runtime in, for the RTLD_NEXT checks below */
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) printf("note: no runtime version\n");
  const char *wrapped = preloaded ? "libpinguard" : "libcuda";
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("FAIL: dlopen(libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  expect_in("dlsym(libcuda, cuGetProcAddress_v2) is in", (void *)gpa, wrapped);
  expect_in("dlsym(libcuda, cuLaunchKernel) is in", dlsym(h, "cuLaunchKernel"), wrapped);
  expect_in("dlsym(libcuda, cuInit) is in", dlsym(h, "cuInit"), "libcuda");
  bool same = dlsym(h, "cuLaunchKernel") == dlsym(h, "cuLaunchKernel") &&
              dlsym(h, "cuInit") == dlsym(h, "cuInit");
  printf("%s: repeated lookups agree\n", same ? "ok" : "FAIL");
  failures += !same;
  printf("%s: a name the driver lacks is NULL\n", dlsym(h, "cuNoSuchFunction") ? "FAIL" : "ok");
  failures += dlsym(h, "cuNoSuchFunction") != NULL;

  if (gpa) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CUresult r = gpa("cuLaunchKernel", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    printf("%s: cuGetProcAddress_v2(cuLaunchKernel) returns %d\n", r == CUDA_SUCCESS ? "ok" : "FAIL",
           (int)r);
    failures += r != CUDA_SUCCESS;
    expect_in("cuGetProcAddress_v2(cuLaunchKernel) is in", fn, wrapped);
    fn = NULL;
    r = gpa("cuInit", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    expect_in("cuGetProcAddress_v2(cuInit) is in", fn, "libcuda");
    /* From 13.0 the name means cuCtxSynchronize_v2(ctx), which pinguard wraps too. */
    fn = NULL;
    r = gpa("cuCtxSynchronize", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    expect_in("cuGetProcAddress_v2(cuCtxSynchronize, 13000) is in", fn, wrapped);
  }

  /* From inside the driver: what it finds must be its own, wrapped function or not. */
  typedef int (*self_lookup_fn)(const char *, const char *, void *, void **, void **);
  self_lookup_fn self_lookup = (self_lookup_fn)dlsym(h, "simcuda_driver_self_lookup");
  const char *const names[][2] = {{"cuLaunchKernel", "cuLaunchKernel"},
                                  {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"},
                                  {"cuInit", "cuInit"}};
  for (size_t i = 0; self_lookup && i < sizeof names / sizeof *names; i++) {
    void *by_dlsym = NULL, *by_gpa = NULL;
    char what[96];
    if (self_lookup(names[i][0], names[i][1], (void *)gpa, &by_dlsym, &by_gpa) != 0) {
      printf("FAIL: simcuda_driver_self_lookup(%s) found no handle\n", names[i][0]);
      failures++;
      continue;
    }
    snprintf(what, sizeof what, "the driver's dlsym(itself, %s) is in", names[i][0]);
    expect_in(what, by_dlsym, "libcuda");
    snprintf(what, sizeof what, "the driver's cuGetProcAddress_v2(%s) is in", names[i][1]);
    expect_in(what, by_gpa, "libcuda");
  }
  if (!self_lookup) {
    printf("FAIL: simcuda_driver_self_lookup is missing\n");
    failures++;
  }

  /* RTLD_NEXT from this program: the next definition after it in the search order, which under
   * the preload is pinguard's own cudaMemcpyAsync (a wrong "caller" would skip past it). */
  expect_in("dlsym(RTLD_NEXT, cudaMemcpyAsync) is in", dlsym(RTLD_NEXT, "cudaMemcpyAsync"),
            preloaded ? "libpinguard" : "libcudart");
  expect_in("dlsym(RTLD_DEFAULT, cudaMemcpyAsync) is in", dlsym(RTLD_DEFAULT, "cudaMemcpyAsync"),
            preloaded ? "libpinguard" : "libcudart");
  void *self = dlsym(RTLD_DEFAULT, "dlsym");
  printf("%s: dlsym(RTLD_DEFAULT, dlsym) is found\n", self ? "ok" : "FAIL");
  failures += self == NULL;
  dlclose(h);
  printf("%s\n", failures ? "driver_lookup: FAILED" : "driver_lookup: all lookups as expected");
  return failures ? 1 : 0;
}
