/*
 * rearrange.c — CPU kernels of unstack, expand_as, flip, roll, tril_triu,
 * trace, kron, diag and eye (src/ops/rearrange.c) and their grads.
 *
 * Ops that only move elements copy esz bytes per element, so one function
 * serves every dtype; the grads that add (expand_as) have one body per
 * float type.
 */
#include <string.h>
#include "op.h"
#include "rearrange_common.h"   /* nm, input, prod, strides_of, next_index */
#include "ops/rearrange.h"

/* ---- unstack ------------------------------------------------------------ */
/* X = [pre, n, post]: Y[i] = X[:, i, :] */
static int unstack_fwd(oar_kernel_ctx_t *k)
{
    const oar_unstack_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_UNSTACK_X, 0, "X", &x));
    int nd = x->ndim, ax = a->axis < 0 ? a->axis + nd : a->axis;
    if (ax < 0 || ax >= nd || x->dims[ax] != a->num || oar_k_nout(k, OAR_UNSTACK_Y) != a->num)
        return oar_k_error(k, OAR_ERR_SHAPE, "X's dim %d is not num %d", a->axis, a->num);
    int64_t pre = prod(x->dims, 0, ax), n = x->dims[ax], post = prod(x->dims, ax + 1, nd);
    size_t esz = oar_dtype_size(x->dtype), row = (size_t)post * esz;
    const char *src = oar_tensor_data(x);
    for (int64_t i = 0; i < n; i++) {
        if (!oar_k_output(k, OAR_UNSTACK_Y, (int)i)) continue;
        char *y = oar_k_output_data(k, OAR_UNSTACK_Y, (int)i, x->dtype);
        if (!y && pre * post > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Y[%lld]", (long long)i);
        for (int64_t p = 0; p < pre; p++) memcpy(y + (size_t)p * row, src + (size_t)(p * n + i) * row, row);
    }
    return OAR_OK;
}

/* X@GRAD[:, i, :] = Y@GRAD[i]; a Y no loss reached has a zero gradient */
static int unstack_bwd(oar_kernel_ctx_t *k)
{
    if (!oar_k_output(k, OAR_UNSTACK_G_DX, 0)) return OAR_OK;
    const oar_tensor_t *dxt = oar_k_output(k, OAR_UNSTACK_G_DX, 0);
    const oar_unstack_attrs_t *a = oar_k_attrs(k);
    int nd = dxt->ndim, ax = a->axis < 0 ? a->axis + nd : a->axis;
    int64_t pre = prod(dxt->dims, 0, ax), n = dxt->dims[ax], post = prod(dxt->dims, ax + 1, nd);
    int dt = oar_k_dtype(k);
    size_t esz = oar_dtype_size(dt), row = (size_t)post * esz;
    char *dx = oar_k_output_data(k, OAR_UNSTACK_G_DX, 0, dt);
    if (!dx && oar_tensor_numel_of(dxt) > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");
    for (int64_t i = 0; i < n; i++) {
        oar_tensor_t *g = i < oar_k_nin(k, OAR_UNSTACK_G_DY) ? oar_k_input(k, OAR_UNSTACK_G_DY, (int)i) : NULL;
        bool have = g && oar_tensor_has_data(g);
        if (have && oar_tensor_numel_of(g) != pre * post)
            return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD[%lld] has %lld elements, expected %lld", (long long)i,
                               (long long)oar_tensor_numel_of(g), (long long)(pre * post));
        const char *gd = have ? oar_tensor_data(g) : NULL;
        for (int64_t p = 0; p < pre; p++) {
            char *dst = dx + (size_t)(p * n + i) * row;
            if (gd) memcpy(dst, gd + (size_t)p * row, row);
            else memset(dst, 0, row);
        }
    }
    return OAR_OK;
}

