/* pg_report_kind.c: the stable names of report kinds, directions and pinning calls. */
#include <string.h>

#include "pg_report.h"

static const char *const kind_names[] = {
#define PG_KIND_NAME(id, name, verb) name,
    PG_REPORT_KINDS(PG_KIND_NAME)
#undef PG_KIND_NAME
};

static const char *const kind_verbs[] = {
#define PG_KIND_VERB(id, name, verb) verb,
    PG_REPORT_KINDS(PG_KIND_VERB)
#undef PG_KIND_VERB
};

const char *pg_report_kind_name(pg_report_kind_t k) {
  return (unsigned)k < PG_KIND_COUNT ? kind_names[k] : NULL;
}

const char *pg_report_kind_verb(pg_report_kind_t k) {
  return (unsigned)k < PG_KIND_COUNT ? kind_verbs[k] : "access";
}

int pg_report_kind_from_name(const char *name, size_t n) {
  for (int k = 0; k < PG_KIND_COUNT; k++)
    if (strlen(kind_names[k]) == n && memcmp(kind_names[k], name, n) == 0) return k;
  return -1;
}

const char *pg_dir_name(pg_dir_t d) {
  switch (d) {
    case PG_DIR_READ: return "device read";
    case PG_DIR_WRITE: return "device write";
    case PG_DIR_UNKNOWN: return "device access, direction unknown";
  }
  return "device access";
}

const char *pg_pin_how_call(pg_pin_how_t h, bool by_driver) {
  if (by_driver) switch (h) {
      case PG_PIN_HOST_ALLOC: return "cuMemHostAlloc";
      case PG_PIN_MALLOC_HOST: return "cuMemAllocHost";
      case PG_PIN_REGISTER: return "cuMemHostRegister";
      case PG_PIN_DISCOVERED: break;
    }
  return pg_pin_how_name(h);
}

const char *pg_pin_how_name(pg_pin_how_t h) {
  switch (h) {
    case PG_PIN_HOST_ALLOC: return "cudaHostAlloc";
    case PG_PIN_MALLOC_HOST: return "cudaMallocHost";
    case PG_PIN_REGISTER: return "cudaHostRegister";
    case PG_PIN_DISCOVERED: return "an unseen call (found by cudaPointerGetAttributes)";
  }
  return "an unknown call";
}
