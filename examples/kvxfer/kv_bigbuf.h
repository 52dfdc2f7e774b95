/* kv_bigbuf.h: large pageable buffers (chunk copies, staging rows) mapped with transparent huge
 * pages where the kernel allows: at 32 MiB per chunk, 4 KiB page faults dominate the CPU cost. */
#ifndef KV_BIGBUF_H
#define KV_BIGBUF_H

#include <stddef.h>

/* n zeroed bytes, or NULL. */
void *kv_big_alloc(size_t n);
void kv_big_free(void *p, size_t n);

#endif /* KV_BIGBUF_H */
