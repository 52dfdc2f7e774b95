/* pg_entry_list.c: prints the table of entry points (pg_entries.inc), one line per exported
 * name: "<lib> <name> <kind>", a _ptsz twin on a line of its own after its row. A build tool:
 * e2e.exports compares the names with what libpinguard.so exports, and docs.check with
 * README's list of tracked entry points (which `tests/docs/check_docs.py --write-entry-points`
 * rewrites from it). The rows' types are not read, so no CUDA header is needed. */
#include <stdio.h>

#define PG_ENTRY(lib, name, twin, kind, ret, T) \
  printf("%s %s %s\n", #lib, #name, #kind);     \
  PG_TWIN_##twin(lib, name, kind)
#define PG_TWIN_none(lib, name, kind)
#define PG_TWIN_ptsz(lib, name, kind) printf("%s %s_ptsz %s\n", #lib, #name, #kind);

int main(void) {
#include "pg_entries.inc"
  return 0;
}
