/* sc_uring.h: the simulated device's DMA engine for registered private memory.
 *
 * The real driver pins the pages of a cudaHostRegister'ed range and its copy engines reach those
 * physical pages over the bus, never through the CPU's page tables: the user's mapping stays what
 * it was (private anonymous memory stays private anonymous), and CPU page protections on it
 * (pinguard's guard pages) never stop a copy. simcuda does the same with io_uring: the range is
 * registered as fixed buffers (IORING_REGISTER_BUFFERS_UPDATE pins its pages, as the driver does),
 * and the device reads and writes them with IORING_OP_WRITE_FIXED and IORING_OP_READ_FIXED
 * against a memfd: the kernel copies through the pinned pages, whatever the CPU's view allows.
 *
 * One ring serves the process; its operations are serialized by one mutex (the simulated bus).
 * Every function is safe to call from any thread. */
#ifndef SC_URING_H
#define SC_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A pinned range: fixed-buffer slots [slot, slot + ceil(len / 1 GiB)), slot i holding
 * [base + (i - slot) GiB, ...). */
typedef struct sc_pin {
  int slot; /* -1: not pinned */
  uintptr_t base;
  size_t len;
} sc_pin;

/* Whether the engine works in this process (io_uring may be disabled or filtered). On false,
 * *why names the reason (static text). Sets the engine up on the first call. */
bool sc_uring_available(const char **why);

/* Pins [base, base + len) (page-aligned, mapped writable: FOLL_WRITE, as the driver pins).
 * Returns false with errno set on failure (ENOSPC when the slot table is full). */
bool sc_uring_pin(uintptr_t base, size_t len, sc_pin *out);
void sc_uring_unpin(const sc_pin *pin);

/* The device reads n pinned bytes at addr into dst (any memory the CPU may write). */
bool sc_uring_read(const sc_pin *pin, uintptr_t addr, void *dst, size_t n);
/* The device writes n bytes from src (any memory the CPU may read) into the pinned bytes at addr. */
bool sc_uring_write(const sc_pin *pin, uintptr_t addr, const void *src, size_t n);
/* The device sets n pinned bytes at addr to value. */
bool sc_uring_fill(const sc_pin *pin, uintptr_t addr, int value, size_t n);
/* A copy between two pinned ranges (they may be the same one). */
bool sc_uring_copy(const sc_pin *dpin, uintptr_t daddr, const sc_pin *spin, uintptr_t saddr,
                   size_t n);
/* Pinned bytes to file fd at off, and back. */
bool sc_uring_to_fd(const sc_pin *pin, uintptr_t addr, int fd, off_t off, size_t n);
bool sc_uring_from_fd(const sc_pin *pin, uintptr_t addr, int fd, off_t off, size_t n);

#endif /* SC_URING_H */
