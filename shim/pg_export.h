/* pg_export.h: the one way the shim marks a symbol as exported. Everything else in
 * libpinguard.so is hidden (-fvisibility=hidden), and libpinguard.map lets out only the names it
 * lists; tests/e2e/check_exports.sh checks that nothing else leaks. Use PG_EXPORT on interposed
 * names (CUDA, libc) and the public pinguard_* API only. */
#ifndef PG_EXPORT_H
#define PG_EXPORT_H

#define PG_EXPORT __attribute__((visibility("default")))

#endif /* PG_EXPORT_H */
