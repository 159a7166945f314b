/* device.c — the device layer (device.h) as calls through the CUDA backend
 * (backend.h), and the loader that finds and opens that backend the first
 * time a CUDA place is asked for. Nothing here links a CUDA library. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend.h"
#include "device.h"
#include "op.h"
#include "error.h"

int oar_device_ever_used = 0;
int oar_flag_cuda_sync_each_op = 0;

/* ---- loading ------------------------------------------------------------- */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const oar_backend_t *g_backend;
static char g_why[2048] = "the CUDA backend has not been loaded yet";
static const char *g_count_why;   /* why the backend sees no device */

/* the directory liboar.so was loaded from, with a trailing '/', or "" */
static void own_dir(char *dir, size_t n)
{
    Dl_info info;
    dir[0] = 0;
    if (!dladdr((void *)&own_dir, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    size_t len = (size_t)(slash - info.dli_fname) + 1;
    if (len >= n) return;
    memcpy(dir, info.dli_fname, len);
    dir[len] = 0;
}

static void load_backend(void)
{
    char path[900], dir[800];
    const char *env = getenv(OAR_BACKEND_ENV);
    bool explicit_path = env && *env;
    if (explicit_path) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        own_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s%s", dir, OAR_BACKEND_FILE);
        if (!dir[0] || access(path, F_OK) != 0) snprintf(path, sizeof path, "%s", OAR_BACKEND_FILE);
    }
    if (explicit_path && access(path, F_OK) != 0) {
        snprintf(g_why, sizeof g_why, "the CUDA backend %s (from $%s) does not exist", path, OAR_BACKEND_ENV);
        return;
    }
    /* never unloaded: its kernels stay registered in liboar */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *e = dlerror();
        if (strchr(path, '/') == NULL && e && strstr(e, OAR_BACKEND_FILE) && strstr(e, "cannot open"))
            snprintf(g_why, sizeof g_why, "the CUDA backend %s was not found (looked next to liboar.so%s%s and on "
                     "the library path): oar was built without nvcc, or the backend was not installed",
                     OAR_BACKEND_FILE, dir[0] ? " in " : "", dir);
        else
            snprintf(g_why, sizeof g_why, "the CUDA backend %s could not be loaded: %s", path, e ? e : "?");
        return;
    }
    oar_backend_entry_fn entry;
    *(void **)&entry = dlsym(h, OAR_BACKEND_ENTRY);
    if (!entry) {
        snprintf(g_why, sizeof g_why, "%s is not an oar backend (it has no symbol %s)", path, OAR_BACKEND_ENTRY);
        return;
    }
    const oar_backend_t *b = entry(OAR_BACKEND_ABI);
    if (!b || b->abi != OAR_BACKEND_ABI) {
        snprintf(g_why, sizeof g_why, "the CUDA backend %s was built for backend ABI %d, this liboar needs %d: "
                 "rebuild both with make", path, b ? b->abi : -1, OAR_BACKEND_ABI);
        return;
    }
    /* its kernels registered as it loaded: a duplicate or a kernel for an
     * undeclared op makes the backend unusable, said as the reason */
    if (oar_registry_check() != OAR_OK) {
        snprintf(g_why, sizeof g_why, "the CUDA backend %s: %s", path, oar_last_error());
        return;
    }
    g_backend = b;
    g_why[0] = 0;
}

const oar_backend_t *oar_backend_cuda(void)
{
    pthread_once(&g_once, load_backend);
    if (!g_backend) oar_error(OAR_ERR_UNSUPPORTED, "%s", g_why);
    return g_backend;
}

const char *oar_backend_cuda_error(void)
{
    return g_backend ? NULL : g_why;
}

bool oar_is_compiled_with_cuda(void)
{
    pthread_once(&g_once, load_backend);
    return g_backend != NULL;
}

const char *oar_cuda_backend_error(void)
{
    pthread_once(&g_once, load_backend);
    return g_backend ? NULL : g_why;
}

/* ---- the device layer ------------------------------------------------------ */
#define BACKEND_OR(what, ...)                                                      \
    const oar_backend_t *be = oar_backend_cuda();                                  \
    if (!be) {                                                                     \
        oar_error_prefix(what ": ", __VA_ARGS__);                                  \
        return OAR_ERR_UNSUPPORTED;                                                \
    }

int oar_device_count(void)
{
    const oar_backend_t *be = oar_backend_cuda();
    if (!be) return 0;
    return be->device_count(&g_count_why);
}

int oar_cuda_device_count(void) { return oar_device_count(); }

int oar_device_check(int device)
{
    BACKEND_OR("CUDAPlace(%d)", device);
    const char *why = NULL;
    int n = be->device_count(&why);
    if (n == 0)
        return oar_error(OAR_ERR_UNSUPPORTED, "CUDAPlace(%d): no CUDA device is available (%s)", device,
                         why ? why : "the backend found none");
    if (device < 0 || device >= n)
        return oar_error(OAR_ERR_RANGE, "CUDAPlace(%d): there %s only %d CUDA device%s (0 to %d)", device,
                         n == 1 ? "is" : "are", n, n == 1 ? "" : "s", n - 1);
    return OAR_OK;
}

int oar_device_alloc(int device, size_t bytes, void **out)
{
    if (out) *out = NULL;
    BACKEND_OR("allocating %zu bytes on CUDA device %d", bytes, device);
    int rc = be->alloc(device, bytes, out);
    if (rc == OAR_OK) __atomic_store_n(&oar_device_ever_used, 1, __ATOMIC_RELAXED);
    return rc;
}

void oar_device_free(int device, void *p)
{
    if (!p || !g_backend) return;   /* no block can exist without the backend */
    g_backend->free(device, p);
}

int oar_device_copy_between(void *dst, int dst_place, int dst_device, const void *src, int src_place,
                            int src_device, size_t bytes)
{
    if (bytes == 0) return OAR_OK;
    if (dst_place == OAR_PLACE_CPU && src_place == OAR_PLACE_CPU) {
        memmove(dst, src, bytes);
        return OAR_OK;
    }
    BACKEND_OR("copying %zu bytes to/from CUDA device %d", bytes,
               dst_place == OAR_PLACE_CUDA ? dst_device : src_device);
    return be->copy(dst, dst_place, dst_device, src, src_place, src_device, bytes);
}

int oar_device_copy(void *dst, int dst_place, const void *src, int src_place, size_t bytes, int device)
{
    return oar_device_copy_between(dst, dst_place, device, src, src_place, device, bytes);
}

int oar_device_memset_zero(void *p, size_t bytes, int device)
{
    BACKEND_OR("clearing %zu bytes on CUDA device %d", bytes, device);
    return be->memset_zero(p, bytes, device);
}

int oar_device_use(int device)
{
    BACKEND_OR("using CUDA device %d", device);
    return be->use(device);
}

int oar_device_sync(int device)
{
    BACKEND_OR("synchronizing CUDA device %d", device);
    return be->sync(device);
}

int oar_device_run_end(int device)
{
    BACKEND_OR("finishing a run on CUDA device %d", device);
    return be->run_end(device);
}
