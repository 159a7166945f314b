/*
 * device.cu — the CUDA device layer (src/device.h) and the helpers of
 * cuda_common.h.
 *
 * Memory: a caching allocator per device. Requests are rounded (512 B steps
 * below 1 MiB, 64 KiB steps above) and served best-fit from the device's
 * cached blocks when one is at most twice the request; otherwise cudaMalloc.
 * Freed blocks go back to the cache (no cudaFree, which would synchronize
 * the device). When cudaMalloc runs out of memory the device's cache is
 * released and the allocation retried. A table of live blocks maps each
 * pointer to its size, since oar_device_free receives only the pointer.
 *
 * Everything runs on each device's default stream; copies that involve the
 * host are synchronous for the host, so its memory may be reused at once.
 *
 * This file is the backend's table (src/backend.h): liboar reaches the
 * device only through oar_cuda_backend(), the symbol src/device.c looks up
 * after dlopen'ing liboar_cuda.so.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_common.h"
extern "C" {
#include "backend.h"
}

#define OAR_MAX_DEVICES 64

namespace {

struct Block { void *p; size_t cap; };

struct Pool {
    Block *cached = nullptr;            /* free blocks kept for reuse */
    int ncached = 0, capcached = 0;
    void **keys = nullptr;              /* live blocks: open addressing, linear probing */
    size_t *caps = nullptr;
    size_t slots = 0, nlive = 0;        /* slots: 0 or a power of two */
    cublasHandle_t blas = nullptr;
    void *blas_ws = nullptr;            /* cuBLAS's workspace, from this allocator */
    cudnnHandle_t dnn = nullptr;
};

Pool g_pools[OAR_MAX_DEVICES];
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

int g_count = 0;
cudaError_t g_count_err = cudaSuccess;

void count_devices()
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        g_count_err = e;
        n = 0;
        (void)cudaGetLastError();   /* leave no sticky error behind */
    }
    g_count = n;
}

thread_local int t_current = -1;

/* makes `device` current for this thread; status with the error set */
int set_device(int device)
{
    if (device == t_current) return OAR_OK;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess)
        return oar_error(OAR_ERR_DEVICE, "cudaSetDevice(%d) failed: %s", device, cudaGetErrorString(e));
    t_current = device;
    return OAR_OK;
}

int check_index(int device, const char *what)
{
    if (device < 0 || device >= OAR_MAX_DEVICES)
        return oar_error(OAR_ERR_RANGE, "%s: CUDA device %d is out of range", what, device);
    return OAR_OK;
}

size_t round_cap(size_t bytes)
{
    if (bytes <= 512) return 512;
    if (bytes < ((size_t)1 << 20)) return (bytes + 511) & ~(size_t)511;
    const size_t step = (size_t)64 << 10;
    return (bytes + step - 1) & ~(step - 1);
}

size_t slot_of(const Pool &pl, const void *p)
{
    return (size_t)oarcu::mix64((uint64_t)(uintptr_t)p) & (pl.slots - 1);
}

/* live table; callers hold g_lock */
bool live_grow(Pool &pl)
{
    size_t n = pl.slots ? pl.slots * 2 : 256;
    void **keys = (void **)calloc(n, sizeof *keys);
    size_t *caps = (size_t *)calloc(n, sizeof *caps);
    if (!keys || !caps) { free(keys); free(caps); return false; }
    void **ok = pl.keys;
    size_t *oc = pl.caps, on = pl.slots;
    pl.keys = keys; pl.caps = caps; pl.slots = n;
    for (size_t i = 0; i < on; i++)
        if (ok[i]) {
            size_t j = slot_of(pl, ok[i]);
            while (pl.keys[j]) j = (j + 1) & (n - 1);
            pl.keys[j] = ok[i];
            pl.caps[j] = oc[i];
        }
    free(ok);
    free(oc);
    return true;
}

