/*
 * tensor_shape.c — CPU kernels of unbind (+grad), crop (+grad), reverse,
 * pad2d (+grad), pad_constant_like (+grad) and multiplex (+grad)
 * (tensor_shape.ops). The ops that only move elements copy them by size,
 * so one body serves every registered dtype; pad2d and pad_constant_like
 * write values and are typed.
 */
#include "op.h"
#include "ops/attr_tensor.h"
#include "ops/tensor_shape.h"

#include <string.h>
#include "reg_num4.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

/* the writable data of output slot (sized by inference) in the dispatch dtype */
static int out_data(oar_kernel_ctx_t *k, int slot, int i, const char *name, char **p)
{
    oar_tensor_t *t = oar_k_output(k, slot, i);
    if (!t) { *p = NULL; return OAR_OK; }
    *p = oar_k_output_data(k, slot, i, oar_k_dtype(k));
    if (!*p && oar_tensor_numel_of(t) > 0)
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate output %s '%s'", name, nm(oar_k_output_name(k, slot, i)));
    return OAR_OK;
}

/* input `slot` holds `want` elements: a grad op's Out@GRAD must match its forward */
static int numel_is(oar_kernel_ctx_t *k, const oar_tensor_t *t, int64_t want, int slot, const char *name)
{
    if (t && oar_tensor_numel_of(t) == want) return OAR_OK;
    return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld elements, expected %lld", name,
                       nm(oar_k_input_name(k, slot, 0)), (long long)(t ? oar_tensor_numel_of(t) : 0), (long long)want);
}

/* ---- unbind ----------------------------------------------------------------------- */
static int unbind_fwd(oar_kernel_ctx_t *k)
{
    const oar_unbind_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_UNBIND_X, 0);
    const int nd = x->ndim, ax = a->axis < 0 ? a->axis + nd : a->axis;
    const int64_t pre = prod(x->dims, 0, ax), n = x->dims[ax], post = prod(x->dims, ax + 1, nd);
    const size_t row = (size_t)post * oar_dtype_size(x->dtype);
    const char *xv = oar_tensor_data(x);
    for (int64_t i = 0; i < n && i < oar_k_nout(k, OAR_UNBIND_OUT); i++) {
        char *o;
        OAR_TRY(out_data(k, OAR_UNBIND_OUT, (int)i, "Out", &o));
        if (!o) continue;
        for (int64_t p = 0; p < pre; p++) memcpy(o + (size_t)p * row, xv + (size_t)(p * n + i) * row, row);
    }
    return OAR_OK;
}
REG_NUM4("unbind", unbind_fwd)

