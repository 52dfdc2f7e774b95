/* a.h: names a.c, which is here. */
