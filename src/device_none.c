/* device_none.c — the device layer of a build without CUDA: no devices, and
 * every device operation fails with OAR_ERR_UNSUPPORTED. With CUDA the
 * functions come from kernels/cuda/device.cu instead; this file then only
 * holds what both builds share. */
#include "device.h"
#include "error.h"

int oar_device_ever_used = 0;

int oar_cuda_device_count(void) { return oar_device_count(); }

#ifndef OAR_WITH_CUDA
#include <string.h>

#define NO_CUDA "oar was built without CUDA (nvcc was not found at build time)"

int oar_device_count(void) { return 0; }

int oar_device_check(int device)
{
    return oar_error(OAR_ERR_UNSUPPORTED, "CUDAPlace(%d): " NO_CUDA, device);
}

int oar_device_alloc(int device, size_t bytes, void **out)
{
    if (out) *out = NULL;
    return oar_error(OAR_ERR_UNSUPPORTED, "allocating %zu bytes on CUDA device %d: " NO_CUDA, bytes, device);
}

void oar_device_free(int device, void *p)
{
    (void)device;
    (void)p;
}

int oar_device_copy(void *dst, int dst_place, const void *src, int src_place, size_t bytes, int device)
{
    if (dst_place == OAR_PLACE_CPU && src_place == OAR_PLACE_CPU) {
        if (bytes > 0) memmove(dst, src, bytes);
        return OAR_OK;
    }
    return oar_error(OAR_ERR_UNSUPPORTED, "copying %zu bytes to/from CUDA device %d: " NO_CUDA, bytes, device);
}

int oar_device_memset_zero(void *p, size_t bytes, int device)
{
    (void)p;
    return oar_error(OAR_ERR_UNSUPPORTED, "clearing %zu bytes on CUDA device %d: " NO_CUDA, bytes, device);
}

int oar_device_use(int device)
{
    return oar_error(OAR_ERR_UNSUPPORTED, "using CUDA device %d: " NO_CUDA, device);
}

int oar_device_sync(int device)
{
    return oar_error(OAR_ERR_UNSUPPORTED, "synchronizing CUDA device %d: " NO_CUDA, device);
}
#endif
