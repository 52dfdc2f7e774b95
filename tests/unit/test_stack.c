/* test_stack.c: stack capture: pc[0] is exact, the walk follows frame pointers to the requested
 * depth, skip and max_depth are honoured, bad frame pointers stop the walk without a crash, the
 * exact (backtrace) mode agrees, and thread numbers are small and stable. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

#include "pg_stack.h"

/* Entry address of the function containing pc, via the dynamic symbol table. */
static void *func_of(void *pc) {
  Dl_info info;
  if (!dladdr((char *)pc - 1, &info)) return NULL;
  return info.dli_saddr;
}

__attribute__((noinline)) void ts_capture_here(pg_stack_t *st, unsigned skip, unsigned max) {
  pg_stack_capture(st, skip, max);
  __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
}

__attribute__((noinline)) int ts_recurse(int n, pg_stack_t *st) {
  if (n == 0) {
    ts_capture_here(st, 0, PG_STACK_MAX);
    return 0;
  }
  int r = ts_recurse(n - 1, st);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

static void check_recursion(void) {
  pg_stack_t st;
  ts_recurse(20, &st);
  cr_assert_eq(st.depth, PG_STACK_MAX);
  cr_assert_eq(func_of(st.pc[0]), (void *)ts_capture_here, "pc[0] is the capture site");
  for (int i = 1; i < PG_STACK_MAX; i++)
    cr_assert_eq(func_of(st.pc[i]), (void *)ts_recurse, "frame %d", i);
}

Test(stack, fast_walk_depth_and_exactness) { check_recursion(); }

Test(stack, exact_mode_agrees) {
  pg_stack_set_fast_unwind(0);
  check_recursion();
  pg_stack_set_fast_unwind(1);
}

/* One call site for both captures, so their outer frames have the same return addresses. */
__attribute__((noinline)) void ts_capture_via(pg_stack_t *st, unsigned skip) {
  ts_capture_here(st, skip, 4);
  __asm__ volatile("" ::: "memory");
}

Test(stack, skip_drops_innermost_frames) {
  pg_stack_t a, b;
  ts_capture_via(&a, 0);
  ts_capture_via(&b, 1);
  cr_assert_eq(func_of(a.pc[0]), (void *)ts_capture_here);
  cr_assert_eq(func_of(a.pc[1]), (void *)ts_capture_via);
  cr_assert_eq(b.pc[0], a.pc[1], "skip=1 starts at the caller's frame");
  pg_stack_set_fast_unwind(0);
  ts_capture_via(&b, 1);
  pg_stack_set_fast_unwind(1);
  cr_assert_eq(b.pc[0], a.pc[1]);
}

Test(stack, max_depth_is_honoured) {
  pg_stack_t st;
  ts_recurse(0, &st);
  ts_capture_here(&st, 0, 3);
  cr_assert_leq(st.depth, 3);
  cr_assert_geq(st.depth, 1);
  ts_capture_here(&st, 0, 0);
  cr_assert_eq(st.depth, 0);
  ts_capture_here(&st, 0, 1000);
  cr_assert_leq(st.depth, PG_STACK_MAX);
}

Test(stack, bad_frame_pointers_stop_the_walk) {
  pg_stack_t st;
  ts_capture_here(&st, 0, 2); /* learns this thread's stack bounds */
  void *pc = (void *)check_recursion;
  pg_stack_capture_from(&st, pc, (void *)0x1, PG_STACK_MAX);
  cr_assert_eq(st.depth, 1, "misaligned frame pointer");
  cr_assert_eq(st.pc[0], pc);
  pg_stack_capture_from(&st, pc, (void *)0x100000, PG_STACK_MAX);
  cr_assert_eq(st.depth, 1, "frame pointer outside the stack");
  /* A frame whose saved pointer leads down the stack (garbage in a frame-less function). */
  uintptr_t frame[4];
  frame[0] = (uintptr_t)&frame[0] - 64;
  frame[1] = (uintptr_t)pc;
  pg_stack_capture_from(&st, pc, frame, PG_STACK_MAX);
  cr_assert_eq(st.depth, 2, "one step, then the walk refuses to go down");
  cr_assert_eq(st.pc[1], pc);
  /* A frame whose return slot holds a stack address (rbp used as a general register by code
   * built without frame pointers): not a return address, so not a frame. */
  uintptr_t fake[4];
  fake[0] = (uintptr_t)&fake[2];
  fake[1] = (uintptr_t)&fake[3];
  fake[2] = 0;
  fake[3] = 0;
  pg_stack_capture_from(&st, pc, fake, PG_STACK_MAX);
  cr_assert_eq(st.depth, 1, "a stack address is not a return address");
}

Test(stack, capture_from_a_live_frame) {
  pg_stack_t st;
  ts_capture_here(&st, 0, 2);
  pg_stack_capture_from(&st, (void *)check_recursion, __builtin_frame_address(0), PG_STACK_MAX);
  cr_assert_geq(st.depth, 2);
  cr_assert_eq(st.pc[0], (void *)check_recursion);
}

static void *thread_number(void *arg) {
  uint32_t *out = arg;
  out[0] = pg_thread_number();
  out[1] = pg_thread_number();
  pg_stack_t st;
  ts_capture_here(&st, 0, 4);
  out[2] = st.tid;
  return NULL;
}

Test(stack, thread_numbers) {
  uint32_t main_no = pg_thread_number();
  uint32_t t[2][3];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_number, t[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(t[i][0], t[i][1], "stable within a thread");
    cr_assert_eq(t[i][0], t[i][2], "stacks carry it");
    cr_assert_neq(t[i][0], main_no);
    cr_assert_geq(t[i][0], 1);
  }
  cr_assert_neq(t[0][0], t[1][0]);
}

/* ---- a walk that breaks: the unwinder takes over (fast_unwind=auto in audit) ---------------- */
__attribute__((noinline)) void ts_capture_redo(pg_stack_t *st) {
  pg_stack_capture(st, 0, PG_STACK_MAX);
  __asm__ volatile("" ::: "memory");
}

/* A frame built without a frame pointer that uses rbp for something else (what -O2 code in
 * libffi or a library built with -fomit-frame-pointer does): the walk cannot get past it. Its
 * unwind table entry lets the unwinder through. */
void ts_no_frame_pointer(pg_stack_t *st);
__asm__(".text\n"
        ".globl ts_no_frame_pointer\n"
        ".type ts_no_frame_pointer, @function\n"
        "ts_no_frame_pointer:\n"
        ".cfi_startproc\n"
        "  push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbx, -16\n"
        "  mov %rbp, %rbx\n"
        ".cfi_register %rbp, %rbx\n"
        "  mov $0x123, %rbp\n"
        "  call ts_capture_redo\n"
        "  mov %rbx, %rbp\n"
        "  pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size ts_no_frame_pointer, .-ts_no_frame_pointer\n");

__attribute__((noinline)) void ts_breaking_caller(pg_stack_t *st) {
  ts_no_frame_pointer(st);
  __asm__ volatile("" ::: "memory");
}

/* The same frame, but with 0 in rbp: the chain ends on a saved frame pointer of 0 before libc's
 * entry, like the outermost frame's, though the stack goes on. */
void ts_zero_frame_pointer(pg_stack_t *st);
__asm__(".text\n"
        ".globl ts_zero_frame_pointer\n"
        ".type ts_zero_frame_pointer, @function\n"
        "ts_zero_frame_pointer:\n"
        ".cfi_startproc\n"
        "  push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbx, -16\n"
        "  mov %rbp, %rbx\n"
        ".cfi_register %rbp, %rbx\n"
        "  xor %ebp, %ebp\n"
        "  call ts_capture_redo\n"
        "  mov %rbx, %rbp\n"
        "  pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size ts_zero_frame_pointer, .-ts_zero_frame_pointer\n");

__attribute__((noinline)) void ts_zero_caller(pg_stack_t *st) {
  ts_zero_frame_pointer(st);
  __asm__ volatile("" ::: "memory");
}

static bool reaches(const pg_stack_t *st, void *fn) {
  for (unsigned i = 0; i < st->depth; i++)
    if (func_of(st->pc[i]) == fn) return true;
  return false;
}

static void *ts_both_modes(void *arg) {
  pg_stack_t *ab = arg;
  volatile int n = 2; /* not unrolled: one call site, so the return addresses are the same */
  for (int i = 0; i < n; i++) {
    pg_stack_set_fast_unwind(i ? PG_UNWIND_FP_REDO : PG_UNWIND_FP);
    ts_recurse(2, &ab[i]);
  }
  return NULL;
}

Test(stack, broken_walk_is_redone_by_the_unwinder) {
  pg_stack_t st;
  pg_stack_set_fast_unwind(PG_UNWIND_FP);
  ts_breaking_caller(&st);
  cr_assert_eq(func_of(st.pc[0]), (void *)ts_capture_redo);
  cr_assert_not(reaches(&st, (void *)ts_breaking_caller), "frame pointers alone stop short");
  pg_stack_set_fast_unwind(PG_UNWIND_FP_REDO);
  ts_breaking_caller(&st);
  cr_assert_eq(func_of(st.pc[0]), (void *)ts_capture_redo);
  cr_assert(reaches(&st, (void *)ts_no_frame_pointer));
  cr_assert(reaches(&st, (void *)ts_breaking_caller), "the unwinder gets past the broken frame");
  /* A walk that ends on a saved frame pointer of 0 before libc's entry broke too. */
  pg_stack_set_fast_unwind(PG_UNWIND_FP_REDO);
  ts_zero_caller(&st);
  cr_assert_eq(func_of(st.pc[0]), (void *)ts_capture_redo);
  cr_assert(reaches(&st, (void *)ts_zero_caller), "depth %u: the walk stopped at the 0", st.depth);
  /* A walk that ends at the thread's entry in libc is complete: no unwinder (which would add
   * libc's own frames), the same frames as frame pointers alone. */
  pg_stack_t ab[2];
  pthread_t th;
  pthread_create(&th, NULL, ts_both_modes, ab);
  pthread_join(th, NULL);
  cr_assert_eq(ab[0].depth, ab[1].depth);
  cr_assert_lt(ab[1].depth, PG_STACK_MAX);
  for (unsigned i = 0; i < ab[0].depth; i++) cr_assert_eq(ab[0].pc[i], ab[1].pc[i], "frame %u", i);
  pg_stack_set_fast_unwind(PG_UNWIND_FP);
}
