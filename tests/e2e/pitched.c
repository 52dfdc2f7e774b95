/* Intent: a pitched (2D or 3D) copy touches its rows, not the gaps between them. The host side
 * of each copy is a pinned buffer laid out as rows of ROW bytes at a pitch of PITCH; the cases:
 *   gap        a device->host 2D copy in flight; the CPU reads a byte between two rows (whole
 *              gap pages): no report, and enforce does not wait (the copy is still in flight
 *              after the read: "in flight after the read: yes")
 *   gap_page   the same with 100-byte rows at a pitch of 3000: the CPU reads a gap byte of a page
 *              that also holds row bytes (guarded for them): no report (with single steps, no
 *              wait either)
 *   gap_then_row  gap_page, then a row byte of the same page: with single steps
 *              (guard_shared_edges) the page stayed guarded for the rows, so this read is
 *              cpu-read-during-device-write
 *   row        the CPU reads a byte of a row: cpu-read-during-device-write (enforce waits and
 *              reads the copied byte: "read byte 0x5a")
 *   interleave two device->host 2D copies on two unordered streams, one into the even rows and
 *              one into the odd rows (a pitch of two rows each): no conflict
 *   overlap    the same with the second copy's rows shifted by half a row into the first's:
 *              device-access-conflict
 *   io_gap     write(2) of a whole gap page to /dev/null during the 2D copy: no report
 *   io_row     write(2) of a row's bytes: syscall-read-during-device-write
 *   slice      a device->host 3D copy of 2 rows of each 4-row slice: the CPU reads a byte of row
 *              3 of slice 0 (beyond extent.height, inside the slice): no report
 * Usage: pitched CASE */
// LIST: slow SIMCUDA_LATENCY_US=500000
// enforce: the copy still runs after the CPU's read (slow).
// CASE: pitched.${c}.${mode} MODE ${mode} EXPECT none ARGS ${c} ENV ${GUARD_ENV} ${slow}
//   FOR mode IN audit enforce FOR c IN gap gap_page slice
// CASE: pitched.io_gap.${mode} MODE ${mode} EXPECT none ARGS io_gap ENV ${GUARD_ENV}
//   FOR mode IN audit enforce
// CASE: pitched.io_row.${mode} MODE ${mode} EXPECT syscall-read-during-device-write
//   ARGS io_row ENV ${GUARD_ENV} FOR mode IN audit enforce
// CASE: pitched.row.${mode} MODE ${mode} EXPECT cpu-read-during-device-write ARGS row
//   ENV ${GUARD_ENV} FOR mode IN audit enforce
// CASE: pitched.interleave.${mode} MODE ${mode} EXPECT none ARGS interleave
//   FOR mode IN audit enforce
// CASE: pitched.overlap.${mode} MODE ${mode} EXPECT device-access-conflict ARGS overlap
//   FOR mode IN audit enforce
// Enforce lets a gap byte through without waiting for the copy; a row byte waits for it. (A gap
// byte of a page the rows share is stepped without a wait with guard_shared_edges, below;
// without it the copy stops guarding, and enforce waits for it first, without a report.)
// CASE: pitched.${c}.enforce_no_wait MODE enforce EXPECT none ARGS ${c}
//   STDOUT "in flight after the read: yes" ENV ${GUARD_ENV} ${slow} FOR c IN gap slice
// CASE: pitched.row.enforce_data MODE enforce EXPECT cpu-read-during-device-write ARGS row
//   STDOUT "read byte 0x5a" ENV ${GUARD_ENV} ${PG_WAIT_LATENCY}
// With single steps (guard_shared_edges), a gap byte on a page the rows keep guarded is
// stepped: the page stays guarded for the rows.
// LIST: steps PG_EXTRA_OPTIONS=guard=1:guard_min_bytes=4096:guard_shared_edges=1
// CASE: pitched.gap_page.stepped.${mode} MODE ${mode} EXPECT none ARGS gap_page
//   ENV ${steps} ${slow} FOR mode IN audit enforce
// CASE: pitched.gap_then_row.stepped.${mode} MODE ${mode} EXPECT cpu-read-during-device-write
//   ARGS gap_then_row ENV ${steps} FOR mode IN audit enforce
// CASE: pitched.gap_page.stepped.enforce_no_wait MODE enforce EXPECT none ARGS gap_page
//   STDOUT "in flight after the read: yes" ENV ${steps} ${slow}

