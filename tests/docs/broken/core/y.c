/* y.c */
#include "../tracker/t.h"