/* ---- expand_as ---------------------------------------------------------- */
static int expand_as_check(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *o)
{
    if (o->ndim != x->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Out's rank differs from X's");
    for (int i = 0; i < x->ndim; i++)
        if (x->dims[i] == 0 ? o->dims[i] != 0 : o->dims[i] % x->dims[i] != 0)
            return oar_k_error(k, OAR_ERR_SHAPE, "dim %d of the target (%lld) is not a multiple of X's (%lld)", i,
                               (long long)o->dims[i], (long long)x->dims[i]);
    return OAR_OK;
}

static int expand_as_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_EXPAND_AS_X, 0, "X", &x));
    const oar_tensor_t *o = oar_k_output(k, OAR_EXPAND_AS_OUT, 0);
    if (!o) return oar_k_error(k, OAR_ERR_INVALID, "no output Out");
    OAR_TRY(expand_as_check(k, x, o));
    int64_t n = oar_tensor_numel_of(o);
    char *od = oar_k_output_data(k, OAR_EXPAND_AS_OUT, 0, x->dtype);
    if (!od && n > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (n == 0) return OAR_OK;
    int nd = o->ndim;
    int64_t idx[OAR_MAX_DIMS] = {0}, st[OAR_MAX_DIMS];
    strides_of(x->dims, nd, st);
    size_t esz = oar_dtype_size(x->dtype);
    const char *xd = oar_tensor_data(x);
    int64_t p = 0;
    do {
        int64_t s = 0;
        for (int i = 0; i < nd; i++) s += (idx[i] % x->dims[i]) * st[i];
        memcpy(od + (size_t)p * esz, xd + (size_t)s * esz, esz);
        p++;
    } while (next_index(idx, o->dims, nd));
    return OAR_OK;
}

#define EXPAND_AS_BWD(SUF, T, DT)                                                           \
    static int expand_as_bwd_##SUF(oar_kernel_ctx_t *k)                                     \
    {                                                                                       \
        oar_tensor_t *x, *g;                                                                \
        OAR_TRY(input(k, OAR_EXPAND_AS_GRAD_X, 0, "X", &x));                                \
        OAR_TRY(input(k, OAR_EXPAND_AS_GRAD_DOUT, 0, "Out@GRAD", &g));                      \
        void *p;                                                                            \
        OAR_TRY(oar_k_output_sized(k, OAR_EXPAND_AS_GRAD_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &p)); \
        if (!p) return OAR_OK;                                                              \
        OAR_TRY(expand_as_check(k, x, g));                                                  \
        T *dx = p;                                                                          \
        const T *gd = oar_tensor_data(g);                                                   \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                          \
        if (oar_tensor_numel_of(g) == 0) return OAR_OK;                                     \
        int nd = g->ndim;                                                                   \
        int64_t idx[OAR_MAX_DIMS] = {0}, st[OAR_MAX_DIMS], q = 0;                           \
        strides_of(x->dims, nd, st);                                                        \
        do {                                                                                \
            int64_t s = 0;                                                                  \
            for (int i = 0; i < nd; i++) s += (idx[i] % x->dims[i]) * st[i];                \
            dx[s] += gd[q++];                                                               \
        } while (next_index(idx, g->dims, nd));                                             \
        return OAR_OK;                                                                      \
    }
EXPAND_AS_BWD(f32, float, OAR_FP32)
EXPAND_AS_BWD(f64, double, OAR_FP64)

/* ---- flip / roll -------------------------------------------------------- */
/* Out[idx] = X[src(idx)], src moving each dim d by off[d] (mod dims[d]) or
 * mirroring it (rev[d]) */
static int permute_copy(oar_kernel_ctx_t *k, oar_tensor_t *x, int out_slot, const int64_t *dims, int nd,
                        const int64_t *off, const bool *rev)
{
    int64_t n = oar_tensor_numel_of(x);
    char *od = oar_k_output_data(k, out_slot, 0, x->dtype);
    if (!od && n > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (oar_tensor_numel_of(oar_k_output(k, out_slot, 0)) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out's size differs from X's");
    if (n == 0) return OAR_OK;
    int64_t idx[OAR_MAX_DIMS] = {0}, st[OAR_MAX_DIMS], p = 0;
    strides_of(dims, nd, st);
    size_t esz = oar_dtype_size(x->dtype);
    const char *xd = oar_tensor_data(x);
    do {
        int64_t s = 0;
        for (int i = 0; i < nd; i++) {
            int64_t j = rev[i] ? dims[i] - 1 - idx[i] : (idx[i] + off[i]) % dims[i];
            s += j * st[i];
        }
        memcpy(od + (size_t)p * esz, xd + (size_t)s * esz, esz);
        p++;
    } while (next_index(idx, dims, nd));
    return OAR_OK;
}

static int flip_fwd(oar_kernel_ctx_t *k)
{
    const oar_flip_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_FLIP_X, 0, "X", &x));
    int nd = x->ndim;
    int64_t off[OAR_MAX_DIMS] = {0}, one = 1;
    bool rev[OAR_MAX_DIMS] = {false};
    for (int i = 0; i < a->dims.n; i++) {
        int d = a->dims.v[i] < 0 ? a->dims.v[i] + nd : a->dims.v[i];
        if (d < 0 || d >= nd) return oar_k_error(k, OAR_ERR_RANGE, "dims[%d] = %d out of range", i, a->dims.v[i]);
        rev[d] = true;
    }
    if (nd == 0) return permute_copy(k, x, OAR_FLIP_OUT, &one, 1, off, rev);
    return permute_copy(k, x, OAR_FLIP_OUT, x->dims, nd, off, rev);
}

