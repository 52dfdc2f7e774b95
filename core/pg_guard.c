/* pg_guard.c: per-page counts of the in-flight GPU accesses guarding each page, and the mprotect
 * calls that follow from them. Pages are grouped in 2 MiB granules, hashed into striped locks, so
 * guarding two buffers never contends on one process-wide lock.
 *
 * Granules are never freed, and they are found through one open-addressed table that readers
 * search without a lock: the fault handler's first question ("is this fault ours?") must be
 * answerable on a tiny alternate signal stack, before it knows whether the interrupted stack is
 * healthy (pg_guard_claims).
 *
 * Why the fault handler may call into this file: the handler only runs for a fault on a page
 * this file protected, and no code in pinguard touches a guarded page while it holds a stripe
 * lock, so the faulting thread never already holds the lock it takes here. That includes malloc's
 * own bookkeeping, which may sit on a guarded shared edge page (guard_shared_edges): a granule is
 * allocated before its stripe lock is taken, and nothing allocates under one. Nothing here
 * allocates on the handler's paths (pg_guard_claims, pg_guard_owns, pg_guard_release,
 * pg_guard_refresh, pg_guard_step_* only look granules up; only pg_guard_on_begin creates them).
 *
 * Shared edges: a registered buffer carved from malloc's heap shares its partial first and last
 * pages with other objects. With guard_shared_edges those pages are guarded too, and a fault on
 * their other bytes is nobody's conflict: the handler opens the page for one instruction
 * (pg_guard_step_begin), the CPU single-steps it, and the trap closes the page again
 * (pg_guard_step_end). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pg_guard.h"
#include "pg_sink.h"
#include "pg_stats.h"
#include "pg_tracker.h"
#include "pg_page.h"

#define GRANULE_PAGES 512
#define STRIPES 16 /* all are held across fork(); ThreadSanitizer tracks at most 64 held locks */

/* PROT_STATE_UNKNOWN: the page's real protection may differ from what this file recorded (a
 * lock-free open raced a locked pass): the next apply() sets it again, whatever it wants. */
enum { PROT_STATE_RW = 0, PROT_STATE_READ = 1, PROT_STATE_NONE = 2, PROT_STATE_UNKNOWN = 3 };

/* How far a released page lets the CPU through: RELEASE_READS only lets reads past the device
 * writes counted on it (the page stays guarded against CPU writes while any device access does);
 * RELEASE_ALL lets every access through. */
enum { RELEASE_NONE = 0, RELEASE_READS = 1, RELEASE_ALL = 2 };

typedef struct granule {
  uintptr_t index;                 /* address / (page size * GRANULE_PAGES): the table key */
  uint16_t reads[GRANULE_PAGES];   /* in-flight device reads covering the page */
  uint16_t writes[GRANULE_PAGES];  /* in-flight device writes or unknown-direction accesses */
  uint8_t released[GRANULE_PAGES]; /* CPU let through until the counts drop to zero (RELEASE_*) */
  uint8_t stepping[GRANULE_PAGES]; /* open while this many threads single-step an instruction */
  /* On a shared edge page (guard_shared_edges), where the region bytes end and begin: the bytes
   * from tail_end up to head_begin are other data (0: no region ends / begins inside the page).
   * Written under the stripe lock, read lock-free by pg_guard_is_neighbour. */
  uint16_t tail_end[GRANULE_PAGES];
  uint16_t head_begin[GRANULE_PAGES];
  /* The protection this file last applied, and whether it ever protected the page. Written
   * under the stripe lock, read without it by pg_guard_claims (hence the atomic accesses). */
  uint8_t prot[GRANULE_PAGES];
  uint8_t ever[GRANULE_PAGES];
  /* Opened without the stripe lock by a fault that interrupted pinguard itself (a program's
   * signal handler touching a guarded page while its thread was inside pinguard, which may hold
   * this granule's stripe lock): pg_guard_open_unlocked mprotects the page and sets this; the
   * next locked pass folds it into `released` (fold_unlocked). Atomic accesses only. */
  uint8_t open_unlocked[GRANULE_PAGES];
  uint8_t never[GRANULE_PAGES]; /* a flag protocol's page (pg_guard_never): never protected */
  uint16_t begins[GRANULE_PAGES]; /* device accesses ever counted on the page (wrapping) */
} granule_t;