bool live_put(Pool &pl, void *p, size_t cap)
{
    if ((pl.nlive + 1) * 2 > pl.slots && !live_grow(pl)) return false;
    size_t j = slot_of(pl, p);
    while (pl.keys[j]) j = (j + 1) & (pl.slots - 1);
    pl.keys[j] = p;
    pl.caps[j] = cap;
    pl.nlive++;
    return true;
}

/* removes p (backward-shift deletion); its capacity, or 0 when unknown */
size_t live_take(Pool &pl, void *p)
{
    if (!pl.slots) return 0;
    const size_t mask = pl.slots - 1;
    size_t j = slot_of(pl, p);
    while (pl.keys[j] && pl.keys[j] != p) j = (j + 1) & mask;
    if (!pl.keys[j]) return 0;
    size_t cap = pl.caps[j];
    pl.keys[j] = nullptr;
    pl.nlive--;
    for (size_t i = (j + 1) & mask; pl.keys[i]; i = (i + 1) & mask) {
        size_t h = slot_of(pl, pl.keys[i]);
        /* move entry i into the hole j when its home h does not lie in (j, i] */
        bool in_range = j < i ? (h > j && h <= i) : (h > j || h <= i);
        if (!in_range) {
            pl.keys[j] = pl.keys[i];
            pl.caps[j] = pl.caps[i];
            pl.keys[i] = nullptr;
            j = i;
        }
    }
    return cap;
}

/* best cached block for `want`; callers hold g_lock */
void *cache_take(Pool &pl, size_t want, size_t *cap)
{
    int best = -1;
    for (int i = 0; i < pl.ncached; i++) {
        size_t c = pl.cached[i].cap;
        if (c >= want && c / 2 <= want && (best < 0 || c < pl.cached[best].cap)) best = i;
    }
    if (best < 0) return nullptr;
    Block b = pl.cached[best];
    pl.cached[best] = pl.cached[--pl.ncached];
    *cap = b.cap;
    return b.p;
}

bool cache_put(Pool &pl, void *p, size_t cap)
{
    if (pl.ncached == pl.capcached) {
        int n = pl.capcached ? pl.capcached * 2 : 64;
        Block *c = (Block *)realloc(pl.cached, sizeof *c * (size_t)n);
        if (!c) return false;
        pl.cached = c;
        pl.capcached = n;
    }
    pl.cached[pl.ncached++] = Block{p, cap};
    return true;
}

/* gives every cached block of the device back to CUDA */
void cache_release(int device)
{
    pthread_mutex_lock(&g_lock);
    Pool &pl = g_pools[device];
    Block *blocks = pl.cached;
    int n = pl.ncached;
    pl.cached = nullptr;
    pl.ncached = pl.capcached = 0;
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < n; i++) cudaFree(blocks[i].p);
    free(blocks);
}

const char *place_name(int place) { return place == OAR_PLACE_CPU ? "host" : "device"; }

/* ---- the backend table (src/backend.h) ------------------------------------ */
/* why no device is usable: the driver or the devices, named */
const char *g_count_why = nullptr;
char g_count_msg[256];

void count_devices_why()
{
    count_devices();
    if (g_count == 0) {
        if (g_count_err == cudaErrorInsufficientDriver || g_count_err == cudaErrorNoDevice ||
            g_count_err == cudaErrorInitializationError) {
            /* the usual cause: no driver library at all */
            void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
            if (!drv) drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
            if (!drv) {
                snprintf(g_count_msg, sizeof g_count_msg, "the CUDA driver library libcuda.so.1 could not be loaded: %s",
                         dlerror());
                g_count_why = g_count_msg;
                return;
            }
        }
        if (g_count_err != cudaSuccess)
            snprintf(g_count_msg, sizeof g_count_msg, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(g_count_err),
                     cudaGetErrorName(g_count_err));
        else
            snprintf(g_count_msg, sizeof g_count_msg, "cudaGetDeviceCount found no GPU");
        g_count_why = g_count_msg;
    }
}

pthread_once_t g_why_once = PTHREAD_ONCE_INIT;

