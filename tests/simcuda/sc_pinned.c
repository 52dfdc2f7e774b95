/* sc_pinned.c: pinned host memory (the driver's cuMemHostAlloc/Register and friends, pointer
 * attributes, and so the runtime's cudaHostAlloc/Register, ...) and how the simulated device
 * reaches it (simcuda_dma, sc_dma_copy, sc_dma_set, the word operations). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sc_internal.h"
#include "sc_engine.h"
#include "sc_uring.h"

/* The simulated device reaches pinned memory as a copy engine does: never through the CPU's view
 * of it, so CPU page protections that pinguard puts on that view never stop the device. How:
 *   - cudaHostAlloc: a memfd mapped twice (the driver maps its own allocations shared); the
 *     device uses the second mapping, the alias.
 *   - cudaHostRegister of MAP_SHARED memory: mremap(p, 0, n, MREMAP_MAYMOVE|MREMAP_FIXED), which
 *     maps the same shared pages a second time, as the alias.
 *   - cudaHostRegister of private memory (malloc, anonymous mmap): the mapping is left as it is
 *     (private stays private, /proc/self/maps unchanged) and its pages are pinned as io_uring
 *     fixed buffers (sc_uring.h): copies and memsets reach them through the pins, as DMA does.
 *     A kernel body, which needs a pointer, gets a view (simcuda_dma): a snapshot of the range
 *     taken through the pins at its first simcuda_dma of it, whose changed bytes are written back
 *     through the pins when the body returns.
 *   - Where io_uring is unavailable (or a range cannot be pinned that way), private pieces fall
 *     back to being replaced by memfd pages holding the same bytes (map the memfd as the alias,
 *     copy the contents, map it again elsewhere, then mremap(MREMAP_FIXED) that mapping onto the
 *     hull so the swap is one atomic step), said once on stderr. The hull is then MAP_SHARED, also
 *     after cudaHostUnregister.
 * The kind of each piece of the hull is read from /proc/self/maps. */

typedef enum { SC_REGION_HOSTALLOC, SC_REGION_REGISTERED } sc_region_kind;

typedef struct sc_region {
  uintptr_t base; /* what the caller sees */
  size_t size;
  uintptr_t hull; /* page-aligned cover of [base, base + size) */
  size_t hull_len;
  char *alias; /* the device's view of [hull, hull + hull_len), or NULL when pinned */
  sc_pin pin;  /* pin.slot >= 0: [hull, hull + hull_len) pinned, reached through io_uring */
  uint64_t gen; /* which registration this is (kernel views name it) */
  unsigned flags;
  sc_region_kind kind;
  int device; /* current when it was allocated or registered (cudaPointerGetAttributes) */
} sc_region;

/* Sorted by base; ranges never overlap. Readers: classification and DMA translation (workers
 * hold the read side for the duration of one copy, so an unregister cannot unmap an alias
 * under a running copy). Writers: register/unregister/alloc/free. */
static pthread_rwlock_t sc_regions_lock = PTHREAD_RWLOCK_INITIALIZER;
static sc_region *sc_regions;
static size_t sc_nregions, sc_regions_cap;

static size_t sc_page(void) {
  static atomic_size_t page; /* any thread may be first; all compute the same value */
  size_t p = atomic_load_explicit(&page, memory_order_relaxed);
  if (!p) {
    p = (size_t)sysconf(_SC_PAGESIZE);
    atomic_store_explicit(&page, p, memory_order_relaxed);
  }
  return p;
}