typedef struct stripe {
  pthread_mutex_t mu;
} stripe_t;

static stripe_t stripes[STRIPES];

/* Set while this thread holds a stripe lock or the probe lock: a fault taken then (in a signal
 * handler of the program's) must not take them again (pg_guard_thread_busy). */
static __thread uint8_t t_busy;
static void stripe_lock(stripe_t *st) {
  t_busy++;
  pthread_mutex_lock(&st->mu);
}
static void stripe_unlock(stripe_t *st) {
  pthread_mutex_unlock(&st->mu);
  t_busy--;
}
bool pg_guard_thread_busy(void) { return __atomic_load_n(&t_busy, __ATOMIC_RELAXED) != 0; }

/* Every granule ever created, by index: linear probing, insert-only (a granule lives for the
 * process), so a reader needs no lock. 2^16 granules of 2 MiB cover 128 GiB of guarded memory;
 * past that, new pages are simply not guarded. */
#define GTAB_BITS 16
#define GTAB_SIZE ((size_t)1 << GTAB_BITS)
static _Atomic(granule_t *) gtab[GTAB_SIZE];
static atomic_bool enabled;
static atomic_bool shared_edges; /* guard_shared_edges */
static size_t min_bytes;
static uintptr_t page_size;

/* Probe state per kind of pinned memory: 0 not probed, 1 works, -1 disabled. */
static atomic_int kind_state[PG_GUARD_KIND_COUNT];
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const kind_names[PG_GUARD_KIND_COUNT] = {
    "cudaHostAlloc memory", "cudaHostRegister'ed private memory",
    "cudaHostRegister'ed MAP_SHARED memory"};

__attribute__((constructor)) static void guard_setup(void) {
  for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&stripes[i].mu, NULL);
  page_size = pg_page_size();
}

static void budget_start(void);

void pg_guard_enable(size_t min, bool guard_shared_edges) {
  min_bytes = min;
  budget_start();
  atomic_store(&shared_edges, guard_shared_edges);
  atomic_store(&enabled, true);
  pg_tracker_set_hooks(pg_guard_on_begin, pg_guard_on_retire, NULL);
  /* A region under the threshold is never guarded (worth_guarding): its pieces skip the hooks. */
  pg_tracker_set_hook_min_region(min);
}

bool pg_guard_enabled(void) { return atomic_load_explicit(&enabled, memory_order_relaxed); }

pg_guard_kind_t pg_guard_kind_of(pg_pin_how_t how, unsigned region_flags) {
  if (how == PG_PIN_REGISTER)
    return (region_flags & PG_REGION_FLAG_SHARED) ? PG_GUARD_REGISTERED_SHARED
                                                  : PG_GUARD_REGISTERED_ANON;
  return PG_GUARD_HOST_ALLOC;
}

/* ---- the mapping budget -------------------------------------------------------------------- */
/* Each protecting mprotect of a run inside a mapping may split it in three: two more mappings,
 * and the driver's mappings never merge again. The count is an estimate from the mprotect calls
 * (an upper bound), corrected by counting the lines of /proc/self/maps when it reaches a limit
 * (at most every 100 ms: with 65,530 mappings a count takes milliseconds). */
#define MEASURE_EVERY_NS 100000000ull
static size_t map_budget;                /* guard_map_budget; 0: none */
static long map_limit;                   /* max_map_count less its margin */
static long maps_at_start = -1;          /* when guards started */
static atomic_long maps_measured;        /* at the last count */
static atomic_long protects_since;       /* protecting mprotects since that count */
static _Atomic uint64_t measured_at_ns;
static atomic_bool warned_budget;

static long read_long_file(const char *path) {
  char buf[32];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  return strtol(buf, NULL, 10);
}