int be_device_count(const char **why)
{
    pthread_once(&g_why_once, count_devices_why);
    if (why) *why = g_count_why;
    return g_count < OAR_MAX_DEVICES ? g_count : OAR_MAX_DEVICES;
}

int be_alloc(int device, size_t bytes, void **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_device_alloc: NULL out");
    *out = nullptr;
    OAR_TRY(check_index(device, "oar_device_alloc"));
    const size_t want = round_cap(bytes);
    if (want < bytes) return oar_error(OAR_ERR_NOMEM, "device allocation of %zu bytes is too large", bytes);
    Pool &pl = g_pools[device];
    size_t cap = 0;
    pthread_mutex_lock(&g_lock);
    void *p = cache_take(pl, want, &cap);
    if (p && !live_put(pl, p, cap)) {
        cache_put(pl, p, cap);
        pthread_mutex_unlock(&g_lock);
        return oar_error(OAR_ERR_NOMEM, "out of host memory tracking device blocks");
    }
    pthread_mutex_unlock(&g_lock);
    if (p) { *out = p; return OAR_OK; }
    OAR_TRY(set_device(device));
    cudaError_t e = cudaMalloc(&p, want);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        cache_release(device);
        e = cudaMalloc(&p, want);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return oar_error(e == cudaErrorMemoryAllocation ? OAR_ERR_NOMEM : OAR_ERR_DEVICE,
                         "cudaMalloc of %zu bytes on CUDA device %d failed: %s", want, device,
                         cudaGetErrorString(e));
    }
    pthread_mutex_lock(&g_lock);
    bool ok = live_put(pl, p, want);
    pthread_mutex_unlock(&g_lock);
    if (!ok) {
        cudaFree(p);
        return oar_error(OAR_ERR_NOMEM, "out of host memory tracking device blocks");
    }
    *out = p;
    return OAR_OK;
}

void be_free(int device, void *p)
{
    if (!p || device < 0 || device >= OAR_MAX_DEVICES) return;
    Pool &pl = g_pools[device];
    pthread_mutex_lock(&g_lock);
    size_t cap = live_take(pl, p);
    bool kept = cap > 0 && cache_put(pl, p, cap);
    pthread_mutex_unlock(&g_lock);
    if (!kept && set_device(device) == OAR_OK) cudaFree(p);
}

int copy_fail(cudaError_t e, const char *call, size_t bytes, int src_place, int src_dev, int dst_place, int dst_dev)
{
    (void)cudaGetLastError();
    return oar_error(OAR_ERR_DEVICE, "%s of %zu bytes (%s %d to %s %d) failed: %s", call, bytes,
                     place_name(src_place), src_dev, place_name(dst_place), dst_dev, cudaGetErrorString(e));
}

