/* vision_interp.c — trilinear_interp and bicubic_interp (Fluid 1.8): the
 * inference (the output size) and the grad maker; the ops are declared in
 * vision_interp.ops. Kernels in kernels/cpu/vision_interp.c. */
#include "op.h"
#include "ops/vision_interp.h"   /* generated from vision_interp.ops */
#include "ops/tensor_value.h"

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
        const int n = oar_ic_in_count(c, "SizeTensor");
        if (n != nd)
            return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor has %d tensors, expected %d", n, nd);
        for (int i = 0; i < nd; i++) {
            double v;
            if (!rt) { od[2 + i] = -1; continue; }
            if (!oar_tensor_value_f64(oar_ic_in_tensor(c, "SizeTensor", i), 0, &v))
                return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor %d ('%s') must hold one integer", i,
                                    oar_ic_in_name(c, "SizeTensor", i));
            od[2 + i] = (int64_t)v;
        }
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
        if (oar_ic_in_present(c, "OutSize")) {
            for (int i = 0; i < nd; i++) {
                double v;
                if (!rt) { od[2 + i] = -1; continue; }
                if (!oar_tensor_value_f64(oar_ic_in_tensor(c, "OutSize", 0), i, &v))
                    return oar_ic_error(c, OAR_ERR_INVALID, "OutSize ('%s') must hold %d integers",
                                        oar_ic_in_name(c, "OutSize", 0), nd);
                od[2 + i] = (int64_t)v;
            }
        }
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

static int vip_grad(oar_grad_ctx_t *g) {
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    const oar_op_desc_t *f = oar_gc_fwd(g);
    static const char *const opt[3] = {"OutSize", "SizeTensor", "Scale"};
    for (int i = 0; i < 3; i++)
        if (oar_op_desc_input_count(f, opt[i]) > 0) OAR_TRY(oar_gc_in(g, op, opt[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

#define OAR_OPS_DEFINE
#include "ops/vision_interp.h"   /* the tables, decoders and registrations */
