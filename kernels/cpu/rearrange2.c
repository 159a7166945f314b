/*
 * rearrange2.c — CPU kernels of range, linspace, cross, diag_embed,
 * meshgrid, index_sample, scatter, scatter_nd_add, strided_slice,
 * crop_tensor, pixel_shuffle, shuffle_channel and space_to_depth (src/ops/
 * rearrange2.c) and their grads. size has no kernel (its run is in src/ops).
 *
 * Ops that only move elements copy esz bytes per element, so one function
 * serves every dtype; those that add or compute have one body per type.
 */
#include <math.h>
#include <string.h>
#include "op.h"
#include "rearrange_common.h"   /* nm, input, prod, strides_of, next_index */
#include "ops/attr_tensor.h"
#include "ops/rearrange2.h"
#include "ops/rearrange2_util.h"

/* the first tensor of output `slot` as writable data of dtype dt; *p NULL
 * when the output is absent (optional) or empty */
static int output(oar_kernel_ctx_t *k, int slot, const char *name, int dt, bool optional, oar_tensor_t **t, char **p)
{
    *t = oar_k_output(k, slot, 0);
    *p = NULL;
    if (!*t) return optional ? OAR_OK : oar_k_error(k, OAR_ERR_INVALID, "no output %s", name);
    void *d;
    OAR_TRY(oar_k_output_sized(k, slot, name, dt, oar_tensor_numel_of(*t), optional, &d));
    *p = d;
    return OAR_OK;
}

/* element j of an int32/int64 index tensor */
static inline int64_t idx_at(const oar_tensor_t *t, int64_t j)
{
    const void *d = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_INT32 ? ((const int32_t *)d)[j] : ((const int64_t *)d)[j];
}

static int check_index_dtype(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *slot, int sid)
{
    if (t->dtype != OAR_INT32 && t->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "%s '%s' is %s; it must be int32 or int64", slot,
                           nm(oar_k_input_name(k, sid, 0)), nm(oar_dtype_name(t->dtype)));
    return OAR_OK;
}

