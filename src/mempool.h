/* mempool.h — a cache of large CPU blocks, so the temporaries a run frees are
 * handed to the next run instead of going back to the kernel (each fresh
 * mapping costs a page fault per 4 KiB). */
#ifndef OAR_MEMPOOL_H
#define OAR_MEMPOOL_H
#include <stddef.h>

/* 64-byte aligned block of at least `bytes`; *cap receives its real size.
 * Contents are unspecified. NULL on failure (no error is set). */
void *oar_pool_alloc(size_t bytes, size_t *cap);
void oar_pool_free(void *p, size_t cap);
/* bytes currently cached, and the cache's limit (OAR_POOL_LIMIT_MB, default 512) */
size_t oar_pool_cached(void);
void oar_pool_trim(void);
#endif
