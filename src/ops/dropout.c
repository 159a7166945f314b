/* dropout.c — inference of dropout and dropout_grad (Fluid 1.x semantics).
 *
 * Training keeps each element with probability 1 - dropout_prob and records
 * the choice in Mask (uint8, as Fluid 1.8). "downgrade_in_infer": train
 * Out = X * Mask, test Out = X * (1 - p); "upscale_in_train": train
 * Out = X * Mask / (1 - p), test Out = X. With fix_seed the op draws from its
 * own generator seeded with `seed` on every run, so masks repeat.
 * This file holds the inference and grad maker; the ops (slots, attributes,
 * docs) are declared in dropout.ops. Kernels in kernels/cpu/dropout.c. */
#include "op.h"
#include "ops/dropout.h"   /* generated from dropout.ops */

#include <string.h>

/* dropout_implementation's choices are checked wherever a program comes
 * from (dropout.ops): the decoded struct holds a valid one */
static int do_infer(oar_infer_ctx_t *c) {
    const oar_dropout_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int dt = oar_ic_in_dtype(c, "X", 0);
    if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X '%s' is %s; dropout takes float32 or float64",
                            oar_ic_in_name(c, "X", 0), oar_dtype_name(dt));
    OAR_TRY(oar_infer_same_as(c, "X", "Out"));
    if (!a->is_test && oar_ic_out_present(c, "Mask")) {
        int n;
        const int64_t *d = oar_ic_in_dims(c, "X", 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)n);
        OAR_TRY(oar_ic_set_out(c, "Mask", 0, dims, n, OAR_UINT8));
    }
    return OAR_OK;
}

static int do_grad_infer(oar_infer_ctx_t *c) {
    const oar_dropout_attrs_t *at = oar_ic_attrs(c);
    if (!at) return OAR_ERR_INVALID;
    if (at->is_test)
        return oar_ic_error(c, OAR_ERR_INVALID, "the grad op needs is_test = false (no Mask is kept in test mode)");
    int mn, gn;
    const int64_t *m = oar_ic_in_dims(c, "Mask", 0, &mn);
    if (!m) return OAR_ERR_SHAPE;
    const int64_t *g = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
    if (!g) return OAR_ERR_SHAPE;
    bool same = mn == gn;
    for (int i = 0; same && i < mn; i++) same = oar_dim_eq(m[i], g[i]);
    if (!same) {
        char a[128], b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Mask '%s' has shape %s but Out@GRAD '%s' has %s",
                            oar_ic_in_name(c, "Mask", 0), oar_shape_str(m, mn, a, sizeof a),
                            oar_ic_in_name(c, "Out@GRAD", 0), oar_shape_str(g, gn, b, sizeof b));
    }
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    return oar_infer_same_as(c, "Out@GRAD", "X@GRAD");
}

static int do_grad_maker(oar_grad_ctx_t *g) {
    oar_op_desc_t *op = oar_gc_new_op(g, "dropout_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out(g, op, "Mask"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/dropout.h"   /* the tables, decoders and registrations */