int be_copy(void *dst, int dst_place, int dst_dev, const void *src, int src_place, int src_dev, size_t bytes)
{
    if (bytes == 0) return OAR_OK;
    if (!dst || !src) return oar_error(OAR_ERR_INVALID, "oar_device_copy: NULL pointer");
    if (dst_place == OAR_PLACE_CPU && src_place == OAR_PLACE_CPU) {
        memmove(dst, src, bytes);
        return OAR_OK;
    }
    if (dst_place == OAR_PLACE_CUDA) OAR_TRY(check_index(dst_dev, "oar_device_copy"));
    if (src_place == OAR_PLACE_CUDA) OAR_TRY(check_index(src_dev, "oar_device_copy"));
    cudaError_t e;
    if (dst_place == OAR_PLACE_CUDA && src_place == OAR_PLACE_CUDA) {
        if (dst_dev == src_dev) {
            OAR_TRY(set_device(dst_dev));
            e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
            if (e != cudaSuccess) return copy_fail(e, "cudaMemcpyAsync", bytes, src_place, src_dev, dst_place, dst_dev);
            return OAR_OK;
        }
        /* between two devices: cudaMemcpyPeer is serialized with the pending
         * and later work of both devices' legacy default streams, so it reads
         * the source after the kernels that wrote it, and the source block
         * may go back to its cache at once (later work there waits for it) */
        e = cudaMemcpyPeer(dst, dst_dev, src, src_dev, bytes);
        if (e != cudaSuccess) return copy_fail(e, "cudaMemcpyPeer", bytes, src_place, src_dev, dst_place, dst_dev);
        return OAR_OK;
    }
    const int dev = dst_place == OAR_PLACE_CUDA ? dst_dev : src_dev;
    OAR_TRY(set_device(dev));
    e = cudaMemcpy(dst, src, bytes, dst_place == OAR_PLACE_CUDA ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return copy_fail(e, "cudaMemcpy", bytes, src_place, src_dev, dst_place, dst_dev);
    return OAR_OK;
}

int be_memset_zero(void *p, size_t bytes, int device)
{
    if (bytes == 0) return OAR_OK;
    OAR_TRY(check_index(device, "oar_device_memset_zero"));
    OAR_TRY(set_device(device));
    cudaError_t e = cudaMemsetAsync(p, 0, bytes, 0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return oar_error(OAR_ERR_DEVICE, "cudaMemsetAsync of %zu bytes on CUDA device %d failed: %s", bytes,
                         device, cudaGetErrorString(e));
    }
    return OAR_OK;
}

int be_use(int device)
{
    OAR_TRY(check_index(device, "oar_device_use"));
    return set_device(device);
}

int be_sync(int device)
{
    OAR_TRY(check_index(device, "oar_device_sync"));
    OAR_TRY(set_device(device));
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return oar_error(OAR_ERR_DEVICE, "cudaDeviceSynchronize on CUDA device %d failed (a kernel queued "
                         "earlier failed): %s", device, cudaGetErrorString(e));
    }
    return OAR_OK;
}

int be_run_end(int device)
{
    OAR_TRY(be_sync(device));
    return oarcu::run_checks_end(device);
}

void be_release_cache(int device)
{
    if (device >= 0 && device < OAR_MAX_DEVICES) cache_release(device);
}

