/*
 * shape_ext.c — CPU kernels of slice and of the repeating ops expand,
 * expand_v2 and tile (src/ops/shape_ext.c), with their grads.
 *
 * Forward kernels only move elements, so one function serves every dtype;
 * the repeating grads add (float32/float64). Both walk Out row by row (all
 * dims but the last), mapping each row to its source row once.
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/attr_tensor.h"
#include "ops/shape_ext.h"
#include "ops/shape_ext_util.h"   /* oar_slice_bounds */

static const char *nm(const char *s) { return s ? s : "?"; }

/* input `slot` (`name` in messages) holding a value */
static int input(oar_kernel_ctx_t *k, int slot, const char *name, oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, 0);
    if (!*t || (*t)->dtype < 0 || (oar_tensor_numel_of(*t) > 0 && !oar_tensor_has_data(*t)))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                           nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

/* source offset (in elements) of out row `row`: each out index maps to
 * (index mod src dim) for repeats (mod_map) or index + start for slices */
typedef struct {
    int nd;
    int64_t od[OAR_MAX_DIMS], sd[OAR_MAX_DIMS], start[OAR_MAX_DIMS], sstride[OAR_MAX_DIMS];
    bool mod_map;
} rowmap_t;

static void rowmap_init(rowmap_t *m)
{
    int64_t s = 1;
    for (int i = m->nd - 1; i >= 0; i--) { m->sstride[i] = s; s *= m->sd[i]; }
}

static int64_t rowmap_src(const rowmap_t *m, int64_t row)
{
    int64_t off = 0;
    for (int i = m->nd - 2; i >= 0; i--) {
        int64_t idx = row % m->od[i];
        row /= m->od[i];
        off += (m->mod_map ? idx % m->sd[i] : idx + m->start[i]) * m->sstride[i];
    }
    return off;
}

static int64_t prod(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

/* ---- expand / expand_v2 / tile ------------------------------------------ */
static int repeat_map(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *o, rowmap_t *m)
{
    int r = o->ndim;
    if (r < x->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Out has fewer dims than X");
    m->nd = r > 0 ? r : 1;
    m->mod_map = true;
    for (int i = 0; i < m->nd; i++) {
        int xi = i - (r - x->ndim);
        m->od[i] = r > 0 ? o->dims[i] : 1;
        m->sd[i] = (r > 0 && xi >= 0) ? x->dims[xi] : 1;
        if (m->sd[i] == 0 ? m->od[i] != 0 : m->od[i] % m->sd[i] != 0) {
            char bx[128], bo[128];
            return oar_k_error(k, OAR_ERR_SHAPE, "Out %s is not a repeat of X %s",
                               oar_shape_str(o->dims, o->ndim, bo, sizeof bo), oar_shape_str(x->dims, x->ndim, bx, sizeof bx));
        }
        m->start[i] = 0;
    }
    rowmap_init(m);
    return OAR_OK;
}

static int repeat_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_REPEAT_X, "X", &x));
    const char *xd = oar_tensor_data(x);
    char *od = oar_k_output_data(k, OAR_REPEAT_OUT, 0, x->dtype);
    if (!od) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const oar_tensor_t *o = oar_k_output(k, OAR_REPEAT_OUT, 0);
    rowmap_t m;
    OAR_TRY(repeat_map(k, x, o, &m));
    size_t esz = oar_dtype_size(x->dtype);
    int64_t w = m.od[m.nd - 1], sw = m.sd[m.nd - 1], rows = w > 0 ? oar_tensor_numel_of(o) / w : 0;
    for (int64_t r = 0; r < rows; r++) {
        const char *src = xd + (size_t)rowmap_src(&m, r) * esz;
        char *dst = od + (size_t)(r * w) * esz;
        for (int64_t j = 0; j < w; j += sw) memcpy(dst + (size_t)j * esz, src, (size_t)sw * esz);
    }
    return OAR_OK;
}