/* Index of the first region whose end is above p. Caller holds the lock. */
static size_t sc_region_lower(uintptr_t p) {
  size_t lo = 0, hi = sc_nregions;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sc_regions[mid].base + sc_regions[mid].size <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static sc_region *sc_region_find(uintptr_t p) {
  size_t i = sc_region_lower(p);
  if (i < sc_nregions && sc_regions[i].base <= p) return &sc_regions[i];
  return NULL;
}

static bool sc_region_overlaps(uintptr_t base, size_t size) {
  size_t i = sc_region_lower(base);
  return i < sc_nregions && sc_regions[i].base < base + size;
}

static bool sc_region_insert(const sc_region *r) {
  if (sc_nregions == sc_regions_cap) {
    size_t cap = sc_regions_cap ? sc_regions_cap * 2 : 64;
    sc_region *nr = realloc(sc_regions, cap * sizeof *nr);
    if (!nr) return false;
    sc_regions = nr;
    sc_regions_cap = cap;
  }
  size_t i = sc_region_lower(r->base);
  memmove(&sc_regions[i + 1], &sc_regions[i], (sc_nregions - i) * sizeof *sc_regions);
  sc_regions[i] = *r;
  sc_nregions++;
  return true;
}

static void sc_region_remove(sc_region *r) {
  size_t i = (size_t)(r - sc_regions);
  memmove(&sc_regions[i], &sc_regions[i + 1], (sc_nregions - i - 1) * sizeof *sc_regions);
  sc_nregions--;
}

/* ---- translation ----------------------------------------------------------------------- */
sc_mem_kind sc_classify(const void *p) {
  if (sc_arena_contains(p)) return SC_MEM_DEVICE;
  pthread_rwlock_rdlock(&sc_regions_lock);
  bool pinned = sc_region_find((uintptr_t)p) != NULL;
  pthread_rwlock_unlock(&sc_regions_lock);
  return pinned ? SC_MEM_PINNED : SC_MEM_PAGEABLE;
}

/* Where the device finds host address p: a pointer it may use directly (p: device, unpinned or
 * aliased memory), or a pin through which addr is reached. */
typedef struct sc_loc {
  char *p;
  const sc_pin *pin; /* non-NULL: reach addr through the pin (p is meaningless) */
  uintptr_t addr;
} sc_loc;

static bool sc_dma_failed_said;

static void sc_dma_check(bool ok) {
  if (!ok && !__atomic_exchange_n(&sc_dma_failed_said, true, __ATOMIC_RELAXED))
    fprintf(stderr, "simcuda: a DMA through io_uring failed (%s); the bytes were not moved\n",
            strerror(errno));
}

/* Where the device finds ptr, and how many bytes from ptr stay within the same translation.
 * Caller holds the read lock (the pin stays valid as long as it does). */
static sc_loc sc_translate_span(const void *ptr, size_t n, size_t *span) {
  uintptr_t p = (uintptr_t)ptr;
  size_t i = sc_region_lower(p);
  if (i < sc_nregions && sc_regions[i].base <= p) {
    const sc_region *r = &sc_regions[i];
    size_t left = r->base + r->size - p;
    *span = n < left ? n : left;
    if (r->pin.slot >= 0) return (sc_loc){.pin = &r->pin, .addr = p};
    return (sc_loc){.p = r->alias + (p - r->hull)};
  }
  /* Unpinned: identity up to the next pinned range. */
  size_t left = i < sc_nregions ? sc_regions[i].base - p : SIZE_MAX;
  *span = n < left ? n : left;
  return (sc_loc){.p = (char *)ptr};
}

void sc_dma_copy(void *dst, const void *src, size_t n) {
  pthread_rwlock_rdlock(&sc_regions_lock);
  size_t done = 0;
  while (done < n) {
    size_t ds, ss;
    sc_loc d = sc_translate_span((char *)dst + done, n - done, &ds);
    sc_loc s = sc_translate_span((const char *)src + done, n - done, &ss);
    size_t k = ds < ss ? ds : ss;
    if (!d.pin && !s.pin) memmove(d.p, s.p, k);
    else if (d.pin && s.pin) sc_dma_check(sc_uring_copy(d.pin, d.addr, s.pin, s.addr, k));
    else if (d.pin) sc_dma_check(sc_uring_write(d.pin, d.addr, s.p, k));
    else sc_dma_check(sc_uring_read(s.pin, s.addr, d.p, k));
    done += k;
  }
  pthread_rwlock_unlock(&sc_regions_lock);
}

void sc_dma_set(void *dst, int value, size_t n) {
  pthread_rwlock_rdlock(&sc_regions_lock);
  size_t done = 0;
  while (done < n) {
    size_t span;
    sc_loc d = sc_translate_span((char *)dst + done, n - done, &span);
    if (d.pin) sc_dma_check(sc_uring_fill(d.pin, d.addr, value, span));
    else memset(d.p, value, span);
    done += span;
  }
  pthread_rwlock_unlock(&sc_regions_lock);
}

uint64_t sc_dma_load_word(const void *p, size_t size) {
  pthread_rwlock_rdlock(&sc_regions_lock);
  size_t span;
  sc_loc at = sc_translate_span(p, size, &span);
  uint64_t v = 0;
  if (at.pin) {
    uint32_t w = 0;
    sc_dma_check(sc_uring_read(at.pin, at.addr, size == 8 ? (void *)&v : (void *)&w, size));
    if (size != 8) v = w;
  } else if (size == 8) {
    v = __atomic_load_n((const volatile uint64_t *)at.p, __ATOMIC_ACQUIRE);
  } else {
    v = __atomic_load_n((const volatile uint32_t *)at.p, __ATOMIC_ACQUIRE);
  }
  pthread_rwlock_unlock(&sc_regions_lock);
  return v;
}

void sc_dma_store_word(void *p, uint64_t value, size_t size) {
  pthread_rwlock_rdlock(&sc_regions_lock);
  size_t span;
  sc_loc at = sc_translate_span(p, size, &span);
  uint32_t w = (uint32_t)value;
  if (at.pin)
    sc_dma_check(sc_uring_write(at.pin, at.addr, size == 8 ? (void *)&value : (void *)&w, size));
  else if (size == 8)
    __atomic_store_n((volatile uint64_t *)at.p, value, __ATOMIC_RELEASE);
  else
    __atomic_store_n((volatile uint32_t *)at.p, w, __ATOMIC_RELEASE);
  pthread_rwlock_unlock(&sc_regions_lock);
}

/* Whether the host bytes [p, p + n) are all mapped: msync walks the range's mappings and fails
 * with ENOMEM at a hole, in one system call whatever the size (and MS_ASYNC writes nothing back).
 * Called directly, so that a tool that wraps msync does not see simcuda's own check. */
static bool sc_host_mapped(uintptr_t p, size_t n) {
  uintptr_t lo = p & ~(uintptr_t)(sc_page() - 1);
  return syscall(SYS_msync, (void *)lo, (size_t)(p + n - lo), MS_ASYNC) == 0;
}

bool sc_range_ok(const void *ptr, size_t n) {
  uintptr_t p = (uintptr_t)ptr;
  if (n == 0) return true;
  if (!ptr || p + n - 1 < p) return false; /* NULL, or past the end of the address space */
  if (sc_arena_contains(ptr)) {
    void *base;
    size_t size;
    return sc_arena_lookup(ptr, &base, &size) && n <= (uintptr_t)base + size - p;
  }
  /* Pinned memory: to the end of its range, or of ranges that touch it (the "64 MiB pieces"
   * case). Pageable memory: mapped, to the end. */
  pthread_rwlock_rdlock(&sc_regions_lock);
  size_t i = sc_region_lower(p);
  uintptr_t at = p, end = p + n;
  bool pinned = i < sc_nregions && sc_regions[i].base <= p;
  while (at < end && i < sc_nregions && sc_regions[i].base <= at) {
    at = sc_regions[i].base + sc_regions[i].size;
    i++;
  }
  pthread_rwlock_unlock(&sc_regions_lock);
  if (pinned) return at >= end;
  return !sc_arena_contains((void *)(end - 1)) && sc_host_mapped(p, n);
}

/* ---- kernel views of pinned private memory ---------------------------------------------- */
/* A kernel body needs a pointer, and no pointer reaches private pages except through the CPU's
 * own mapping. So a body's simcuda_dma of a pinned private range gets a view: a memfd filled
 * through the pins, and a snapshot of what it held. When the body returns (sc_dma_views_flush),
 * the bytes that differ from the snapshot are written back through the pins, run by run, so the
 * CPU's concurrent stores to other bytes survive. Views belong to the thread that made them. */
#define SC_MAX_VIEWS 8
#define SC_MAX_RUNS 8 /* per page; more and the page's changed span is written in one piece */

typedef struct sc_view {
  uintptr_t base, hull;
  size_t len;
  uint64_t gen;
  int fd;
  char *map, *snap;
} sc_view;

typedef struct sc_views {
  int n;
  sc_view v[SC_MAX_VIEWS];
} sc_views;

static __thread sc_views *sc_my_views; /* one pointer of static TLS; the list is allocated */
static pthread_key_t sc_views_key;       /* frees the thread's list when the thread ends */
static pthread_once_t sc_views_once = PTHREAD_ONCE_INIT;
static void sc_views_key_init(void) { (void)pthread_key_create(&sc_views_key, free); }

static sc_views *sc_views_alloc(void) {
  sc_views *vs = calloc(1, sizeof *vs);
  if (!vs) return NULL;
  pthread_once(&sc_views_once, sc_views_key_init);
  (void)pthread_setspecific(sc_views_key, vs);
  return sc_my_views = vs;
}

static void sc_view_close(sc_view *v) {
  if (v->map) munmap(v->map, v->len);
  if (v->snap) munmap(v->snap, v->len);
  if (v->fd >= 0) close(v->fd);
}

/* Opens a view of r (caller holds the read lock). NULL when it cannot. */
static char *sc_view_open(const sc_region *r) {
  sc_views *vs = sc_my_views;
  if (!vs && !(vs = sc_views_alloc())) return NULL;
  for (int i = 0; i < vs->n; i++)
    if (vs->v[i].base == r->base && vs->v[i].gen == r->gen) return vs->v[i].map;
  if (vs->n == SC_MAX_VIEWS) return NULL;
  sc_view v = {.base = r->base, .hull = r->hull, .len = r->hull_len, .gen = r->gen,
               .fd = memfd_create("simcuda-kernel-view", MFD_CLOEXEC)};
  bool ok = v.fd >= 0 && ftruncate(v.fd, (off_t)v.len) == 0 &&
            sc_uring_to_fd(&r->pin, r->hull, v.fd, 0, v.len);
  if (ok) {
    v.map = mmap(NULL, v.len, PROT_READ | PROT_WRITE, MAP_SHARED, v.fd, 0);
    v.snap = mmap(NULL, v.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v.map == MAP_FAILED) v.map = NULL;
    if (v.snap == MAP_FAILED) v.snap = NULL;
    ok = v.map && v.snap;
  }
  if (!ok) {
    sc_view_close(&v);
    return NULL;
  }
  memcpy(v.snap, v.map, v.len);
  vs->v[vs->n++] = v;
  return v.map;
}

/* Writes the bytes of [at, at + m) that the body changed back through r's pins. */
static void sc_view_write_page(const sc_region *r, const sc_view *v, size_t at, size_t m) {
  size_t runs[SC_MAX_RUNS][2], nruns = 0, first = SIZE_MAX, last = 0;
  for (size_t i = at; i < at + m; i++) {
    if (v->map[i] == v->snap[i]) continue;
    if (first == SIZE_MAX) first = i;
    if (nruns && runs[nruns - 1][1] == i) {
      runs[nruns - 1][1] = i + 1;
    } else if (nruns < SC_MAX_RUNS) {
      runs[nruns][0] = i, runs[nruns][1] = i + 1;
      nruns++;
    } else {
      nruns = SC_MAX_RUNS + 1; /* too many: one span */
    }
    last = i + 1;
  }
  if (first == SIZE_MAX) return;
  if (nruns > SC_MAX_RUNS) {
    sc_dma_check(sc_uring_from_fd(&r->pin, r->hull + first, v->fd, (off_t)first, last - first));
    return;
  }
  for (size_t k = 0; k < nruns; k++)
    sc_dma_check(sc_uring_from_fd(&r->pin, r->hull + runs[k][0], v->fd, (off_t)runs[k][0],
                                  runs[k][1] - runs[k][0]));
}

void sc_dma_views_flush(void) {
  sc_views *vs = sc_my_views;
  if (!vs || !vs->n) return;
  pthread_rwlock_rdlock(&sc_regions_lock);
  for (int i = 0; i < vs->n; i++) {
    const sc_view *v = &vs->v[i];
    const sc_region *r = sc_region_find(v->base);
    if (!r || r->base != v->base || r->gen != v->gen || r->pin.slot < 0) continue; /* gone */
    for (size_t at = 0; at < v->len; at += sc_page()) {
      size_t m = v->len - at < sc_page() ? v->len - at : sc_page();
      if (memcmp(v->map + at, v->snap + at, m)) sc_view_write_page(r, v, at, m);
    }
  }
  pthread_rwlock_unlock(&sc_regions_lock);
  for (int i = 0; i < vs->n; i++) sc_view_close(&vs->v[i]);
  vs->n = 0;
}

SC_API void *simcuda_dma(const void *host_ptr) {
  if (sc_my_views && sc_my_views->n == SC_MAX_VIEWS) sc_dma_views_flush();
  pthread_rwlock_rdlock(&sc_regions_lock);
  size_t span;
  sc_loc at = sc_translate_span(host_ptr, 1, &span);
  void *d = at.p;
  if (at.pin) {
    const sc_region *r = sc_region_find((uintptr_t)host_ptr);
    char *view = sc_view_open(r);
    if (!view && !__atomic_exchange_n(&sc_dma_failed_said, true, __ATOMIC_RELAXED))
      fprintf(stderr, "simcuda: no kernel view of pinned memory at %p\n", host_ptr);
    d = view ? view + ((uintptr_t)host_ptr - r->hull) : NULL;
  }
  pthread_rwlock_unlock(&sc_regions_lock);
  return d;
}

/* ---- building aliases ------------------------------------------------------------------ */
typedef struct sc_vma {
  uintptr_t start, end;
  int prot;
  bool shared;
} sc_vma;

/* The mappings covering [lo, hi), clipped to it, in address order. Returns how many were found
 * (at most max), or -1 when the range is not fully mapped. */
static int sc_read_vmas(uintptr_t lo, uintptr_t hi, sc_vma *out, int max) {
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return -1;
  char line[512];
  int n = 0;
  uintptr_t covered = lo;
  while (fgets(line, sizeof line, f) && covered < hi) {
    unsigned long s, e;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3) continue;
    if (e <= covered || s >= hi) continue;
    if (s > covered || n == max) break; /* a hole, or too fragmented */
    uintptr_t ps = covered, pe = e < hi ? e : hi;
    int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
               (perms[2] == 'x' ? PROT_EXEC : 0);
    out[n++] = (sc_vma){.start = ps, .end = pe, .prot = prot, .shared = perms[3] == 's'};
    covered = pe;
  }
  fclose(f);
  return covered >= hi ? n : -1;
}

