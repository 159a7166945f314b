/* device.h — device memory behind tensors on OAR_PLACE_CUDA.
 *
 * Implemented in src/device.c by calls through the CUDA backend
 * (src/backend.h), which is loaded on first use; without it (no
 * liboar_cuda.so, a library it needs or the driver missing) every device
 * operation fails with OAR_ERR_UNSUPPORTED naming what is missing. Device
 * blocks come from the backend's caching allocator (one per device): freed
 * blocks are kept for reuse. All work is ordered on each device's default
 * stream, so a block freed while kernels that use it are still queued can be
 * handed out again safely. Every failure sets the thread-local message
 * (oar_last_error) naming the CUDA call and the CUDA error. */
#ifndef OAR_DEVICE_H
#define OAR_DEVICE_H
#include <stddef.h>
#include "oar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices: 0 without the backend, a driver or GPU. */
int oar_device_count(void);
/* OAR_OK when `device` can be used, else an error saying why (no backend,
 * a missing library, no driver or GPU, device index out of range). */
int oar_device_check(int device);
/* At least `bytes` (0 allowed) of device memory into *out; contents unspecified. */
OAR_API int oar_device_alloc(int device, size_t bytes, void **out);
/* Returns a block from oar_device_alloc to the cache; NULL is ignored. */
OAR_API void oar_device_free(int device, void *p);
/* Copies `bytes` between places (OAR_PLACE_CPU / OAR_PLACE_CUDA) on one
 * device (`device`: the CUDA device involved). Host-to-host is a memmove.
 * Returns once the host side may be reused. */
OAR_API int oar_device_copy(void *dst, int dst_place, const void *src, int src_place, size_t bytes, int device);
/* The same between any two places and devices (a copy between two CUDA
 * devices is ordered after the source device's queued work). */
OAR_API int oar_device_copy_between(void *dst, int dst_place, int dst_device, const void *src, int src_place,
                                    int src_device, size_t bytes);
OAR_API int oar_device_memset_zero(void *p, size_t bytes, int device);
/* Makes `device` the calling thread's current device (kernels launch there);
 * cheap when it already is. */
int oar_device_use(int device);
/* Waits for the device's queued work; reports errors of earlier kernels. */
int oar_device_sync(int device);
/* The end of an executor run on `device`: waits for it and reports the
 * first range check a kernel flagged during the run. */
int oar_device_run_end(int device);
/* Nonzero once any device block was allocated in this process: until then
 * no tensor can be on a device and the CPU executor skips placement checks. */
extern int oar_device_ever_used;
/* debug flag cuda_sync_each_op: the executor syncs after every CUDA kernel,
 * so a failing kernel is reported by the op that launched it */
extern OAR_API int oar_flag_cuda_sync_each_op;

#ifdef __cplusplus
}
#endif
#endif