#define REPEAT_BWD(SUF, T, DT)                                                              \
    static int repeat_bwd_##SUF(oar_kernel_ctx_t *k)                                        \
    {                                                                                       \
        oar_tensor_t *x, *g;                                                                \
        OAR_TRY(input(k, OAR_REPEAT_X, "X", &x));                                           \
        OAR_TRY(input(k, OAR_REPEATG_DOUT, "Out@GRAD", &g));                                \
        if (!oar_k_output(k, OAR_REPEATG_DX, 0)) return OAR_OK;                             \
        rowmap_t m;                                                                         \
        OAR_TRY(repeat_map(k, x, g, &m));                                                   \
        const T *gd = oar_tensor_data(g);                                                   \
        T *dx = oar_k_output_data(k, OAR_REPEATG_DX, 0, DT);                                \
        if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");            \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                          \
        int64_t w = m.od[m.nd - 1], sw = m.sd[m.nd - 1];                                    \
        int64_t rows = w > 0 ? oar_tensor_numel_of(g) / w : 0;                              \
        for (int64_t r = 0; r < rows; r++) {                                                \
            T *dst = dx + rowmap_src(&m, r);                                                \
            const T *src = gd + r * w;                                                      \
            for (int64_t j = 0; j < w; j++) dst[j % sw] += src[j];                          \
        }                                                                                   \
        return OAR_OK;                                                                      \
    }
REPEAT_BWD(f32, float, OAR_FP32)
REPEAT_BWD(f64, double, OAR_FP64)

/* ---- slice -------------------------------------------------------------- */
/* attr `a` (`name` in messages) as int64 into v */
static int attr_ints(oar_kernel_ctx_t *k, oar_ints_t a, const char *name, int64_t *v, int *n)
{
    if (a.n > OAR_MAX_DIMS)
        return oar_k_error(k, OAR_ERR_INVALID, "attr %s has %d values, at most %d", name, a.n, OAR_MAX_DIMS);
    for (int i = 0; i < a.n; i++) v[i] = a.v[i];
    *n = a.n;
    return OAR_OK;
}

/* starts or ends: the tensor input `tslot`, else the list `lslot`, else the attr */
static int bounds(oar_kernel_ctx_t *k, int tslot, const char *tname, int lslot, const char *lname,
                  oar_ints_t attr, const char *aname, int64_t *v, int *n)
{
    bool given;
    OAR_TRY(oar_k_int_list_at(k, tslot, tname, lslot, lname, v, OAR_MAX_DIMS, n, &given));
    return given ? OAR_OK : attr_ints(k, attr, aname, v, n);
}

/* the slice of Input as a row map: od = sliced dims (before decrease_axis) */
static int slice_map(oar_kernel_ctx_t *k, const oar_tensor_t *in, rowmap_t *m)
{
    const oar_slice_attrs_t *a = oar_k_attrs(k);
    int64_t ax[OAR_MAX_DIMS], st[OAR_MAX_DIMS], en[OAR_MAX_DIMS];
    int na = 0, ns = 0, ne = 0;
    OAR_TRY(attr_ints(k, a->axes, "axes", ax, &na));
    OAR_TRY(bounds(k, OAR_SLICE_STARTS_T, "StartsTensor", OAR_SLICE_STARTS_L, "StartsTensorList", a->starts,
                   "starts", st, &ns));
    OAR_TRY(bounds(k, OAR_SLICE_ENDS_T, "EndsTensor", OAR_SLICE_ENDS_L, "EndsTensorList", a->ends, "ends", en, &ne));
    if (ns != na || ne != na)
        return oar_k_error(k, OAR_ERR_SHAPE, "axes has %d values but starts %d and ends %d", na, ns, ne);
    int nd = in->ndim;
    m->nd = nd > 0 ? nd : 1;
    m->mod_map = false;
    for (int i = 0; i < m->nd; i++) {
        m->sd[i] = nd > 0 ? in->dims[i] : 1;
        m->od[i] = m->sd[i];
        m->start[i] = 0;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + nd : ax[i];
        if (a < 0 || a >= nd) return oar_k_error(k, OAR_ERR_RANGE, "axes[%d] = %lld out of range", i, (long long)ax[i]);
        oar_slice_bounds(m->sd[a], st[i], en[i], &m->start[a], &m->od[a]);
    }
    rowmap_init(m);
    return OAR_OK;
}

static int slice_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *in;
    OAR_TRY(input(k, OAR_SLICE_INPUT, "Input", &in));
    rowmap_t m;
    OAR_TRY(slice_map(k, in, &m));
    const char *src = oar_tensor_data(in);
    char *od = oar_k_output_data(k, OAR_SLICE_OUT, 0, in->dtype);
    if (!od) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (oar_tensor_numel_of(oar_k_output(k, OAR_SLICE_OUT, 0)) != prod(m.od, m.nd))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out's size does not match the slice");
    size_t esz = oar_dtype_size(in->dtype);
    int64_t w = m.od[m.nd - 1], rows = w > 0 ? prod(m.od, m.nd) / w : 0, s0 = m.start[m.nd - 1];
    for (int64_t r = 0; r < rows; r++)
        memcpy(od + (size_t)(r * w) * esz, src + (size_t)(rowmap_src(&m, r) + s0) * esz, (size_t)w * esz);
    return OAR_OK;
}

