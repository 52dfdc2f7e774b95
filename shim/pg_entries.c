/* pg_entries.c: the interceptor of every CUDA entry point pinguard interposes. Each row of
 * pg_entries.inc becomes one definition, made by its kind's macro (pg_entry_kinds.h), and a second
 * one for its _ptsz twin. Nothing else is written here: to see what an interceptor does, read
 * its kind in pg_entry_kinds.h; to add one, add a row. */
/* cudaGetDriverEntryPoint is deprecated in CUDA 13; pinguard still wraps it for older clients. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "pg_entry_kinds.h"

#define PG_ENTRY(lib, name, twin, kind, ret, T) \
  PG_KIND_##kind(lib, name, false, ret, T) PG_TWIN_##twin(lib, name, kind, ret, T)
#define PG_TWIN_none(lib, name, kind, ret, T)
#define PG_TWIN_ptsz(lib, name, kind, ret, T) PG_KIND_##kind(lib, name##_ptsz, true, ret, T)
#include "pg_entries.inc"
