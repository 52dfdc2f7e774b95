/* unit.guard_release: how far a released guard page lets the CPU through (core/pg_guard.c). A
 * page released for a CPU read (a fault that conflicted with nothing, a system call that reads
 * the buffer) must stay guarded against CPU writes while a device access counts on it: a device
 * read still running there, unordered, is what a later CPU write conflicts with. A release for
 * a write lets everything through until the counts drop to zero, and a new access re-arms the
 * page. Each state is checked twice: by pg_guard_page_allows and by touching the page itself. */
#include <criterion/criterion.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pg_guard.h"

static sigjmp_buf t_jump;
static void on_segv(int sig) {
  (void)sig;
  siglongjmp(t_jump, 1);
}

/* Whether a read (or a write) of *p runs without a fault: the page's real protection. */
static bool touch_ok(volatile char *p, bool write) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old);
  bool ok = false;
  if (sigsetjmp(t_jump, 1) == 0) {
    if (write) *p = 1;
    else (void)*p;
    ok = true;
  }
  sigaction(SIGSEGV, &old, NULL);
  return ok;
}

/* The page's state as pinguard records it and as the CPU meets it, checked at `line`. */
static void expect_at(int line, char *page, bool read_ok, bool write_ok) {
  uintptr_t a = (uintptr_t)page;
  cr_assert_eq(pg_guard_page_allows(a, false), read_ok, "line %d: allows a read", line);
  cr_assert_eq(pg_guard_page_allows(a, true), write_ok, "line %d: allows a write", line);
  cr_assert_eq(touch_ok(page, false), read_ok, "line %d: a read runs", line);
  cr_assert_eq(touch_ok(page, true), write_ok, "line %d: a write runs", line);
}
#define expect(page, read_ok, write_ok) expect_at(__LINE__, page, read_ok, write_ok)

static size_t page_size;
static char *buf;
static pg_region_t reg;

static void setup(void) {
  page_size = (size_t)sysconf(_SC_PAGESIZE);
  buf = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(buf, MAP_FAILED);
  reg = (pg_region_t){.base = (uintptr_t)buf, .size = 4 * page_size, .how = PG_PIN_HOST_ALLOC,
                      .id = 1};
  pg_guard_enable(page_size, false);
}

/* One device access of direction dir over page k: begun (true) or retired. */
static void device(size_t k, pg_dir_t dir, bool begin) {
  uintptr_t lo = (uintptr_t)buf + k * page_size, hi = lo + page_size;
  if (begin) cr_assert(pg_guard_on_begin(&lo, &hi, dir, &reg, NULL));
  else pg_guard_on_retire(lo, hi, dir, NULL);
}

TestSuite(guard_release, .init = setup);

Test(guard_release, a_read_release_keeps_the_page_guarded_against_writes) {
  char *p = buf + page_size;
  device(1, PG_DIR_READ, true);  /* unordered, still counted */
  device(1, PG_DIR_WRITE, true); /* say, ordered but not yet retired by another thread */
  expect(p, false, false);
  pg_guard_release_denying((uintptr_t)p, (uintptr_t)p + page_size, false);
  expect(p, true, false);
  device(1, PG_DIR_WRITE, false);
  expect(p, true, false); /* the device read still guards against CPU writes */
  device(1, PG_DIR_READ, false);
  expect(p, true, true);
}

Test(guard_release, a_new_device_write_rearms_a_read_release) {
  char *p = buf + 2 * page_size;
  device(2, PG_DIR_WRITE, true);
  pg_guard_release_denying((uintptr_t)p, (uintptr_t)p + page_size, false);
  expect(p, true, false);
  device(2, PG_DIR_UNKNOWN, true); /* a kernel's access: it may write */
  expect(p, false, false);
  device(2, PG_DIR_UNKNOWN, false);
  device(2, PG_DIR_WRITE, false);
  expect(p, true, true);
}

Test(guard_release, a_write_release_lets_everything_through_until_a_new_access) {
  char *p = buf + 3 * page_size;
  device(3, PG_DIR_READ, true);
  device(3, PG_DIR_WRITE, true);
  pg_guard_release_denying((uintptr_t)p, (uintptr_t)p + page_size, true);
  expect(p, true, true);
  device(3, PG_DIR_READ, true); /* re-arms: a read and a write counted again */
  expect(p, false, false);
  device(3, PG_DIR_READ, false);
  device(3, PG_DIR_READ, false);
  device(3, PG_DIR_WRITE, false);
  expect(p, true, true);
}

Test(guard_release, a_read_release_leaves_a_readable_page_alone) {
  char *p = buf;
  device(0, PG_DIR_READ, true);
  expect(p, true, false);
  pg_guard_release_denying((uintptr_t)p, (uintptr_t)p + page_size, false);
  expect(p, true, false); /* nothing denied a read: nothing let go */
  device(0, PG_DIR_READ, false);
  expect(p, true, true);
}

/* A fault's last resort (pg_guard_release_page_since): the page goes only if no device access
 * began on it since the fault read its count, before looking for conflicts; one that began in
 * between, which the look may have missed, keeps the page as it is. */
Test(guard_release, a_release_since_refuses_a_page_an_access_began_on) {
  char *p = buf + page_size;
  device(1, PG_DIR_WRITE, true); /* ordered, say, but not yet uncounted */
  unsigned begins = pg_guard_page_begins((uintptr_t)p);
  device(1, PG_DIR_READ, true); /* begins after the look */
  cr_assert_not(pg_guard_release_page_since((uintptr_t)p + 100, false, begins));
  expect(p, false, false);
  begins = pg_guard_page_begins((uintptr_t)p);
  cr_assert(pg_guard_release_page_since((uintptr_t)p + 100, false, begins));
  expect(p, true, false);
  cr_assert_eq(pg_guard_page_begins((uintptr_t)p), begins, "a release begins nothing");
  device(1, PG_DIR_READ, false);
  device(1, PG_DIR_WRITE, false);
  expect(p, true, true);
}
