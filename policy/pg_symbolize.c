/* pg_symbolize.c: dladdr() symbolization plus an optional addr2line helper per module.
 * The helpers are started with vfork+execve (no atfork handlers run, so the report lock held by
 * the caller cannot deadlock) and talk over a socketpair written with MSG_NOSIGNAL, so a helper
 * that dies can never kill the process with SIGPIPE. Any failure disables addr2line quietly. */
#include "pg_symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_demangle.h"
#include "pg_dwarf_line.h"
#include "pg_fmt.h"

extern char **environ;

#define HELPERS_MAX 8
#define HELPER_TIMEOUT_MS 10000 /* first lookups in a big library load all of its debug info */

typedef struct helper {
  pid_t pid;
  int fd;
  unsigned long last_use;
  char module[256];
} helper_t;

static helper_t helpers[HELPERS_MAX];
static unsigned long use_clock;
static int addr2line_state; /* 0 unknown, 1 found, -1 missing or broken */
static char addr2line_path[256];

static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

static bool find_addr2line(void) {
  if (addr2line_state) return addr2line_state > 0;
  addr2line_state = -1;
#if defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer turns vfork into fork, which runs the atfork handlers, which take the report
   * lock this thread holds while it symbolizes: a TSAN build of pinguard uses dladdr and the
   * symbol table only. */
  return false;
#endif
  static const char *fixed[] = {"/usr/bin/addr2line", "/bin/addr2line",
                                "/usr/local/bin/addr2line"};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    if (access(fixed[i], X_OK) == 0) {
      copy_str(addr2line_path, sizeof addr2line_path, fixed[i]);
      addr2line_state = 1;
      return true;
    }
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    if (n && n + sizeof "/addr2line" < sizeof addr2line_path) {
      memcpy(addr2line_path, path, n);
      memcpy(addr2line_path + n, "/addr2line", sizeof "/addr2line");
      if (access(addr2line_path, X_OK) == 0) {
        addr2line_state = 1;
        return true;
      }
    }
    path = end ? end + 1 : NULL;
  }
  return false;
}

static void helper_stop(helper_t *h) {
  if (h->pid <= 0) return;
  close(h->fd);
  kill(h->pid, SIGKILL);
  waitpid(h->pid, NULL, 0);
  h->pid = 0;
}

static helper_t *helper_start(helper_t *h, const char *module) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return NULL;

  /* argv/envp are built before vfork: the child may only exec or _exit. The helper must not run
   * with pinguard preloaded into it, so LD_PRELOAD is dropped from its environment. */
  char *argv[] = {addr2line_path, "-f", "-C", "-e", (char *)module, NULL};
  char *envp[64];
  size_t ne = 0;
  for (char **e = environ; e && *e && ne < 63; e++)
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0) envp[ne++] = *e;
  envp[ne] = NULL; /* a helper needs no more than the first 63 variables */
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC); /* its complaints are not ours */

  pid_t pid = vfork();
  if (pid == 0) {
    if (dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0) _exit(127);
    if (devnull >= 0) dup2(devnull, 2);
    execve(addr2line_path, argv, envp);
    _exit(127);
  }
  if (devnull >= 0) close(devnull);
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return NULL;
  }
  h->pid = pid;
  h->fd = sv[0];
  copy_str(h->module, sizeof h->module, module);
  return h;
}

/* The running helper for module, or a new one. NULL when the module already failed once (it is
 * then left to dladdr until its slot is reused) or no process could be started. */
static helper_t *helper_for(const char *module) {
  helper_t *free_slot = NULL, *oldest = &helpers[0];
  for (size_t i = 0; i < HELPERS_MAX; i++) {
    helper_t *h = &helpers[i];
    if (h->module[0] && strcmp(h->module, module) == 0) return h->pid > 0 ? h : NULL;
    if (!h->module[0] && !free_slot) free_slot = h;
    if (h->last_use < oldest->last_use) oldest = h;
  }
  if (!free_slot) {
    helper_stop(oldest);
    oldest->module[0] = '\0';
    free_slot = oldest;
  }
  helper_t *h = helper_start(free_slot, module);
  if (!h) addr2line_state = -1; /* cannot fork or make sockets: stop trying altogether */
  return h;
}

