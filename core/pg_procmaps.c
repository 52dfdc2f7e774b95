/* pg_procmaps.c: mapping kinds from the kernel (issue 9: reading all of /proc/self/maps on every
 * cudaHostRegister made registering n regions cost O(n^2)). The PROCMAP_QUERY ioctl answers for
 * one address in O(log n); its descriptor is opened once per process, lazily, and reopened in a
 * fork child (an inherited descriptor still describes the parent's address space). */
#include "pg_procmaps.h"
#include "pg_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's ABI (include/uapi/linux/fs.h, Linux 6.11), declared here because the C library's
 * headers may predate it. The kernel checks `size`, so a newer kernel accepts this layout. */
struct pg_procmap_query {
  uint64_t size;
  uint64_t query_flags;
  uint64_t query_addr;
  uint64_t vma_start;
  uint64_t vma_end;
  uint64_t vma_flags;
  uint64_t vma_page_size;
  uint64_t vma_offset;
  uint64_t inode;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint32_t vma_name_size;
  uint32_t build_id_size;
  uint64_t vma_name_addr;
  uint64_t build_id_addr;
};
#define PG_PROCMAP_QUERY _IOWR('f', 17, struct pg_procmap_query)
#define PG_PROCMAP_VMA_SHARED 0x08u
_Static_assert(sizeof(struct pg_procmap_query) == 104, "struct procmap_query is 104 bytes");

/* The descriptor with the pid it was opened in, in one word so that one CAS installs both:
 * (pid << 32) | fd, 0 when none. */
static _Atomic uint64_t g_slot;
static atomic_int g_no_ioctl; /* the kernel has no PROCMAP_QUERY: scan from now on */
static _Atomic uint64_t g_queries, g_scans, g_opens;

static int open_maps(void) {
  atomic_fetch_add_explicit(&g_opens, 1, memory_order_relaxed);
  return open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
}

static int maps_fd(void) {
  uint64_t me = (uint64_t)(uint32_t)getpid();
  uint64_t s = atomic_load_explicit(&g_slot, memory_order_acquire);
  for (;;) {
    if (s && s >> 32 == me) return (int)(uint32_t)s;
    int fd = open_maps();
    if (fd < 0) return -1;
    uint64_t mine = me << 32 | (uint32_t)fd;
    if (atomic_compare_exchange_strong(&g_slot, &s, mine)) {
      /* A descriptor inherited from the parent: nobody here uses it (its pid is not ours). */
      if (s) close((int)(uint32_t)s);
      return fd;
    }
    close(fd); /* another thread installed one first: s now holds it */
  }
}

/* Parses "lo-hi perms" at the start of a maps line. */
/* From the rest of a maps line ("perms offset dev inode name"): whether the inode is 0, and
 * whether the name is hugetlb's (an anonymous huge page mapping, or a file on hugetlbfs, which
 * the text does not tell apart from other files: those are taken as normal pages). */
static void parse_rest(const char *l, const char *end, pg_mapping_t *m) {
  int field = 0;
  const char *inode = NULL, *name = NULL;
  for (const char *c = l; c < end; c++) {
    if (*c == ' ' && c + 1 < end && c[1] != ' ') {
      field++;
      if (field == 4) inode = c + 1;
      if (field == 5) {
        name = c + 1;
        break;
      }
    }
  }
  m->anon = inode && *inode == '0' && (inode + 1 >= end || inode[1] == ' ');
  m->page_size = (uint64_t)pg_page_size();
  static const char huge[] = "/anon_hugepage";
  if (name && (size_t)(end - name) >= sizeof huge - 1 && !memcmp(name, huge, sizeof huge - 1))
    m->page_size = 2u << 20; /* the default huge page size; the ioctl gives the real one */
}

