/* tensor.c — dense tensors: dtype, int64 dims, a refcounted buffer on a
 * place (CPU: 64-byte aligned blocks from the host pool; CUDA: blocks from
 * the device layer, src/device.h) and an optional LoD with Fluid's validity
 * rules. The LoD, dims and dtype always live on the host. */
#include "tensor.h"
#include "device.h"
#include "error.h"
#include "mempool.h"

#include <stdlib.h>
#include <string.h>

#define OAR_ALIGN 64

/* ---- buffers ------------------------------------------------------------ */

/* bytes held by live buffers (every place), and the high-water mark since the
 * last oar_mem_peak_reset: the profiler reports a run's peak */
static int64_t g_live_bytes, g_peak_bytes;

int64_t oar_mem_live_bytes(void) { return __atomic_load_n(&g_live_bytes, __ATOMIC_RELAXED); }
int64_t oar_mem_peak_bytes(void) { return __atomic_load_n(&g_peak_bytes, __ATOMIC_RELAXED); }
void oar_mem_peak_reset(void) { __atomic_store_n(&g_peak_bytes, oar_mem_live_bytes(), __ATOMIC_RELAXED); }

static void mem_count(int64_t delta)
{
    int64_t now = __atomic_add_fetch(&g_live_bytes, delta, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&g_peak_bytes, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&g_peak_bytes, &peak, now, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {
    }
}

/* buffer versions: one counter for all, so that a replaced buffer never
 * repeats the number its predecessor had */
static uint64_t g_version;
static uint64_t next_version(void) { return __atomic_add_fetch(&g_version, 1, __ATOMIC_RELAXED); }

/* A buffer of `bytes` on place/device, zeroed when `zero` (new host tensors
 * read as zeros; both pools hand back used blocks). */
static oar_buffer_t *buffer_new_on(size_t bytes, int place, int device, bool zero)
{
    if (bytes > OAR_MAX_BYTES) {
        oar_error(OAR_ERR_NOMEM, "out of memory allocating %zu bytes (over the %zu byte limit)",
                  bytes, (size_t)OAR_MAX_BYTES);
        return NULL;
    }
    oar_buffer_t *b = oar_xcalloc(1, sizeof *b);
    if (!b) return NULL;
    b->version = next_version();
    size_t cap = 0;
    void *p = NULL;
    if (place == OAR_PLACE_CUDA) {
        int rc = oar_device_alloc(device, bytes, &p);
        if (rc == OAR_OK && zero) rc = oar_device_memset_zero(p, bytes, device);
        if (rc != OAR_OK) {
            oar_device_free(device, p);
            free(b);
            return NULL;
        }
        cap = bytes;
    } else {
        p = oar_pool_alloc(bytes, &cap);
        if (!p) {
            free(b);
            oar_error(OAR_ERR_NOMEM, "out of memory allocating %zu bytes", bytes);
            return NULL;
        }
        if (zero) memset(p, 0, cap);
        device = 0;
    }
    b->refcount = 1;
    b->place = place;
    b->device = device;
    b->data = p;
    b->bytes = bytes;
    b->cap = cap;
    mem_count((int64_t)cap);
    return b;
}

/* the buffer is on place (and, for CUDA, on device) */
static bool buffer_on(const oar_buffer_t *b, int place, int device)
{
    return b->place == place && (place == OAR_PLACE_CPU || b->device == device);
}

static void buffer_retain(oar_buffer_t *b)
{
    if (b) __atomic_add_fetch(&b->refcount, 1, __ATOMIC_RELAXED);
}

static void buffer_drop_aux(oar_buffer_t *b)
{
    if (b && b->parent) buffer_drop_aux(b->parent);   /* a write through a view writes the parent */
    if (!b || !b->aux) return;
    if (b->aux_free) b->aux_free(b->aux);
    free(b->aux_key);
    b->aux = NULL;
    b->aux_free = NULL;
    b->aux_key = NULL;
    b->aux_key_len = 0;
}

/* the caller writes through b: a new version here and in every parent, and
 * what kernels derived from the data is stale */
static void buffer_wrote(oar_buffer_t *b)
{
    if (!b) return;
    uint64_t v = next_version();
    for (oar_buffer_t *p = b; p; p = p->parent) p->version = v;
    buffer_drop_aux(b);
}

static void buffer_release(oar_buffer_t *b)
{
    if (!b) return;
    if (__atomic_sub_fetch(&b->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        if (b->parent) {   /* a view: the memory is the parent's */
            oar_buffer_t *parent = b->parent;
            b->parent = NULL;
            buffer_drop_aux(b);
            free(b);
            buffer_release(parent);
            return;
        }
        buffer_drop_aux(b);
        mem_count(-(int64_t)b->cap);
        if (b->place == OAR_PLACE_CUDA) oar_device_free(b->device, b->data);
        else oar_pool_free(b->data, b->cap);
        free(b);
    }
}

/* ---- validation --------------------------------------------------------- */

/* Checks ndim, dims and (when dtype is known) the byte size; *numel and
 * *bytes receive the results. */
static int check_shape(const int64_t *dims, int ndim, int dtype, int64_t *numel, size_t *bytes)
{
    char sbuf[256];
    if (ndim < 0 || ndim > OAR_MAX_DIMS)
        return oar_error(OAR_ERR_SHAPE, "tensor rank %d out of range [0, %d]", ndim, OAR_MAX_DIMS);
    if (ndim > 0 && !dims)
        return oar_error(OAR_ERR_INVALID, "tensor dims are NULL with rank %d", ndim);
    int64_t n;
    OAR_TRY(oar_shape_numel(dims, ndim, &n));
    size_t esize = dtype >= 0 ? oar_dtype_size(dtype) : 1;
    if (esize == 0) esize = 1;
    size_t b;
    if (__builtin_mul_overflow((size_t)n, esize, &b) || b > OAR_MAX_BYTES) {
        const char *dn = dtype >= 0 ? oar_dtype_name(dtype) : NULL;
        return oar_error(OAR_ERR_NOMEM,
                         "tensor of shape %s (%lld elements of %s) exceeds the %zu byte limit",
                         oar_shape_str(dims, ndim, sbuf, sizeof sbuf), (long long)n,
                         dn ? dn : "unknown dtype", (size_t)OAR_MAX_BYTES);
    }
    if (numel) *numel = n;
    if (bytes) *bytes = b;
    return OAR_OK;
}

static int check_dtype(int dtype)
{
    if (oar_dtype_size(dtype) == 0) return oar_error(OAR_ERR_DTYPE, "unknown dtype %d", dtype);
    return OAR_OK;
}

/* ---- LoD storage -------------------------------------------------------- */

typedef struct { int levels; int64_t *lod[OAR_MAX_LOD]; int64_t size[OAR_MAX_LOD]; } lod_copy_t;

static void lod_copy_free(lod_copy_t *c)
{
    for (int l = 0; l < c->levels; l++) free(c->lod[l]);
    c->levels = 0;
}

static int lod_copy_make(lod_copy_t *c, int levels, const int64_t *const *offsets, const int64_t *sizes)
{
    c->levels = 0;
    for (int l = 0; l < levels; l++) {
        int64_t *p = oar_xcalloc((size_t)sizes[l], sizeof *p);
        if (!p) { lod_copy_free(c); return OAR_ERR_NOMEM; }
        memcpy(p, offsets[l], (size_t)sizes[l] * sizeof *p);
        c->lod[l] = p;
        c->size[l] = sizes[l];
        c->levels = l + 1;
    }
    return OAR_OK;
}

/* replaces t's LoD with c's arrays (taking ownership) */
static void lod_install(oar_tensor_t *t, lod_copy_t *c)
{
    oar_tensor_clear_lod(t);
    for (int l = 0; l < c->levels; l++) {
        t->lod[l] = c->lod[l];
        t->lod_size[l] = c->size[l];
    }
    t->lod_levels = c->levels;
    c->levels = 0;
}

static int lod_dup(lod_copy_t *c, const oar_tensor_t *src)
{
    return lod_copy_make(c, src->lod_levels, (const int64_t *const *)src->lod, src->lod_size);
}

/* ---- construction ------------------------------------------------------- */

static oar_tensor_t *tensor_alloc(void)
{
    oar_tensor_t *t = oar_xcalloc(1, sizeof *t);
    if (!t) return NULL;
    t->refcount = 1;
    t->dtype = -1;
    return t;
}

int oar_tensor_new_empty(oar_tensor_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_tensor_new_empty: NULL out");
    *out = tensor_alloc();
    return *out ? OAR_OK : OAR_ERR_NOMEM;
}

int oar_tensor_new_sized(oar_tensor_t **out, const int64_t *dims, int ndim)
{
    OAR_TRY(oar_tensor_new_empty(out));
    int rc = oar_tensor_resize(*out, dims, ndim);
    if (rc != OAR_OK) { oar_tensor_free(*out); *out = NULL; }
    return rc;
}

static int tensor_make(int dtype, const int64_t *dims, int ndim, const void *data, bool copy,
                       oar_tensor_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "tensor constructor: NULL out");
    *out = NULL;
    OAR_TRY(check_dtype(dtype));
    size_t bytes;
    OAR_TRY(check_shape(dims, ndim, dtype, NULL, &bytes));
    if (copy && bytes > 0 && !data)
        return oar_error(OAR_ERR_INVALID, "oar_tensor_from_data: NULL data for %zu bytes", bytes);
    oar_tensor_t *t = tensor_alloc();
    if (!t) return OAR_ERR_NOMEM;
    /* data copied in overwrites every byte: zeroing first is wasted (it was
     * 1.6 % of batch-128 inference, whose input is set on every run) */
    t->buf = buffer_new_on(bytes, OAR_PLACE_CPU, 0, !(copy && bytes > 0));
    if (!t->buf) { free(t); return OAR_ERR_NOMEM; }
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
    if (copy && bytes > 0) memcpy(t->buf->data, data, bytes);
    if (copy) oar_tensor_normalize_bool(t);
    *out = t;
    return OAR_OK;
}

/* A C bool holding a byte other than 0 or 1 is undefined behaviour in every
 * kernel that reads it: bytes coming from outside become 0 or 1. */
int oar_tensor_normalize_bool(oar_tensor_t *t)
{
    if (!t || t->dtype != OAR_BOOL || !t->buf || !t->buf->data || t->buf->place != OAR_PLACE_CPU) return OAR_OK;
    int64_t n = oar_tensor_numel_of(t);
    if (n < 0 || (size_t)n > t->buf->bytes) return OAR_OK;
    uint8_t *p = t->buf->data;
    for (int64_t i = 0; i < n; i++)
        if (p[i] > 1) p[i] = 1;
    return OAR_OK;
}

int oar_tensor_new(int dtype, const int64_t *dims, int ndim, oar_tensor_t **out)
{
    return tensor_make(dtype, dims, ndim, NULL, false, out);
}

int oar_tensor_from_data(int dtype, const int64_t *dims, int ndim, const void *data,
                         oar_tensor_t **out)
{
    return tensor_make(dtype, dims, ndim, data, true, out);
}

oar_tensor_t *oar_tensor_retain(oar_tensor_t *t)
{
    if (t) __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
    return t;
}

void oar_tensor_free(oar_tensor_t *t)
{
    if (!t) return;
    if (__atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    buffer_release(t->buf);
    oar_tensor_clear_lod(t);
    free(t);
}

/* ---- accessors ---------------------------------------------------------- */

int oar_tensor_dtype(const oar_tensor_t *t) { return t ? t->dtype : -1; }
int oar_tensor_ndim(const oar_tensor_t *t) { return t ? t->ndim : 0; }
const int64_t *oar_tensor_dims(const oar_tensor_t *t) { return t ? t->dims : NULL; }
int64_t oar_tensor_numel(const oar_tensor_t *t) { return t ? oar_tensor_numel_of(t) : 0; }
void *oar_tensor_data(oar_tensor_t *t)
{
    if (!oar_tensor_has_data(t)) return NULL;
    if (t->buf->place != OAR_PLACE_CPU) {
        oar_error(OAR_ERR_UNSUPPORTED, "the tensor's data is on CUDAPlace(%d), not in host memory: "
                  "copy it to the host first (oar_tensor_to_place(t, OAR_PLACE_CPU, 0))", t->buf->device);
        return NULL;
    }
    return t->buf->data;
}
int oar_tensor_place(const oar_tensor_t *t) { return t && t->buf ? t->buf->place : OAR_PLACE_CPU; }
int oar_tensor_device(const oar_tensor_t *t) { return t && t->buf ? t->buf->device : 0; }

int oar_tensor_lod_levels(const oar_tensor_t *t) { return t ? t->lod_levels : 0; }

int64_t oar_tensor_lod_size(const oar_tensor_t *t, int level)
{
    if (!t || level < 0 || level >= t->lod_levels) {
        oar_error(OAR_ERR_RANGE, "LoD level %d out of range (tensor has %d levels)", level,
                  t ? t->lod_levels : 0);
        return -1;
    }
    return t->lod_size[level];
}

const int64_t *oar_tensor_lod_data(const oar_tensor_t *t, int level)
{
    if (!t || level < 0 || level >= t->lod_levels) {
        oar_error(OAR_ERR_RANGE, "LoD level %d out of range (tensor has %d levels)", level,
                  t ? t->lod_levels : 0);
        return NULL;
    }
    return t->lod[level];
}

/* ---- shape and storage -------------------------------------------------- */

int oar_tensor_resize(oar_tensor_t *t, const int64_t *dims, int ndim)
{
    if (!t) return oar_error(OAR_ERR_INVALID, "oar_tensor_resize: NULL tensor");
    OAR_TRY(check_shape(dims, ndim, t->dtype, NULL, NULL));
    if (ndim > 0) memmove(t->dims, dims, (size_t)ndim * sizeof *dims);
    t->ndim = ndim;
    return OAR_OK;
}

static void *mutable_on(oar_tensor_t *t, int dtype, int place, int device, bool zero);

void *oar_tensor_mutable_on(oar_tensor_t *t, int dtype, int place, int device)
{
    /* host buffers read as zeros; a device buffer is an output its CUDA
     * kernel writes in full (kernels that accumulate clear it first), so
     * it is not cleared: that would be one more launch per allocation */
    return mutable_on(t, dtype, place, device, place == OAR_PLACE_CPU);
}

void *oar_tensor_mutable_raw_on(oar_tensor_t *t, int dtype, int place, int device)
{
    return mutable_on(t, dtype, place, device, false);
}

static void *mutable_on(oar_tensor_t *t, int dtype, int place, int device, bool zero)
{
    if (!t) {
        oar_error(OAR_ERR_INVALID, "oar_tensor_mutable: NULL tensor");
        return NULL;
    }
    if (check_dtype(dtype) != OAR_OK) return NULL;
    size_t bytes;
    if (check_shape(t->dims, t->ndim, dtype, NULL, &bytes) != OAR_OK) return NULL;
    oar_buffer_t *b = t->buf;
    bool shared = b && __atomic_load_n(&b->refcount, __ATOMIC_ACQUIRE) > 1;
    if (!b || !b->data || b->bytes < bytes || shared || !buffer_on(b, place, device)) {
        oar_buffer_t *nb = buffer_new_on(bytes, place, device, zero);
        if (!nb) return NULL;
        buffer_release(b);
        t->buf = nb;
    } else {
        buffer_wrote(b);   /* the caller writes: what was derived from the data is stale */
    }
    t->dtype = dtype;
    return t->buf->data;
}

void oar_tensor_touch(oar_tensor_t *t)
{
    if (t) buffer_drop_aux(t->buf);
}

void oar_tensor_mark_written(oar_tensor_t *t)
{
    if (t) buffer_wrote(t->buf);
}

uint64_t oar_tensor_version(const oar_tensor_t *t)
{
    if (!t || !t->buf) return 0;
    const oar_buffer_t *b = t->buf;
    while (b->parent) b = b->parent;
    return b->version;
}

int oar_tensor_attach(oar_tensor_t *t, const void *key, size_t key_len, void *blob, void (*free_fn)(void *))
{
    if (!t || !t->buf || !t->buf->data || (key_len && !key) || !blob)
        return oar_error(OAR_ERR_INVALID, "oar_tensor_attach: no tensor data, key or blob");
    /* a write through the parent would not reach a view's blob: views keep
     * none (the kernel derives it again next time) */
    if (t->buf->parent) {
        if (free_fn) free_fn(blob);
        return OAR_OK;
    }
    unsigned char *k = oar_xmalloc(key_len ? key_len : 1);
    if (!k) return OAR_ERR_NOMEM;
    if (key_len) memcpy(k, key, key_len);
    buffer_drop_aux(t->buf);
    t->buf->aux = blob;
    t->buf->aux_free = free_fn;
    t->buf->aux_key = k;
    t->buf->aux_key_len = key_len;
    return OAR_OK;
}

void *oar_tensor_attached(const oar_tensor_t *t, const void *key, size_t key_len)
{
    const oar_buffer_t *b = t ? t->buf : NULL;
    if (!b || !b->aux || b->aux_key_len != key_len || (key_len && memcmp(b->aux_key, key, key_len) != 0))
        return NULL;
    return b->aux;
}

int oar_tensor_bytes_for(const oar_tensor_t *t, int dtype, size_t *bytes)
{
    OAR_TRY(check_dtype(dtype));
    return check_shape(t->dims, t->ndim, dtype, NULL, bytes);
}

int oar_tensor_share_data(oar_tensor_t *t, const oar_tensor_t *src)
{
    if (!t || !src) return oar_error(OAR_ERR_INVALID, "oar_tensor_share_data: NULL tensor");
    int64_t dims[OAR_MAX_DIMS];
    int nd = t->ndim;
    memcpy(dims, t->dims, sizeof dims);
    /* detach t's LoD across the share (which installs src's) and put it back */
    int levels = t->lod_levels;
    int64_t *lod[OAR_MAX_LOD], size[OAR_MAX_LOD];
    memcpy(lod, t->lod, sizeof lod);
    memcpy(size, t->lod_size, sizeof size);
    t->lod_levels = 0;
    int rc = oar_tensor_share(t, src);
    oar_tensor_clear_lod(t);
    memcpy(t->lod, lod, sizeof lod);
    memcpy(t->lod_size, size, sizeof size);
    t->lod_levels = levels;
    if (rc != OAR_OK) return rc;
    return oar_tensor_resize(t, dims, nd);
}

int oar_tensor_view(oar_tensor_t *src, int64_t offset, const int64_t *dims, int ndim, oar_tensor_t **out)
{
    if (!src || !out) return oar_error(OAR_ERR_INVALID, "oar_tensor_view: NULL %s", src ? "out" : "tensor");
    *out = NULL;
    if (!oar_tensor_has_data(src) || src->dtype < 0)
        return oar_error(OAR_ERR_INVALID, "oar_tensor_view: the tensor has no data");
    int64_t n, total = oar_tensor_numel_of(src);
    size_t bytes;
    OAR_TRY(check_shape(dims, ndim, src->dtype, &n, &bytes));
    if (offset < 0 || offset > total || n > total - offset) {
        char b[160];
        return oar_error(OAR_ERR_RANGE, "oar_tensor_view: %lld elements from offset %lld do not fit in shape %s",
                         (long long)n, (long long)offset, oar_shape_str(src->dims, src->ndim, b, sizeof b));
    }
    oar_buffer_t *root = src->buf;
    size_t esize = oar_dtype_size(src->dtype);
    oar_buffer_t *b = oar_xcalloc(1, sizeof *b);
    oar_tensor_t *t = b ? tensor_alloc() : NULL;
    if (!t) { free(b); return OAR_ERR_NOMEM; }
    b->refcount = 1;
    b->place = root->place;
    b->device = root->device;
    b->data = (char *)root->data + (size_t)offset * esize;
    b->bytes = b->cap = bytes;
    b->parent = root;
    buffer_retain(root);
    t->buf = b;
    t->dtype = src->dtype;
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->dims, dims, sizeof *dims * (size_t)ndim);
    *out = t;
    return OAR_OK;
}

int oar_tensor_adopt_buffer(oar_tensor_t *dst, const oar_tensor_t *src)
{
    if (!dst || !src || !src->buf) return oar_error(OAR_ERR_INVALID, "oar_tensor_adopt_buffer: no buffer");
    if (dst->buf == src->buf) return OAR_OK;
    buffer_retain(src->buf);
    buffer_release(dst->buf);
    dst->buf = src->buf;
    return OAR_OK;
}

void *oar_tensor_mutable(oar_tensor_t *t, int dtype)
{
    return oar_tensor_mutable_on(t, dtype, OAR_PLACE_CPU, 0);
}

int oar_tensor_to_place(oar_tensor_t *t, int place, int device)
{
    if (!t) return oar_error(OAR_ERR_INVALID, "oar_tensor_to_place: NULL tensor");
    if (place != OAR_PLACE_CPU && place != OAR_PLACE_CUDA)
        return oar_error(OAR_ERR_INVALID, "oar_tensor_to_place: unknown place kind %d", place);
    oar_buffer_t *b = t->buf;
    if (!b || !b->data || buffer_on(b, place, device)) return OAR_OK;
    /* the bytes the tensor uses (a reused buffer may be larger) */
    size_t bytes = b->bytes, esize = t->dtype >= 0 ? oar_dtype_size((int)t->dtype) : 0;
    int64_t n = oar_tensor_numel_of(t);
    if (esize > 0 && n >= 0 && (size_t)n * esize <= bytes) bytes = (size_t)n * esize;
    oar_buffer_t *nb = buffer_new_on(bytes, place, device, false);
    if (!nb) {
        oar_error_prefix("moving a tensor of %zu bytes to %s: ", bytes,
                         place == OAR_PLACE_CPU ? "the host" : "the device");
        return OAR_ERR_NOMEM;
    }
    /* between two devices the backend orders the copy after the source
     * device's work, so b may go back to its cache right after */
    int rc = oar_device_copy_between(nb->data, place, device, b->data, b->place, b->device, bytes);
    if (rc != OAR_OK) {
        buffer_release(nb);
        return rc;
    }
    buffer_release(b);
    t->buf = nb;
    return OAR_OK;
}

int oar_tensor_copy_to(const oar_tensor_t *src, int place, int device, oar_tensor_t **out)
{
    if (!src || !out) return oar_error(OAR_ERR_INVALID, "oar_tensor_copy_to: NULL argument");
    *out = NULL;
    if (place != OAR_PLACE_CPU && place != OAR_PLACE_CUDA)
        return oar_error(OAR_ERR_INVALID, "oar_tensor_copy_to: unknown place kind %d", place);
    if (!src->buf || !src->buf->data || buffer_on(src->buf, place, device)) return oar_tensor_copy(src, out);
    oar_tensor_t *t;
    OAR_TRY(oar_tensor_new_empty(&t));
    int rc = oar_tensor_share(t, src);
    if (rc == OAR_OK) rc = oar_tensor_to_place(t, place, device);   /* a new buffer: src is untouched */
    if (rc != OAR_OK) {
        oar_tensor_free(t);
        return rc;
    }
    *out = t;
    return OAR_OK;
}

int oar_tensor_share(oar_tensor_t *t, const oar_tensor_t *src)
{
    if (!t || !src) return oar_error(OAR_ERR_INVALID, "oar_tensor_share: NULL tensor");
    if (t == src) return OAR_OK;
    lod_copy_t c;
    OAR_TRY(lod_dup(&c, src));
    buffer_retain(src->buf);
    buffer_release(t->buf);
    t->buf = src->buf;
    t->dtype = src->dtype;
    t->ndim = src->ndim;
    memcpy(t->dims, src->dims, sizeof t->dims);
    lod_install(t, &c);
    return OAR_OK;
}

int oar_tensor_copy_into(oar_tensor_t *t, const oar_tensor_t *src)
{
    if (!t || !src) return oar_error(OAR_ERR_INVALID, "oar_tensor_copy_into: NULL tensor");
    if (t == src) return OAR_OK;
    lod_copy_t c;
    OAR_TRY(lod_dup(&c, src));
    if (oar_tensor_has_data(src)) {
        int rc = check_dtype(src->dtype);
        if (rc != OAR_OK) { lod_copy_free(&c); return rc; }
        int64_t old_dims[OAR_MAX_DIMS];
        int old_ndim = t->ndim, old_dtype = t->dtype;
        memcpy(old_dims, t->dims, sizeof old_dims);
        memcpy(t->dims, src->dims, sizeof t->dims);
        t->ndim = src->ndim;
        /* the copy stays on src's place */
        const oar_buffer_t *sb = src->buf;
        void *dst = oar_tensor_mutable_on(t, src->dtype, sb->place, sb->device);
        size_t bytes = (size_t)oar_tensor_numel_of(src) * oar_dtype_size(src->dtype);
        rc = !dst ? OAR_ERR_NOMEM
           : bytes == 0 ? OAR_OK
           : sb->place == OAR_PLACE_CPU ? (memmove(dst, sb->data, bytes), OAR_OK)
           : oar_device_copy(dst, sb->place, sb->data, sb->place, bytes, sb->device);
        if (rc != OAR_OK) {
            /* leave t as it was */
            memcpy(t->dims, old_dims, sizeof old_dims);
            t->ndim = old_ndim;
            t->dtype = old_dtype;
            lod_copy_free(&c);
            return rc;
        }
    } else {
        buffer_release(t->buf);
        t->buf = NULL;
        t->dtype = src->dtype;
        t->ndim = src->ndim;
        memcpy(t->dims, src->dims, sizeof t->dims);
    }
    lod_install(t, &c);
    return OAR_OK;
}

int oar_tensor_copy(const oar_tensor_t *src, oar_tensor_t **out)
{
    if (!src || !out) return oar_error(OAR_ERR_INVALID, "oar_tensor_copy: NULL %s", src ? "out" : "tensor");
    oar_tensor_t *t = tensor_alloc();
    if (!t) return OAR_ERR_NOMEM;
    int rc = oar_tensor_copy_into(t, src);
    if (rc != OAR_OK) { oar_tensor_free(t); return rc; }
    *out = t;
    return OAR_OK;
}

int oar_tensor_copy_lod(oar_tensor_t *dst, const oar_tensor_t *src)
{
    if (!dst || !src) return oar_error(OAR_ERR_INVALID, "oar_tensor_copy_lod: NULL tensor");
    if (dst == src) return OAR_OK;
    lod_copy_t c;
    OAR_TRY(lod_dup(&c, src));
    lod_install(dst, &c);
    return OAR_OK;
}

void oar_tensor_clear_lod(oar_tensor_t *t)
{
    if (!t) return;
    for (int l = 0; l < t->lod_levels; l++) {
        free(t->lod[l]);
        t->lod[l] = NULL;
        t->lod_size[l] = 0;
    }
    t->lod_levels = 0;
}

/* Dims and dtype stay: they describe what the next allocation will hold. */
void oar_tensor_reset(oar_tensor_t *t)
{
    if (!t) return;
    buffer_release(t->buf);
    t->buf = NULL;
    oar_tensor_clear_lod(t);
}

/* ---- LoD ---------------------------------------------------------------- */

/* Fluid's CheckLoD: every level starts at 0 and never decreases; the last
 * offset of level l counts the sequences of level l+1; the last level ends at
 * the number of rows. */
int oar_tensor_set_lod(oar_tensor_t *t, int nlevels, const int64_t *const *offsets,
                       const int64_t *sizes)
{
    if (!t) return oar_error(OAR_ERR_INVALID, "oar_tensor_set_lod: NULL tensor");
    if (nlevels < 0 || nlevels > OAR_MAX_LOD)
        return oar_error(OAR_ERR_INVALID, "LoD has %d levels; allowed 0 to %d", nlevels, OAR_MAX_LOD);
    if (nlevels > 0 && (!offsets || !sizes))
        return oar_error(OAR_ERR_INVALID, "LoD with %d levels has NULL %s", nlevels,
                         offsets ? "sizes" : "offsets");
    for (int l = 0; l < nlevels; l++) {
        const int64_t *o = offsets[l];
        int64_t n = sizes[l];
        if (n < 1)
            return oar_error(OAR_ERR_INVALID, "LoD level %d has %lld offsets; needs at least 1",
                             l, (long long)n);
        if (!o) return oar_error(OAR_ERR_INVALID, "LoD level %d offsets are NULL", l);
        if (o[0] != 0)
            return oar_error(OAR_ERR_INVALID, "LoD level %d starts at %lld; must start at 0",
                             l, (long long)o[0]);
        for (int64_t i = 1; i < n; i++)
            if (o[i] < o[i - 1])
                return oar_error(OAR_ERR_INVALID,
                                 "LoD level %d decreases at position %lld (%lld after %lld)",
                                 l, (long long)i, (long long)o[i], (long long)o[i - 1]);
        if (l + 1 < nlevels && o[n - 1] != sizes[l + 1] - 1)
            return oar_error(OAR_ERR_INVALID,
                             "LoD level %d ends at %lld but level %d holds %lld sequences",
                             l, (long long)o[n - 1], l + 1, (long long)(sizes[l + 1] - 1));
    }
    /* a rank-0 tensor with data is one value: it has no rows a LoD could cut */
    if (nlevels > 0 && t->ndim == 0 && (t->dtype >= 0 || oar_tensor_has_data(t)))
        return oar_error(OAR_ERR_SHAPE, "a LoD needs a tensor of rank 1 or more; this one is a scalar (rank 0)");
    if (nlevels > 0 && t->ndim > 0) {
        int64_t last = offsets[nlevels - 1][sizes[nlevels - 1] - 1];
        if (last != t->dims[0]) {
            char sbuf[256];
            return oar_error(OAR_ERR_SHAPE,
                             "LoD level %d ends at %lld but the tensor has %lld rows (shape %s)",
                             nlevels - 1, (long long)last, (long long)t->dims[0],
                             oar_shape_str(t->dims, t->ndim, sbuf, sizeof sbuf));
        }
    }
    lod_copy_t c;
    OAR_TRY(lod_copy_make(&c, nlevels, offsets, sizes));
    lod_install(t, &c);
    return OAR_OK;
}
