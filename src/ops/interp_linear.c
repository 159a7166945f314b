/* interp_linear.c — linear_interp (Fluid 1.8): the inference (the output
 * width) and the grad maker; the ops are declared in interp_linear.ops.
 * Kernels in kernels/cpu/interp_linear.c. */
#include "op.h"
#include "ops/interp_linear.h"   /* generated from interp_linear.ops */
#include "ops/interp_sizes.h"     /* the grad maker and oar_tensor_value_f64, shared */

static int lin_infer(oar_infer_ctx_t *c) {
    const oar_lin_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    const bool cl = a->layout == OAR_LIN_LAYOUT_NHWC;
    if (xn != 3) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 3-D %s, got shape %s",
                            oar_ic_in_name(c, "X", 0), cl ? "[N, W, C] (NWC)" : "[N, C, W] (NCW)",
                            oar_shape_str(x, xn, b, sizeof b));
    }
    const int wax = cl ? 1 : 2;
    const int64_t in_w = x[wax];
    int64_t ow = a->out_w;
    const bool rt = oar_ic_runtime(c);
    if (oar_ic_in_present(c, "SizeTensor")) {
        const int n = oar_ic_in_count(c, "SizeTensor");
        if (n != 1)
            return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor has %d tensors, expected 1", n);
        double v;
        if (!rt) ow = -1;
        else if (!oar_tensor_value_f64(oar_ic_in_tensor(c, "SizeTensor", 0), 0, &v))
            return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor ('%s') must hold one integer",
                                oar_ic_in_name(c, "SizeTensor", 0));
        else ow = (int64_t)v;
    } else {
        double s = a->scale;
        if (oar_ic_in_present(c, "Scale")) {
            const oar_tensor_t *t = oar_ic_in_tensor(c, "Scale", 0);
            if (!t) s = -2;   /* compile time: unknown */
            else if (!oar_tensor_value_f64(t, 0, &s))
                return oar_ic_error(c, OAR_ERR_INVALID, "Scale ('%s') must hold a number",
                                    oar_ic_in_name(c, "Scale", 0));
        }
        if (s == -2) ow = -1;
        /* Paddle: int(in * scale) in float arithmetic */
        else if (s > 0) ow = in_w < 0 ? -1 : (int64_t)((float)in_w * (float)s);
        if (oar_ic_in_present(c, "OutSize")) {
            double v;
            if (!rt) ow = -1;
            else if (!oar_tensor_value_f64(oar_ic_in_tensor(c, "OutSize", 0), 0, &v))
                return oar_ic_error(c, OAR_ERR_INVALID, "OutSize ('%s') must hold 1 integer",
                                    oar_ic_in_name(c, "OutSize", 0));
            else ow = (int64_t)v;
        }
    }
    if (ow == 0 || ow < -1 || (rt && ow <= 0))
        return oar_ic_error(c, OAR_ERR_SHAPE, "the output width %lld must be positive: set "
                            "out_w, scale, OutSize or SizeTensor", (long long)ow);
    int64_t od[3] = {x[0], x[1], x[2]};
    od[wax] = ow;
    return oar_ic_set_out(c, "Out", 0, od, 3, oar_ic_in_dtype(c, "X", 0));
}

/* the grad op reads X, the size inputs the forward had, and Out@GRAD */
static int lin_grad(oar_grad_ctx_t *g) { return oar_interp_grad_maker(g); }

#define OAR_OPS_DEFINE
#include "ops/interp_linear.h"   /* the tables, decoders and registrations */