static bool parse_line(const char *l, const char *end, uintptr_t *lo, uintptr_t *hi, char *share) {
  uintptr_t v[2] = {0, 0};
  int k = 0;
  for (; l < end && k < 2; l++) {
    char c = *l;
    if (c >= '0' && c <= '9') v[k] = v[k] << 4 | (uintptr_t)(c - '0');
    else if (c >= 'a' && c <= 'f') v[k] = v[k] << 4 | (uintptr_t)(c - 'a' + 10);
    else if ((c == '-' && k == 0) || (c == ' ' && k == 1)) k++;
    else return false;
  }
  if (k < 2 || end - l < 4) return false;
  *lo = v[0];
  *hi = v[1];
  *share = l[3]; /* "rw-s": 's' shared, 'p' private */
  return true;
}

static int scan_query(const void *p, pg_mapping_t *out) {
  atomic_fetch_add_explicit(&g_scans, 1, memory_order_relaxed);
  int fd = open_maps();
  if (fd < 0) return -1;
  /* The lines are sorted by address: the scan stops at the first mapping that ends above p. */
  uintptr_t a = (uintptr_t)p;
  char buf[4096];
  size_t have = 0;
  int answer = -1; /* unknown until a line answers */
  bool done = false;
  while (!done) {
    /* The raw system call: the shim interposes read(2), and this is not the program's I/O. */
    long r = syscall(SYS_read, fd, buf + have, sizeof buf - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
    char *line = buf, *nl;
    while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
      uintptr_t lo, hi;
      char share;
      if (parse_line(line, nl, &lo, &hi, &share) && hi > a) {
        answer = 0;
        if (lo <= a) {
          *out = (pg_mapping_t){lo, hi, share == 's', 0, 0};
          parse_rest(line, nl, out);
          answer = 1;
        }
        done = true;
        break;
      }
      line = nl + 1;
    }
    size_t used = (size_t)(line - buf);
    if (used == 0 && have == sizeof buf) have = 0; /* a line longer than the buffer: drop it */
    memmove(buf, line, have - used);
    have -= used;
  }
  close(fd);
  if (answer < 0 && !done) answer = 0; /* past the last mapping */
  return answer;
}

int pg_maps_scan_is_shared(const void *p) {
  pg_mapping_t m;
  int r = scan_query(p, &m);
  return r > 0 ? m.shared : -1;
}

int pg_maps_is_shared(const void *p) {
  pg_mapping_t m;
  int r = pg_maps_query(p, &m);
  return r > 0 ? m.shared : -1;
}

int pg_maps_query(const void *p, pg_mapping_t *out) {
  if (!atomic_load_explicit(&g_no_ioctl, memory_order_relaxed)) {
    int fd = maps_fd();
    if (fd >= 0) {
      struct pg_procmap_query q;
      memset(&q, 0, sizeof q);
      q.size = sizeof q;
      q.query_addr = (uint64_t)(uintptr_t)p;
      if (ioctl(fd, PG_PROCMAP_QUERY, &q) == 0) {
        atomic_fetch_add_explicit(&g_queries, 1, memory_order_relaxed);
        *out = (pg_mapping_t){(uintptr_t)q.vma_start, (uintptr_t)q.vma_end,
                              (q.vma_flags & PG_PROCMAP_VMA_SHARED) != 0, q.inode == 0,
                              q.vma_page_size};
        return 1;
      }
      if (errno == ENOENT) { /* no mapping covers p */
        atomic_fetch_add_explicit(&g_queries, 1, memory_order_relaxed);
        return 0;
      }
      if (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)
        atomic_store_explicit(&g_no_ioctl, 1, memory_order_relaxed);
    }
  }
  return scan_query(p, out);
}

pg_maps_counts_t pg_maps_counts(void) {
  return (pg_maps_counts_t){
      .queries = atomic_load_explicit(&g_queries, memory_order_relaxed),
      .scans = atomic_load_explicit(&g_scans, memory_order_relaxed),
      .opens = atomic_load_explicit(&g_opens, memory_order_relaxed),
  };
}
