/* pg_procmaps.h: what kind of mapping holds an address, asked of the kernel. One address costs
 * one PROCMAP_QUERY ioctl on a long-lived /proc/self/maps descriptor (Linux 6.11 and later:
 * O(log n) in the number of mappings); older kernels fall back to scanning the maps text. */
#ifndef PG_PROCMAPS_H
#define PG_PROCMAPS_H

#include <stdint.h>

/* 1: p lies in a MAP_SHARED mapping; 0: in a private one; -1: unmapped, or unknown. */
int pg_maps_is_shared(const void *p);

/* The mapping that holds p: 1 and its bounds and kind, 0 if p is unmapped, -1 if unknown. */
typedef struct pg_mapping {
  uintptr_t lo, hi;
  int shared;
  int anon;              /* no file behind it (inode 0), hugetlb's own files aside */
  uint64_t page_size;    /* the mapping's page size: a huge page size for hugetlb */
} pg_mapping_t;
int pg_maps_query(const void *p, pg_mapping_t *out);

/* The fallback alone (tests): scans /proc/self/maps up to the mapping that holds p. */
int pg_maps_scan_is_shared(const void *p);

/* How the answers were found, since the start (tests and statistics). */
typedef struct pg_maps_counts {
  uint64_t queries;   /* answered by the ioctl */
  uint64_t scans;     /* answered by reading the maps text */
  uint64_t opens;     /* opens of /proc/self/maps */
} pg_maps_counts_t;
pg_maps_counts_t pg_maps_counts(void);

#endif /* PG_PROCMAPS_H */