static int unbind_bwd(oar_kernel_ctx_t *k)
{
    const oar_unbind_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_UNBIND_G_X, 0);
    char *dx;
    OAR_TRY(out_data(k, OAR_UNBIND_G_DX, 0, "X@GRAD", &dx));
    if (!dx) return OAR_OK;
    const int nd = x->ndim, ax = a->axis < 0 ? a->axis + nd : a->axis;
    const int64_t pre = prod(x->dims, 0, ax), n = x->dims[ax], post = prod(x->dims, ax + 1, nd);
    const size_t row = (size_t)post * oar_dtype_size(oar_k_dtype(k));
    for (int64_t i = 0; i < n; i++) {
        oar_tensor_t *g = i < oar_k_nin(k, OAR_UNBIND_G_DOUT) ? oar_k_input(k, OAR_UNBIND_G_DOUT, (int)i) : NULL;
        const bool have = g && oar_tensor_has_data(g);
        if (have && oar_tensor_numel_of(g) != pre * post)
            return oar_k_error(k, OAR_ERR_SHAPE, "input Out@GRAD[%lld] has %lld elements, expected %lld", (long long)i,
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
REG1("unbind_grad", unbind_bwd, OAR_FP32, f32)
REG1("unbind_grad", unbind_bwd, OAR_FP64, f64)

/* ---- crop --------------------------------------------------------------------------- */
/* the offsets: the Offsets tensor, else attr offsets, else zeros */
static int crop_offsets(oar_kernel_ctx_t *k, int slot, int nd, int64_t *off)
{
    int n = 0;
    bool given = false;
    OAR_TRY(oar_k_int_list_at(k, slot, "Offsets", -1, NULL, off, OAR_MAX_DIMS, &n, &given));
    if (!given && !oar_attr_int_list(oar_k_op(k), "offsets", off, OAR_MAX_DIMS, &n)) n = 0;
    if (n == 0) {
        for (int i = 0; i < nd; i++) off[i] = 0;
        n = nd;
    }
    if (n != nd) return oar_k_error(k, OAR_ERR_SHAPE, "the offsets have %d values, X has rank %d", n, nd);
    return OAR_OK;
}

/* for each element of the window `w` (dims wd) at `off` in `big` (dims bd):
 * to_big copies window -> big, else big -> window */
static void window_copy(char *big, const int64_t *bd, char *w, const int64_t *wd, int nd, const int64_t *off,
                        size_t es, bool to_big)
{
    int64_t bs[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = { 0 };
    const int64_t n = prod(wd, 0, nd);
    if (nd == 0 || n == 0) {
        if (n == 1) { if (to_big) memcpy(big, w, es); else memcpy(w, big, es); }
        return;
    }
    bs[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) bs[i] = bs[i + 1] * bd[i + 1];
    for (int64_t e = 0; e < n; e++) {
        int64_t src = 0;
        for (int i = 0; i < nd; i++) src += (off[i] + idx[i]) * bs[i];
        if (to_big) memcpy(big + (size_t)src * es, w + (size_t)e * es, es);
        else memcpy(w + (size_t)e * es, big + (size_t)src * es, es);
        for (int i = nd - 1; i >= 0; i--) {
            if (++idx[i] < wd[i]) break;
            idx[i] = 0;
        }
    }
}

static int crop_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_CROP_X, 0), *out = oar_k_output(k, OAR_CROP_OUT, 0);
    int64_t off[OAR_MAX_DIMS];
    OAR_TRY(crop_offsets(k, OAR_CROP_OFFSETS, x->ndim, off));
    for (int i = 0; i < x->ndim; i++)
        if (off[i] < 0 || off[i] + out->dims[i] > x->dims[i])
            return oar_k_error(k, OAR_ERR_RANGE, "offset %lld + size %lld of dim %d leaves input X '%s' (size %lld)",
                               (long long)off[i], (long long)out->dims[i], i, nm(oar_k_input_name(k, OAR_CROP_X, 0)),
                               (long long)x->dims[i]);
    char *o;
    OAR_TRY(out_data(k, OAR_CROP_OUT, 0, "Out", &o));
    if (!o) return OAR_OK;
    window_copy(oar_tensor_data(x), x->dims, o, out->dims, x->ndim, off, oar_dtype_size(x->dtype), false);
    return OAR_OK;
}
REG_NUM4("crop", crop_fwd)

static int crop_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_CROP_GRAD_X, 0), *g = oar_k_input(k, OAR_CROP_GRAD_DOUT, 0);
    char *dx;
    OAR_TRY(out_data(k, OAR_CROP_GRAD_DX, 0, "X@GRAD", &dx));
    if (!dx) return OAR_OK;
    int64_t off[OAR_MAX_DIMS];
    OAR_TRY(crop_offsets(k, OAR_CROP_GRAD_OFFSETS, x->ndim, off));
    if (g->ndim != x->ndim) return numel_is(k, NULL, oar_tensor_numel_of(x), OAR_CROP_GRAD_DOUT, "Out@GRAD");
    for (int i = 0; i < x->ndim; i++)
        if (off[i] < 0 || off[i] + g->dims[i] > x->dims[i])
            return oar_k_error(k, OAR_ERR_RANGE, "offset %lld + Out@GRAD's size %lld of dim %d leaves X (size %lld)",
                               (long long)off[i], (long long)g->dims[i], i, (long long)x->dims[i]);
    const size_t es = oar_dtype_size(oar_k_dtype(k));
    memset(dx, 0, es * (size_t)oar_tensor_numel_of(x));
    window_copy(dx, x->dims, oar_tensor_data(g), g->dims, x->ndim, off, es, true);
    return OAR_OK;
}
REG1("crop_grad", crop_bwd, OAR_FP32, f32)
REG1("crop_grad", crop_bwd, OAR_FP64, f64)

