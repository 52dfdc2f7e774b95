/* pg_static_cudart.c: finds statically linked CUDA runtimes (nvcc links libcudart_static.a by
 * default). Their CUDA calls never reach libcudart.so: pinguard sees them only where they reach
 * the driver (pg_lookup.c hands such a runtime the driver wrappers), which covers
 * less than the runtime layer does, so it says so: at the default verbosity in one complete line
 * per check that finds any (how many, the first one's name, what is and is not seen; PyTorch's
 * wheels carry about ten), at verbosity=1 one line per object. Loaded objects are checked at
 * start-up, and the ones loaded since (dlopen) when tracking starts and at exit. No CUDA call,
 * no malloc: section headers are read from each object's file, then the object's own .rodata is
 * searched in memory for a string only the CUDA runtime carries. */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg_shim.h"

/* The runtime names its shared-memory objects with this format; a dynamically linked program
 * has it only inside libcudart.so, which is skipped by name. */
static const char signature[] = "/cudart.shm.";

#define SEEN_MAX 4096
static uintptr_t seen[SEEN_MAX]; /* load bases already checked (the main program's may be 0) */
static bool seen_main;
static size_t nseen;
static unsigned long long last_adds; /* dlpi_adds at the last walk: unchanged means nothing new */
static atomic_flag walking = ATOMIC_FLAG_INIT;

static bool pread_all(int fd, void *buf, size_t n, off_t off) {
  while (n) {
    long r = syscall(SYS_pread64, fd, buf, n, off); /* the shim interposes pread */
    if (r <= 0) return false;
    buf = (char *)buf + r;
    n -= (size_t)r;
    off += r;
  }
  return true;
}

/* Where the object's .rodata lies in its file's section table: [addr, addr + size) as linked.
 * A few reads per object: the header, the section table in chunks, the section names. */
static bool find_rodata(const char *path, uintptr_t *addr, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool found = false;
  ElfW(Ehdr) eh;
  ElfW(Shdr) names, sh[32];
  char str[2048]; /* the section names; a longer table is read from the file where needed */
  size_t have_str = 0;
  if (pread_all(fd, &eh, sizeof eh, 0) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shentsize == sizeof(ElfW(Shdr)) &&
      eh.e_shoff && eh.e_shstrndx < eh.e_shnum &&
      pread_all(fd, &names, sizeof names,
                (off_t)(eh.e_shoff + (size_t)eh.e_shstrndx * sizeof names))) {
    have_str = names.sh_size < sizeof str ? names.sh_size : sizeof str;
    if (!pread_all(fd, str, have_str, (off_t)names.sh_offset)) have_str = 0;
    for (unsigned i = 0; i < eh.e_shnum && !found; i += 32) {
      unsigned k = eh.e_shnum - i < 32 ? eh.e_shnum - i : 32;
      if (!pread_all(fd, sh, k * sizeof *sh, (off_t)(eh.e_shoff + (size_t)i * sizeof *sh))) break;
      for (unsigned j = 0; j < k && !found; j++) {
        if (sh[j].sh_type != SHT_PROGBITS || !(sh[j].sh_flags & SHF_ALLOC)) continue;
        char name[8];
        size_t at = sh[j].sh_name;
        if (at + sizeof name <= have_str) memcpy(name, str + at, sizeof name);
        else if (at >= names.sh_size ||
                 !pread_all(fd, name, sizeof name, (off_t)(names.sh_offset + at)))
          continue;
        if (memcmp(name, ".rodata", 8) != 0) continue; /* exactly ".rodata", with its NUL */
        *addr = sh[j].sh_addr;
        *size = sh[j].sh_size;
        found = true;
      }
    }
  }
  close(fd);
  return found;
}

/* Whether the signature occurs in [p, p + n), by Horspool's skip (about n / 12 steps). Another
 * object's read-only data is read here without libc: a sanitizer runtime's memmem interceptor
 * checks the whole range, and an instrumented object has redzones between its globals. */
__attribute__((no_sanitize_address)) static bool has_signature(const char *p, size_t n) {
  enum { K = sizeof signature - 1 };
  size_t skip[256];
  for (int c = 0; c < 256; c++) skip[c] = K;
  for (size_t j = 0; j + 1 < K; j++) skip[(unsigned char)signature[j]] = K - 1 - j;
  for (size_t i = 0; i + K <= n; i += skip[(unsigned char)p[i + K - 1]]) {
    size_t j = K;
    while (j > 0 && p[i + j - 1] == signature[j - 1]) j--;
    if (j == 0) return true;
  }
  return false;
}

