/* vision_sample.c — affine_grid and grid_sampler (Fluid 1.8): the
 * inference; the ops (slots, attributes, docs) are declared in
 * vision_sample.ops, the grads are oar_grad_default. Kernels in
 * kernels/cpu/vision_sample.c. */
#include "op.h"
#include "ops/vision_sample.h"   /* generated from vision_sample.ops */

/* affine_grid's H and W: OutputShape's (run time; -1 at compile time) or
 * attr output_shape's values 2 and 3 */
static int ag_hw(oar_infer_ctx_t *c, int64_t hw[2]) {
    if (oar_ic_in_present(c, "OutputShape")) {
        hw[0] = hw[1] = -1;
        const oar_tensor_t *t = oar_ic_in_tensor(c, "OutputShape", 0);
        if (!t) return OAR_OK;
        if (t->dtype != OAR_INT32 || oar_tensor_numel_of(t) != 4)
            return oar_ic_error(c, OAR_ERR_INVALID, "OutputShape ('%s') must be int32 [4] {N, C, H, W}, it is %s "
                                "with %lld values", oar_ic_in_name(c, "OutputShape", 0), oar_dtype_name(t->dtype),
                                (long long)oar_tensor_numel_of(t));
        const int32_t *v = oar_tensor_data((oar_tensor_t *)t);
        hw[0] = v[2]; hw[1] = v[3];
    } else {
        const oar_ag_attrs_t *a = oar_ic_attrs(c);
        if (!a) return OAR_ERR_INVALID;
        if (a->output_shape.n != 4)
            return oar_ic_error(c, OAR_ERR_INVALID, "attr output_shape must hold 4 values {N, C, H, W} (or give "
                                "OutputShape), it holds %d", a->output_shape.n);
        hw[0] = a->output_shape.v[2]; hw[1] = a->output_shape.v[3];
    }
    if ((hw[0] != -1 && hw[0] < 1) || (hw[1] != -1 && hw[1] < 1) || (oar_ic_runtime(c) && (hw[0] < 1 || hw[1] < 1)))
        return oar_ic_error(c, OAR_ERR_SHAPE, "the output height and width must be positive, got %lld x %lld",
                            (long long)hw[0], (long long)hw[1]);
    return OAR_OK;
}

static int ag_infer(oar_infer_ctx_t *c) {
    OAR_TRY(oar_ic_check_float(c, "Theta", -1));
    int tn;
    const int64_t *t = oar_ic_in_dims(c, "Theta", 0, &tn);
    if (!t) return OAR_ERR_SHAPE;
    if (tn != 3 || !oar_dim_eq(t[1], 2) || !oar_dim_eq(t[2], 3)) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Theta ('%s') must be [N, 2, 3], got shape %s",
                            oar_ic_in_name(c, "Theta", 0), oar_shape_str(t, tn, b, sizeof b));
    }
    int64_t hw[2] = {-1, -1};
    OAR_TRY(ag_hw(c, hw));
    const int64_t od[4] = {t[0], hw[0], hw[1], 2};
    return oar_ic_set_out(c, "Output", 0, od, 4, oar_ic_in_dtype(c, "Theta", 0));
}

static int ag_grad_infer(oar_infer_ctx_t *c) {
    int n;
    const int64_t *d = oar_ic_in_dims(c, "Output@GRAD", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n != 4 || !oar_dim_eq(d[3], 2))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Output@GRAD ('%s') must be [N, H, W, 2]",
                            oar_ic_in_name(c, "Output@GRAD", 0));
    if (!oar_ic_out_present(c, "Theta@GRAD")) return OAR_OK;
    const int64_t td[3] = {d[0], 2, 3};
    return oar_ic_set_out(c, "Theta@GRAD", 0, td, 3, oar_ic_in_dtype(c, "Output@GRAD", 0));
}

static int gs_infer(oar_infer_ctx_t *c) {
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Grid", oar_ic_in_dtype(c, "X", 0)));
    int xn, gn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    const int64_t *g = oar_ic_in_dims(c, "Grid", 0, &gn);
    if (!g) return OAR_ERR_SHAPE;
    char xs[128], gs[128];
    oar_shape_str(x, xn, xs, sizeof xs);
    oar_shape_str(g, gn, gs, sizeof gs);
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 4-D [N, C, H, W], got shape %s",
                            oar_ic_in_name(c, "X", 0), xs);
    if (gn != 4 || !oar_dim_eq(g[3], 2) || !oar_dim_eq(g[0], x[0]))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Grid ('%s') must be [N, OH, OW, 2] with X's N, got shape %s "
                            "(X is %s)", oar_ic_in_name(c, "Grid", 0), gs, xs);
    const int64_t od[4] = {x[0], x[1], g[1], g[2]};
    return oar_ic_set_out(c, "Output", 0, od, 4, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/vision_sample.h"   /* the tables, decoders and registrations */
