/* symbolize_lib.c: a shared library test_symbolize.c loads and unloads, so that a pc inside it
 * names it, then names nothing once it is gone. */
int pg_symtest_loaded_function(int x);
int pg_symtest_loaded_function(int x) { return x * 3 + 1; }
