/* interp_sizes.h — what the interp ops (src/ops/interp.c: bilinear_interp,
 * nearest_interp and their v2; src/ops/vision_interp.c: trilinear_interp,
 * bicubic_interp) share: the output's spatial sizes read from SizeTensor or
 * OutSize, and the grad maker. */
#ifndef OAR_OPS_INTERP_SIZES_H
#define OAR_OPS_INTERP_SIZES_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"
#include "ops/tensor_value.h"

/* out[0..nd) from the nd one-value tensors of SizeTensor (-1 each before
 * run time); `names` follows "expected %d" in the error (" (out_h, out_w)"
 * or "") */
static inline int oar_interp_size_tensor(oar_infer_ctx_t *c, int nd, bool rt, const char *names, int64_t *out) {
    const int n = oar_ic_in_count(c, "SizeTensor");
    if (n != nd) return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor has %d tensors, expected %d%s", n, nd, names);
    for (int i = 0; i < nd; i++) {
        double v;
        if (!rt) { out[i] = -1; continue; }
        if (!oar_tensor_value_f64(oar_ic_in_tensor(c, "SizeTensor", i), 0, &v))
            return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor %d ('%s') must hold one integer", i,
                                oar_ic_in_name(c, "SizeTensor", i));
        out[i] = (int64_t)v;
    }
    return OAR_OK;
}

/* out[0..nd) from the nd values of OutSize (-1 each before run time) */
static inline int oar_interp_out_size(oar_infer_ctx_t *c, int nd, bool rt, const char *names, int64_t *out) {
    for (int i = 0; i < nd; i++) {
        double v;
        if (!rt) { out[i] = -1; continue; }
        if (!oar_tensor_value_f64(oar_ic_in_tensor(c, "OutSize", 0), i, &v))
            return oar_ic_error(c, OAR_ERR_INVALID, "OutSize ('%s') must hold %d integers%s",
                                oar_ic_in_name(c, "OutSize", 0), nd, names);
        out[i] = (int64_t)v;
    }
    return OAR_OK;
}

/* the grad op reads X, the size inputs the forward had, and Out@GRAD */
static inline int oar_interp_grad_maker(oar_grad_ctx_t *g) {
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
#endif