/* ---- reverse --------------------------------------------------------------------------- */
static int reverse_fwd(oar_kernel_ctx_t *k)
{
    const oar_reverse_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_REVERSE_X, 0);
    char *o;
    OAR_TRY(out_data(k, OAR_REVERSE_OUT, 0, "Out", &o));
    const int64_t n = oar_tensor_numel_of(x);
    if (!o || n == 0) return OAR_OK;
    const int nd = x->ndim;
    bool flip[OAR_MAX_DIMS] = { false };
    for (int i = 0; i < a->axis.n; i++) flip[a->axis.v[i] < 0 ? a->axis.v[i] + nd : a->axis.v[i]] = true;
    int64_t st[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = { 0 };
    if (nd > 0) st[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) st[i] = st[i + 1] * x->dims[i + 1];
    const size_t es = oar_dtype_size(x->dtype);
    const char *xv = oar_tensor_data(x);
    for (int64_t e = 0; e < n; e++) {
        int64_t src = 0;
        for (int i = 0; i < nd; i++) src += (flip[i] ? x->dims[i] - 1 - idx[i] : idx[i]) * st[i];
        memcpy(o + (size_t)e * es, xv + (size_t)src * es, es);
        for (int i = nd - 1; i >= 0; i--) {
            if (++idx[i] < x->dims[i]) break;
            idx[i] = 0;
        }
    }
    return OAR_OK;
}
REG_NUM4("reverse", reverse_fwd)
REG1("reverse", reverse_fwd, OAR_BOOL, b8)
REG1("reverse", reverse_fwd, OAR_UINT8, u8)

/* ---- pad2d ---------------------------------------------------------------------------------- */
/* the source row/column of padded position i (size n, padding before `lo`), -1 for constant padding */
static int64_t pad_src(int64_t i, int64_t lo, int64_t n, int mode)
{
    int64_t s = i - lo;
    if (s >= 0 && s < n) return s;
    if (mode == OAR_PAD2D_CONSTANT) return -1;
    if (mode == OAR_PAD2D_EDGE) return s < 0 ? 0 : n - 1;
    if (s < 0) s = -s;   /* reflect: inference keeps the paddings below n */
    if (s >= n) s = 2 * (n - 1) - s;
    return s;
}

static int pad2d_paddings(oar_kernel_ctx_t *k, int slot, int64_t *p)
{
    int n = 0;
    bool given = false;
    OAR_TRY(oar_k_int_list_at(k, slot, "Paddings", -1, NULL, p, OAR_MAX_DIMS, &n, &given));
    if (!given && !oar_attr_int_list(oar_k_op(k), "paddings", p, OAR_MAX_DIMS, &n)) n = 0;
    if (n == 0 && !given) { p[0] = p[1] = p[2] = p[3] = 0; n = 4; }
    if (n != 4) return oar_k_error(k, OAR_ERR_SHAPE, "the paddings have %d values, expected 4", n);
    return OAR_OK;
}

/* the loop over Out [N, C, OH, OW] (or NHWC) with the source element in X, or -1 */
#define PAD2D_LOOP(BODY)                                                                                   \
    do {                                                                                                   \
        const bool nhwc = a->data_format == OAR_PAD2D_NHWC;                                    \
        const int64_t N = xd[0], C = nhwc ? xd[3] : xd[1], H = nhwc ? xd[1] : xd[2], W = nhwc ? xd[2] : xd[3]; \
        const int64_t OH = H + p[0] + p[1], OW = W + p[2] + p[3];                                          \
        for (int64_t b = 0; b < N; b++)                                                                    \
            for (int64_t ch = 0; ch < C; ch++)                                                             \
                for (int64_t h = 0; h < OH; h++) {                                                         \
                    const int64_t sh = pad_src(h, p[0], H, a->mode);                                       \
                    for (int64_t w = 0; w < OW; w++) {                                                     \
                        const int64_t sw = pad_src(w, p[2], W, a->mode);                                   \
                        const int64_t oi = nhwc ? ((b * OH + h) * OW + w) * C + ch : ((b * C + ch) * OH + h) * OW + w; \
                        const int64_t si = sh < 0 || sw < 0 ? -1                                           \
                            : nhwc ? ((b * H + sh) * W + sw) * C + ch : ((b * C + ch) * H + sh) * W + sw;   \
                        BODY;                                                                              \
                    }                                                                                      \
                }                                                                                          \
    } while (0)