/* ---- range -------------------------------------------------------------- */
#define RANGE_FWD(SUF, T, DT, INTEGRAL)                                                         \
    static int range_fwd_##SUF(oar_kernel_ctx_t *k)                                             \
    {                                                                                           \
        double v[3] = {0, 0, 0};                                                                \
        static const char *const names[3] = {"Start", "End", "Step"};                           \
        const int slots[3] = {OAR_RANGE_START, OAR_RANGE_END, OAR_RANGE_STEP};                  \
        for (int i = 0; i < 3; i++) {                                                           \
            oar_tensor_t *t;                                                                    \
            OAR_TRY(input(k, slots[i], 0, names[i], &t));                                       \
            OAR_TRY(oar_k_scalar_at(k, slots[i], names[i], &v[i]));                             \
        }                                                                                       \
        int64_t n;                                                                              \
        if (oar_range_size(v[0], v[1], v[2], INTEGRAL, &n))                                     \
            return oar_k_error(k, OAR_ERR_INVALID, "Start %g, End %g, Step %g: Step must be nonzero with " \
                               "End - Start's sign", v[0], v[1], v[2]);                         \
        void *p;                                                                                \
        OAR_TRY(oar_k_output_sized(k, OAR_RANGE_OUT, "Out", DT, n, false, &p));                 \
        T *o = p, x = (T)v[0], s = (T)v[2];                                                     \
        for (int64_t i = 0; i < n; i++, x += s) o[i] = x; /* Fluid accumulates */               \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("range", OAR_PLACE_CPU, DT, range_fwd_##SUF)
RANGE_FWD(f32, float, OAR_FP32, false)
RANGE_FWD(f64, double, OAR_FP64, false)
RANGE_FWD(i32, int32_t, OAR_INT32, true)
RANGE_FWD(i64, int64_t, OAR_INT64, true)

/* ---- linspace ----------------------------------------------------------- */
static int linspace_fwd(oar_kernel_ctx_t *k)
{
    const oar_linspace_attrs_t *a = oar_k_attrs(k);
    double v[3] = {0, 0, 0};
    static const char *const names[3] = {"Start", "Stop", "Num"};
    const int slots[3] = {OAR_LINSPACE_START, OAR_LINSPACE_STOP, OAR_LINSPACE_NUM};
    oar_tensor_t *t0 = NULL;
    for (int i = 0; i < 3; i++) {
        oar_tensor_t *t;
        OAR_TRY(input(k, slots[i], 0, names[i], &t));
        if (i == 0) t0 = t;
        OAR_TRY(oar_k_scalar_at(k, slots[i], names[i], &v[i]));
    }
    if (v[2] < 1 || v[2] != floor(v[2]))
        return oar_k_error(k, OAR_ERR_RANGE, "Num is %g; it must be a positive integer", v[2]);
    int dt = a->dtype < 0 ? t0->dtype : a->dtype;
    int64_t n = (int64_t)v[2];
    void *p;
    OAR_TRY(oar_k_output_sized(k, OAR_LINSPACE_OUT, "Out", dt, n, false, &p));
    double step = n > 1 ? (v[1] - v[0]) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n; i++) {
        double x = v[0] + step * (double)i;
        switch (dt) {
        case OAR_FP32: ((float *)p)[i] = (float)x; break;
        case OAR_FP64: ((double *)p)[i] = x; break;
        case OAR_INT32: ((int32_t *)p)[i] = (int32_t)x; break;
        case OAR_INT64: ((int64_t *)p)[i] = (int64_t)x; break;
        default: return oar_k_error(k, OAR_ERR_UNSUPPORTED, "dtype %s is not float32/64 or int32/64", nm(oar_dtype_name(dt)));
        }
    }
    return OAR_OK;
}

/* ---- cross -------------------------------------------------------------- */
/* the dim the 3-vectors lie along: attr dim, or the first of size 3 */
static int cross_dim(oar_kernel_ctx_t *k, int dim, const oar_tensor_t *x, int *d)
{
    *d = -1;
    if (dim == 9) {
        for (int i = 0; i < x->ndim && *d < 0; i++)
            if (x->dims[i] == 3) *d = i;
    } else {
        *d = dim < 0 ? dim + x->ndim : dim;
    }
    if (*d < 0 || *d >= x->ndim || x->dims[*d] != 3)
        return oar_k_error(k, OAR_ERR_SHAPE, "no dim of size 3 at dim %d for the cross product", dim);
    return OAR_OK;
}

#define CROSS_KERNELS(SUF, T, DT)                                                                   \
    /* o = a x b over the 3-vectors along dim d (stride post) */                                    \
    static void cross3_##SUF(const T *a, const T *b, T *o, int64_t pre, int64_t post)               \
    {                                                                                               \
        for (int64_t p = 0; p < pre; p++)                                                           \
            for (int64_t q = 0; q < post; q++) {                                                    \
                int64_t i0 = p * 3 * post + q, i1 = i0 + post, i2 = i1 + post;                      \
                T x0 = a[i0], x1 = a[i1], x2 = a[i2], y0 = b[i0], y1 = b[i1], y2 = b[i2];           \
                o[i0] = x1 * y2 - x2 * y1;                                                          \
                o[i1] = x2 * y0 - x0 * y2;                                                          \
                o[i2] = x0 * y1 - x1 * y0;                                                          \
            }                                                                                       \
    }                                                                                               \
    static int cross_fwd_##SUF(oar_kernel_ctx_t *k)                                                 \
    {                                                                                               \
        const oar_cross_attrs_t *a = oar_k_attrs(k);                                                \
        oar_tensor_t *x, *y;                                                                        \
        OAR_TRY(input(k, OAR_CROSS_X, 0, "X", &x));                                                 \
        OAR_TRY(input(k, OAR_CROSS_Y, 0, "Y", &y));                                                 \
        if (oar_tensor_numel_of(y) != oar_tensor_numel_of(x) || y->dtype != x->dtype)               \
            return oar_k_error(k, OAR_ERR_SHAPE, "X and Y differ in shape or dtype");               \
        int d;                                                                                      \
        OAR_TRY(cross_dim(k, a->dim, x, &d));                                                       \
        void *p;                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_CROSS_OUT, "Out", DT, oar_tensor_numel_of(x), false, &p)); \
        cross3_##SUF(oar_tensor_data(x), oar_tensor_data(y), p, prod(x->dims, 0, d),                \
                     prod(x->dims, d + 1, x->ndim));                                                \
        return OAR_OK;                                                                              \
    }                                                                                               \
    static int cross_bwd_##SUF(oar_kernel_ctx_t *k)                                                 \
    {                                                                                               \
        const oar_cross_attrs_t *a = oar_k_attrs(k);                                                \
        oar_tensor_t *x, *y, *g;                                                                    \
        OAR_TRY(input(k, OAR_CROSS_G_X, 0, "X", &x));                                               \
        OAR_TRY(input(k, OAR_CROSS_G_Y, 0, "Y", &y));                                               \
        OAR_TRY(input(k, OAR_CROSS_G_DOUT, 0, "Out@GRAD", &g));                                     \
        int64_t n = oar_tensor_numel_of(x);                                                         \
        if (oar_tensor_numel_of(y) != n || oar_tensor_numel_of(g) != n)                             \
            return oar_k_error(k, OAR_ERR_SHAPE, "X, Y and Out@GRAD differ in size");               \
        int d;                                                                                      \
        OAR_TRY(cross_dim(k, a->dim, x, &d));                                                       \
        int64_t pre = prod(x->dims, 0, d), post = prod(x->dims, d + 1, x->ndim);                    \
        void *dx, *dy;                                                                              \
        OAR_TRY(oar_k_output_sized(k, OAR_CROSS_G_DX, "X@GRAD", DT, n, true, &dx));                 \
        OAR_TRY(oar_k_output_sized(k, OAR_CROSS_G_DY, "Y@GRAD", DT, n, true, &dy));                 \
        /* d<g, x × y>/dx = y × g, /dy = g × x */                                                   \
        if (dx) cross3_##SUF(oar_tensor_data(y), oar_tensor_data(g), dx, pre, post);                \
        if (dy) cross3_##SUF(oar_tensor_data(g), oar_tensor_data(x), dy, pre, post);                \
        return OAR_OK;                                                                              \
    }                                                                                               \
    OAR_REGISTER_KERNEL("cross", OAR_PLACE_CPU, DT, cross_fwd_##SUF)                                \
    OAR_REGISTER_KERNEL("cross_grad", OAR_PLACE_CPU, DT, cross_bwd_##SUF)
CROSS_KERNELS(f32, float, OAR_FP32)
CROSS_KERNELS(f64, double, OAR_FP64)
CROSS_KERNELS(i32, int32_t, OAR_INT32)
CROSS_KERNELS(i64, int64_t, OAR_INT64)

/* ---- diag_embed --------------------------------------------------------- */
static int diag_embed_fwd(oar_kernel_ctx_t *k)
{
    const oar_diag_embed_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x, *o;
    char *od;
    OAR_TRY(input(k, OAR_DIAG_EMBED_INPUT, 0, "Input", &x));
    OAR_TRY(output(k, OAR_DIAG_EMBED_OUT, "Out", x->dtype, false, &o, &od));
    int nx = x->ndim, d1, d2;
    if (nx < 1 || o->ndim != nx + 1 || oar_diag_embed_dims(a->dim1, a->dim2, nx, &d1, &d2))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out's rank is not Input's + 1 or dim1/dim2 are invalid");
    size_t esz = oar_dtype_size(x->dtype);
    int64_t on = oar_tensor_numel_of(o), xn = oar_tensor_numel_of(x);
    if (on == 0) return OAR_OK;
    memset(od, 0, (size_t)on * esz);
    if (xn == 0) return OAR_OK;
    int64_t ost[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = {0};
    strides_of(o->dims, o->ndim, ost);
    int64_t r1 = a->offset < 0 ? -(int64_t)a->offset : 0, r2 = a->offset > 0 ? a->offset : 0;
    const char *xd = oar_tensor_data(x);
    int64_t p = 0;
    do {
        int64_t q = 0;
        for (int i = 0, j = 0; i <= nx; i++)
            if (i != d1 && i != d2) q += idx[j++] * ost[i];
        q += (idx[nx - 1] + r1) * ost[d1] + (idx[nx - 1] + r2) * ost[d2];
        memcpy(od + (size_t)q * esz, xd + (size_t)p * esz, esz);
        p++;
    } while (next_index(idx, x->dims, nx));
    return OAR_OK;
}

/* ---- meshgrid ----------------------------------------------------------- */
static int meshgrid_fwd(oar_kernel_ctx_t *k)
{
    int n = oar_k_nin(k, OAR_MESHGRID_X);
    if (n < 1 || n > OAR_MAX_DIMS || oar_k_nout(k, OAR_MESHGRID_OUT) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "X has %d tensors and Out %d outputs", n, oar_k_nout(k, OAR_MESHGRID_OUT));
    int64_t g[OAR_MAX_DIMS];
    oar_tensor_t *xs[OAR_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        OAR_TRY(input(k, OAR_MESHGRID_X, i, "X", &xs[i]));
        g[i] = oar_tensor_numel_of(xs[i]);
    }
    int64_t st[OAR_MAX_DIMS], total = prod(g, 0, n);
    strides_of(g, n, st);
    size_t esz = oar_dtype_size(xs[0]->dtype);
    for (int i = 0; i < n; i++) {
        if (!oar_k_output(k, OAR_MESHGRID_OUT, i)) continue;
        char *od = oar_k_output_data(k, OAR_MESHGRID_OUT, i, xs[0]->dtype);
        if (!od && total > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out[%d]", i);
        if (oar_tensor_numel_of(oar_k_output(k, OAR_MESHGRID_OUT, i)) != total)
            return oar_k_error(k, OAR_ERR_SHAPE, "Out[%d] is not the grid's size", i);
        const char *xd = oar_tensor_data(xs[i]);
        for (int64_t p = 0; p < total; p++) memcpy(od + (size_t)p * esz, xd + (size_t)((p / st[i]) % g[i]) * esz, esz);
    }
    return OAR_OK;
}

#define MESHGRID_BWD(SUF, T, DT)                                                                 \
    static int meshgrid_bwd_##SUF(oar_kernel_ctx_t *k)                                           \
    {                                                                                            \
        int n = oar_k_nin(k, OAR_MESHGRID_GRAD_X);                                               \
        if (n < 1 || n > OAR_MAX_DIMS) return oar_k_error(k, OAR_ERR_SHAPE, "X has %d tensors", n); \
        int64_t g[OAR_MAX_DIMS], st[OAR_MAX_DIMS];                                               \
        for (int i = 0; i < n; i++) {                                                            \
            oar_tensor_t *x;                                                                     \
            OAR_TRY(input(k, OAR_MESHGRID_GRAD_X, i, "X", &x));                                  \
            g[i] = oar_tensor_numel_of(x);                                                       \
        }                                                                                        \
        strides_of(g, n, st);                                                                    \
        int64_t total = prod(g, 0, n);                                                           \
        for (int i = 0; i < n && i < oar_k_nout(k, OAR_MESHGRID_GRAD_DX); i++) {                 \
            if (!oar_k_output(k, OAR_MESHGRID_GRAD_DX, i)) continue;                             \
            T *dx = oar_k_output_data(k, OAR_MESHGRID_GRAD_DX, i, DT);                           \
            if (!dx && g[i] > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD[%d]", i); \
            if (g[i] > 0) memset(dx, 0, sizeof(T) * (size_t)g[i]);                               \
            oar_tensor_t *gt = i < oar_k_nin(k, OAR_MESHGRID_GRAD_DOUT) ? oar_k_input(k, OAR_MESHGRID_GRAD_DOUT, i) : NULL; \
            if (!gt || !oar_tensor_has_data(gt)) continue; /* an Out no loss reached */         \
            if (oar_tensor_numel_of(gt) != total)                                                \
                return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD[%d] is not the grid's size", i);  \
            const T *gd = oar_tensor_data(gt);                                                   \
            for (int64_t p = 0; p < total; p++) dx[(p / st[i]) % g[i]] += gd[p];                 \
        }                                                                                        \
        return OAR_OK;                                                                           \
    }                                                                                            \
    OAR_REGISTER_KERNEL("meshgrid_grad", OAR_PLACE_CPU, DT, meshgrid_bwd_##SUF)
MESHGRID_BWD(f32, float, OAR_FP32)
MESHGRID_BWD(f64, double, OAR_FP64)

/* ---- index_sample ------------------------------------------------------- */
static int index_sample_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x, *ix, *o;
    char *od;
    OAR_TRY(input(k, OAR_INDEX_SAMPLE_X, 0, "X", &x));
    OAR_TRY(input(k, OAR_INDEX_SAMPLE_INDEX, 0, "Index", &ix));
    OAR_TRY(check_index_dtype(k, ix, "Index", OAR_INDEX_SAMPLE_INDEX));
    if (x->ndim != 2 || ix->ndim != 2 || x->dims[0] != ix->dims[0])
        return oar_k_error(k, OAR_ERR_SHAPE, "X and Index must be 2-D with one row count");
    OAR_TRY(output(k, OAR_INDEX_SAMPLE_OUT, "Out", x->dtype, false, &o, &od));
    int64_t b = ix->dims[0], kk = ix->dims[1], n = x->dims[1];
    size_t esz = oar_dtype_size(x->dtype);
    const char *xd = oar_tensor_data(x);
    for (int64_t r = 0; r < b; r++)
        for (int64_t j = 0; j < kk; j++) {
            int64_t c = idx_at(ix, r * kk + j);
            if (c < 0 || c >= n)
                return oar_k_error(k, OAR_ERR_RANGE, "Index[%lld, %lld] = %lld is out of range [0, %lld)", (long long)r,
                                   (long long)j, (long long)c, (long long)n);
            memcpy(od + (size_t)(r * kk + j) * esz, xd + (size_t)(r * n + c) * esz, esz);
        }
    return OAR_OK;
}

#define INDEX_SAMPLE_BWD(SUF, T, DT)                                                             \
    static int index_sample_bwd_##SUF(oar_kernel_ctx_t *k)                                       \
    {                                                                                            \
        oar_tensor_t *x, *ix, *g;                                                                \
        OAR_TRY(input(k, OAR_INDEX_SAMPLE_GRAD_X, 0, "X", &x));                                  \
        OAR_TRY(input(k, OAR_INDEX_SAMPLE_GRAD_INDEX, 0, "Index", &ix));                         \
        OAR_TRY(input(k, OAR_INDEX_SAMPLE_GRAD_DOUT, 0, "Out@GRAD", &g));                        \
        OAR_TRY(check_index_dtype(k, ix, "Index", OAR_INDEX_SAMPLE_GRAD_INDEX));                 \
        void *p;                                                                                 \
        OAR_TRY(oar_k_output_sized(k, OAR_INDEX_SAMPLE_GRAD_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &p)); \
        if (!p) return OAR_OK;                                                                   \
        if (x->ndim != 2 || ix->ndim != 2 || oar_tensor_numel_of(g) != oar_tensor_numel_of(ix)) \
            return oar_k_error(k, OAR_ERR_SHAPE, "X, Index and Out@GRAD disagree in shape");     \
        T *dx = p;                                                                               \
        const T *gd = oar_tensor_data(g);                                                        \
        int64_t b = ix->dims[0], kk = ix->dims[1], n = x->dims[1];                               \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                               \
        for (int64_t r = 0; r < b; r++)                                                          \
            for (int64_t j = 0; j < kk; j++) {                                                   \
                int64_t c = idx_at(ix, r * kk + j);                                              \
                if (c < 0 || c >= n) return oar_k_error(k, OAR_ERR_RANGE, "Index value %lld is out of range", (long long)c); \
                dx[r * n + c] += gd[r * kk + j];                                                 \
            }                                                                                    \
        return OAR_OK;                                                                           \
    }                                                                                            \
    OAR_REGISTER_KERNEL("index_sample_grad", OAR_PLACE_CPU, DT, index_sample_bwd_##SUF)
INDEX_SAMPLE_BWD(f32, float, OAR_FP32)
INDEX_SAMPLE_BWD(f64, double, OAR_FP64)

/* ---- scatter / scatter_nd_add ------------------------------------------- */
/* row ids[i] of a dim-0 size `rows`, checked */
static int scatter_row(oar_kernel_ctx_t *k, const oar_tensor_t *ids, int64_t i, int64_t rows, int64_t *r)
{
    *r = idx_at(ids, i);
    if (*r < 0 || *r >= rows)
        return oar_k_error(k, OAR_ERR_RANGE, "Ids[%lld] = %lld is out of range [0, %lld)", (long long)i, (long long)*r,
                           (long long)rows);
    return OAR_OK;
}

/* Index's tuple i as a flat offset into X's first k dims (in slices of size slice) */
static int nd_offset(oar_kernel_ctx_t *k, const oar_tensor_t *ix, int64_t i, int kd, const int64_t *xdims,
                     int64_t *off)
{
    int64_t o = 0;
    for (int j = 0; j < kd; j++) {
        int64_t v = idx_at(ix, i * kd + j);
        if (v < 0 || v >= xdims[j])
            return oar_k_error(k, OAR_ERR_RANGE, "Index[%lld][%d] = %lld is out of range [0, %lld)", (long long)i, j,
                               (long long)v, (long long)xdims[j]);
        o = o * xdims[j] + v;
    }
    *off = o;
    return OAR_OK;
}

#define SCATTER_FWD(SUF, T, DT)                                                                  \
    static int scatter_fwd_##SUF(oar_kernel_ctx_t *k)                                            \
    {                                                                                            \
        const oar_scatter_attrs_t *a = oar_k_attrs(k);                                           \
        oar_tensor_t *x, *ids, *u;                                                               \
        OAR_TRY(input(k, OAR_SCATTER_X, 0, "X", &x));                                            \
        OAR_TRY(input(k, OAR_SCATTER_IDS, 0, "Ids", &ids));                                      \
        OAR_TRY(input(k, OAR_SCATTER_UPDATES, 0, "Updates", &u));                                \
        OAR_TRY(check_index_dtype(k, ids, "Ids", OAR_SCATTER_IDS));                              \
        int64_t n = oar_tensor_numel_of(x), rows = x->ndim ? x->dims[0] : 1;                     \
        int64_t slice = rows ? n / rows : 0, m = oar_tensor_numel_of(ids);                       \
        if (oar_tensor_numel_of(u) != m * slice)                                                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "Updates has %lld elements, expected %lld",     \
                               (long long)oar_tensor_numel_of(u), (long long)(m * slice));       \
        void *p;                                                                                 \
        OAR_TRY(oar_k_output_sized(k, OAR_SCATTER_OUT, "Out", DT, n, false, &p));                \
        T *o = p;                                                                                \
        const T *ud = oar_tensor_data(u);                                                        \
        if (n > 0 && o != (const T *)oar_tensor_data(x)) memcpy(o, oar_tensor_data(x), sizeof(T) * (size_t)n); \
        int64_t r;                                                                               \
        if (!a->overwrite) /* the named rows start from zero, then every update adds */          \
            for (int64_t i = 0; i < m; i++) {                                                    \
                OAR_TRY(scatter_row(k, ids, i, rows, &r));                                       \
                memset(o + r * slice, 0, sizeof(T) * (size_t)slice);                             \
            }                                                                                    \
        for (int64_t i = 0; i < m; i++) {                                                        \
            OAR_TRY(scatter_row(k, ids, i, rows, &r));                                           \
            T *dst = o + r * slice;                                                              \
            const T *src = ud + i * slice;                                                       \
            if (a->overwrite) memcpy(dst, src, sizeof(T) * (size_t)slice);                       \
            else for (int64_t j = 0; j < slice; j++) dst[j] += src[j];                           \
        }                                                                                        \
        return OAR_OK;                                                                           \
    }                                                                                            \
    OAR_REGISTER_KERNEL("scatter", OAR_PLACE_CPU, DT, scatter_fwd_##SUF)

#define SNA_FWD(SUF, T, DT)                                                                      \
    static int scatter_nd_add_fwd_##SUF(oar_kernel_ctx_t *k)                                     \
    {                                                                                            \
        oar_tensor_t *x, *ix, *u;                                                                \
        OAR_TRY(input(k, OAR_SCATTER_ND_ADD_X, 0, "X", &x));                                     \
        OAR_TRY(input(k, OAR_SCATTER_ND_ADD_INDEX, 0, "Index", &ix));                            \
        OAR_TRY(input(k, OAR_SCATTER_ND_ADD_UPDATES, 0, "Updates", &u));                         \
        OAR_TRY(check_index_dtype(k, ix, "Index", OAR_SCATTER_ND_ADD_INDEX));                    \
        int kd = ix->ndim ? (int)ix->dims[ix->ndim - 1] : 0;                                     \
        if (ix->ndim < 1 || kd > x->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Index's last dim exceeds X's rank"); \
        int64_t n = oar_tensor_numel_of(x), slice = prod(x->dims, kd, x->ndim);                  \
        int64_t m = prod(ix->dims, 0, ix->ndim - 1);                                             \
        if (oar_tensor_numel_of(u) != m * slice)                                                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "Updates has %lld elements, expected %lld",     \
                               (long long)oar_tensor_numel_of(u), (long long)(m * slice));       \
        void *p;                                                                                 \
        OAR_TRY(oar_k_output_sized(k, OAR_SCATTER_ND_ADD_OUT, "Out", DT, n, false, &p));         \
        T *o = p;                                                                                \
        const T *ud = oar_tensor_data(u);                                                        \
        if (n > 0 && o != (const T *)oar_tensor_data(x)) memcpy(o, oar_tensor_data(x), sizeof(T) * (size_t)n); \
        for (int64_t i = 0; i < m; i++) {                                                        \
            int64_t off;                                                                         \
            OAR_TRY(nd_offset(k, ix, i, kd, x->dims, &off));                                     \
            for (int64_t j = 0; j < slice; j++) o[off * slice + j] += ud[i * slice + j];         \
        }                                                                                        \
        return OAR_OK;                                                                           \
    }                                                                                            \
    OAR_REGISTER_KERNEL("scatter_nd_add", OAR_PLACE_CPU, DT, scatter_nd_add_fwd_##SUF)
SCATTER_FWD(f32, float, OAR_FP32)
SCATTER_FWD(f64, double, OAR_FP64)
SCATTER_FWD(i32, int32_t, OAR_INT32)
SCATTER_FWD(i64, int64_t, OAR_INT64)
SNA_FWD(f32, float, OAR_FP32)
SNA_FWD(f64, double, OAR_FP64)
SNA_FWD(i32, int32_t, OAR_INT32)
SNA_FWD(i64, int64_t, OAR_INT64)

/* X@GRAD = Out@GRAD with the scattered-to rows zeroed (they do not reach
 * Out); Updates@GRAD[i] = Out@GRAD[Ids[i]]. nd: Index tuples, not rows. */
static int scatter_bwd_common(oar_kernel_ctx_t *k, bool nd, int s_ids, int s_upd, int s_dout, int s_dx, int s_du)
{
    oar_tensor_t *ids, *u, *g;
    OAR_TRY(input(k, s_ids, 0, nd ? "Index" : "Ids", &ids));
    OAR_TRY(input(k, s_upd, 0, "Updates", &u));
    OAR_TRY(input(k, s_dout, 0, "Out@GRAD", &g));
    OAR_TRY(check_index_dtype(k, ids, nd ? "Index" : "Ids", s_ids));
    int64_t n = oar_tensor_numel_of(g), m, slice;
    int kd = 0;
    if (nd) {
        kd = ids->ndim ? (int)ids->dims[ids->ndim - 1] : 0;
        if (ids->ndim < 1 || kd > g->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Index's last dim exceeds the rank");
        slice = prod(g->dims, kd, g->ndim);
        m = prod(ids->dims, 0, ids->ndim - 1);
    } else {
        int64_t rows = g->ndim ? g->dims[0] : 1;
        slice = rows ? n / rows : 0;
        m = oar_tensor_numel_of(ids);
    }
    if (oar_tensor_numel_of(u) != m * slice) return oar_k_error(k, OAR_ERR_SHAPE, "Updates does not match the indices");
    size_t esz = oar_dtype_size(g->dtype), row = (size_t)slice * esz;
    const char *gd = oar_tensor_data(g);
    void *dx, *du;
    OAR_TRY(oar_k_output_sized(k, s_dx, "X@GRAD", g->dtype, n, true, &dx));
    OAR_TRY(oar_k_output_sized(k, s_du, "Updates@GRAD", g->dtype, m * slice, true, &du));
    if (dx && n > 0) memcpy(dx, gd, (size_t)n * esz);
    for (int64_t i = 0; i < m; i++) {
        int64_t r;
        if (nd) OAR_TRY(nd_offset(k, ids, i, kd, g->dims, &r));
        else OAR_TRY(scatter_row(k, ids, i, g->ndim ? g->dims[0] : 1, &r));
        if (du) memcpy((char *)du + (size_t)i * row, gd + (size_t)r * row, row);
        if (dx && !nd) memset((char *)dx + (size_t)r * row, 0, row);
    }
    return OAR_OK;
}

static int scatter_bwd(oar_kernel_ctx_t *k)
{
    return scatter_bwd_common(k, false, OAR_SCATTER_G_IDS, OAR_SCATTER_G_UPDATES, OAR_SCATTER_G_DOUT,
                              OAR_SCATTER_G_DX, OAR_SCATTER_G_DUPDATES);
}

static int scatter_nd_add_bwd(oar_kernel_ctx_t *k)
{
    return scatter_bwd_common(k, true, OAR_SNA_G_INDEX, OAR_SNA_G_UPDATES, OAR_SNA_G_DOUT, OAR_SNA_G_DX,
                              OAR_SNA_G_DUPDATES);
}

/* ---- strided_slice ------------------------------------------------------ */
/* per dim of Input: the first index, the step and the count taken */
static int ss_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, int64_t *first, int64_t *step, int64_t *len)
{
    const oar_ss_attrs_t *a = oar_k_attrs(k);
    int64_t v[3][OAR_MAX_DIMS];
    int n[3];
    const oar_ints_t *attr[3] = {&a->starts, &a->ends, &a->strides};
    static const char *const tn[3] = {"StartsTensor", "EndsTensor", "StridesTensor"};
    static const char *const ln[3] = {"StartsTensorList", "EndsTensorList", "StridesTensorList"};
    /* forward and grad declare these slots first, at the same indices */
    const int ts[3] = {OAR_SS_STARTS_T, OAR_SS_ENDS_T, OAR_SS_STRIDES_T};
    const int ls[3] = {OAR_SS_STARTS_L, OAR_SS_ENDS_L, OAR_SS_STRIDES_L};
    for (int j = 0; j < 3; j++) {
        bool given;
        OAR_TRY(oar_k_int_list_at(k, ts[j], tn[j], ls[j], ln[j], v[j], OAR_MAX_DIMS, &n[j], &given));
        if (!given) {
            n[j] = attr[j]->n > OAR_MAX_DIMS ? OAR_MAX_DIMS : attr[j]->n;
            for (int i = 0; i < n[j]; i++) v[j][i] = attr[j]->v[i];
        }
        if (n[j] != a->axes.n)
            return oar_k_error(k, OAR_ERR_SHAPE, "axes has %d values, %s %d", a->axes.n, ln[j], n[j]);
    }
    for (int i = 0; i < x->ndim; i++) { first[i] = 0; step[i] = 1; len[i] = x->dims[i]; }
    for (int i = 0; i < a->axes.n; i++) {
        int d = a->axes.v[i] < 0 ? a->axes.v[i] + x->ndim : a->axes.v[i];
        if (d < 0 || d >= x->ndim) return oar_k_error(k, OAR_ERR_RANGE, "axes[%d] is out of range", i);
        if (v[2][i] == 0) return oar_k_error(k, OAR_ERR_INVALID, "strides[%d] is 0", i);
        step[d] = v[2][i];
        oar_py_slice(x->dims[d], v[0][i], v[1][i], v[2][i], &first[d], &len[d]);
    }
    return OAR_OK;
}

/* Out (the slice, decreased dims or not) <-> Input positions: forward copies
 * Input -> Out, backward Out@GRAD -> the zeroed Input@GRAD */
static void ss_walk(const oar_tensor_t *x, const int64_t *first, const int64_t *step, const int64_t *len,
                    const char *src, char *dst, size_t esz, bool fwd)
{
    int nd = x->ndim;
    if (prod(len, 0, nd) == 0) return;
    int64_t st[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = {0}, p = 0;
    strides_of(x->dims, nd, st);
    do {
        int64_t q = 0;
        for (int i = 0; i < nd; i++) q += (first[i] + idx[i] * step[i]) * st[i];
        if (fwd) memcpy(dst + (size_t)p * esz, src + (size_t)q * esz, esz);
        else memcpy(dst + (size_t)q * esz, src + (size_t)p * esz, esz);
        p++;
    } while (next_index(idx, len, nd));
}

static int strided_slice_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x, *o;
    char *od;
    OAR_TRY(input(k, OAR_SS_INPUT, 0, "Input", &x));
    int64_t first[OAR_MAX_DIMS], step[OAR_MAX_DIMS], len[OAR_MAX_DIMS];
    OAR_TRY(ss_plan(k, x, first, step, len));
    OAR_TRY(output(k, OAR_SS_OUT, "Out", x->dtype, false, &o, &od));
    if (oar_tensor_numel_of(o) != prod(len, 0, x->ndim))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out's size differs from the slice's");
    ss_walk(x, first, step, len, oar_tensor_data(x), od, oar_dtype_size(x->dtype), true);
    return OAR_OK;
}

static int strided_slice_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x, *g, *dxt;
    char *dx;
    OAR_TRY(input(k, OAR_SS_G_INPUT, 0, "Input", &x));
    OAR_TRY(input(k, OAR_SS_G_DOUT, 0, "Out@GRAD", &g));
    OAR_TRY(output(k, OAR_SS_G_DINPUT, "Input@GRAD", g->dtype, true, &dxt, &dx));
    if (!dx) return OAR_OK;
    int64_t first[OAR_MAX_DIMS], step[OAR_MAX_DIMS], len[OAR_MAX_DIMS];
    OAR_TRY(ss_plan(k, x, first, step, len));
    if (oar_tensor_numel_of(g) != prod(len, 0, x->ndim))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD's size differs from the slice's");
    size_t esz = oar_dtype_size(g->dtype);
    memset(dx, 0, (size_t)oar_tensor_numel_of(x) * esz);
    ss_walk(x, first, step, len, oar_tensor_data(g), dx, esz, false);
    return OAR_OK;
}

/* ---- crop_tensor -------------------------------------------------------- */
static int ct_offsets(oar_kernel_ctx_t *k, int s_off, int s_offl, const oar_tensor_t *x, int64_t *off)
{
    const oar_ct_attrs_t *a = oar_k_attrs(k);
    int n;
    bool given;
    OAR_TRY(oar_k_int_list_at(k, s_off, "Offsets", s_offl, "OffsetsTensor", off, OAR_MAX_DIMS, &n, &given));
    if (!given) {
        n = a->offsets.n ? a->offsets.n : x->ndim;
        for (int i = 0; i < n && i < OAR_MAX_DIMS; i++) off[i] = a->offsets.n ? a->offsets.v[i] : 0;
    }
    if (n != x->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "offsets has %d values, X's rank is %d", n, x->ndim);
    return OAR_OK;
}

/* the block of big (dims bd) at off with small's dims: copied out (fwd) or in */
static int ct_walk(oar_kernel_ctx_t *k, const oar_tensor_t *big, const oar_tensor_t *small, const int64_t *off,
                   const char *src, char *dst, bool fwd)
{
    int nd = big->ndim;
    if (small->ndim != nd) return oar_k_error(k, OAR_ERR_SHAPE, "the crop's rank differs from X's");
    for (int i = 0; i < nd; i++)
        if (off[i] < 0 || off[i] + small->dims[i] > big->dims[i])
            return oar_k_error(k, OAR_ERR_RANGE, "offsets[%d] + shape[%d] = %lld exceeds X's dim (%lld)", i, i,
                               (long long)(off[i] + small->dims[i]), (long long)big->dims[i]);
    if (oar_tensor_numel_of(small) == 0) return OAR_OK;
    size_t esz = oar_dtype_size(big->dtype);
    int64_t st[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = {0}, p = 0;
    strides_of(big->dims, nd, st);
    do {
        int64_t q = 0;
        for (int i = 0; i < nd; i++) q += (off[i] + idx[i]) * st[i];
        if (fwd) memcpy(dst + (size_t)p * esz, src + (size_t)q * esz, esz);
        else memcpy(dst + (size_t)q * esz, src + (size_t)p * esz, esz);
        p++;
    } while (next_index(idx, small->dims, nd));
    return OAR_OK;
}

static int crop_tensor_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x, *o;
    char *od;
    OAR_TRY(input(k, OAR_CT_X, 0, "X", &x));
    int64_t off[OAR_MAX_DIMS];
    OAR_TRY(ct_offsets(k, OAR_CT_OFFSETS, OAR_CT_OFFSETS_L, x, off));
    OAR_TRY(output(k, OAR_CT_OUT, "Out", x->dtype, false, &o, &od));
    return ct_walk(k, x, o, off, oar_tensor_data(x), od, true);
}

static int crop_tensor_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x, *g, *dxt;
    char *dx;
    OAR_TRY(input(k, OAR_CT_G_X, 0, "X", &x));
    OAR_TRY(input(k, OAR_CT_G_DOUT, 0, "Out@GRAD", &g));
    OAR_TRY(output(k, OAR_CT_G_DX, "X@GRAD", g->dtype, true, &dxt, &dx));
    if (!dx) return OAR_OK;
    int64_t off[OAR_MAX_DIMS];
    OAR_TRY(ct_offsets(k, OAR_CT_G_OFFSETS, OAR_CT_G_OFFSETS_L, x, off));
    memset(dx, 0, (size_t)oar_tensor_numel_of(x) * oar_dtype_size(g->dtype));
    return ct_walk(k, dxt, g, off, oar_tensor_data(g), dx, false);
}

/* ---- pixel_shuffle / shuffle_channel / space_to_depth -------------------- */
/* a permutation of the elements of an NCHW-like tensor: map(i) is the
 * position in the big-channel layout "a" of element i of layout "b";
 * forward copies a -> b or b -> a as the op needs */
typedef int64_t (*perm_fn)(int64_t i, const int64_t *p);

/* pixel_shuffle: i walks Out [N, C/r^2, H*r, W*r]; returns X's position */
static int64_t ps_map(int64_t i, const int64_t *p)
{
    int64_t r = p[0], oc = p[1], oh = p[2], ow = p[3];
    int64_t w = i % ow, h = (i / ow) % oh, c = (i / (ow * oh)) % oc, n = i / (ow * oh * oc);
    int64_t ic = c * r * r + (h % r) * r + (w % r), ih = h / r, iw = w / r, H = oh / r, W = ow / r;
    return ((n * oc * r * r + ic) * H + ih) * W + iw;
}

/* shuffle_channel: i walks Out [N, C, S]; Out[n, j*g + i'] = X[n, i'*(C/g) + j] */
static int64_t sc_map(int64_t i, const int64_t *p)
{
    int64_t g = p[0], C = p[1], S = p[2];
    int64_t s = i % S, c = (i / S) % C, n = i / (S * C), j = c / g, ii = c % g;
    return (n * C + ii * (C / g) + j) * S + s;
}

/* space_to_depth (Fluid's index order): i walks X [B, C, H, W]; returns Out's position */
static int64_t std_map(int64_t i, const int64_t *p)
{
    int64_t bs = p[0], C = p[1], H = p[2], W = p[3];
    int64_t oc = C / (bs * bs), b = i / (C * H * W), kc = (i % (C * H * W)) / (H * W);
    int64_t j = (i % (H * W)) / W, x = i % W;
    int64_t c2 = kc % oc, o = kc / oc, w2 = x * bs + o % bs, h2 = j * bs + o / bs;
    return w2 + W * bs * (h2 + H * bs * (c2 + oc * b));
}

/* dst[i] = src[map(i)] (gather) or dst[map(i)] = src[i] (scatter), n elements */
static void permute(const char *src, char *dst, int64_t n, size_t esz, perm_fn map, const int64_t *p, bool gather)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t j = map(i, p);
        if (gather) memcpy(dst + (size_t)i * esz, src + (size_t)j * esz, esz);
        else memcpy(dst + (size_t)j * esz, src + (size_t)i * esz, esz);
    }
}

static int perm_run(oar_kernel_ctx_t *k, int s_in, const char *in_name, int s_out, const char *out_name,
                    perm_fn map, const int64_t *p, bool gather)
{
    oar_tensor_t *x, *o;
    char *od;
    OAR_TRY(input(k, s_in, 0, in_name, &x));
    OAR_TRY(output(k, s_out, out_name, x->dtype, true, &o, &od));
    if (!o) return OAR_OK;
    int64_t n = oar_tensor_numel_of(x);
    if (oar_tensor_numel_of(o) != n) return oar_k_error(k, OAR_ERR_SHAPE, "%s's size differs from %s's", out_name, in_name);
    if (n > 0) permute(oar_tensor_data(x), od, n, oar_dtype_size(x->dtype), map, p, gather);
    return OAR_OK;
}

static int ps_params(oar_kernel_ctx_t *k, const oar_tensor_t *out_like, int64_t *p)
{
    const oar_pixel_shuffle_attrs_t *a = oar_k_attrs(k);
    if (!out_like || out_like->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "pixel_shuffle works on 4-D tensors");
    p[0] = a->upscale_factor;
    for (int i = 1; i < 4; i++) p[i] = out_like->dims[i];
    return OAR_OK;
}

static int pixel_shuffle_fwd(oar_kernel_ctx_t *k)
{
    int64_t p[4] = {0, 0, 0, 0};
    OAR_TRY(ps_params(k, oar_k_output(k, OAR_PIXEL_SHUFFLE_OUT, 0), p));
    return perm_run(k, OAR_PIXEL_SHUFFLE_X, "X", OAR_PIXEL_SHUFFLE_OUT, "Out", ps_map, p, true);
}

static int pixel_shuffle_bwd(oar_kernel_ctx_t *k)
{
    int64_t p[4] = {0, 0, 0, 0};
    OAR_TRY(ps_params(k, oar_k_input(k, OAR_PS_G_DOUT, 0), p));
    return perm_run(k, OAR_PS_G_DOUT, "Out@GRAD", OAR_PS_G_DX, "X@GRAD", ps_map, p, false);
}

static int sc_params(oar_kernel_ctx_t *k, const oar_tensor_t *x, int64_t *p)
{
    const oar_shuffle_channel_attrs_t *a = oar_k_attrs(k);
    if (!x || x->ndim < 2 || x->dims[1] % a->group != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "the channels are not a multiple of group %d", a->group);
    p[0] = a->group;
    p[1] = x->dims[1];
    p[2] = prod(x->dims, 2, x->ndim);
    return OAR_OK;
}

static int shuffle_channel_fwd(oar_kernel_ctx_t *k)
{
    int64_t p[3] = {0, 0, 0};
    OAR_TRY(sc_params(k, oar_k_input(k, OAR_SHUFFLE_CHANNEL_X, 0), p));
    return perm_run(k, OAR_SHUFFLE_CHANNEL_X, "X", OAR_SHUFFLE_CHANNEL_OUT, "Out", sc_map, p, true);
}

static int shuffle_channel_bwd(oar_kernel_ctx_t *k)
{
    int64_t p[3] = {0, 0, 0};
    OAR_TRY(sc_params(k, oar_k_input(k, OAR_SC_G_DOUT, 0), p));
    return perm_run(k, OAR_SC_G_DOUT, "Out@GRAD", OAR_SC_G_DX, "X@GRAD", sc_map, p, false);
}

static int std_params(oar_kernel_ctx_t *k, const oar_tensor_t *x, int64_t *p)
{
    const oar_std_attrs_t *a = oar_k_attrs(k);
    int64_t b = a->blocksize;
    if (!x || x->ndim != 4 || x->dims[1] % (b * b) || x->dims[2] % b || x->dims[3] % b)
        return oar_k_error(k, OAR_ERR_SHAPE, "X must be [B, C, H, W] with C a multiple of blocksize^2, H and W of "
                           "blocksize %lld", (long long)b);
    p[0] = b;
    for (int i = 1; i < 4; i++) p[i] = x->dims[i];
    return OAR_OK;
}

static int space_to_depth_fwd(oar_kernel_ctx_t *k)
{
    int64_t p[4] = {0, 0, 0, 0};
    OAR_TRY(std_params(k, oar_k_input(k, OAR_STD_X, 0), p));
    return perm_run(k, OAR_STD_X, "X", OAR_STD_OUT, "Out", std_map, p, false);
}

static int space_to_depth_bwd(oar_kernel_ctx_t *k)
{
    int64_t p[4] = {0, 0, 0, 0};
    OAR_TRY(std_params(k, oar_k_input(k, OAR_STD_G_X, 0), p));
    return perm_run(k, OAR_STD_G_DOUT, "Out@GRAD", OAR_STD_G_DX, "X@GRAD", std_map, p, true);
}

/* ---- registration ------------------------------------------------------- */
#define REG1(op, fn, sfx, dt)                                                \
    static int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }            \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, dt, fn##_##sfx)
#define REG_F(op, fn) REG1(op, fn, f32, OAR_FP32) REG1(op, fn, f64, OAR_FP64)
#define REG_FI(op, fn) REG_F(op, fn) REG1(op, fn, i32, OAR_INT32) REG1(op, fn, i64, OAR_INT64)

REG_FI("linspace", linspace_fwd)
REG_FI("diag_embed", diag_embed_fwd)
REG_FI("meshgrid", meshgrid_fwd)
REG_FI("index_sample", index_sample_fwd)
REG_F("scatter_grad", scatter_bwd)
REG_F("scatter_nd_add_grad", scatter_nd_add_bwd)
REG_FI("strided_slice", strided_slice_fwd)
REG_F("strided_slice_grad", strided_slice_bwd)
REG_FI("crop_tensor", crop_tensor_fwd)
REG_F("crop_tensor_grad", crop_tensor_bwd)
REG_FI("pixel_shuffle", pixel_shuffle_fwd)
REG_F("pixel_shuffle_grad", pixel_shuffle_bwd)
REG_FI("shuffle_channel", shuffle_channel_fwd)
REG_F("shuffle_channel_grad", shuffle_channel_bwd)
REG_FI("space_to_depth", space_to_depth_fwd)
REG_F("space_to_depth_grad", space_to_depth_bwd)
