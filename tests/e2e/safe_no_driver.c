/* Intent: with no CUDA driver in the process (none installed, or one loaded RTLD_LOCAL), a lookup
 * of a driver function answers exactly as it would without pinguard: dlsym(RTLD_DEFAULT,
 * "cuMemHostAlloc") is NULL, not pinguard's wrapper. And should a program call one of pinguard's
 * driver wrappers all the same (found through pinguard's own handle), it gets an error and one
 * warning line, however many calls it makes.
 * Usage: safe_no_driver [local-driver-path]: with a path, that library is dlopen()ed RTLD_LOCAL
 * first (it stays out of the global scope, so RTLD_DEFAULT still finds no cu* function). A
 * bare run (no preload) must pass too. */
// SAFE: no_driver CHECK --stdout "^no driver seen" --count "pinguard: WARNING" 1
// Again with simcuda's driver loaded RTLD_LOCAL.
// SAFE: no_driver.local CHECK --stdout "^no driver seen" ARGS $<TARGET_FILE:simcuda_driver>
// SAFE: no_driver.bare CHECK --no-preload --stdout "^no driver seen"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_host_alloc_fn)(void **, size_t, unsigned);

int main(int argc, char **argv) {
  if (argc > 1 && !dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
    printf("cannot load %s: %s\n", argv[1], dlerror());
    return 2;
  }
  static const char *const names[] = {"cuMemHostAlloc", "cuInit", "cuLaunchKernel",
                                      "cuGetProcAddress_v2", "cuMemcpyHtoDAsync_v2"};
  int bad = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *p = dlsym(RTLD_DEFAULT, names[i]);
    if (p) {
      Dl_info info;
      printf("dlsym(RTLD_DEFAULT, %s) = %p in %s, expected NULL\n", names[i], p,
             dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?");
      bad = 1;
    }
  }
  /* pinguard's own handle answers pinguard's own functions, as any library's handle does; with
   * no driver at all, calling them fails. (A driver loaded RTLD_LOCAL is found by pinguard's
   * wrappers, and their calls succeed.) */
  void *self = argc > 1 ? NULL : dlopen("libpinguard.so", RTLD_NOW | RTLD_NOLOAD);
  if (self) {
    cu_init_fn init = (cu_init_fn)dlsym(self, "cuInit");
    cu_host_alloc_fn alloc = (cu_host_alloc_fn)dlsym(self, "cuMemHostAlloc");
    for (int i = 0; i < 20; i++) {
      void *p = NULL;
      int a = init ? init(0) : -1, b = alloc ? alloc(&p, 4096, 0) : -1;
      if (a == 0 || b == 0) {
        printf("a driver call succeeded without a driver (%d, %d)\n", a, b);
        bad = 1;
      }
    }
  }
  printf(bad ? "FAILED\n" : "no driver seen\n");
  return bad;
}