/* Out[.., i, ..] = X[.., (i - shift) mod n, ..]; sign -1 rolls back (the grad) */
static int roll_run(oar_kernel_ctx_t *k, oar_tensor_t *x, int out_slot, int sign)
{
    const oar_roll_attrs_t *a = oar_k_attrs(k);
    int nd = x->ndim;
    int64_t off[OAR_MAX_DIMS] = {0}, flat[1];
    bool rev[OAR_MAX_DIMS] = {false};
    const int64_t *dims = x->dims;
    if (a->dims.n == 0) {   /* rolled as one flat list */
        if (a->shifts.n != 1) return oar_k_error(k, OAR_ERR_INVALID, "shifts must have one value when dims is empty");
        flat[0] = oar_tensor_numel_of(x);
        dims = flat;
        nd = 1;
    } else if (a->shifts.n != a->dims.n) {
        return oar_k_error(k, OAR_ERR_INVALID, "shifts and dims differ in length");
    }
    for (int i = 0; i < a->shifts.n; i++) {
        int d = 0;
        if (a->dims.n > 0) {
            d = (int)(a->dims.v[i] < 0 ? a->dims.v[i] + nd : a->dims.v[i]);
            if (d < 0 || d >= nd) return oar_k_error(k, OAR_ERR_RANGE, "dims[%d] out of range", i);
        }
        if (dims[d] == 0) continue;
        int64_t s = (-sign * a->shifts.v[i]) % dims[d];
        off[d] = ((off[d] + s) % dims[d] + dims[d]) % dims[d];
    }
    return permute_copy(k, x, out_slot, dims, nd, off, rev);
}

static int roll_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_ROLL_X, 0, "X", &x));
    return roll_run(k, x, OAR_ROLL_OUT, 1);
}

static int roll_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_ROLL_G_DOUT, 0, "Out@GRAD", &g));
    if (!oar_k_output(k, OAR_ROLL_G_DX, 0)) return OAR_OK;
    return roll_run(k, g, OAR_ROLL_G_DX, -1);
}

/* ---- tril_triu ---------------------------------------------------------- */
/* out = in where (col - row) <= diagonal (lower) or >= diagonal (upper), else 0 */
static int tril_triu_run(oar_kernel_ctx_t *k, oar_tensor_t *x, int out_slot)
{
    const oar_tt_attrs_t *a = oar_k_attrs(k);
    int nd = x->ndim;
    if (nd < 2) return oar_k_error(k, OAR_ERR_SHAPE, "the input must be at least 2-D");
    int64_t n = oar_tensor_numel_of(x), h = x->dims[nd - 2], w = x->dims[nd - 1];
    char *od = oar_k_output_data(k, out_slot, 0, x->dtype);
    if (!od && n > 0) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the output");
    if (oar_tensor_numel_of(oar_k_output(k, out_slot, 0)) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "the output's size differs from the input's");
    size_t esz = oar_dtype_size(x->dtype);
    const char *xd = oar_tensor_data(x);
    for (int64_t p = 0; p < n; p++) {
        int64_t c = p % w, r = (p / w) % h, dlt = c - r;
        bool keep = a->lower ? dlt <= a->diagonal : dlt >= a->diagonal;
        if (keep) memcpy(od + (size_t)p * esz, xd + (size_t)p * esz, esz);
        else memset(od + (size_t)p * esz, 0, esz);
    }
    return OAR_OK;
}

static int tril_triu_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_TT_X, 0, "X", &x));
    return tril_triu_run(k, x, OAR_TT_OUT);
}

static int tril_triu_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_TT_G_DOUT, 0, "Out@GRAD", &g));
    if (!oar_k_output(k, OAR_TT_G_DX, 0)) return OAR_OK;
    return tril_triu_run(k, g, OAR_TT_G_DX);
}