/* Copies the hull's current bytes at src into dst. Through /proc/self/mem: it ignores page
 * protections on private mappings, and it is not an instrumented load, so AddressSanitizer and
 * ThreadSanitizer do not object to reading the neighbours (heap redzones, other threads' objects)
 * that share the hull's pages. A plain memcpy is the fallback where /proc is unavailable. */
static bool sc_copy_out(void *dst, uintptr_t src, size_t len, int prot) {
  int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    size_t done = 0;
    while (done < len) {
      ssize_t r = pread(fd, (char *)dst + done, len - done, (off_t)(src + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      done += (size_t)r;
    }
    close(fd);
    if (done == len) return true;
  }
  if (!(prot & PROT_READ)) return false;
  memcpy(dst, (const void *)src, len);
  return true;
}

/* Gives the shared piece [v->start, v->end) a second mapping at at. */
static bool sc_alias_shared(const sc_vma *v, char *at) {
  size_t len = v->end - v->start;
  void *r = mremap((void *)v->start, 0, len, MREMAP_MAYMOVE | MREMAP_FIXED, at);
  if (r == MAP_FAILED) return false;
  /* The alias inherits the piece's protections; the device always reads and writes. */
  mprotect(at, len, PROT_READ | PROT_WRITE);
  return true;
}

/* Replaces the private piece with memfd pages holding the same bytes, mapped at `at` too. */
static bool sc_alias_private(const sc_vma *v, char *at) {
  size_t len = v->end - v->start;
  int fd = memfd_create("simcuda-pinned", MFD_CLOEXEC);
  if (fd < 0) return false;
  bool ok = false;
  if (ftruncate(fd, (off_t)len) != 0) goto out;
  if (mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) goto out;
  if (!sc_copy_out(at, v->start, len, v->prot)) goto out;
  void *tmp = mmap(NULL, len, v->prot, MAP_SHARED, fd, 0);
  if (tmp == MAP_FAILED) goto out;
  /* The atomic swap: the hull's private pages are replaced by the memfd pages in one call. */
  if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)v->start) == MAP_FAILED) {
    munmap(tmp, len);
    goto out;
  }
  ok = true;
