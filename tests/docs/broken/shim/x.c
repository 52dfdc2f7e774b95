/* x.c */
#include "../src/a.h"
