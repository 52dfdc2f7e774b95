/* kvxfer_main.c: the kvxfer program: parse the command line, run the engine, print the verdict,
 * the throughput and (with --json) a one-line summary for the benchmarks. */
#include <stdio.h>

#include "kv_options.h"

static double kv_gbps(size_t bytes, double s) { return s > 0 ? (double)bytes / s / 1e9 : 0.0; }

int main(int argc, char **argv) {
  kv_cli_t cli;
  int stop = kv_parse_options(argc, argv, &cli);
  if (stop >= 0) return stop;
  const kv_config_t *c = &cli.cfg;
  printf("kvxfer: model %s, %d chunks of %d blocks, group %d, xfer %s, transport %s, sync %s, "
         "bug %s, compute %d us",
         c->model->name, c->chunks, c->model->blocks_per_chunk, c->group, kv_xfer_name(c->xfer),
         kv_transport_name(c->transport), kv_sync_name(c->sync), kv_bug_name(c->bug),
         c->compute_us);
  if (c->devices > 1) printf(", %d devices (one engine each)", c->devices);
  printf("\n");
  fflush(stdout); /* before the store process is forked */

  kv_result_t r;
  if (kv_run(c, &r) != 0) return KV_EXIT_ERROR;
  double mib = (double)r.bytes / (1 << 20);
  printf("store:    %.1f MiB in %.1f ms, %.2f GB/s\n", mib, r.store_s * 1e3,
         kv_gbps(r.bytes, r.store_s));
  printf("retrieve: %.1f MiB in %.1f ms, %.2f GB/s\n", mib, r.retrieve_s * 1e3,
         kv_gbps(r.bytes, r.retrieve_s));
  printf("%lld of %lld blocks corrupted\n", (long long)r.corrupted, (long long)r.blocks);
  if (cli.json)
    printf("{\"model\":\"%s\",\"chunks\":%d,\"group\":%d,\"xfer\":\"%s\",\"transport\":\"%s\","
           "\"sync\":\"%s\",\"bug\":\"%s\",\"compute_us\":%d,\"annotate_commit\":%d,\"blocks\":%"
           "lld,\"corrupted\":%lld,"
           "\"bytes\":%zu,\"store_s\":%.6f,\"retrieve_s\":%.6f,\"store_gbps\":%.3f,"
           "\"retrieve_gbps\":%.3f,\"pin_host_allocs\":%zu,\"pin_reuses\":%zu,\"devices\":%d}\n",
           c->model->name, c->chunks, c->group, kv_xfer_name(c->xfer),
           kv_transport_name(c->transport), kv_sync_name(c->sync), kv_bug_name(c->bug),
           c->compute_us, c->annotate_commit, (long long)r.blocks, (long long)r.corrupted, r.bytes,
           r.store_s, r.retrieve_s, kv_gbps(r.bytes, r.store_s), kv_gbps(r.bytes, r.retrieve_s),
           r.pin_host_allocs, r.pin_reuses, c->devices);
  return r.corrupted ? KV_EXIT_CORRUPT : KV_EXIT_OK;
}
