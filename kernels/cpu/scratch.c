/* scratch.c — kernel scratch on the runtime's block cache (scratch.h). The
 * block's real size, which oar_pool_free needs, is kept in a 64-byte header
 * (the size of the pool's alignment, so the data stays 64-byte aligned). */
#include <stdint.h>
#include <string.h>
#include "scratch.h"
#include "mempool.h"

#define HDR 64

void *oar_scratch_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - HDR) return NULL;
    size_t cap = 0;
    char *p = oar_pool_alloc(bytes + HDR, &cap);
    if (!p) return NULL;
    memcpy(p, &cap, sizeof cap);
    return p + HDR;
}

void oar_scratch_free(void *q) {
    if (!q) return;
    char *p = (char *)q - HDR;
    size_t cap;
    memcpy(&cap, p, sizeof cap);
    oar_pool_free(p, cap);
}
