/*
 * interp.c — bilinear_interp / nearest_interp (Fluid 1.8) and their _v2
 * forms (Paddle 2.x, what paddle.nn.functional.interpolate saves), NCHW,
 * with their grads. Kernels in kernels/cpu/interp.c.
 *
 * Output size, as Paddle: SizeTensor (one-value tensors) when given; else
 * in * scale (Scale tensor, else attr scale) when the scale is positive,
 * else attrs out_h/out_w; OutSize, when given, overrides the scale.
 * The ops are declared in interp.ops (slots, attributes, docs).
 */
#include "op.h"
#include "ops/interp.h"   /* generated from interp.ops */
#include "ops/interp_sizes.h"

/* Paddle's scale_h/scale_w at run time (-1: none) */
static int ip_scales(oar_infer_ctx_t *c, const oar_interp_attrs_t *a, double *sh, double *sw)
{
    *sh = *sw = -1;
    if (oar_ic_in_present(c, "SizeTensor")) return OAR_OK;
    if (oar_ic_in_present(c, "Scale")) {
        const oar_tensor_t *t = oar_ic_in_tensor(c, "Scale", 0);
        if (!t) return OAR_OK;   /* compile time */
        if (!oar_tensor_value_f64(t, 0, sh))
            return oar_ic_error(c, OAR_ERR_INVALID, "input Scale ('%s') must hold a number",
                                oar_ic_in_name(c, "Scale", 0));
        if (!oar_tensor_value_f64(t, 1, sw)) *sw = *sh;
    } else if (a->v2 && a->scale.n > 0) {
        *sh = a->scale.v[0];
        *sw = a->scale.n > 1 ? a->scale.v[1] : a->scale.v[0];
    } else if (!a->v2) {
        *sh = *sw = a->scale1;
    }
    return OAR_OK;
}

static int ip_infer(oar_infer_ctx_t *c)
{
    const oar_interp_attrs_t *a = oar_ic_attrs(c);
    if (a->layout != OAR_IP_LAYOUT_NCHW)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "data_layout \"NHWC\" is not supported by oar (NCHW only)");
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    if (nd != 4) return oar_ic_error(c, OAR_ERR_SHAPE, "X must be 4-D [N, C, H, W], it has %d dims", nd);
    int64_t od[4] = {xd[0], xd[1], a->out_h, a->out_w};
    bool rt = oar_ic_runtime(c);
    if (oar_ic_in_present(c, "SizeTensor")) {
        OAR_TRY(oar_interp_size_tensor(c, 2, rt, " (out_h, out_w)", od + 2));
    } else {
        double sh, sw;
        OAR_TRY(ip_scales(c, a, &sh, &sw));
        if (oar_ic_in_present(c, "Scale") && !rt) {
            od[2] = od[3] = -1;
        } else if (sh > 0 && sw > 0) {
            /* Paddle: int(in * scale) in float arithmetic */
            od[2] = xd[2] < 0 ? -1 : (int64_t)((float)xd[2] * (float)sh);
            od[3] = xd[3] < 0 ? -1 : (int64_t)((float)xd[3] * (float)sw);
        }
        if (oar_ic_in_present(c, "OutSize")) OAR_TRY(oar_interp_out_size(c, 2, rt, " (out_h, out_w)", od + 2));
    }
    for (int i = 2; i < 4; i++)
        if (od[i] == 0 || od[i] < -1 || (rt && od[i] <= 0))
            return oar_ic_error(c, OAR_ERR_SHAPE, "the output size (%lld, %lld) must be positive: set out_h/out_w, "
                                "scale, OutSize or SizeTensor", (long long)od[2], (long long)od[3]);
    return oar_ic_set_out(c, "Out", 0, od, 4, oar_ic_in_dtype(c, "X", 0));
}

static int ip_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int ip_grad(oar_grad_ctx_t *g) { return oar_interp_grad_maker(g); }

#define OAR_OPS_DEFINE
#include "ops/interp.h"   /* the tables, decoders and registrations */
