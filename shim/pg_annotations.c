/* pg_annotations.c: the public annotation API of include/pinguard.h. The header declares these
 * weak; defining them here makes every program's calls land in pinguard while it is preloaded. */
#define PINGUARD_IMPLEMENTATION
#include "pinguard.h"

#include "pg_intercept.h"
#include "pg_shim.h"

static int annotate(pg_annotation_t what, const void *p, size_t n, const pg_stack_t *st) {
  if (!p || n == 0 || !pg_shim_start_tracking()) return 0;
  pg_reentry_t g = pg_shim_enter();
  int found = pg_on_annotation(what, p, n, st);
  pg_shim_leave(g);
  return found;
}

/* Each entry point captures its own caller, so frame 0 is the application's call site. */
#define PG_ANNOTATION(name, what)                                    \
  PG_EXPORT int name(const void *p, size_t n) {                      \
    pg_stack_t st;                                                   \
    PG_CAPTURE(&st);                                                 \
    return annotate(what, p, n, &st);                                \
  }
PG_ANNOTATION(pinguard_release, PG_ANN_RELEASE)
PG_ANNOTATION(pinguard_commit, PG_ANN_COMMIT)
PG_ANNOTATION(pinguard_wait, PG_ANN_WAIT)
