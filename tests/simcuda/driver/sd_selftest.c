/* sd_selftest.c: a lookup made from inside the driver, for tests of tools that interpose the
 * driver's lookups. A real driver looks itself up (its own cuGetProcAddress table, dlsym on its
 * own handle); an interposer that swaps such answers for wrappers makes the driver call the
 * wrapper, which calls the driver again: the recursion HAMi-core once hit. This entry point makes
 * both lookups from code that lives in libcuda.so.1, so a test can check what they return. */
#include <dlfcn.h>

#include "sd_internal.h"

typedef CUresult (*sd_gpa_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

/* *by_dlsym: dlsym(this library's handle, symbol). *by_gpa: gpa(base, version 13000), gpa being
 * whatever cuGetProcAddress_v2 the caller hands in (its own lookup's answer, which may be an
 * interposer's); base is the name without its ABI suffix, as cuGetProcAddress takes it. Returns 0,
 * or -1 when this library's handle cannot be had. */
SD_API int simcuda_driver_self_lookup(const char *symbol, const char *base, void *gpa,
                                      void **by_dlsym, void **by_gpa) {
  void *self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!self) return -1;
  *by_dlsym = dlsym(self, symbol);
  *by_gpa = NULL;
  CUdriverProcAddressQueryResult st;
  if (gpa) ((sd_gpa_fn)gpa)(base, by_gpa, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
  dlclose(self);
  return 0;
}
