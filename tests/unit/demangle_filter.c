/* demangle_filter.c: prints pg_demangle's result for each name on stdin (the name itself when it
 * is refused), for the comparison with c++filt (demangle_vs_cxxfilt.sh). */
#include <stdio.h>
#include <string.h>

#include "pg_demangle.h"

int main(void) {
  char line[8192], out[4096];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    printf("%s\n", pg_demangle(line, out, sizeof out) ? out : line);
  }
  return 0;
}