#define PAD2D_KERNELS(NAME, T, DT)                                                                         \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                      \
        const oar_pad2d_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *x = oar_k_input(k, OAR_PAD2D_X, 0);                                                  \
        const int64_t *xd = x->dims;                                                                       \
        int64_t p[OAR_MAX_DIMS];                                                                           \
        OAR_TRY(pad2d_paddings(k, OAR_PAD2D_PADDINGS, p));                                                 \
        const int64_t on = xd[0] * (a->data_format == OAR_PAD2D_NHWC ? xd[3] : xd[1]) *        \
                           (xd[a->data_format == OAR_PAD2D_NHWC ? 1 : 2] + p[0] + p[1]) *      \
                           (xd[a->data_format == OAR_PAD2D_NHWC ? 2 : 3] + p[2] + p[3]);       \
        void *o;                                                                                           \
        OAR_TRY(oar_k_output_sized(k, OAR_PAD2D_OUT, "Out", DT, on, false, &o));                           \
        const T *xv = oar_tensor_data(x);                                                                  \
        T *ov = o;                                                                                         \
        PAD2D_LOOP(ov[oi] = si < 0 ? (T)a->pad_value : xv[si]);                                            \
        return OAR_OK;                                                                                     \
    }                                                                                                      \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                      \
        const oar_pad2d_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *x = oar_k_input(k, OAR_PAD2D_G_X, 0);                                                \
        const int64_t *xd = x->dims;                                                                       \
        if (x->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "input X has rank %d; pad2d_grad needs 4-D", x->ndim); \
        void *dx;                                                                                          \
        OAR_TRY(oar_k_output_sized(k, OAR_PAD2D_G_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &dx));   \
        if (!dx) return OAR_OK;                                                                            \
        int64_t p[OAR_MAX_DIMS];                                                                           \
        OAR_TRY(pad2d_paddings(k, OAR_PAD2D_G_PADDINGS, p));                                               \
        const bool nh = a->data_format == OAR_PAD2D_NHWC;                                                  \
        OAR_TRY(numel_is(k, oar_k_input(k, OAR_PAD2D_G_DOUT, 0), xd[0] * (nh ? xd[3] : xd[1]) *            \
                         (xd[nh ? 1 : 2] + p[0] + p[1]) * (xd[nh ? 2 : 3] + p[2] + p[3]), OAR_PAD2D_G_DOUT, \
                         "Out@GRAD"));                                                                     \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                                         \
        const T *g = oar_tensor_data(oar_k_input(k, OAR_PAD2D_G_DOUT, 0));                                 \
        T *d = dx;                                                                                         \
        PAD2D_LOOP(if (si >= 0) d[si] += g[oi]);                                                           \
        return OAR_OK;                                                                                     \
    }                                                                                                      \
    OAR_REGISTER_KERNEL("pad2d", OAR_PLACE_CPU, DT, NAME##_fwd)                                            \
    OAR_REGISTER_KERNEL("pad2d_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
PAD2D_KERNELS(pad2d_f32, float, OAR_FP32)
PAD2D_KERNELS(pad2d_f64, double, OAR_FP64)

/* ---- pad_constant_like ---------------------------------------------------------------------- */
#define PCL_FWD(NAME, T, DT)                                                                               \
    static int NAME(oar_kernel_ctx_t *k)                                                                   \
    {                                                                                                      \
        const oar_pcl_attrs_t *a = oar_k_attrs(k);                                                         \
        oar_tensor_t *y = oar_k_input(k, OAR_PCL_Y, 0), *out = oar_k_output(k, OAR_PCL_OUT, 0);            \
        const int64_t n = oar_tensor_numel_of(out);                                                        \
        void *o;                                                                                           \
        OAR_TRY(oar_k_output_sized(k, OAR_PCL_OUT, "Out", DT, n, false, &o));                              \
        for (int64_t i = 0; i < n; i++) ((T *)o)[i] = (T)a->pad_value;                                     \
        const int64_t zero[OAR_MAX_DIMS] = { 0 };                                                          \
        window_copy(o, out->dims, oar_tensor_data(y), y->dims, y->ndim, zero, sizeof(T), true);            \
        return OAR_OK;                                                                                     \
    }                                                                                                      \
    OAR_REGISTER_KERNEL("pad_constant_like", OAR_PLACE_CPU, DT, NAME)
PCL_FWD(pcl_f32, float, OAR_FP32)
PCL_FWD(pcl_f64, double, OAR_FP64)
PCL_FWD(pcl_i32, int32_t, OAR_INT32)
PCL_FWD(pcl_i64, int64_t, OAR_INT64)

static int pcl_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *y = oar_k_input(k, OAR_PCL_G_Y, 0), *g = oar_k_input(k, OAR_PCL_G_DOUT, 0);
    char *dy;
    OAR_TRY(out_data(k, OAR_PCL_G_DY, 0, "Y@GRAD", &dy));
    if (!dy) return OAR_OK;
    bool fits = g->ndim == y->ndim;
    for (int i = 0; fits && i < y->ndim; i++) fits = y->dims[i] <= g->dims[i];
    if (!fits) return numel_is(k, NULL, oar_tensor_numel_of(y), OAR_PCL_G_DOUT, "Out@GRAD");
    const int64_t zero[OAR_MAX_DIMS] = { 0 };
    window_copy(oar_tensor_data(g), g->dims, dy, y->dims, y->ndim, zero, oar_dtype_size(oar_k_dtype(k)), false);
    return OAR_OK;
}
REG1("pad_constant_like_grad", pcl_bwd, OAR_FP32, f32)
REG1("pad_constant_like_grad", pcl_bwd, OAR_FP64, f64)

/* ---- multiplex ------------------------------------------------------------------------------- */
static int64_t id_at(const oar_tensor_t *t, int64_t i)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

static int multiplex_ids(oar_kernel_ctx_t *k, int slot, int nx, const oar_tensor_t **ids)
{
    *ids = oar_k_input(k, slot, 0);
    const int64_t n = oar_tensor_numel_of(*ids);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = id_at(*ids, i);
        if (v < 0 || v >= nx)
            return oar_k_error(k, OAR_ERR_RANGE, "input Ids '%s' holds %lld at row %lld, outside [0, %d) (the "
                               "candidates in X)", nm(oar_k_input_name(k, slot, 0)), (long long)v, (long long)i, nx);
    }
    return OAR_OK;
}

