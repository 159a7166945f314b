/* device.h — CUDA device memory behind tensors on OAR_PLACE_CUDA.
 *
 * Implemented in kernels/cuda/device.cu when oar is built with CUDA
 * (OAR_WITH_CUDA), else by src/device_none.c, whose functions fail with
 * OAR_ERR_UNSUPPORTED ("oar was built without CUDA"). Device blocks come from
 * a caching allocator (one per device): freed blocks are kept for reuse
 * instead of going back to cudaFree, as src/mempool.c does for host blocks.
 * All work is ordered on each device's default stream, so a block freed
 * while kernels that use it are still queued can be handed out again safely.
 * Every failure sets the thread-local message (oar_last_error) naming the
 * CUDA call and the CUDA error. */
#ifndef OAR_DEVICE_H
#define OAR_DEVICE_H
#include <stddef.h>
#include "oar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices: 0 without CUDA, without a driver or GPU. */
int oar_device_count(void);
/* OAR_OK when `device` can be used, else an error saying why (no CUDA in the
 * build, no driver or GPU, device index out of range). */
int oar_device_check(int device);
/* At least `bytes` (0 allowed) of device memory into *out; contents unspecified. */
int oar_device_alloc(int device, size_t bytes, void **out);
/* Returns a block from oar_device_alloc to the cache; NULL is ignored. */
void oar_device_free(int device, void *p);
/* Copies `bytes` between places (OAR_PLACE_CPU / OAR_PLACE_CUDA); `device` is
 * the CUDA device involved (for device-to-device copies, the current one).
 * Host-to-host is a memcpy. Returns once the host side may be reused. */
int oar_device_copy(void *dst, int dst_place, const void *src, int src_place, size_t bytes, int device);
int oar_device_memset_zero(void *p, size_t bytes, int device);
/* Makes `device` the calling thread's current device (kernels launch there);
 * cheap when it already is. */
int oar_device_use(int device);
/* Waits for the device's queued work; reports errors of earlier kernels. */
int oar_device_sync(int device);
/* Nonzero once any device block was allocated in this process: until then
 * no tensor can be on a device and the CPU executor skips placement checks. */
extern int oar_device_ever_used;

#ifdef __cplusplus
}
#endif
#endif