/* Reads exactly two lines (function, file:line) or fails. */
static bool read_two_lines(int fd, char *buf, size_t cap) {
  size_t len = 0, lines = 0;
  while (lines < 2) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, HELPER_TIMEOUT_MS) <= 0) return false;
    if (len + 1 >= cap) return false;
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n <= 0) return false;
    for (ssize_t i = 0; i < n; i++) lines += buf[len + (size_t)i] == '\n';
    len += (size_t)n;
  }
  buf[len] = '\0';
  return true;
}

static bool ask_addr2line(const char *module, uintptr_t addr, pg_frame_t *f) {
  helper_t *h = helper_for(module);
  if (!h) return false;
  h->last_use = ++use_clock;
  char q[24];
  pg_buf_t b;
  pg_buf_init(&b, q, sizeof q);
  pg_buf_hex(&b, addr);
  pg_buf_putc(&b, '\n');
  char reply[1024];
  if (send(h->fd, q, b.len, MSG_NOSIGNAL) != (ssize_t)b.len ||
      !read_two_lines(h->fd, reply, sizeof reply)) {
    helper_stop(h); /* keeps h->module: the module is not retried until its slot is reused */
    return false;
  }
  char *nl = strchr(reply, '\n');
  *nl = '\0';
  char *loc = nl + 1;
  loc[strcspn(loc, "\n")] = '\0';
  if (strcmp(reply, "??") != 0) copy_str(f->function, sizeof f->function, reply);
  char *colon = strrchr(loc, ':');
  if (colon && strncmp(loc, "??", 2) != 0) {
    unsigned line = 0;
    for (char *c = colon + 1; *c >= '0' && *c <= '9'; c++) line = line * 10 + (unsigned)(*c - '0');
    if (line) {
      *colon = '\0';
      copy_str(f->file, sizeof f->file, loc);
      f->line = line;
    }
  }
  return true;
}

static int first_module_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(uintptr_t *)data = info->dlpi_addr;
  return 1; /* the first entry is the main program */
}

/* The path addr2line needs for a module: dladdr names the main program by argv[0], which may be
 * relative or stale, so use the /proc link to the executable for it. */
static void helper_path(const Dl_info *di, char *out, size_t cap) {
  static uintptr_t main_base;
  static bool main_known;
  if (!main_known) {
    dl_iterate_phdr(first_module_cb, &main_base);
    main_known = true;
  }
  const ElfW(Ehdr) *eh = di->dli_fbase;
  bool is_main = eh->e_type == ET_EXEC || (uintptr_t)di->dli_fbase == main_base ||
                 !di->dli_fname || !strchr(di->dli_fname, '/');
  if (!is_main) {
    copy_str(out, cap, di->dli_fname);
    return;
  }
  /* /proc/<pid>/exe, not /proc/self/exe: the helper opens it, and "self" would be the helper. */
  pg_buf_t b;
  pg_buf_init(&b, out, cap);
  pg_buf_puts(&b, "/proc/");
  pg_buf_u64(&b, (uint64_t)getpid());
  pg_buf_puts(&b, "/exe");
}

/* The function containing `addr` from the module's own symbol table (.symtab), which names
 * static functions that dladdr cannot see. Signal-safe: open, mmap and nothing else; the file is
 * mapped for the lookup only. `addr` is a module offset (a link-time address for ET_EXEC). */
