/* pg_options_doc.c: prints the options table for the README from pg_options.inc, so the
 * documentation is generated from the same table as the parser and help=1. */
#include <stdio.h>

#include "pg_options.h"

int main(void) {
  printf("| option | type | default | description |\n|---|---|---|---|\n");
  for (size_t i = 0; i < pg_options_count(); i++) {
    pg_option_info_t o = pg_options_info(i);
    char def[PG_OPT_STR_MAX];
    pg_options_default_text(i, def, sizeof def);
    printf("| `%s` | %s | `%s` | %s |\n", o.name, o.type, def[0] ? def : "\"\"", o.description);
  }
  return 0;
}