#include <fcntl.h>
#include <unistd.h>

#include "e2e.h"

#define PAGE 4096
#define NEW 0x5a

static void *dev;

static cudaStream_t stream(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

/* Reads one byte the way a program would, so that a guard fault happens at this load. */
static unsigned char cpu_read(const unsigned char *p) { return *(volatile const unsigned char *)p; }

/* A 2D device->host copy of `rows` rows of `width` bytes into host rows `pitch` apart. */
static void copy_2d(unsigned char *host, size_t pitch, size_t width, size_t rows, cudaStream_t s) {
  CHECK(cudaMemcpy2DAsync(host, pitch, dev, width, width, rows, cudaMemcpyDeviceToHost, s));
}

static void say_in_flight(cudaStream_t s) {
  printf("in flight after the read: %s\n", cudaStreamQuery(s) == cudaErrorNotReady ? "yes" : "no");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s gap|gap_page|gap_then_row|row|io_gap|io_row|interleave|overlap|slice\n", argv[0]);
    return 2;
  }
  const char *c = argv[1];
  unsigned char *host;
  CHECK(cudaHostAlloc((void **)&host, BUF_BYTES, cudaHostAllocDefault));
  CHECK(cudaMalloc(&dev, BUF_BYTES));
  CHECK(cudaMemset(dev, NEW, BUF_BYTES));
  CHECK(cudaDeviceSynchronize());
  memset(host, 0, BUF_BYTES);
  cudaStream_t a = stream(), b = stream();
  if (!strcmp(c, "gap") || !strcmp(c, "row")) {
    /* Rows of one page, three pages apart: two whole gap pages after each row. */
    copy_2d(host, 3 * PAGE, PAGE, 4, a);
    size_t off = !strcmp(c, "gap") ? PAGE + 100 : 3 * PAGE + 100;
    unsigned char v = cpu_read(host + off);
    if (!strcmp(c, "gap")) say_in_flight(a);
    else printf("read byte 0x%02x\n", v);
  } else if (!strcmp(c, "io_gap") || !strcmp(c, "io_row")) {
    copy_2d(host, 3 * PAGE, PAGE, 4, a);
    int fd = open("/dev/null", O_WRONLY);
    size_t off = !strcmp(c, "io_gap") ? PAGE : 3 * PAGE;
    if (fd < 0 || write(fd, host + off, PAGE) != PAGE) return 3;
    close(fd);
  } else if (!strcmp(c, "gap_page") || !strcmp(c, "gap_then_row")) {
    copy_2d(host, 3000, 100, 8, a);
    (void)cpu_read(host + 3000 + 200); /* page 0: also holds row 0 */
    if (!strcmp(c, "gap_then_row")) (void)cpu_read(host + 50); /* row 0 */
    say_in_flight(a);
  } else if (!strcmp(c, "interleave") || !strcmp(c, "overlap")) {
    size_t row = 256, shift = !strcmp(c, "overlap") ? row / 2 : row;
    copy_2d(host, 2 * row, row, 64, a);
    copy_2d(host + shift, 2 * row, row, 64, b);
  } else if (!strcmp(c, "slice")) {
    /* Slices of 4 rows of one page; the copy takes rows 0 and 1 of 3 slices. */
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = (struct cudaPitchedPtr){.ptr = dev, .pitch = PAGE, .xsize = PAGE, .ysize = 2};
    p.dstPtr = (struct cudaPitchedPtr){.ptr = host, .pitch = PAGE, .xsize = PAGE, .ysize = 4};
    p.extent = (struct cudaExtent){.width = PAGE, .height = 2, .depth = 3};
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3DAsync(&p, a));
    (void)cpu_read(host + 3 * PAGE + 100); /* slice 0, row 3 */
    say_in_flight(a);
  } else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(host));
  return 0;
}