static bool symtab_function(const char *path, uintptr_t addr, char *out, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat stb;
  bool found = false;
  if (fstat(fd, &stb) == 0 && stb.st_size > (off_t)sizeof(ElfW(Ehdr))) {
    size_t len = (size_t)stb.st_size;
    const unsigned char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      const ElfW(Ehdr) *eh = (const void *)m;
      size_t shend = eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr));
      if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_shoff && shend <= len) {
        const ElfW(Shdr) *sh = (const void *)(m + eh->e_shoff);
        for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
          if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
          const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
          if (sh[i].sh_offset + sh[i].sh_size > len || strs->sh_offset + strs->sh_size > len)
            continue;
          const ElfW(Sym) *sym = (const void *)(m + sh[i].sh_offset);
          size_t nsym = sh[i].sh_size / sizeof *sym;
          for (size_t k = 0; k < nsym; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_size) continue;
            if (addr < sym[k].st_value || addr >= sym[k].st_value + sym[k].st_size) continue;
            if (sym[k].st_name >= strs->sh_size) break;
            copy_str(out, cap, (const char *)m + strs->sh_offset + sym[k].st_name);
            found = true;
            break;
          }
        }
      }
      munmap((void *)m, len);
    }
  }
  close(fd);
  return found;
}

/* `exact`: pc is an instruction that was executing (a fault); otherwise it is a return address.
 * A return address points after its call, which may be the last bytes of its function (a call
 * to a noreturn function): every lookup uses pc-1, inside the call. An exact pc is looked up as
 * is, or a fault on a function's first instruction would be blamed on the function before it. */
static void symbolize_pc(void *pc, bool exact, unsigned how, pg_frame_t *f) {
  memset(f, 0, sizeof *f);
  f->pc = pc;
  if (!pc) return;
  void *at = exact ? pc : (void *)((uintptr_t)pc - 1);
  Dl_info di;
  if (!dladdr(at, &di) || !di.dli_fbase) return;
  copy_str(f->module, sizeof f->module, di.dli_fname);
  f->module_offset = (uintptr_t)pc - (uintptr_t)di.dli_fbase;
  /* Non-PIE executables are linked at their run-time address; everything else is asked by
   * module offset. */
  const ElfW(Ehdr) *eh = di.dli_fbase;
  uintptr_t addr = eh->e_type == ET_EXEC ? (uintptr_t)at : (uintptr_t)at - (uintptr_t)di.dli_fbase;
  char path[256];
  helper_path(&di, path, sizeof path);
  if ((how & PG_SYM_ADDR2LINE) && find_addr2line()) ask_addr2line(path, addr, f); /* -C */
  if (!f->line && (how & PG_SYM_LINE_TABLE) &&
      !pg_dwarf_line(path, addr, f->file, sizeof f->file, &f->line))
    f->file[0] = '\0';
  if (f->function[0]) return;
  /* dladdr, else the module's own symbol table (a static function has no dynamic symbol), in
   * full: a C++ name is demangled from all of it, then cut to fit. Static: under the report
   * lock. */
  static char raw[4096], plain[4096];
  raw[0] = '\0';
  if (di.dli_sname) copy_str(raw, sizeof raw, di.dli_sname);
  else symtab_function(path, addr, raw, sizeof raw);
  const char *name = raw;
  if (raw[0] == '_' && raw[1] == 'Z' && pg_demangle(raw, plain, sizeof plain)) name = plain;
  size_t n = strlen(name);
  if (n >= sizeof f->function) { /* cut visibly */
    memcpy(f->function, name, sizeof f->function - 4);
    memcpy(f->function + sizeof f->function - 4, "...", 4);
  } else {
    memcpy(f->function, name, n + 1);
  }
}

/* The interpreter's evaluation loop, by name: _PyEval_EvalFrameDefault (3.9 to 3.13) and the
 * _PyEval_EvalFrame / PyEval_EvalFrameEx entry points around it. */
static bool eval_loop_frame(const pg_frame_t *f) {
  return strncmp(f->function, "_PyEval_EvalFrame", 17) == 0 ||
         strncmp(f->function, "PyEval_EvalFrame", 16) == 0;
}