out:
  close(fd);
  return ok;
}

#define SC_MAX_VMAS 64

/* Pins the private hull [hull, hull + len) whose pieces are vmas[0..n). The pin is taken for
 * writing, as the driver takes it; pieces the CPU may not write at the moment (a range the
 * program made read-only, or pinguard guarded) are opened for the call and closed again, by
 * system call (not through a wrapper). */
static bool sc_pin_private(const sc_vma *vmas, int n, uintptr_t hull, size_t len, sc_pin *pin) {
  for (int i = 0; i < n; i++)
    if (vmas[i].prot != (PROT_READ | PROT_WRITE))
      syscall(SYS_mprotect, (void *)vmas[i].start, vmas[i].end - vmas[i].start,
              PROT_READ | PROT_WRITE);
  bool ok = sc_uring_pin(hull, len, pin);
  int e = errno;
  for (int i = 0; i < n; i++)
    if (vmas[i].prot != (PROT_READ | PROT_WRITE))
      syscall(SYS_mprotect, (void *)vmas[i].start, vmas[i].end - vmas[i].start, vmas[i].prot);
  errno = e;
  return ok;
}

/* Says once that private memory is being made shared, and why. */
static void sc_say_swap(const char *why) {
  static bool said;
  if (__atomic_exchange_n(&said, true, __ATOMIC_RELAXED)) return;
  fprintf(stderr,
          "simcuda: %s: registered private memory is replaced by shared memfd pages holding the "
          "same bytes (it is MAP_SHARED from now on, also in a forked child)\n", why);
}