/* ---- trace -------------------------------------------------------------- */
/* the walk of trace: for each Out element (the other dims, row-major), the
 * first diagonal element's offset; the diagonal's length and step */
typedef struct {
    int nrest;
    int64_t rest[OAR_MAX_DIMS], rstride[OAR_MAX_DIMS], len, step, start;
} diag_walk_t;

static int trace_walk(oar_kernel_ctx_t *k, const oar_tensor_t *x, diag_walk_t *w)
{
    const oar_trace_attrs_t *a = oar_k_attrs(k);
    int nd = x->ndim;
    int a1 = a->axis1 < 0 ? a->axis1 + nd : a->axis1, a2 = a->axis2 < 0 ? a->axis2 + nd : a->axis2;
    if (nd < 2 || a1 < 0 || a1 >= nd || a2 < 0 || a2 >= nd || a1 == a2)
        return oar_k_error(k, OAR_ERR_RANGE, "axis1 %d and axis2 %d do not name two dims of Input", a->axis1, a->axis2);
    int64_t st[OAR_MAX_DIMS];
    strides_of(x->dims, nd, st);
    int64_t i0 = a->offset < 0 ? -(int64_t)a->offset : 0, j0 = a->offset > 0 ? a->offset : 0;
    int64_t l1 = x->dims[a1] - i0, l2 = x->dims[a2] - j0;
    w->len = l1 < l2 ? l1 : l2;
    if (w->len < 0) w->len = 0;
    w->step = st[a1] + st[a2];
    w->start = i0 * st[a1] + j0 * st[a2];
    w->nrest = 0;
    for (int i = 0; i < nd; i++)
        if (i != a1 && i != a2) { w->rest[w->nrest] = x->dims[i]; w->rstride[w->nrest++] = st[i]; }
    return OAR_OK;
}

/* offset of Out element q's first diagonal element */
static int64_t walk_base(const diag_walk_t *w, int64_t q)
{
    int64_t off = w->start;
    for (int i = w->nrest - 1; i >= 0; i--) { off += (q % w->rest[i]) * w->rstride[i]; q /= w->rest[i]; }
    return off;
}