/* ---- symbolized frames, kept ------------------------------------------------------------
 * A report symbolizes every frame of up to three stacks, and a loop's reports come from the same
 * call sites each time: dladdr walks a module's symbols, and a static function's name costs the
 * module's symbol table read from its file. Frames are kept by pc (with exact and how), 128 of
 * them, direct-mapped, and all forgotten when the loader's count of loads or unloads moves: a
 * module loaded where an unloaded one was must not inherit its names. Under the report lock. */
#define FRAME_CACHE 128
typedef struct cached_frame {
  void *pc;
  unsigned key; /* exact | how << 1 | 1 << 31: 0 is an empty entry */
  pg_frame_t f;
} cached_frame_t;
static cached_frame_t frame_cache[FRAME_CACHE];
static unsigned long long cache_adds, cache_subs;

static int loader_counts(struct dl_phdr_info *info, size_t size, void *data) {
  unsigned long long *counts = data;
  if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return 1;
  counts[0] = info->dlpi_adds;
  counts[1] = info->dlpi_subs;
  return 1; /* the counts are the same in every entry: the first one will do */
}

/* Forgets every kept frame when a module was loaded or unloaded since the last call (or when
 * the loader gives no counts). */
static void frame_cache_check_loader(void) {
  unsigned long long counts[2] = {0, 0};
  dl_iterate_phdr(loader_counts, counts);
  if (counts[0] == cache_adds && counts[1] == cache_subs && counts[0]) return;
  memset(frame_cache, 0, sizeof frame_cache);
  cache_adds = counts[0];
  cache_subs = counts[1];
}

static void symbolize_cached(void *pc, bool exact, unsigned how, pg_frame_t *f) {
  unsigned key = (unsigned)exact | how << 1 | 1u << 31;
  cached_frame_t *c = &frame_cache[((uintptr_t)pc >> 1) * 0x9E3779B1u % FRAME_CACHE];
  if (c->key == key && c->pc == pc) {
    *f = c->f;
    return;
  }
  symbolize_pc(pc, exact, how, f);
  c->pc = pc;
  c->key = key;
  c->f = *f;
}

void pg_symbolize_stack(const pg_stack_t *s, unsigned max_depth, unsigned how,
                        pg_symstack_t *out) {
  out->present = s != NULL;
  out->depth = 0;
  out->py_depth = 0;
  out->tid = s ? s->tid : 0;
  if (!s) return;
  unsigned py = 0;
  for (unsigned i = 0; i < s->py_depth && i < PG_PYSTACK_MAX; i++)
    if (pg_pystack_resolve(s->py_code[i], s->py_offset[i], &out->py[py])) py++;
  out->py_depth = py;
  unsigned n = s->depth;
  if (n > PG_STACK_MAX) n = PG_STACK_MAX;
  if (n > max_depth) n = max_depth;
  frame_cache_check_loader();
  for (unsigned i = 0; i < n; i++) {
    symbolize_cached(s->pc[i], i == 0 && (s->flags & PG_STACK_EXACT_PC0), how, &out->f[i]);
    if (py && i > 0 && eval_loop_frame(&out->f[i])) {
      n = i;
      break;
    }
  }
  out->depth = n;
}

const char *pg_frame_module_base(const pg_frame_t *f) {
  const char *slash = strrchr(f->module, '/');
  return slash ? slash + 1 : f->module;
}

void pg_symbolize_shutdown(void) {
  for (size_t i = 0; i < HELPERS_MAX; i++) {
    helper_stop(&helpers[i]);
    helpers[i].module[0] = '\0';
  }
}

void pg_symbolize_forget(void) {
  for (size_t i = 0; i < HELPERS_MAX; i++) {
    if (helpers[i].pid > 0) close(helpers[i].fd);
    helpers[i].pid = 0;
    helpers[i].module[0] = '\0';
  }
}