/* Gives r (hull and hull_len set) the means by which the device reaches it: r->pin for an
 * all-private hull, else r->alias. Caller holds the write lock. */
static bool sc_reach_build(sc_region *r) {
  uintptr_t hull = r->hull;
  size_t len = r->hull_len;
  r->alias = NULL;
  r->pin.slot = -1;
  sc_vma vmas[SC_MAX_VMAS];
  int n = sc_read_vmas(hull, hull + len, vmas, SC_MAX_VMAS);
  if (n <= 0) return false;
  bool any_shared = false, any_private = false;
  for (int i = 0; i < n; i++) {
    any_shared |= vmas[i].shared;
    any_private |= !vmas[i].shared;
  }
  if (!any_shared) {
    const char *why = NULL;
    if (!sc_uring_available(&why)) {
      sc_say_swap(why);
    } else if (sc_pin_private(vmas, n, hull, len, &r->pin)) {
      return true;
    } else {
      static char buf[96];
      static bool said;
      if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
        snprintf(buf, sizeof buf, "pinning through io_uring failed (%s)", strerror(errno));
      sc_say_swap(buf);
    }
  } else if (any_private) {
    sc_say_swap("a registered range spans shared and private mappings");
  }
  char *alias = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (alias == MAP_FAILED) return false;
  for (int i = 0; i < n; i++) {
    char *at = alias + (vmas[i].start - hull);
    bool ok = vmas[i].shared ? sc_alias_shared(&vmas[i], at) : sc_alias_private(&vmas[i], at);
    if (!ok) {
      /* Pieces already swapped keep their (identical) contents; only the alias goes. */
      munmap(alias, len);
      return false;
    }
  }
  r->alias = alias;
  return true;
}