#define TRACE_K(SUF, T, DT)                                                                 \
    static int trace_fwd_##SUF(oar_kernel_ctx_t *k)                                         \
    {                                                                                       \
        oar_tensor_t *x;                                                                    \
        OAR_TRY(input(k, OAR_TRACE_INPUT, 0, "Input", &x));                                 \
        diag_walk_t w;                                                                      \
        OAR_TRY(trace_walk(k, x, &w));                                                      \
        int64_t n = prod(w.rest, 0, w.nrest);                                               \
        void *p;                                                                            \
        OAR_TRY(oar_k_output_sized(k, OAR_TRACE_OUT, "Out", DT, n, false, &p));             \
        T *out = p;                                                                         \
        const T *xd = oar_tensor_data(x);                                                   \
        for (int64_t q = 0; q < n; q++) {                                                   \
            int64_t b = walk_base(&w, q);                                                   \
            T s = 0;                                                                        \
            for (int64_t i = 0; i < w.len; i++) s += xd[b + i * w.step];                    \
            out[q] = s;                                                                     \
        }                                                                                   \
        return OAR_OK;                                                                      \
    }                                                                                       \
    static int trace_bwd_##SUF(oar_kernel_ctx_t *k)                                         \
    {                                                                                       \
        oar_tensor_t *x, *g;                                                                \
        OAR_TRY(input(k, OAR_TRACE_G_INPUT, 0, "Input", &x));                               \
        OAR_TRY(input(k, OAR_TRACE_G_DOUT, 0, "Out@GRAD", &g));                             \
        void *p;                                                                            \
        OAR_TRY(oar_k_output_sized(k, OAR_TRACE_G_DINPUT, "Input@GRAD", DT, oar_tensor_numel_of(x), true, &p)); \
        if (!p) return OAR_OK;                                                              \
        diag_walk_t w;                                                                      \
        OAR_TRY(trace_walk(k, x, &w));                                                      \
        int64_t n = prod(w.rest, 0, w.nrest);                                               \
        if (oar_tensor_numel_of(g) != n)                                                    \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld elements, expected %lld", \
                               (long long)oar_tensor_numel_of(g), (long long)n);            \
        T *dx = p;                                                                          \
        const T *gd = oar_tensor_data(g);                                                   \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                          \
        for (int64_t q = 0; q < n; q++) {                                                   \
            int64_t b = walk_base(&w, q);                                                   \
            for (int64_t i = 0; i < w.len; i++) dx[b + i * w.step] = gd[q];                 \
        }                                                                                   \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("trace", OAR_PLACE_CPU, DT, trace_fwd_##SUF)                        \
    OAR_REGISTER_KERNEL("trace_grad", OAR_PLACE_CPU, DT, trace_bwd_##SUF)
TRACE_K(f32, float, OAR_FP32)
TRACE_K(f64, double, OAR_FP64)

/* ---- kron --------------------------------------------------------------- */
/* X's and Y's dims padded with leading 1s to Out's rank r */
static int kron_dims(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *y, int64_t *xd, int64_t *yd,
                     int64_t *od, int *r)
{
    *r = x->ndim > y->ndim ? x->ndim : y->ndim;
    for (int i = 0; i < *r; i++) {
        int xi = i - (*r - x->ndim), yi = i - (*r - y->ndim);
        xd[i] = xi >= 0 ? x->dims[xi] : 1;
        yd[i] = yi >= 0 ? y->dims[yi] : 1;
        od[i] = xd[i] * yd[i];
    }
    if (x->dtype != y->dtype) return oar_k_error(k, OAR_ERR_INVALID, "X and Y differ in dtype");
    return OAR_OK;
}

/* for Out position idx: X's and Y's flat offsets */
static void kron_src(const int64_t *idx, const int64_t *xd, const int64_t *yd, int r, int64_t *xo, int64_t *yo)
{
    int64_t a = 0, b = 0;
    for (int i = 0; i < r; i++) {
        a = a * xd[i] + idx[i] / yd[i];
        b = b * yd[i] + idx[i] % yd[i];
    }
    *xo = a;
    *yo = b;
}

#define KRON_F(SUF, T, DT)                                                                  \
    static int kron_fwd_##SUF(oar_kernel_ctx_t *k)                                          \
    {                                                                                       \
        oar_tensor_t *x, *y;                                                                \
        OAR_TRY(input(k, OAR_KRON_X, 0, "X", &x));                                          \
        OAR_TRY(input(k, OAR_KRON_Y, 0, "Y", &y));                                          \
        int64_t xd[OAR_MAX_DIMS], yd[OAR_MAX_DIMS], od[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = {0}; \
        int r;                                                                              \
        OAR_TRY(kron_dims(k, x, y, xd, yd, od, &r));                                        \
        int64_t n = prod(od, 0, r);                                                         \
        void *p;                                                                            \
        OAR_TRY(oar_k_output_sized(k, OAR_KRON_OUT, "Out", DT, n, false, &p));              \
        if (n == 0) return OAR_OK;                                                          \
        T *out = p;                                                                         \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                         \
        int64_t q = 0;                                                                      \
        do {                                                                                \
            int64_t a, b;                                                                   \
            kron_src(idx, xd, yd, r, &a, &b);                                               \
            out[q++] = xv[a] * yv[b];                                                       \
        } while (next_index(idx, od, r));                                                   \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("kron", OAR_PLACE_CPU, DT, kron_fwd_##SUF)
KRON_F(f32, float, OAR_FP32)
KRON_F(f64, double, OAR_FP64)
KRON_F(i32, int32_t, OAR_INT32)
KRON_F(i64, int64_t, OAR_INT64)

#define KRON_B(SUF, T, DT)                                                                  \
    static int kron_bwd_##SUF(oar_kernel_ctx_t *k)                                          \
    {                                                                                       \
        oar_tensor_t *x, *y, *g;                                                            \
        OAR_TRY(input(k, OAR_KRON_GRAD_X, 0, "X", &x));                                     \
        OAR_TRY(input(k, OAR_KRON_GRAD_Y, 0, "Y", &y));                                     \
        OAR_TRY(input(k, OAR_KRON_GRAD_DOUT, 0, "Out@GRAD", &g));                           \
        int64_t xd[OAR_MAX_DIMS], yd[OAR_MAX_DIMS], od[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = {0}; \
        int r;                                                                              \
        OAR_TRY(kron_dims(k, x, y, xd, yd, od, &r));                                        \
        int64_t n = prod(od, 0, r);                                                         \
        if (oar_tensor_numel_of(g) != n) return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD's size is not Out's"); \
        void *px, *py;                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_KRON_GRAD_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &px)); \
        OAR_TRY(oar_k_output_sized(k, OAR_KRON_GRAD_DY, "Y@GRAD", DT, oar_tensor_numel_of(y), true, &py)); \
        T *dx = px, *dy = py;                                                               \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                 \
        if (dy) memset(dy, 0, sizeof(T) * (size_t)oar_tensor_numel_of(y));                 \
        if (n == 0) return OAR_OK;                                                          \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y), *gd = oar_tensor_data(g); \
        int64_t q = 0;                                                                      \
        do {                                                                                \
            int64_t a, b;                                                                   \
            kron_src(idx, xd, yd, r, &a, &b);                                               \
            if (dx) dx[a] += gd[q] * yv[b];                                                 \
            if (dy) dy[b] += gd[q] * xv[a];                                                 \
            q++;                                                                            \
        } while (next_index(idx, od, r));                                                   \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("kron_grad", OAR_PLACE_CPU, DT, kron_bwd_##SUF)
KRON_B(f32, float, OAR_FP32)
KRON_B(f64, double, OAR_FP64)

/* ---- diag / eye --------------------------------------------------------- */
static int diag_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *d;
    OAR_TRY(input(k, OAR_DIAG_DIAGONAL, 0, "Diagonal", &d));
    int64_t n = oar_tensor_numel_of(d);
    size_t esz = oar_dtype_size(d->dtype);
    void *p;
    OAR_TRY(oar_k_output_sized(k, OAR_DIAG_OUT, "Out", d->dtype, n * n, false, &p));
    if (n == 0) return OAR_OK;
    char *out = p;
    const char *src = oar_tensor_data(d);
    memset(out, 0, (size_t)(n * n) * esz);
    for (int64_t i = 0; i < n; i++) memcpy(out + (size_t)(i * n + i) * esz, src + (size_t)i * esz, esz);
    return OAR_OK;
}

static int eye_fwd(oar_kernel_ctx_t *k)
{
    const oar_eye_attrs_t *a = oar_k_attrs(k);
    int64_t r = a->num_rows, c = a->num_columns < 0 ? r : a->num_columns;
    void *p;
    OAR_TRY(oar_k_output_sized(k, OAR_EYE_OUT, "Out", a->dtype, r * c, false, &p));
    if (r * c == 0) return OAR_OK;
    size_t esz = oar_dtype_size(a->dtype);
    memset(p, 0, (size_t)(r * c) * esz);
    for (int64_t i = 0; i < r && i < c; i++) {
        char *e = (char *)p + (size_t)(i * c + i) * esz;
        switch (a->dtype) {
        case OAR_FP32: *(float *)e = 1; break;
        case OAR_FP64: *(double *)e = 1; break;
        case OAR_INT32: *(int32_t *)e = 1; break;
        case OAR_INT64: *(int64_t *)e = 1; break;
        default: return oar_k_error(k, OAR_ERR_UNSUPPORTED, "eye: dtype %d is not float32/64 or int32/64", a->dtype);
        }
    }
    return OAR_OK;
}

/* ---- registration ------------------------------------------------------- */
#define REG1(op, fn, sfx, dt)                                                \
    static int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }            \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, dt, fn##_##sfx)
#define REG_F(op, fn) REG1(op, fn, f32, OAR_FP32) REG1(op, fn, f64, OAR_FP64)
#define REG_FI(op, fn) REG_F(op, fn) REG1(op, fn, i32, OAR_INT32) REG1(op, fn, i64, OAR_INT64)
#define REG_FIB(op, fn) REG_FI(op, fn) REG1(op, fn, b, OAR_BOOL)

REG_FI("unstack", unstack_fwd)
REG_FI("unstack_grad", unstack_bwd)
REG_FIB("expand_as", expand_as_fwd)
OAR_REGISTER_KERNEL("expand_as_grad", OAR_PLACE_CPU, OAR_FP32, expand_as_bwd_f32)
OAR_REGISTER_KERNEL("expand_as_grad", OAR_PLACE_CPU, OAR_FP64, expand_as_bwd_f64)
REG_FIB("flip", flip_fwd)
REG_FI("roll", roll_fwd)
REG_FI("roll_grad", roll_bwd)
REG_FI("tril_triu", tril_triu_fwd)
REG_FI("tril_triu_grad", tril_triu_bwd)
REG_FI("diag", diag_fwd)
REG_FI("eye", eye_fwd)
