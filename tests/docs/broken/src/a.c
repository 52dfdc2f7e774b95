/* a.c: its comment names missing.h and src/b.c; the string below does not count. */
#include "a.h"
static const char *s = "nothere.h";