/* Undoes sc_reach_build: unpins, or unmaps the alias. No DMA may be using r (its region is
 * out of the table, or never was in it). */
static void sc_reach_drop(const sc_region *r) {
  if (r->pin.slot >= 0) sc_uring_unpin(&r->pin);
  if (r->alias) munmap(r->alias, r->hull_len);
}

/* ---- API ------------------------------------------------------------------------------- */
cudaError_t sc_host_alloc(void **pHost, size_t size, unsigned int flags) {
  if (!pHost) return sc_ret(cudaErrorInvalidValue);
  if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
    return sc_ret(cudaErrorInvalidValue);
  if (size == 0) {
    *pHost = NULL;
    return cudaSuccess;
  }
  size_t len = (size + sc_page() - 1) & ~(sc_page() - 1);
  int fd = memfd_create("simcuda-hostalloc", MFD_CLOEXEC);
  if (fd < 0) return sc_ret(cudaErrorMemoryAllocation);
  void *host = MAP_FAILED, *alias = MAP_FAILED;
  if (ftruncate(fd, (off_t)len) == 0) {
    host = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (host == MAP_FAILED || alias == MAP_FAILED) {
    if (host != MAP_FAILED) munmap(host, len);
    if (alias != MAP_FAILED) munmap(alias, len);
    return sc_ret(cudaErrorMemoryAllocation);
  }
  sc_region r = {.base = (uintptr_t)host, .size = size, .hull = (uintptr_t)host, .hull_len = len,
                 .alias = alias, .pin = {.slot = -1}, .flags = flags,
                 .kind = SC_REGION_HOSTALLOC, .device = sc_device_current()};
  pthread_rwlock_wrlock(&sc_regions_lock);
  bool ok = sc_region_insert(&r);
  pthread_rwlock_unlock(&sc_regions_lock);
  if (!ok) {
    munmap(host, len);
    munmap(alias, len);
    return sc_ret(cudaErrorMemoryAllocation);
  }
  *pHost = host;
  return cudaSuccess;
}

/* SIMCUDA_UNPIN_RETURN_US: the caller may be descheduled between the runtime releasing the
 * memory and the call returning; meanwhile another thread can be handed the same address
 * (cudaHostAlloc) or register it again (cudaHostRegister). A delay here makes that interleaving
 * happen on demand. */
static void sc_unpin_return_delay(void) {
  uint64_t ns = sc_cfg.unpin_return_ns;
  if (!ns) return;
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
}

cudaError_t sc_free_host(void *ptr) {
  if (!ptr) return cudaSuccess;
  /* Like the real driver: wait for all queued work, so no copy runs into unmapped memory. */
  sc_device_sync_all();
  pthread_rwlock_wrlock(&sc_regions_lock);
  sc_region *r = sc_region_find((uintptr_t)ptr);
  if (!r || r->base != (uintptr_t)ptr || r->kind != SC_REGION_HOSTALLOC) {
    pthread_rwlock_unlock(&sc_regions_lock);
    return sc_ret(cudaErrorInvalidValue);
  }
  sc_region gone = *r;
  sc_region_remove(r);
  pthread_rwlock_unlock(&sc_regions_lock);
  munmap(gone.alias, gone.hull_len);
  munmap((void *)gone.hull, gone.hull_len);
  sc_unpin_return_delay();
  return cudaSuccess;
}

cudaError_t sc_host_register(void *ptr, size_t size, unsigned int flags) {
  if (!ptr || size == 0) return sc_ret(cudaErrorInvalidValue);
  if (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped |
                          cudaHostRegisterIoMemory | cudaHostRegisterReadOnly))
    return sc_ret(cudaErrorInvalidValue);
  uintptr_t base = (uintptr_t)ptr;
  uintptr_t hull = base & ~(sc_page() - 1);
  size_t hull_len = ((base + size + sc_page() - 1) & ~(sc_page() - 1)) - hull;
  pthread_rwlock_wrlock(&sc_regions_lock);
  cudaError_t err = cudaSuccess;
  static uint64_t gens;
  sc_region r = {.base = base, .size = size, .hull = hull, .hull_len = hull_len, .flags = flags,
                 .kind = SC_REGION_REGISTERED, .device = sc_device_current(), .gen = ++gens};
  if (sc_region_overlaps(base, size)) {
    err = cudaErrorHostMemoryAlreadyRegistered;
  } else if (!sc_reach_build(&r)) {
    err = cudaErrorInvalidValue; /* not (fully) mapped memory */
  } else if (!sc_region_insert(&r)) {
    sc_reach_drop(&r);
    err = cudaErrorMemoryAllocation;
  }
  pthread_rwlock_unlock(&sc_regions_lock);
  return err == cudaSuccess ? cudaSuccess : sc_ret(err);
}