const oar_backend_t g_backend = {
    OAR_BACKEND_ABI, "cuda", be_device_count, be_alloc, be_free, be_copy, be_memset_zero,
    be_use, be_sync, be_run_end, be_release_cache,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const oar_backend_t *oar_cuda_backend(int abi)
{
    (void)abi;   /* the loader compares g_backend.abi with its own */
    return &g_backend;
}

/* ---- helpers of cuda_common.h --------------------------------------------- */
namespace oarcu {

int cuda_fail(oar_kernel_ctx_t *k, cudaError_t e, const char *call)
{
    (void)cudaGetLastError();   /* clear a non-sticky error so later calls are not blamed */
    int status = e == cudaErrorMemoryAllocation ? OAR_ERR_NOMEM : OAR_ERR_DEVICE;
    return oar_k_error(k, status, "%s failed on CUDA device %d: %s (%s)", call, oar_k_device(k),
                       cudaGetErrorString(e), cudaGetErrorName(e));
}

int cublas_fail(oar_kernel_ctx_t *k, cublasStatus_t s, const char *call)
{
    int status = s == CUBLAS_STATUS_ALLOC_FAILED ? OAR_ERR_NOMEM : OAR_ERR_DEVICE;
    return oar_k_error(k, status, "%s failed on CUDA device %d: %s (%s)", call, oar_k_device(k),
                       cublasGetStatusString(s), cublasGetStatusName(s));
}

int cudnn_fail(oar_kernel_ctx_t *k, cudnnStatus_t s, const char *call)
{
    int status = s == CUDNN_STATUS_ALLOC_FAILED ? OAR_ERR_NOMEM
               : s == CUDNN_STATUS_NOT_SUPPORTED ? OAR_ERR_UNSUPPORTED : OAR_ERR_DEVICE;
    return oar_k_error(k, status, "%s failed on CUDA device %d: %s", call, oar_k_device(k), cudnnGetErrorString(s));
}

void release_cache(int device)
{
    if (device >= 0 && device < OAR_MAX_DEVICES) cache_release(device);
}

int blas_handle(oar_kernel_ctx_t *k, cublasHandle_t *h)
{
    const int d = oar_k_device(k);
    if (d < 0 || d >= OAR_MAX_DEVICES) return oar_k_error(k, OAR_ERR_RANGE, "CUDA device %d is out of range", d);
    if (set_device(d) != OAR_OK) return oar_k_error(k, OAR_ERR_DEVICE, "%s", oar_last_error());
    Pool &pl = g_pools[d];
    pthread_mutex_lock(&g_lock);
    cublasHandle_t have = pl.blas;
    pthread_mutex_unlock(&g_lock);
    if (have) { *h = have; return OAR_OK; }
    /* made outside g_lock: the workspace comes from the allocator, which takes it */
    cublasHandle_t made = nullptr;
    cublasStatus_t s = cublasCreate(&made);
    if (s != CUBLAS_STATUS_SUCCESS) return cublas_fail(k, s, "cublasCreate");
    void *ws = nullptr;
    if (be_alloc(d, kBlasWorkspace, &ws) == OAR_OK) {
        s = cublasSetWorkspace(made, ws, kBlasWorkspace);
        if (s != CUBLAS_STATUS_SUCCESS) { be_free(d, ws); ws = nullptr; }   /* cuBLAS then allocates its own */
    }
    pthread_mutex_lock(&g_lock);
    bool lost = pl.blas != nullptr;   /* another thread made one meanwhile */
    if (!lost) { pl.blas = made; pl.blas_ws = ws; }
    *h = pl.blas;
    pthread_mutex_unlock(&g_lock);
    if (lost) {
        cublasDestroy(made);
        be_free(d, ws);
    }
    return OAR_OK;
}

int dnn_handle(oar_kernel_ctx_t *k, cudnnHandle_t *h)
{
    const int d = oar_k_device(k);
    if (d < 0 || d >= OAR_MAX_DEVICES) return oar_k_error(k, OAR_ERR_RANGE, "CUDA device %d is out of range", d);
    if (set_device(d) != OAR_OK) return oar_k_error(k, OAR_ERR_DEVICE, "%s", oar_last_error());
    pthread_mutex_lock(&g_lock);
    Pool &pl = g_pools[d];
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    if (!pl.dnn) s = cudnnCreate(&pl.dnn);
    *h = pl.dnn;
    pthread_mutex_unlock(&g_lock);
    if (s != CUDNN_STATUS_SUCCESS) return cudnn_fail(k, s, "cudnnCreate");
    return OAR_OK;
}

int Scratch::alloc(oar_kernel_ctx_t *k, size_t bytes, const char *what)
{
    if (p) oar_device_free(device, p);
    p = nullptr;
    device = oar_k_device(k);
    if (oar_device_alloc(device, bytes, &p) != OAR_OK) {
        p = nullptr;
        oar_error_prefix("%s: %s: ", oar_k_op(k)->type, what);
        return OAR_ERR_NOMEM;
    }
    return OAR_OK;
}

int to_host(oar_kernel_ctx_t *k, void *dst, const void *src, size_t bytes, const char *what)
{
    int rc = oar_device_copy(dst, OAR_PLACE_CPU, src, OAR_PLACE_CUDA, bytes, oar_k_device(k));
    if (rc != OAR_OK) oar_error_prefix("%s: %s: ", oar_k_op(k)->type, what);
    return rc;
}

int to_device(oar_kernel_ctx_t *k, void *dst, const void *src, size_t bytes, const char *what)
{
    int rc = oar_device_copy(dst, OAR_PLACE_CUDA, src, OAR_PLACE_CPU, bytes, oar_k_device(k));
    if (rc != OAR_OK) oar_error_prefix("%s: %s: ", oar_k_op(k)->type, what);
    return rc;
}

/* ---- run-wide range checks ------------------------------------------------- */
namespace {
constexpr int kCheckSlots = 128;
struct RunChecks {
    unsigned long long *dev = nullptr;   /* kCheckSlots flags, ~0 when clear */
    int n = 0;                           /* slots handed out in this run */
    char msg[kCheckSlots][384];
};
RunChecks g_checks[OAR_MAX_DEVICES];
pthread_mutex_t g_checks_lock = PTHREAD_MUTEX_INITIALIZER;
}  // namespace

int BadFlag::init(oar_kernel_ctx_t *k)
{
    const int d = oar_k_device(k);
    if (d >= 0 && d < OAR_MAX_DEVICES && !oar_flag_cuda_sync_each_op) {
        RunChecks &rc = g_checks[d];
        pthread_mutex_lock(&g_checks_lock);
        if (!rc.dev && oar_device_alloc(d, sizeof(unsigned long long) * kCheckSlots, (void **)&rc.dev) == OAR_OK &&
            cudaMemsetAsync(rc.dev, 0xff, sizeof(unsigned long long) * kCheckSlots, 0) != cudaSuccess) {
            (void)cudaGetLastError();
            oar_device_free(d, rc.dev);
            rc.dev = nullptr;
        }
        if (rc.dev && rc.n < kCheckSlots) {
            slot = rc.n++;
            rc.msg[slot][0] = 0;
            p = rc.dev + slot;
        }
        pthread_mutex_unlock(&g_checks_lock);
        if (p) return OAR_OK;
    }
    OAR_TRY(s.alloc(k, sizeof(unsigned long long), "range-check flag"));
    p = s.as<unsigned long long>();
    OAR_CU(k, cudaMemsetAsync(p, 0xff, sizeof(unsigned long long), 0), "cudaMemsetAsync");
    return OAR_OK;
}

int BadFlag::report(oar_kernel_ctx_t *k, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (slot >= 0 && !oar_flag_cuda_sync_each_op) {   /* read at the run's end */
        pthread_mutex_lock(&g_checks_lock);
        const char *ctx = oar_k_context(k);
        char *msg = g_checks[oar_k_device(k)].msg[slot];
        snprintf(msg, sizeof g_checks[0].msg[0], "%s: %s", ctx ? ctx : "op", what);
        pthread_mutex_unlock(&g_checks_lock);
        return OAR_OK;
    }
    unsigned long long v = 0;
    OAR_TRY(to_host(k, &v, p, sizeof v, "reading the range-check flag"));
    if (slot >= 0) OAR_CU(k, cudaMemsetAsync(p, 0xff, sizeof v, 0), "cudaMemsetAsync");
    if (v == ~0ull) return OAR_OK;
    return oar_k_error(k, OAR_ERR_RANGE, "%s (first at position %llu)", what, v);
}

int run_checks_end(int device)
{
    if (device < 0 || device >= OAR_MAX_DEVICES) return OAR_OK;
    RunChecks &rc = g_checks[device];
    pthread_mutex_lock(&g_checks_lock);
    const int n = rc.n;
    rc.n = 0;
    unsigned long long flags[kCheckSlots];
    int status = OAR_OK;
    if (n > 0) {
        cudaError_t e = cudaMemcpy(flags, rc.dev, sizeof flags[0] * (size_t)n, cudaMemcpyDeviceToHost);
        if (e == cudaSuccess) e = cudaMemsetAsync(rc.dev, 0xff, sizeof flags[0] * (size_t)n, 0);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            status = oar_error(OAR_ERR_DEVICE, "reading the run's range checks on CUDA device %d: %s", device,
                               cudaGetErrorString(e));
        }
        for (int i = 0; status == OAR_OK && i < n; i++)
            if (flags[i] != ~0ull)
                status = oar_error(OAR_ERR_RANGE, "%s (first at position %llu)",
                                   rc.msg[i][0] ? rc.msg[i] : "a range check failed", flags[i]);
    }
    pthread_mutex_unlock(&g_checks_lock);
    return status;
}

}  // namespace oarcu
