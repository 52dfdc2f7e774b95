/* pg_options.h: the option struct and its parser, both expanded from pg_options.inc.
 * Parsing never allocates and never exits: a bad pair gets one "pinguard: WARNING:" line and the
 * rest of the string is still applied. Precedence is applied by the caller (pg_policy_init). */
#ifndef PG_OPTIONS_H
#define PG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pg_mode { PG_MODE_OFF, PG_MODE_AUDIT, PG_MODE_ENFORCE } pg_mode_t;
#define PG_AUTO (-1) /* a tristate option left to pinguard, which decides from the mode */
typedef enum pg_log_format { PG_FORMAT_TEXT, PG_FORMAT_JSON } pg_log_format_t;

/* Longest accepted string value (a path), including the NUL. */
#define PG_OPT_STR_MAX 1024
typedef struct pg_optstr { char s[PG_OPT_STR_MAX]; } pg_optstr_t;

/* Option types. Each one fixes the C type and the accepted values:
 *   bool   1/0 true/false yes/no on/off (any case)
 *   uint   decimal 0..INT_MAX
 *   u8     decimal 0..255 (an exit status)
 *   depth  decimal 1..PG_STACK_MAX
 *   size   decimal 0..2^62 with optional k/m/g suffix (binary units)
 *   str    any bytes; quote with ' or " to include ':' or ','; at most PG_OPT_STR_MAX-1 bytes
 *   mode   off|audit|enforce
 *   tristate  auto, or a bool (stored as PG_AUTO, 0 or 1)
 *   format text|json */
#define PG_OPT_CTYPE_bool bool
#define PG_OPT_CTYPE_uint int
#define PG_OPT_CTYPE_u8 int
#define PG_OPT_CTYPE_depth int
#define PG_OPT_CTYPE_size uint64_t
#define PG_OPT_CTYPE_str pg_optstr_t
#define PG_OPT_CTYPE_mode pg_mode_t
#define PG_OPT_CTYPE_tristate int /* PG_AUTO, 0 or 1 */
#define PG_OPT_CTYPE_format pg_log_format_t

typedef struct pg_options {
#define OPT(type, name, def, desc) PG_OPT_CTYPE_##type name;
#include "pg_options.inc"
#undef OPT
} pg_options_t;

/* Receives each warning line (without the trailing newline). */
typedef void (*pg_warn_fn)(void *ctx, const char *line);

/* Fills *o with the built-in defaults. */
void pg_options_set_defaults(pg_options_t *o);

/* Applies "k=v:k=v,..." from `str` on top of *o. `source` names the origin in warnings
 * ("PINGUARD_OPTIONS"). warn==NULL writes warnings to stderr. Returns the number of warnings.
 * str may be NULL or any bytes up to its NUL; it is never copied, so length is unbounded. */
int pg_options_parse(pg_options_t *o, const char *str, const char *source, pg_warn_fn warn,
                     void *ctx);

/* The help=1 text: one line per option, "  name=<value> (default)  description" when the value
 * in force is the default, "  name=<value> (default <default>)  description" when not (an empty
 * string is written ""). in_force NULL: the defaults. Returns the length written (the text is
 * cut, with a visible marker, if cap is too small). */
size_t pg_options_help(const pg_options_t *in_force, char *out, size_t cap);

/* Number of options, and name/type/default/description of option i (for docs and tests). */
size_t pg_options_count(void);
typedef struct pg_option_info {
  const char *name, *type, *description;
} pg_option_info_t;
pg_option_info_t pg_options_info(size_t i);
/* The built-in default of option i as it would be written in PINGUARD_OPTIONS. */
size_t pg_options_default_text(size_t i, char *out, size_t cap);

const char *pg_mode_name(pg_mode_t m);
const char *pg_log_format_name(pg_log_format_t f);

#endif /* PG_OPTIONS_H */