/* True when [lo, lo + n) lies inside one readable loaded segment of the object. */
static bool loaded(const struct dl_phdr_info *info, uintptr_t lo, size_t n) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R)) continue;
    uintptr_t s = info->dlpi_addr + ph->p_vaddr;
    if (lo >= s && lo + n <= s + ph->p_memsz) return true;
  }
  return false;
}

static bool skipped_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, "libcudart.so", 12) == 0 || strncmp(base, "libpinguard", 11) == 0 ||
         strncmp(base, "linux-vdso", 10) == 0;
}

static bool mark_seen(const struct dl_phdr_info *info, bool is_main) {
  if (is_main) {
    if (seen_main) return false;
    seen_main = true;
    return true;
  }
  for (size_t i = 0; i < nseen; i++)
    if (seen[i] == info->dlpi_addr) return false;
  if (nseen == SEEN_MAX) return false; /* that many objects: stop checking new ones */
  seen[nseen++] = info->dlpi_addr;
  return true;
}

typedef struct walk {
  int index;          /* of the object being checked: 0 is the program itself */
  unsigned found;     /* objects found in this walk */
  char first[512];    /* the first one's path */
} walk_t;

/* What such a runtime's calls look like to pinguard: one sentence, shared by both wordings. */
#define PG_STATIC_SEEN                                                                        \
  "pinguard sees such a runtime's calls only through the driver API (pinning, asynchronous " \
  "copies, kernel launches, host functions, capture and graphs, events and synchronization), " \
  "so reports name driver functions, and 3D batched copies and stream callbacks are not seen"

/* verbosity=1: each object in full, with what to do about it. */
static void name_one(const char *path) {
  pg_shim_warn("%s contains a statically linked CUDA runtime (libcudart_static.a, nvcc's "
               "default): " PG_STATIC_SEEN "; link it with the shared runtime (nvcc -cudart "
               "shared) for all of them", path);
}

static void found(const char *path, walk_t *w) {
  if (w->found++ == 0) {
    size_t n = strlen(path);
    if (n >= sizeof w->first) n = sizeof w->first - 1;
    memcpy(w->first, path, n);
    w->first[n] = '\0';
  }
  if (pg_engine_verbosity() >= 1) name_one(path);
}

/* The default verbosity: the objects of one walk in one complete line (a PyTorch wheel carries
 * about ten such libraries, none of which its user can relink). */
static void summarize(const walk_t *w) {
  if (!w->found || pg_engine_verbosity() >= 1) return;
  if (w->found == 1)
    pg_shim_warn("%s contains a statically linked CUDA runtime: " PG_STATIC_SEEN
                 " (verbosity=1 says more)", w->first);
  else
    pg_shim_warn("%u loaded objects contain a statically linked CUDA runtime, the first %s: "
                 PG_STATIC_SEEN " (verbosity=1 lists them)", w->found, w->first);
}

static int check_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  walk_t *w = data;
  bool is_main = w->index++ == 0; /* the first entry is the program itself */
  if (is_main) last_adds = info->dlpi_adds;
  if (!mark_seen(info, is_main)) return 0;
  char path[512];
  if (is_main) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
  } else {
    if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
    size_t n = strlen(info->dlpi_name);
    if (n >= sizeof path) return 0;
    memcpy(path, info->dlpi_name, n + 1);
  }
  if (skipped_name(path)) return 0;
  uintptr_t addr = 0;
  size_t len = 0;
  if (!find_rodata(path, &addr, &len) || len < sizeof signature) return 0;
  uintptr_t lo = info->dlpi_addr + addr;
  if (!loaded(info, lo, len)) return 0;
  if (has_signature((const char *)lo, len)) found(path, w);
  return 0;
}

/* Tells dl_iterate_phdr's load count, to skip a walk when nothing was loaded since the last. */
static int first_adds(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_adds;
  return 1;
}

void pg_shim_check_static_runtimes(void) {
  if (atomic_flag_test_and_set(&walking)) return; /* another thread is at it */
  unsigned long long adds = 0;
  dl_iterate_phdr(first_adds, &adds);
  if (!nseen && !seen_main) adds = ~0ull; /* never walked */
  if (adds != last_adds) {
    walk_t w = {0, 0, ""};
    dl_iterate_phdr(check_object, &w);
    summarize(&w);
  }
  atomic_flag_clear(&walking);
}
