/* scratch.h — temporary buffers of the CPU kernels from the runtime's block
 * cache (src/mempool.h). A kernel's scratch of a few hundred KiB or more,
 * malloc'd and freed every step, is a fresh mapping each time: page faults
 * and kernel zeroing were ~19 % of an LSTM training step. The cache hands
 * the same blocks back step after step. */
#ifndef OAR_KERNELS_CPU_SCRATCH_H
#define OAR_KERNELS_CPU_SCRATCH_H
#include <stddef.h>

/* 64-byte aligned, contents unspecified; NULL on failure (no error set) */
void *oar_scratch_alloc(size_t bytes);
/* takes NULL */
void oar_scratch_free(void *p);
#endif
