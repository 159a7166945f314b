/* dropout.c — dropout and dropout_grad (Fluid 1.x semantics).
 *
 * Training keeps each element with probability 1 - dropout_prob and records
 * the choice in Mask (uint8, as Fluid 1.8). "downgrade_in_infer": train
 * Out = X * Mask, test Out = X * (1 - p); "upscale_in_train": train
 * Out = X * Mask / (1 - p), test Out = X. With fix_seed the op draws from its
 * own generator seeded with `seed` on every run, so masks repeat.
 * Kernels in kernels/cpu/dropout.c. */
#include "op.h"
#include "dropout.h"

#include <string.h>

static const oar_slot_def_t do_in[] = {{"X", 0}, {"Seed", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t do_out[] = {{"Out", 0}, {"Mask", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t do_grad_in[] = {{"Mask", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t do_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static const oar_attr_def_t do_attrs[] = {
    {.name = "dropout_prob", .type = OAR_ATTR_FLOAT, .def = 0.5, .min = 0.0, .max = 1.0},
    {.name = "is_test", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "fix_seed", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "seed", .type = OAR_ATTR_INT, .def = 0},
    {.name = "dropout_implementation", .type = OAR_ATTR_STRING, .def_str = "downgrade_in_infer",
     .choices = OAR_DO_IMPLS},
    {.name = NULL}};

static int do_decode(oar_decode_ctx_t *d, void *out) {
    oar_dropout_attrs_t *a = out;
    a->prob = oar_dec_f(d, "dropout_prob");
    a->is_test = oar_dec_b(d, "is_test");
    a->fix_seed = oar_dec_b(d, "fix_seed");
    a->seed = oar_dec_i(d, "seed");
    a->impl = oar_dec_choice(d, "dropout_implementation");
    return oar_dec_status(d);
}

static int check_impl(oar_infer_ctx_t *c) {
    const char *impl = oar_attr_s(oar_ic_op(c), "dropout_implementation");
    if (oar_attr_choice_index(OAR_DO_IMPLS, impl) < 0)
        return oar_ic_error(c, OAR_ERR_INVALID,
                            "attr dropout_implementation = \"%s\" must be \"downgrade_in_infer\" or "
                            "\"upscale_in_train\"", impl);
    return OAR_OK;
}

static int do_infer(oar_infer_ctx_t *c) {
    OAR_TRY(check_impl(c));
    int dt = oar_ic_in_dtype(c, "X", 0);
    if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X '%s' is %s; dropout takes float32 or float64",
                            oar_ic_in_name(c, "X", 0), oar_dtype_name(dt));
    OAR_TRY(oar_infer_same_as(c, "X", "Out"));
    if (!oar_attr_b(oar_ic_op(c), "is_test") && oar_ic_out_present(c, "Mask")) {
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
    OAR_TRY(check_impl(c));
    if (oar_attr_b(oar_ic_op(c), "is_test"))
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

static const oar_op_def_t dropout_def = {
    .type = "dropout", .inputs = do_in, .outputs = do_out, .attrs = do_attrs,
    .infer = do_infer, .grad = do_grad_maker, .dtype_slot = "X",
    /* Out[i] is written from X[i] alone */
    .flags = OAR_OP_INPLACE, .attrs_size = sizeof(oar_dropout_attrs_t), .decode = do_decode};
OAR_REGISTER_OP(dropout_def)

static const oar_op_def_t dropout_grad_def = {
    .type = "dropout_grad", .inputs = do_grad_in, .outputs = do_grad_out, .attrs = do_attrs,
    .infer = do_grad_infer, .grad = NULL, .dtype_slot = "Out@GRAD",
    .attrs_size = sizeof(oar_dropout_attrs_t), .decode = do_decode};
OAR_REGISTER_OP(dropout_grad_def)