/* The process's mappings now: the lines of /proc/self/maps (raw reads: read(2) is interposed). */
static long count_maps(void) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[8192];
  long lines = 0, n;
  while ((n = syscall(SYS_read, fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    for (long i = 0; i < n; i++) lines += buf[i] == '\n';
  close(fd);
  return lines;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pg_guard_set_map_budget(size_t budget) { map_budget = budget; }

static void budget_start(void) {
  long max = read_long_file("/proc/sys/vm/max_map_count");
  if (max <= 0) max = 65530;
  long margin = max / 8 > 256 ? max / 8 : 256;
  map_limit = max - margin;
  maps_at_start = count_maps();
  atomic_store(&maps_measured, maps_at_start);
  atomic_store(&measured_at_ns, now_ns());
}

static bool within(long total) {
  if (total + 2 > map_limit) return false;
  return !map_budget || maps_at_start < 0 || total + 2 - maps_at_start <= (long)map_budget;
}

/* Whether one more guard fits; counts and warns when it does not. */
static bool budget_allows(void) {
  long est = atomic_load_explicit(&maps_measured, memory_order_relaxed) +
             2 * atomic_load_explicit(&protects_since, memory_order_relaxed);
  if (within(est)) return true;
  uint64_t t = now_ns(), last = atomic_load_explicit(&measured_at_ns, memory_order_relaxed);
  if (t - last >= MEASURE_EVERY_NS &&
      atomic_compare_exchange_strong(&measured_at_ns, &last, t)) {
    long n = count_maps();
    if (n >= 0) {
      atomic_store_explicit(&protects_since, 0, memory_order_relaxed);
      atomic_store_explicit(&maps_measured, n, memory_order_relaxed);
      if (within(n)) return true;
    }
  }
  pg_stat_inc(PG_STAT_GUARD_SKIPPED_MAPS);
  if (!atomic_exchange(&warned_budget, true)) {
    char line[300];
    int k = snprintf(line, sizeof line,
                     "pinguard: WARNING: guard pages reached the mapping budget (%s); new guards "
                     "are skipped and counted (guard_skipped_maps), every other check goes on\n",
                     map_budget ? "guard_map_budget" : "an eighth of vm.max_map_count kept free");
    pg_write_all(STDERR_FILENO, line, (size_t)k);
  }
  return false;
}

/* ---- granules ------------------------------------------------------------------------------ */
static uintptr_t granule_bytes(void) { return page_size * GRANULE_PAGES; }
static stripe_t *stripe_of(uintptr_t index) { return &stripes[(index * 0x9E3779B1u) % STRIPES]; }

static size_t gtab_slot(uintptr_t index) {
  return (size_t)((index * 0x9E3779B97F4A7C15ull) >> (64 - GTAB_BITS));
}

/* Lock-free: safe from the fault handler, on any stack. */
static granule_t *granule_find(uintptr_t index) {
  for (size_t i = gtab_slot(index), probes = 0; probes < GTAB_SIZE;
       i = (i + 1) & (GTAB_SIZE - 1), probes++) {
    granule_t *g = atomic_load_explicit(&gtab[i], memory_order_acquire);
    if (!g) return NULL;
    if (g->index == index) return g;
  }
  return NULL;
}

/* Granules have pages of their own: never on a heap page that a shared edge guard may protect,
 * so the fault handler can always read them. */
static granule_t *granule_alloc(void) {
  void *p = mmap(NULL, sizeof(granule_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Under the granule's stripe lock, so no other thread creates the same index; threads creating
 * other indexes may race for a slot, hence the compare-and-swap. */
static granule_t *granule_create(uintptr_t index, granule_t *g) {
  if (!g) return NULL;
  g->index = index;
  for (size_t i = gtab_slot(index), probes = 0; probes < GTAB_SIZE;
       i = (i + 1) & (GTAB_SIZE - 1), probes++) {
    granule_t *empty = NULL;
    if (atomic_compare_exchange_strong_explicit(&gtab[i], &empty, g, memory_order_release,
                                                memory_order_relaxed))
      return g;
  }
  return NULL; /* table full: these pages go unguarded (the caller frees g) */
}

static uint8_t prot_of(const granule_t *g, size_t i) {
  return __atomic_load_n(&g->prot[i], __ATOMIC_RELAXED);
}

/* Folds a lock-free open (pg_guard_open_unlocked) into the locked state: the page stays let
 * through until its accesses retire, as after an audit report, and its recorded protection is
 * unknown (the open's mprotect may have come before or after this file's last one). Stripe lock
 * held. */
static void fold_unlocked(granule_t *g, size_t i) {
  if (!__atomic_load_n(&g->open_unlocked[i], __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&g->open_unlocked[i], 0, __ATOMIC_RELAXED);
  if (g->reads[i] || g->writes[i]) g->released[i] = RELEASE_ALL;
  __atomic_store_n(&g->prot[i], PROT_STATE_UNKNOWN, __ATOMIC_RELEASE);
}

static int desired(const granule_t *g, size_t i) {
  if (g->released[i] == RELEASE_ALL || g->stepping[i] || g->never[i]) return PROT_STATE_RW;
  if (g->writes[i] && g->released[i] != RELEASE_READS) return PROT_STATE_NONE;
  if (g->reads[i] || g->writes[i]) return PROT_STATE_READ;
  return PROT_STATE_RW;
}

static int prot_bits(int state) {
  return state == PROT_STATE_NONE ? PROT_NONE
         : state == PROT_STATE_READ ? PROT_READ
                                    : PROT_READ | PROT_WRITE;
}

/* Records the protection of pages [first, last). A protection is recorded *before* the mprotect
 * (and undone if it fails): another thread may fault on the page the moment it is protected, and
 * its handler's lock-free look (pg_guard_claims) must already see the page as pinguard's. `ever`
 * is set before `prot`, so a reader that sees a page protected also sees that it was once. */
static void set_prot(granule_t *g, size_t first, size_t last, int state) {
  for (size_t k = first; k < last; k++) {
    if (state != PROT_STATE_RW) __atomic_store_n(&g->ever[k], 1, __ATOMIC_RELEASE);
    __atomic_store_n(&g->prot[k], (uint8_t)state, __ATOMIC_RELEASE);
  }
}

/* Applies the desired protection to pages [first, last) of g, one mprotect per run of pages
 * that need the same change. Stripe lock held. */
static void apply(granule_t *g, size_t first, size_t last) {
  uintptr_t base = g->index * granule_bytes();
  for (size_t k = first; k < last; k++) fold_unlocked(g, k);
  size_t i = first;
  while (i < last) {
    int want = desired(g, i);
    if (want == prot_of(g, i)) {
      i++;
      continue;
    }
    size_t j = i + 1;
    while (j < last && desired(g, j) == want && prot_of(g, j) != want) j++;
    uint8_t before[GRANULE_PAGES];
    memcpy(&before[i], &g->prot[i], j - i); /* under the stripe lock: no writer races */
    if (want != PROT_STATE_RW) set_prot(g, i, j, want);
    if (mprotect((void *)(base + i * page_size), (j - i) * page_size, prot_bits(want)) == 0) {
      if (want == PROT_STATE_RW) {
        set_prot(g, i, j, want);
      } else {
        pg_stat_inc(PG_STAT_GUARD_PROTECTS);
        atomic_fetch_add_explicit(&protects_since, 1, memory_order_relaxed);
      }
    } else if (want != PROT_STATE_RW) {
      for (size_t k = i; k < j; k++) __atomic_store_n(&g->prot[k], before[k], __ATOMIC_RELEASE);
    }
    i = j;
  }
}

/* Calls fn(g, first_page, last_page) for each granule piece of the whole pages in [lo, hi),
 * creating granules when `create`. Each granule is handled under its own stripe lock. */
typedef void (*piece_fn)(granule_t *g, size_t first, size_t last, void *arg);

static void for_pages(uintptr_t lo, uintptr_t hi, bool create, piece_fn fn, void *arg) {
  uintptr_t plo = (lo + page_size - 1) & ~(page_size - 1); /* partial pages are never guarded */
  uintptr_t phi = hi & ~(page_size - 1);
  uintptr_t gb = granule_bytes();
  for (uintptr_t a = plo; a < phi;) {
    uintptr_t index = a / gb;
    uintptr_t gend = (index + 1) * gb;
    uintptr_t end = phi < gend ? phi : gend;
    stripe_t *st = stripe_of(index);
    /* A new granule is allocated before the lock (see the top of the file). */
    granule_t *fresh = create && !granule_find(index) ? granule_alloc() : NULL;
    stripe_lock(st);
    granule_t *g = granule_find(index);
    if (!g && create && (g = granule_create(index, fresh))) fresh = NULL;
    if (g) fn(g, (a - index * gb) / page_size, (end - index * gb) / page_size, arg);
    stripe_unlock(st);
    if (fresh) munmap(fresh, sizeof *fresh);
    a = end;
  }
}

/* ---- probing ------------------------------------------------------------------------------- */
/* Whether mprotect works on this kind of pinned memory, tried once on the first whole page of
 * the first guarded access of that kind. */
static bool kind_usable(const pg_region_t *reg, uintptr_t lo, uintptr_t hi) {
  pg_guard_kind_t k = pg_guard_kind_of(reg->how, reg->flags);
  int s = atomic_load_explicit(&kind_state[k], memory_order_acquire);
  if (s) return s > 0;
  uintptr_t page = (lo + page_size - 1) & ~(page_size - 1);
  if (page + page_size > hi) return false; /* no whole page to try on: decide on a later access */
  t_busy++;
  pthread_mutex_lock(&probe_lock);
  s = atomic_load(&kind_state[k]);
  if (!s) {
    bool ok = mprotect((void *)page, page_size, PROT_READ) == 0 &&
              mprotect((void *)page, page_size, PROT_READ | PROT_WRITE) == 0;
    s = ok ? 1 : -1;
    if (!ok) {
      char line[200];
      int n = snprintf(line, sizeof line,
                       "pinguard: WARNING: mprotect fails on %s (%s); guard pages are off for it\n",
                       kind_names[k], strerror(errno));
      pg_write_all(STDERR_FILENO, line, (size_t)n);
    }
    atomic_store_explicit(&kind_state[k], s, memory_order_release);
  }
  pthread_mutex_unlock(&probe_lock);
  t_busy--;
  return s > 0;
}

/* ---- tracker hooks ------------------------------------------------------------------------- */
typedef struct count_arg {
  pg_dir_t dir;
  int delta;
} count_arg_t;

static void count_piece(granule_t *g, size_t first, size_t last, void *arg) {
  const count_arg_t *c = arg;
  uint16_t *counts = pg_dir_may_write(c->dir) ? g->writes : g->reads;
  for (size_t i = first; i < last; i++) {
    fold_unlocked(g, i); /* before `released` changes: a new access re-arms the page */
    if (c->delta > 0) {
      if (counts[i] < UINT16_MAX) counts[i]++;
      g->begins[i]++;
      g->released[i] = RELEASE_NONE; /* a new access re-arms a page that an earlier one let go */
    } else if (counts[i] > 0) {
      counts[i]--;
    }
    if (!g->reads[i] && !g->writes[i]) {
      g->released[i] = RELEASE_NONE;
      __atomic_store_n(&g->tail_end[i], 0, __ATOMIC_RELAXED);
      __atomic_store_n(&g->head_begin[i], 0, __ATOMIC_RELAXED);
    }
  }
  apply(g, first, last);
}

/* Records where the region's bytes begin (or end) on a shared edge page, before it is counted. */
typedef struct edge_arg {
  bool head;       /* the region begins inside the page (else: ends inside it) */
  uint16_t offset; /* where */
} edge_arg_t;

static void edge_piece(granule_t *g, size_t first, size_t last, void *arg) {
  const edge_arg_t *e = arg;
  for (size_t i = first; i < last; i++)
    __atomic_store_n(e->head ? &g->head_begin[i] : &g->tail_end[i], e->offset, __ATOMIC_RELAXED);
}

/* The size threshold applies to the pinned buffer, not to the access: an engine copying 4 KiB
 * pieces into a 512 KiB chunk still has every piece guarded. */
/* I/O memory (a PCIe BAR mapped into the process) is never protected: its mapping is a device's,
 * and neither its protections nor a single-stepped access are pinguard's to change. Nor is memory
 * the registration-time decision marked (PG_REGION_FLAG_NO_GUARD: pg_guard_decide.h). */
static bool worth_guarding(uintptr_t lo, uintptr_t hi, const pg_region_t *reg) {
  return pg_guard_enabled() && hi - lo >= page_size && reg->size >= min_bytes &&
         !pg_pin_is_iomemory(reg->how, reg->flags) && !(reg->flags & PG_REGION_FLAG_NO_GUARD);
}

bool pg_guard_on_begin(uintptr_t *lo, uintptr_t *hi, pg_dir_t dir, const pg_region_t *reg,
                       void *ctx) {
  (void)ctx;
  if (!worth_guarding(*lo, *hi, reg) || !kind_usable(reg, *lo, *hi) || !budget_allows())
    return false;
  /* Partial pages are guarded only at the edges of a region: always when the region owns them
   * (PG_REGION_FLAG_OWNS_EDGES: there the other bytes are nobody's data), and for a registered
   * buffer that shares them with other heap data when guard_shared_edges is set (the other bytes'
   * faults are single-stepped). */
  bool edges = (reg->flags & PG_REGION_FLAG_OWNS_EDGES) ||
               (reg->how == PG_PIN_REGISTER && atomic_load_explicit(&shared_edges,
                                                                   memory_order_relaxed));
  if (edges) {
    bool shared = !(reg->flags & PG_REGION_FLAG_OWNS_EDGES);
    if (*lo == reg->base && (*lo & (page_size - 1))) {
      *lo &= ~(page_size - 1);
      edge_arg_t e = {true, (uint16_t)(reg->base - *lo)};
      if (shared) for_pages(*lo, *lo + page_size, true, edge_piece, &e);
    }
    if (*hi == reg->base + reg->size && (*hi & (page_size - 1))) {
      uintptr_t page = *hi & ~(page_size - 1);
      *hi = page + page_size;
      edge_arg_t e = {false, (uint16_t)(reg->base + reg->size - page)};
      if (shared) for_pages(page, page + page_size, true, edge_piece, &e);
    }
  }
  count_arg_t c = {dir, +1};
  for_pages(*lo, *hi, true, count_piece, &c);
  return true;
}

/* Called only for pieces pg_guard_on_begin counted, and only while their region lives (the
 * tracker's contract): a region's removal forgets its pages instead (pg_guard_forget), so a
 * stale retirement never takes counts from a new region at the same address. */
void pg_guard_on_retire(uintptr_t lo, uintptr_t hi, pg_dir_t dir, void *ctx) {
  (void)ctx;
  count_arg_t c = {dir, -1};
  for_pages(lo, hi, false, count_piece, &c);
}

/* ---- the fault handler's helpers (no allocation) ------------------------------------------- */
pg_guard_claim_t pg_guard_claims(uintptr_t addr) {
  if (!pg_guard_enabled() || !page_size) return PG_GUARD_NOT_OURS;
  uintptr_t index = addr / granule_bytes();
  size_t i = (addr % granule_bytes()) / page_size;
  granule_t *g = granule_find(index);
  if (!g) return PG_GUARD_NOT_OURS;
  if (__atomic_load_n(&g->prot[i], __ATOMIC_ACQUIRE) != PROT_STATE_RW) return PG_GUARD_PROTECTED;
  return __atomic_load_n(&g->ever[i], __ATOMIC_RELAXED) ? PG_GUARD_WAS_PROTECTED
                                                        : PG_GUARD_NOT_OURS;
}

bool pg_guard_open_unlocked(uintptr_t addr) {
  if (!pg_guard_enabled() || !page_size) return false;
  granule_t *g = granule_find(addr / granule_bytes());
  if (!g) return false;
  size_t i = (addr % granule_bytes()) / page_size;
  if (__atomic_load_n(&g->prot[i], __ATOMIC_ACQUIRE) == PROT_STATE_RW) return true; /* open */
  __atomic_store_n(&g->open_unlocked[i], 1, __ATOMIC_RELEASE);
  if (mprotect((void *)(addr & ~(page_size - 1)), page_size, PROT_READ | PROT_WRITE) != 0)
    return false;
  pg_stat_inc(PG_STAT_GUARD_UNCHECKED);
  return true;
}

/* The granule holding addr's page (NULL: none yet), with its stripe locked: the caller unlocks
 * *st whatever the answer. *i: the page's index in it. */
static granule_t *page_granule_locked(uintptr_t addr, size_t *i, stripe_t **st) {
  uintptr_t index = addr / granule_bytes();
  *i = (addr % granule_bytes()) / page_size;
  *st = stripe_of(index);
  stripe_lock(*st);
  return granule_find(index);
}

bool pg_guard_owns(uintptr_t addr) {
  if (!pg_guard_enabled()) return false;
  size_t i;
  stripe_t *st;
  granule_t *g = page_granule_locked(addr, &i, &st);
  bool ours = g && (prot_of(g, i) != PROT_STATE_RW || g->reads[i] || g->writes[i]);
  stripe_unlock(st);
  return ours;
}

bool pg_guard_page_allows(uintptr_t addr, bool is_write) {
  if (!pg_guard_enabled()) return true;
  size_t i;
  stripe_t *st;
  granule_t *g = page_granule_locked(addr, &i, &st);
  int prot = g ? prot_of(g, i) : PROT_STATE_RW;
  stripe_unlock(st);
  return prot == PROT_STATE_RW || (prot == PROT_STATE_READ && !is_write);
}

/* What a release lets go: for every access (is_write NULL), or for one access, whose denied
 * pages go for that kind of access only (a read's stay guarded against CPU writes); with
 * `since`, only on pages where no device access began since their count read *since. */
typedef struct release_arg {
  const bool *is_write;
  const uint16_t *since;
  bool refused; /* a page was left as it was: an access began on it */
} release_arg_t;

static void release_piece(granule_t *g, size_t first, size_t last, void *arg) {
  release_arg_t *r = arg;
  uint8_t level = r->is_write && !*r->is_write ? RELEASE_READS : RELEASE_ALL;
  for (size_t i = first; i < last; i++) {
    if (!g->reads[i] && !g->writes[i]) continue;
    int p = prot_of(g, i);
    if (r->is_write && (p == PROT_STATE_RW || (p == PROT_STATE_READ && !*r->is_write))) continue;
    if (r->since && g->begins[i] != *r->since) {
      r->refused = true;
      continue;
    }
    if (g->released[i] < level) g->released[i] = level;
  }
  apply(g, first, last);
}

static bool release_pages(uintptr_t lo, uintptr_t hi, release_arg_t *r) {
  if (!pg_guard_enabled()) return true;
  /* Widen to whole pages: a release is about every page the CPU access touches. */
  uintptr_t plo = lo & ~(page_size - 1);
  uintptr_t phi = (hi + page_size - 1) & ~(page_size - 1);
  for_pages(plo, phi, false, release_piece, r);
  return !r->refused;
}

void pg_guard_release(uintptr_t lo, uintptr_t hi) {
  release_arg_t r = {NULL, NULL, false};
  release_pages(lo, hi, &r);
}

void pg_guard_release_denying(uintptr_t lo, uintptr_t hi, bool is_write) {
  release_arg_t r = {&is_write, NULL, false};
  release_pages(lo, hi, &r);
}

unsigned pg_guard_page_begins(uintptr_t addr) {
  if (!pg_guard_enabled()) return 0;
  size_t i;
  stripe_t *st;
  granule_t *g = page_granule_locked(addr, &i, &st);
  unsigned n = g ? g->begins[i] : 0;
  stripe_unlock(st);
  return n;
}

bool pg_guard_release_page_since(uintptr_t addr, bool is_write, unsigned begins) {
  uint16_t since = (uint16_t)begins;
  uintptr_t page = addr & ~(page_size - 1);
  release_arg_t r = {&is_write, &since, false};
  return release_pages(page, page + page_size, &r);
}

static void rearm_piece(granule_t *g, size_t first, size_t last, void *arg) {
  (void)arg;
  memset(&g->released[first], RELEASE_NONE, last - first);
  apply(g, first, last);
}

void pg_guard_rearm(uintptr_t lo, uintptr_t hi) {
  if (!pg_guard_enabled() || hi <= lo) return;
  uintptr_t plo = lo & ~(page_size - 1);
  uintptr_t phi = (hi + page_size - 1) & ~(page_size - 1);
  for_pages(plo, phi, false, rearm_piece, NULL);
}

static void refresh_piece(granule_t *g, size_t first, size_t last, void *arg) {
  (void)arg;
  apply(g, first, last);
}

void pg_guard_refresh(uintptr_t addr) {
  if (!pg_guard_enabled()) return;
  uintptr_t page = addr & ~(page_size - 1);
  for_pages(page, page + page_size, false, refresh_piece, NULL);
}

/* ---- single-stepping the other bytes of an edge page ---------------------------------------- */
static void step_piece(granule_t *g, size_t first, size_t last, void *arg) {
  int delta = *(const int *)arg;
  for (size_t i = first; i < last; i++) {
    if (delta > 0 && g->stepping[i] < UINT8_MAX) g->stepping[i]++;
    else if (delta < 0 && g->stepping[i] > 0) g->stepping[i]--;
  }
  apply(g, first, last);
}

bool pg_guard_is_neighbour(uintptr_t addr) {
  if (!pg_guard_enabled() || !page_size) return false;
  granule_t *g = granule_find(addr / granule_bytes());
  if (!g) return false;
  size_t i = (addr % granule_bytes()) / page_size;
  unsigned off = (unsigned)(addr & (page_size - 1));
  unsigned tail = __atomic_load_n(&g->tail_end[i], __ATOMIC_RELAXED);
  unsigned head = __atomic_load_n(&g->head_begin[i], __ATOMIC_RELAXED);
  if (!tail && !head) return false; /* not a shared edge page */
  return off >= tail && (!head || off < head);
}

bool pg_guard_step_begin(uintptr_t addr) {
  if (!pg_guard_enabled() || pg_guard_claims(addr) != PG_GUARD_PROTECTED) return false;
  uintptr_t page = addr & ~(page_size - 1);
  int delta = +1;
  for_pages(page, page + page_size, false, step_piece, &delta);
  return true;
}

void pg_guard_step_end(uintptr_t addr) {
  uintptr_t page = addr & ~(page_size - 1);
  int delta = -1;
  for_pages(page, page + page_size, false, step_piece, &delta);
}

/* A buffer outside every region can share a guarded page with one only at its own first or last
 * page (the two are disjoint intervals): only those two are looked at, lock-free first. */
void pg_guard_spare_neighbour(const void *p, size_t n, bool kernel_writes) {
  if (!pg_guard_enabled() || !n) return;
  uintptr_t lo = (uintptr_t)p, last = lo + n - 1;
  uintptr_t pages[2] = {lo & ~(page_size - 1), last & ~(page_size - 1)};
  for (int k = 0; k < (pages[0] == pages[1] ? 1 : 2); k++)
    if (pg_guard_claims(pages[k]) == PG_GUARD_PROTECTED && !pg_guard_page_allows(pages[k], kernel_writes))
      pg_guard_release_denying(pages[k], pages[k] + page_size, kernel_writes);
}

static void never_piece(granule_t *g, size_t first, size_t last, void *arg) {
  (void)arg;
  memset(&g->never[first], 1, last - first);
  apply(g, first, last);
}

void pg_guard_never(const void *p, size_t n) {
  if (!pg_guard_enabled() || !n) return;
  uintptr_t lo = (uintptr_t)p & ~(page_size - 1);
  uintptr_t hi = ((uintptr_t)p + n + page_size - 1) & ~(page_size - 1);
  for_pages(lo, hi, true, never_piece, NULL);
}

/* ---- unpinning and fork -------------------------------------------------------------------- */
static void forget_piece(granule_t *g, size_t first, size_t last, void *arg) {
  bool unmapped = *(const bool *)arg;
  for (size_t i = first; i < last; i++) {
    g->reads[i] = g->writes[i] = 0;
    g->released[i] = RELEASE_NONE;
    g->never[i] = 0;
  }
  if (unmapped)
    set_prot(g, first, last, PROT_STATE_RW); /* the mapping is gone with its bits */
  else
    apply(g, first, last);
}

void pg_guard_forget(uintptr_t lo, uintptr_t hi, bool unmapped) {
  if (!pg_guard_enabled()) return;
  for_pages(lo & ~(page_size - 1), (hi + page_size - 1) & ~(page_size - 1), false, forget_piece,
            &unmapped);
}

void pg_guard_atfork_prepare(void) {
  for (int i = 0; i < STRIPES; i++) pthread_mutex_lock(&stripes[i].mu);
}

void pg_guard_atfork_parent(void) {
  for (int i = STRIPES - 1; i >= 0; i--) pthread_mutex_unlock(&stripes[i].mu);
}

void pg_guard_atfork_child(void) {
  /* The child inherited the protections but has no GPU work in flight: open every page. */
  for (size_t k = 0; k < GTAB_SIZE; k++) {
    granule_t *g = atomic_load_explicit(&gtab[k], memory_order_acquire);
    if (!g) continue;
    memset(g->reads, 0, sizeof g->reads);
    memset(g->writes, 0, sizeof g->writes);
    memset(g->released, 0, sizeof g->released);
    memset(g->stepping, 0, sizeof g->stepping);
    apply(g, 0, GRANULE_PAGES); /* folds the lock-free opens first */
  }
  for (int i = STRIPES - 1; i >= 0; i--) pthread_mutex_unlock(&stripes[i].mu);
}
