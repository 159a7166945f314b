/*
 * tensor_window.c — inference of temporal_shift, unfold, partial_concat and
 * partial_sum (tensor_window.ops); kernels in kernels/cpu/tensor_window.c.
 */
#include "op.h"
#include "ops/tensor_window.h"   /* generated from tensor_window.ops */
#include "ops/infer_util.h"

static int rank_error(oar_infer_ctx_t *c, const char *slot, int i, const int64_t *d, int n, const char *what)
{
    char b[160];
    return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; %s", slot, nm(oar_ic_in_name(c, slot, i)),
                        oar_shape_str(d, n, b, sizeof b), what);
}

static int tshift_infer(oar_infer_ctx_t *c)
{
    const oar_tshift_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    if (n != 4) return rank_error(c, "X", 0, x, n, "temporal_shift needs 4-D [N*T, C, H, W]");
    if (a->seg_num < 1) return oar_ic_error(c, OAR_ERR_RANGE, "attr seg_num = %d must be >= 1", (int)a->seg_num);
    if (!(a->shift_ratio >= 0 && a->shift_ratio <= 0.5f))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr shift_ratio = %g must be in [0, 0.5]", a->shift_ratio);
    if (x[0] >= 0 && x[0] % a->seg_num != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has %lld rows, not a multiple of seg_num = %d",
                            nm(oar_ic_in_name(c, "X", 0)), (long long)x[0], (int)a->seg_num);
    return oar_infer_same_as(c, "X", "Out");
}

/* X@GRAD: Out@GRAD's dims (X's) */
static int tshift_grad_infer(oar_infer_ctx_t *c)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int n;
    const int64_t *g = oar_ic_in_dims(c, "Out@GRAD", 0, &n);
    if (!g) return OAR_ERR_SHAPE;
    return oar_ic_set_out(c, "X@GRAD", 0, g, n, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

static int unfold_infer(oar_infer_ctx_t *c)
{
    const oar_unfold_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    if (n != 4) return rank_error(c, "X", 0, x, n, "unfold needs 4-D [N, C, H, W]");
    if (a->kernel_sizes.n != 2 || a->strides.n != 2 || a->dilations.n != 2 || a->paddings.n != 4)
        return oar_ic_error(c, OAR_ERR_INVALID, "unfold needs kernel_sizes, strides and dilations of 2 values and "
                            "paddings of 4 (got %d, %d, %d, %d)", a->kernel_sizes.n, a->strides.n, a->dilations.n,
                            a->paddings.n);
    for (int i = 0; i < 2; i++)
        if (a->kernel_sizes.v[i] < 1 || a->strides.v[i] < 1 || a->dilations.v[i] < 1)
            return oar_ic_error(c, OAR_ERR_RANGE, "unfold's kernel_sizes, strides and dilations must be >= 1");
    for (int i = 0; i < 4; i++)
        if (a->paddings.v[i] < 0) return oar_ic_error(c, OAR_ERR_RANGE, "attr paddings[%d] = %d must be >= 0", i,
                                                      (int)a->paddings.v[i]);
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        const int64_t size = x[2 + i], ext = (int64_t)a->dilations.v[i] * (a->kernel_sizes.v[i] - 1) + 1;
        const int64_t padded = size + a->paddings.v[i] + a->paddings.v[i + 2];
        if (size >= 0 && padded < ext)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s': dim %d (%lld, padded %lld) is smaller than the "
                                "dilated kernel (%lld)", nm(oar_ic_in_name(c, "X", 0)), 2 + i, (long long)size,
                                (long long)padded, (long long)ext);
        o[i] = size < 0 ? -1 : (padded - ext) / a->strides.v[i] + 1;
    }
    const int64_t k = (int64_t)a->kernel_sizes.v[0] * a->kernel_sizes.v[1];
    int64_t y[3] = { x[0], x[1] < 0 ? -1 : x[1] * k, o[0] < 0 || o[1] < 0 ? -1 : o[0] * o[1] };
    return oar_ic_set_out(c, "Y", 0, y, 3, oar_ic_in_dtype(c, "X", 0));
}

static int partial_infer(oar_infer_ctx_t *c)
{
    const oar_partial_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int m = oar_ic_in_count(c, "X");
    if (m < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X needs at least one tensor");
    int n0;
    const int64_t *p0 = oar_ic_in_dims(c, "X", 0, &n0);
    if (!p0) return OAR_ERR_SHAPE;
    int64_t x0[OAR_MAX_DIMS];
    memcpy(x0, p0, sizeof(int64_t) * (size_t)n0);
    const int dt = oar_ic_in_dtype(c, "X", 0);
    for (int i = 0; i < m; i++) {
        int n;
        const int64_t *x = oar_ic_in_dims(c, "X", i, &n);
        if (!x) return OAR_ERR_SHAPE;
        if (n != 2) return rank_error(c, "X", i, x, n, "it must be 2-D [N, D]");
        if (n0 != 2 || !oar_dim_eq(x[0], x0[0]) || !oar_dim_eq(x[1], x0[1]))
            return rank_error(c, "X", i, x, n, "every X must have X[0]'s shape");
        const int di = oar_ic_in_dtype(c, "X", i);
        if (di >= 0 && dt >= 0 && di != dt) return rank_error(c, "X", i, x, n, "every X must have X[0]'s dtype");
    }
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int64_t D = x0[1];
    int64_t len = -1;
    if (D >= 0) {
        const int64_t s = a->start_index < 0 ? a->start_index + D : a->start_index;
        if (s < 0 || s >= D)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr start_index = %d is out of range for X's %lld columns",
                                (int)a->start_index, (long long)D);
        len = a->length < 0 ? D - s : a->length;
        if (s + len > D)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr start_index = %d + length = %d passes X's %lld columns",
                                (int)a->start_index, (int)a->length, (long long)D);
    }
    const bool concat = strcmp(oar_op_desc_type(oar_ic_op(c)), "partial_concat") == 0;
    int64_t o[2] = { x0[0], len < 0 ? -1 : (concat ? len * m : len) };
    return oar_ic_set_out(c, "Out", 0, o, 2, dt);
}

#define OAR_OPS_DEFINE
#include "ops/tensor_window.h"
