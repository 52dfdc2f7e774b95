/* pg_entry_args.h: reading a row of pg_entries.inc, whose parameter types come as one
 * parenthesized list T: PG_Tk T is its k-th type; PG_Pn(T, names...) declares its parameters
 * with the names a kind gives them, PG_Mn the same as struct members; PG_NAMED(T) names them
 * a1, a2, ... for kinds that take any parameters, and PG_NAMES(T) lists those names. Plain
 * preprocessor, no dependency: simcuda's driver reads the table with it too. */
#ifndef PG_ENTRY_ARGS_H
#define PG_ENTRY_ARGS_H

#define PG_T1(a, ...) a
#define PG_T2(a, b, ...) b
#define PG_T3(a, b, c, ...) c
#define PG_T4(a, b, c, d, ...) d
#define PG_T5(a, b, c, d, e, ...) e
#define PG_T6(a, b, c, d, e, f, ...) f
#define PG_T7(a, b, c, d, e, f, g, ...) g
#define PG_T8(a, b, c, d, e, f, g, h, ...) h
#define PG_T9(a, b, c, d, e, f, g, h, i, ...) i
#define PG_T10(a, b, c, d, e, f, g, h, i, j, ...) j
#define PG_T11(a, b, c, d, e, f, g, h, i, j, k, ...) k

/* The parameter list of T with the names a kind gives them. */
#define PG_P1(T, a) PG_T1 T a
#define PG_P2(T, a, b) PG_P1(T, a), PG_T2 T b
#define PG_P3(T, a, b, c) PG_P2(T, a, b), PG_T3 T c
#define PG_P4(T, a, b, c, d) PG_P3(T, a, b, c), PG_T4 T d
#define PG_P5(T, a, b, c, d, e) PG_P4(T, a, b, c, d), PG_T5 T e
#define PG_P6(T, a, b, c, d, e, f) PG_P5(T, a, b, c, d, e), PG_T6 T f

/* The same, as the members of a struct (a launch's forwarding context). */
#define PG_M3(T, a, b, c) PG_T1 T a; PG_T2 T b; PG_T3 T c
#define PG_M4(T, a, b, c, d) PG_M3(T, a, b, c); PG_T4 T d
#define PG_M6(T, a, b, c, d, e, f) PG_M4(T, a, b, c, d); PG_T5 T e; PG_T6 T f
#define PG_M10(T, a, b, c, d, e, f, g, h, i, j) \
  PG_M6(T, a, b, c, d, e, f); PG_T7 T g; PG_T8 T h; PG_T9 T i; PG_T10 T j
#define PG_M11(T, a, b, c, d, e, f, g, h, i, j, k) PG_M10(T, a, b, c, d, e, f, g, h, i, j); PG_T11 T k

/* For kinds that take any parameters: T's parameters named a1, a2, ..., and their names. */
#define PG_NARGS(...) PG_NARGS_(__VA_ARGS__, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define PG_NARGS_(x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, n, ...) n
#define PG_CAT(a, b) PG_CAT_(a, b)
#define PG_CAT_(a, b) a##b
#define PG_NAMED(T) PG_CAT(PG_NAMED_, PG_NARGS T)(T)
#define PG_NAMED_1(T) PG_T1 T a1
#define PG_NAMED_2(T) PG_NAMED_1(T), PG_T2 T a2
#define PG_NAMED_3(T) PG_NAMED_2(T), PG_T3 T a3
#define PG_NAMED_4(T) PG_NAMED_3(T), PG_T4 T a4
#define PG_NAMED_5(T) PG_NAMED_4(T), PG_T5 T a5
#define PG_NAMED_6(T) PG_NAMED_5(T), PG_T6 T a6
#define PG_NAMED_7(T) PG_NAMED_6(T), PG_T7 T a7
#define PG_NAMED_8(T) PG_NAMED_7(T), PG_T8 T a8
#define PG_NAMED_9(T) PG_NAMED_8(T), PG_T9 T a9
#define PG_NAMED_10(T) PG_NAMED_9(T), PG_T10 T a10
#define PG_NAMED_11(T) PG_NAMED_10(T), PG_T11 T a11
#define PG_NAMES(T) PG_CAT(PG_NAMES_, PG_NARGS T)
#define PG_NAMES_1 a1
#define PG_NAMES_2 a1, a2
#define PG_NAMES_3 a1, a2, a3
#define PG_NAMES_4 a1, a2, a3, a4
#define PG_NAMES_5 a1, a2, a3, a4, a5
#define PG_NAMES_6 a1, a2, a3, a4, a5, a6
#define PG_NAMES_7 a1, a2, a3, a4, a5, a6, a7
#define PG_NAMES_8 a1, a2, a3, a4, a5, a6, a7, a8
#define PG_NAMES_9 a1, a2, a3, a4, a5, a6, a7, a8, a9
#define PG_NAMES_10 a1, a2, a3, a4, a5, a6, a7, a8, a9, a10
#define PG_NAMES_11 a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11

#endif /* PG_ENTRY_ARGS_H */
