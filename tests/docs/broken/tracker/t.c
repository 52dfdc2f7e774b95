/* t.c */
#include "../core/door.h"
#include "../core/y.h"
