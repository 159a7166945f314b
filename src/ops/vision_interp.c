/* vision_interp.c — trilinear_interp and bicubic_interp (Fluid 1.8): the
 * inference (the output size) and the grad maker; the ops are declared in
 * vision_interp.ops. Kernels in kernels/cpu/vision_interp.c. */
#include "op.h"
#include "ops/vision_interp.h"   /* generated from vision_interp.ops */
#include "ops/interp_sizes.h"

static int vip_infer(oar_infer_ctx_t *c) {
    const oar_vip_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int nd = a->nd;
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    if (xn != nd + 2) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be %d-D %s, got shape %s", oar_ic_in_name(c, "X", 0),
                            nd + 2, nd == 3 ? "[N, C, D, H, W]" : "[N, C, H, W]", oar_shape_str(x, xn, b, sizeof b));
    }
    /* od: [N, C, sizes...] in channels-first order; written out in X's layout at the end */
    const bool cl = a->layout == OAR_TRI_LAYOUT_NHWC || a->layout == OAR_TRI_LAYOUT_NDHWC;
    int64_t xl[5];
    for (int i = 0; i < nd + 2; i++) xl[i] = x[i];
    if (cl) {
        xl[1] = x[nd + 1];
        for (int i = 0; i < nd; i++) xl[2 + i] = x[1 + i];
    }
    x = xl;
    const int32_t attr_sz[3] = {a->out_d, a->out_h, a->out_w};
    int64_t od[5] = {x[0], x[1], 0, 0, 0};
    for (int i = 0; i < nd; i++) od[2 + i] = attr_sz[3 - nd + i];
    const bool rt = oar_ic_runtime(c);
    if (oar_ic_in_present(c, "SizeTensor")) {
        OAR_TRY(oar_interp_size_tensor(c, nd, rt, "", od + 2));
    } else {
        double s = a->scale;
        if (oar_ic_in_present(c, "Scale")) {
            const oar_tensor_t *t = oar_ic_in_tensor(c, "Scale", 0);
            if (!t) s = -2;   /* compile time: unknown */
            else if (!oar_tensor_value_f64(t, 0, &s))
                return oar_ic_error(c, OAR_ERR_INVALID, "Scale ('%s') must hold a number",
                                    oar_ic_in_name(c, "Scale", 0));
        }
        for (int i = 0; i < nd; i++) {
            if (s == -2) od[2 + i] = -1;
            /* Paddle: int(in * scale) in float arithmetic */
            else if (s > 0) od[2 + i] = x[2 + i] < 0 ? -1 : (int64_t)((float)x[2 + i] * (float)s);
        }
        if (oar_ic_in_present(c, "OutSize")) OAR_TRY(oar_interp_out_size(c, nd, rt, "", od + 2));
    }
    for (int i = 2; i < nd + 2; i++)
        if (od[i] == 0 || od[i] < -1 || (rt && od[i] <= 0)) {
            char b[128];
            return oar_ic_error(c, OAR_ERR_SHAPE, "the output size %s must be positive: set %s, scale, OutSize or "
                                "SizeTensor", oar_shape_str(od + 2, nd, b, sizeof b),
                                nd == 3 ? "out_d/out_h/out_w" : "out_h/out_w");
        }
    if (cl) {
        const int64_t ch = od[1];
        for (int i = 0; i < nd; i++) od[1 + i] = od[2 + i];
        od[nd + 1] = ch;
    }
    return oar_ic_set_out(c, "Out", 0, od, nd + 2, oar_ic_in_dtype(c, "X", 0));
}

static int vip_grad(oar_grad_ctx_t *g) { return oar_interp_grad_maker(g); }

#define OAR_OPS_DEFINE
#include "ops/vision_interp.h"   /* the tables, decoders and registrations */
