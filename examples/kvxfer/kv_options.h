/* kv_options.h: the kvxfer command line, and the names of the engine's settings as they appear
 * on it, in its output and in its JSON summary. */
#ifndef KV_OPTIONS_H
#define KV_OPTIONS_H

#include <stdio.h>

#include "kv_engine.h"

typedef struct kv_cli {
  kv_config_t cfg;
  int json; /* --json: also print the one-line machine-readable summary */
} kv_cli_t;

/* Exit statuses of the program. */
enum { KV_EXIT_OK = 0, KV_EXIT_CORRUPT = 1, KV_EXIT_USAGE = 2, KV_EXIT_ERROR = 3 };

/* Parses argv into cli. Returns -1 to go on, or the exit status to stop with: KV_EXIT_OK after
 * --help, KV_EXIT_USAGE after printing what was wrong. */
int kv_parse_options(int argc, char **argv, kv_cli_t *cli);
void kv_print_usage(FILE *out);

const char *kv_xfer_name(kv_xfer_t v);
const char *kv_transport_name(kv_transport_t v);
const char *kv_sync_name(kv_sync_t v);
const char *kv_bug_name(kv_bug_t v);

#endif /* KV_OPTIONS_H */
