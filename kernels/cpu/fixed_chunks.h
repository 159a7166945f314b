/* fixed_chunks.h — sums split across threads that give the same bits on
 * any thread count.
 *
 * A parallel sum whose partials are per thread rounds differently with 1
 * thread and 2. Here the items are cut into chunks decided by their count
 * alone (OAR_CHUNKS of them once the sum is worth splitting), each chunk is
 * summed in item order, threads take whole chunks, and the chunks' partials
 * are added in chunk order: the same additions whatever the thread count. */
#ifndef OAR_KERNELS_CPU_FIXED_CHUNKS_H
#define OAR_KERNELS_CPU_FIXED_CHUNKS_H
#include <stdbool.h>
#include <stdint.h>

#define OAR_CHUNKS 8

/* how many chunks a sum over n items takes: 1 when `split` is false (the
 * caller's size test, which must not look at the thread count) */
static inline int oar_chunk_count(int64_t n, bool split) {
    return !split || n < 2 ? 1 : n < OAR_CHUNKS ? (int)n : OAR_CHUNKS;
}
/* items [*lo, *hi) of chunk c of nch */
static inline void oar_chunk_range(int64_t n, int nch, int c, int64_t *lo, int64_t *hi) {
    *lo = n * c / nch;
    *hi = n * (c + 1) / nch;
}
#endif
