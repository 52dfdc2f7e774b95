/* kv_options.c: command-line parsing for kvxfer. Every bad option gets one clear line on stderr
 * and exit status 2; nothing is silently defaulted. */
#include "kv_options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const kv_xfer_names[] = {"kernel", "memcpy", "batch"};
static const char *const kv_transport_names[] = {"serialize", "shm"};
static const char *const kv_sync_names[] = {"event", "device"};
static const char *const kv_bug_names[] = {"none", "store-no-sync", "retrieve-early-release"};

const char *kv_xfer_name(kv_xfer_t v) { return kv_xfer_names[v]; }
const char *kv_transport_name(kv_transport_t v) { return kv_transport_names[v]; }
const char *kv_sync_name(kv_sync_t v) { return kv_sync_names[v]; }
const char *kv_bug_name(kv_bug_t v) { return kv_bug_names[v]; }

void kv_print_usage(FILE *out) {
  fprintf(out,
          "usage: kvxfer [options]\n"
          "Stores a paged KV cache chunk by chunk to a store process, clears it, retrieves it,\n"
          "and prints 'N of M blocks corrupted'. Exit 0: no corruption; 1: corruption;\n"
          "2: bad usage; 3: runtime error.\n"
          "\n"
          "  --model NAME          small (default) or llama3-8b (2 MiB blocks, 32 MiB chunks)\n"
          "  --chunks N            chunks to store and retrieve (default: 16)\n"
          "  --group N             chunks per transfer, 1..4 (default 4; one kernel launch)\n"
          "  --xfer METHOD         kernel (default; zero-copy kernel on raw host pointers),\n"
          "                        memcpy (cudaMemcpyAsync per segment), batch\n"
          "                        (cudaMemcpyBatchAsync)\n"
          "  --transport T         serialize (default; CPU copy + socket) or shm (shared\n"
          "                        segment registered with cudaHostRegister + descriptor)\n"
          "  --sync MODE           event (default; wait for exactly the transfer needed) or\n"
          "                        device (cudaDeviceSynchronize at every wait)\n"
          "  --bug BUG             none (default), store-no-sync (serialize without waiting\n"
          "                        for the gather), retrieve-early-release (recycle pinned\n"
          "                        temporaries before their scatter completes)\n"
          "  --compute-us US       simulated model compute before each transfer (default 2000)\n"
          "  --annotate-commit     call pinguard_commit() on each chunk before committing it\n"
          "                        (a no-op unless pinguard is preloaded)\n"
          "  --no-release-annotation\n"
          "                        the pinned allocator does not call pinguard_release()\n"
          "                        (what guard pages must catch on their own)\n"
          "  --devices N           N engines at once, engine k on device k and its own thread,\n"
          "                        sharing one pinned allocator (default 1)\n"
          "  --json                also print a one-line JSON summary\n"
          "  --help                this text\n");
}

static int kv_pick(const char *opt, const char *arg, const char *const *names, int n, int *out) {
  for (int i = 0; i < n; i++)
    if (strcmp(arg, names[i]) == 0) {
      *out = i;
      return 1;
    }
  fprintf(stderr, "kvxfer: --%s: unknown value '%s' (one of:", opt, arg);
  for (int i = 0; i < n; i++) fprintf(stderr, " %s", names[i]);
  fprintf(stderr, ")\n");
  return 0;
}

static int kv_int(const char *opt, const char *arg, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno || end == arg || *end || v < lo || v > hi) {
    fprintf(stderr, "kvxfer: --%s: expected an integer in %d..%d, got '%s'\n", opt, lo, hi, arg);
    return 0;
  }
  *out = (int)v;
  return 1;
}

#define KV_NAMES(a) a, (int)(sizeof(a) / sizeof(a[0]))

int kv_parse_options(int argc, char **argv, kv_cli_t *cli) {
  static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
                                           {"chunks", required_argument, NULL, 'n'},
                                           {"group", required_argument, NULL, 'g'},
                                           {"xfer", required_argument, NULL, 'x'},
                                           {"transport", required_argument, NULL, 't'},
                                           {"sync", required_argument, NULL, 's'},
                                           {"bug", required_argument, NULL, 'b'},
                                           {"compute-us", required_argument, NULL, 'c'},
                                           {"json", no_argument, NULL, 'j'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"annotate-commit", no_argument, NULL, 'a'},
                                           {"no-release-annotation", no_argument, NULL, 'r'},
                                           {"devices", required_argument, NULL, 'd'},
                                           {NULL, 0, NULL, 0}};
  kv_config_t *cfg = &cli->cfg;
  kv_config_default(cfg);
  cli->json = 0;
  int chunks = -1, v, opt;
  opterr = 0; /* our own messages, one line each */
  optind = 1;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    const char *name = optind > 1 && optind - 1 < argc ? argv[optind - 1] : "?";
    switch (opt) {
    case 'm':
      if (!(cfg->model = kv_model_find(optarg))) {
        fprintf(stderr, "kvxfer: --model: unknown model '%s' (one of: %s)\n", optarg,
                kv_model_names());
        return KV_EXIT_USAGE;
      }
      break;
    case 'n':
      if (!kv_int("chunks", optarg, 1, 1 << 16, &chunks)) return KV_EXIT_USAGE;
      break;
    case 'g':
      if (!kv_int("group", optarg, 1, KV_MAX_CHUNKS_PER_LAUNCH, &cfg->group)) return KV_EXIT_USAGE;
      break;
    case 'x':
      if (!kv_pick("xfer", optarg, KV_NAMES(kv_xfer_names), &v)) return KV_EXIT_USAGE;
      cfg->xfer = (kv_xfer_t)v;
      break;
    case 't':
      if (!kv_pick("transport", optarg, KV_NAMES(kv_transport_names), &v)) return KV_EXIT_USAGE;
      cfg->transport = (kv_transport_t)v;
      break;
    case 's':
      if (!kv_pick("sync", optarg, KV_NAMES(kv_sync_names), &v)) return KV_EXIT_USAGE;
      cfg->sync = (kv_sync_t)v;
      break;
    case 'b':
      if (!kv_pick("bug", optarg, KV_NAMES(kv_bug_names), &v)) return KV_EXIT_USAGE;
      cfg->bug = (kv_bug_t)v;
      break;
    case 'c':
      if (!kv_int("compute-us", optarg, 0, 10000000, &cfg->compute_us)) return KV_EXIT_USAGE;
      break;
    case 'j':
      cli->json = 1;
      break;
    case 'a':
      cfg->annotate_commit = 1;
      break;
    case 'r':
      cfg->no_release_annotation = 1;
      break;
    case 'd':
      if (!kv_int("devices", optarg, 1, 64, &cfg->devices)) return KV_EXIT_USAGE;
      break;
    case 'h':
      kv_print_usage(stdout);
      return KV_EXIT_OK;
    case ':':
      fprintf(stderr, "kvxfer: %s needs a value (see --help)\n", name);
      return KV_EXIT_USAGE;
    default:
      fprintf(stderr, "kvxfer: unknown option '%s' (see --help)\n", name);
      return KV_EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "kvxfer: unexpected argument '%s' (see --help)\n", argv[optind]);
    return KV_EXIT_USAGE;
  }
  cfg->chunks = chunks > 0 ? chunks : cfg->model->default_chunks;
  return -1;
}