cudaError_t sc_host_unregister(void *ptr) {
  if (!ptr) return sc_ret(cudaErrorInvalidValue);
  sc_device_sync_all(); /* as cudaFreeHost: no in-flight copy loses its alias */
  pthread_rwlock_wrlock(&sc_regions_lock);
  sc_region *r = sc_region_find((uintptr_t)ptr);
  if (!r || r->base != (uintptr_t)ptr || r->kind != SC_REGION_REGISTERED) {
    pthread_rwlock_unlock(&sc_regions_lock);
    return sc_ret(cudaErrorHostMemoryNotRegistered);
  }
  sc_region gone = *r;
  sc_region_remove(r);
  pthread_rwlock_unlock(&sc_regions_lock);
  sc_reach_drop(&gone);
  sc_unpin_return_delay();
  return cudaSuccess;
}

cudaError_t sc_host_get_device_pointer(void **pDevice, void *pHost, unsigned int flags) {
  if (!pDevice || flags != 0) return sc_ret(cudaErrorInvalidValue);
  if (sc_classify(pHost) != SC_MEM_PINNED) return sc_ret(cudaErrorInvalidValue);
  *pDevice = pHost; /* unified addressing: the device uses the host address */
  return cudaSuccess;
}

SC_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) {
  SC_ENTER("cudaHostGetFlags");
  if (!pFlags) return sc_ret(cudaErrorInvalidValue);
  pthread_rwlock_rdlock(&sc_regions_lock);
  sc_region *r = sc_region_find((uintptr_t)pHost);
  unsigned flags = r ? r->flags : 0;
  pthread_rwlock_unlock(&sc_regions_lock);
  if (!r) return sc_ret(cudaErrorInvalidValue);
  *pFlags = flags;
  return cudaSuccess;
}

