/* sd_entries.c: the simulated driver's functions for the rows of pinguard's table of entry
 * points (shim/pg_entries.inc) that this driver does not implement itself, so that a new row of
 * the driver needs nothing here. Each driver row (and its _ptsz twin) gets a weak definition:
 * the native one (sd_api.c, sd_memops.c, ...) wins at link time where it exists. The weak one
 * runs the row's kind on the engine where simcuda simulates that kind generically (SD_KIND_<kind>
 * below, marked by SD_SIMULATED_<kind>), and otherwise answers CUDA_ERROR_NOT_SUPPORTED (SD_STUB,
 * or a kind's own stub where the generic one cannot name its parameters). They
 * are found by name (dlsym) and through cuGetProcAddress under their exported names
 * (sd_entry_address, asked by sd_proc.c after its own table). */
#include <string.h>

#include "sd_internal.h"
#include "../../../shim/pg_entry_args.h"

#undef cuGetProcAddress
#undef cuMemcpyBatchAsync

/* The stubs take their parameters and use none. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- the kinds simcuda runs generically --------------------------------------------------- */
/* A stream callback: the engine's cudaStreamAddCallback (a CUstreamCallback is called as a
 * cudaStreamCallback_t: a CUstream is a cudaStream_t, a CUresult a cudaError_t). */
#define SD_SIMULATED_stream_callback ~, 1
#define SD_KIND_stream_callback(name, base, ptsz, ret, T)                                     \
  ret CUDAAPI name(PG_NAMED(T)) {                                                             \
    SD_ENTER(base);                                                                           \
    SD_RUN(sc_stream_add_callback((cudaStream_t)a1, (cudaStreamCallback_t)(void (*)(void))a2, \
                                  a3, a4, ptsz));                                             \
  }

/* A parameterless kind (the stub below names parameters). */
#define SD_SIMULATED_device_sync ~, 1
#define SD_KIND_device_sync(name, base, ptsz, ret, T) \
  ret CUDAAPI name(void) { return CUDA_ERROR_NOT_SUPPORTED; }

/* Any other kind: the function exists and says so. */
#define SD_STUB(name, base, ptsz, ret, T) \
  ret CUDAAPI name(PG_NAMED(T)) { return CUDA_ERROR_NOT_SUPPORTED; }

/* Whether SD_SIMULATED_<kind> is defined (1) or not (0). */
#define SD_SECOND(a, b, ...) b
#define SD_SECOND_(...) SD_SECOND(__VA_ARGS__)
#define SD_HAS(kind) SD_SECOND_(SD_SIMULATED_##kind, 0, ~)
#define SD_BODY(kind) PG_CAT(SD_BODY_, SD_HAS(kind))
#define SD_BODY_1(kind) SD_KIND_##kind
#define SD_BODY_0(kind) SD_STUB

/* ---- a weak definition per driver row and twin ---------------------------------------------- */
#define SD_DEFINE(name, base, ptsz, kind, ret, T)                          \
  SD_API ret CUDAAPI name T __attribute__((weak));                         \
  SD_BODY(kind)(kind)(name, base, ptsz, ret, T)
#define PG_ENTRY(lib, name, twin, kind, ret, T) SD_ROW_##lib(name, twin, kind, ret, T)
#define SD_ROW_cudart(name, twin, kind, ret, T)
#define SD_ROW_cuda(name, twin, kind, ret, T) \
  SD_DEFINE(name, #name, false, kind, ret, T) SD_TWIN_##twin(name, kind, ret, T)
#define SD_TWIN_none(name, kind, ret, T)
#define SD_TWIN_ptsz(name, kind, ret, T) SD_DEFINE(name##_ptsz, #name, true, kind, ret, T)
#include "../../../shim/pg_entries.inc"
#undef PG_ENTRY

/* ---- their addresses, by exported name ------------------------------------------------------ */
typedef struct sd_entry {
  const char *name;
  void *fn;
  void *fn_ptsz; /* NULL: no twin */
} sd_entry;

#define PG_ENTRY(lib, name, twin, kind, ret, T) SD_ADDR_##lib(name, twin)
#define SD_ADDR_cudart(name, twin)
#define SD_ADDR_cuda(name, twin) {#name, (void *)name, SD_ADDR_TWIN_##twin(name)},
#define SD_ADDR_TWIN_none(name) NULL
#define SD_ADDR_TWIN_ptsz(name) (void *)name##_ptsz
static const sd_entry sd_entries[] = {
#include "../../../shim/pg_entries.inc"
};
#undef PG_ENTRY

void *sd_entry_address(const char *symbol, bool ptsz) {
  for (size_t i = 0; i < sizeof sd_entries / sizeof *sd_entries; i++)
    if (strcmp(sd_entries[i].name, symbol) == 0)
      return ptsz && sd_entries[i].fn_ptsz ? sd_entries[i].fn_ptsz : sd_entries[i].fn;
  return NULL;
}