static int slice_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *in, *g;
    OAR_TRY(input(k, OAR_SLICE_INPUT, "Input", &in));
    OAR_TRY(input(k, OAR_SLICEG_DOUT, "Out@GRAD", &g));
    if (!oar_k_output(k, OAR_SLICEG_DINPUT, 0)) return OAR_OK;
    rowmap_t m;
    OAR_TRY(slice_map(k, in, &m));
    if (oar_tensor_numel_of(g) != prod(m.od, m.nd))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD's size does not match the slice");
    char *dx = oar_k_output_data(k, OAR_SLICEG_DINPUT, 0, g->dtype);
    if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Input@GRAD");
    size_t esz = oar_dtype_size(g->dtype);
    memset(dx, 0, (size_t)oar_tensor_numel_of(in) * esz);
    const char *gd = oar_tensor_data(g);
    int64_t w = m.od[m.nd - 1], rows = w > 0 ? prod(m.od, m.nd) / w : 0, s0 = m.start[m.nd - 1];
    for (int64_t r = 0; r < rows; r++)
        memcpy(dx + (size_t)(rowmap_src(&m, r) + s0) * esz, gd + (size_t)(r * w) * esz, (size_t)w * esz);
    return OAR_OK;
}

/* ---- registration ------------------------------------------------------- */
#define REG1(op, fn, sfx, dt)                                                \
    static int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }            \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, dt, fn##_##sfx)
#define REG_ALL(op, fn)                                                      \
    REG1(op, fn, f32, OAR_FP32) REG1(op, fn, f64, OAR_FP64)                  \
    REG1(op, fn, i64, OAR_INT64) REG1(op, fn, i32, OAR_INT32)                \
    REG1(op, fn, b, OAR_BOOL) REG1(op, fn, u8, OAR_UINT8)

static int expand_f(oar_kernel_ctx_t *k) { return repeat_fwd(k); }
static int expand_v2_f(oar_kernel_ctx_t *k) { return repeat_fwd(k); }
static int tile_f(oar_kernel_ctx_t *k) { return repeat_fwd(k); }
REG_ALL("expand", expand_f)
REG_ALL("expand_v2", expand_v2_f)
REG_ALL("tile", tile_f)
REG_ALL("slice", slice_fwd)
REG_ALL("slice_grad", slice_bwd)

#define REG_GRAD(op, pre)                                                                        \
    static int pre##_g32(oar_kernel_ctx_t *k) { return repeat_bwd_f32(k); }                     \
    static int pre##_g64(oar_kernel_ctx_t *k) { return repeat_bwd_f64(k); }                     \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, OAR_FP32, pre##_g32)                                  \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, OAR_FP64, pre##_g64)
REG_GRAD("expand_grad", expand)
REG_GRAD("expand_v2_grad", expand_v2)
REG_GRAD("tile_grad", tile)