cudaError_t sc_pointer_attributes(struct cudaPointerAttributes *attributes,
                                            const void *ptr) {
  if (!attributes) return sc_ret(cudaErrorInvalidValue);
  memset(attributes, 0, sizeof *attributes);
  /* As CUDA documents the device field: for device memory the device it resides on; for pinned
   * host memory the device that was current when it was allocated or registered. Pinned memory is
   * portable under unified addressing: every device reaches it at the host address, so the
   * device pointer is the host pointer whichever device asks. */
  switch (sc_classify(ptr)) {
  case SC_MEM_DEVICE:
    if (!sc_arena_lookup(ptr, NULL, NULL)) return sc_ret(cudaErrorInvalidValue);
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = sc_arena_device(ptr);
    attributes->devicePointer = (void *)ptr;
    attributes->hostPointer = NULL;
    break;
  case SC_MEM_PINNED: {
    pthread_rwlock_rdlock(&sc_regions_lock);
    sc_region *r = sc_region_find((uintptr_t)ptr);
    int dev = r ? r->device : 0;
    pthread_rwlock_unlock(&sc_regions_lock);
    attributes->type = cudaMemoryTypeHost;
    attributes->device = dev;
    attributes->devicePointer = (void *)ptr;
    attributes->hostPointer = (void *)ptr;
    break;
  }
  case SC_MEM_PAGEABLE:
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    break;
  }
  return cudaSuccess;
}
