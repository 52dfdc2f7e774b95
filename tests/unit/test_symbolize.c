/* test_symbolize.c: pg_symbolize_stack names frames through dladdr and keeps what it found (a
 * loop's reports come from the same call sites); what it kept must not outlive the module: a pc
 * of an unloaded library names nothing, and the library loaded again is named again. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "pg_symbolize.h"

typedef int (*fn_t)(int);

/* One frame at pc, taken as a return address (the lookup uses pc - 1, inside the call). */
static void symbolize_at(void *pc, pg_frame_t *out) {
  static pg_stack_t s;
  static pg_symstack_t sym;
  memset(&s, 0, sizeof s);
  s.depth = 1;
  s.pc[0] = pc;
  pg_symbolize_stack(&s, 1, 0, &sym);
  cr_assert_eq(sym.depth, 1u);
  *out = sym.f[0];
}

static void *load(fn_t *fn) {
  void *h = dlopen(PG_SYMTEST_LIB, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(h, "dlopen %s: %s", PG_SYMTEST_LIB, dlerror());
  *fn = (fn_t)dlsym(h, "pg_symtest_loaded_function");
  cr_assert_not_null(*fn);
  return h;
}

Test(symbolize, a_frame_kept_is_forgotten_when_its_module_unloads) {
  fn_t fn;
  void *h = load(&fn);
  void *pc = (char *)fn + 1;
  pg_frame_t f;
  for (int i = 0; i < 2; i++) { /* the second answer comes from what the first kept */
    symbolize_at(pc, &f);
    cr_assert_str_eq(f.function, "pg_symtest_loaded_function");
    cr_assert(strstr(f.module, "symbolize_lib") != NULL, "module %s", f.module);
  }
  cr_assert_eq(dlclose(h), 0);
  cr_assert_null(dlopen(PG_SYMTEST_LIB, RTLD_NOW | RTLD_NOLOAD), "the library stayed loaded");
  symbolize_at(pc, &f);
  cr_assert_str_eq(f.function, "", "an unloaded module's frame was named %s", f.function);
  cr_assert_str_eq(f.module, "");

  h = load(&fn);
  symbolize_at((char *)fn + 1, &f);
  cr_assert_str_eq(f.function, "pg_symtest_loaded_function");
  dlclose(h);
}