static int multiplex_fwd(oar_kernel_ctx_t *k)
{
    const int nx = oar_k_nin(k, OAR_MULTIPLEX_X);
    const oar_tensor_t *ids;
    OAR_TRY(multiplex_ids(k, OAR_MULTIPLEX_IDS, nx, &ids));
    oar_tensor_t *x0 = oar_k_input(k, OAR_MULTIPLEX_X, 0);
    const int64_t rows = x0->dims[0], rn = rows ? oar_tensor_numel_of(x0) / rows : 0;
    const size_t row = (size_t)rn * oar_dtype_size(x0->dtype);
    char *o;
    OAR_TRY(out_data(k, OAR_MULTIPLEX_OUT, 0, "Out", &o));
    if (!o) return OAR_OK;
    for (int64_t i = 0; i < rows; i++) {
        oar_tensor_t *src = oar_k_input(k, OAR_MULTIPLEX_X, (int)id_at(ids, i));
        memcpy(o + (size_t)i * row, (const char *)oar_tensor_data(src) + (size_t)i * row, row);
    }
    return OAR_OK;
}
REG_NUM4("multiplex", multiplex_fwd)

static int multiplex_bwd(oar_kernel_ctx_t *k)
{
    const int nx = oar_k_nin(k, OAR_MULTIPLEX_GRAD_X);
    const oar_tensor_t *ids;
    OAR_TRY(multiplex_ids(k, OAR_MULTIPLEX_GRAD_IDS, nx, &ids));
    oar_tensor_t *g = oar_k_input(k, OAR_MULTIPLEX_GRAD_DOUT, 0);
    const int64_t rows = g->dims[0], rn = rows ? oar_tensor_numel_of(g) / rows : 0;
    const size_t row = (size_t)rn * oar_dtype_size(oar_k_dtype(k));
    OAR_TRY(numel_is(k, ids, rows, OAR_MULTIPLEX_GRAD_IDS, "Ids"));
    for (int j = 0; j < oar_k_nout(k, OAR_MULTIPLEX_GRAD_DX); j++) {
        char *dx;
        OAR_TRY(out_data(k, OAR_MULTIPLEX_GRAD_DX, j, "X@GRAD", &dx));
        if (!dx) continue;
        if (oar_tensor_numel_of(oar_k_output(k, OAR_MULTIPLEX_GRAD_DX, j)) != rows * rn)
            return oar_k_error(k, OAR_ERR_SHAPE, "output X@GRAD[%d] does not have Out@GRAD's shape", j);
        for (int64_t i = 0; i < rows; i++) {
            if (id_at(ids, i) == j) memcpy(dx + (size_t)i * row, (const char *)oar_tensor_data(g) + (size_t)i * row, row);
            else memset(dx + (size_t)i * row, 0, row);
        }
    }
    return OAR_OK;
}
REG1("multiplex_grad", multiplex_bwd, OAR_FP32, f32)
REG1("multiplex_grad", multiplex_bwd, OAR_FP64, f64)
