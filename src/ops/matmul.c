/*
 * matmul.c — definitions of mul (Fluid's fc product: both operands
 * flattened to matrices) and matmul (batched, numpy-like), with grads.
 */
#include "op.h"
#include "paddle_attrs.h"
#include "broadcast.h"
#include "matmul.h"

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}

static const oar_slot_def_t xy_in[] = {{"X", 0}, {"Y", 0}, {NULL, 0}};
static const oar_slot_def_t out_slot[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t grad_in[] = {{"X", 0}, {"Y", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t grad_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Y@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int check_dtypes(oar_infer_ctx_t *c)
{
    int xt = oar_ic_in_dtype(c, "X", 0), yt = oar_ic_in_dtype(c, "Y", 0);
    if (xt >= 0 && yt >= 0 && xt != yt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X dtype %s and Y dtype %s differ",
                            oar_dtype_name(xt), oar_dtype_name(yt));
    return OAR_OK;
}

/* product of d[lo..hi), -1 when any is unknown */
static int64_t prod(const int64_t *d, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++) {
        if (d[i] < 0) return -1;
        if (oar_mul_checked(p, d[i], &p) != OAR_OK) return -2;
    }
    return p;
}

/* ---- mul ------------------------------------------------------------------ */
static const oar_attr_def_t mul_attrs[] = {
    {"x_num_col_dims", OAR_ATTR_INT, 1, NULL, false, 1, OAR_MAX_DIMS},
    {"y_num_col_dims", OAR_ATTR_INT, 1, NULL, false, 1, OAR_MAX_DIMS},
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    OAR_PA_F("scale_x", 1.0), OAR_PA_L("scale_y", OAR_ATTR_FLOATS), OAR_PA_F("scale_out", 1.0),
    OAR_PA_B("force_fp32_output", 0), OAR_PA_ONEDNN,
    ATTR_END};

static int mul_infer(oar_infer_ctx_t *c)
{
    int xn, yn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!yd) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtypes(c));
    int xnf = oar_attr_i(oar_ic_op(c), "x_num_col_dims"), ynf = oar_attr_i(oar_ic_op(c), "y_num_col_dims");
    char bx[160], by[160];
    oar_shape_str(xd, xn, bx, sizeof bx);
    oar_shape_str(yd, yn, by, sizeof by);
    if (xnf < 1 || xnf >= xn)
        return oar_ic_error(c, OAR_ERR_SHAPE, "x_num_col_dims %d must be in [1, %d) for X shape %s", xnf, xn, bx);
    if (ynf < 1 || ynf >= yn)
        return oar_ic_error(c, OAR_ERR_SHAPE, "y_num_col_dims %d must be in [1, %d) for Y shape %s", ynf, yn, by);
    int64_t kx = prod(xd, xnf, xn), ky = prod(yd, 0, ynf);
    if (kx == -2 || ky == -2 || prod(xd, 0, xnf) == -2 || prod(yd, ynf, yn) == -2)
        return oar_ic_error(c, OAR_ERR_NOMEM, "element count of X shape %s or Y shape %s overflows", bx, by);
    if (!oar_dim_eq(kx, ky))
        return oar_ic_error(c, OAR_ERR_SHAPE,
                            "X '%s' shape %s flattened at %d has %lld columns but Y '%s' shape %s flattened at %d has %lld rows",
                            oar_ic_in_name(c, "X", 0), bx, xnf, (long long)kx, oar_ic_in_name(c, "Y", 0), by, ynf,
                            (long long)ky);
    if (xnf + (yn - ynf) > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out would have more than %d dims", OAR_MAX_DIMS);
    int64_t od[OAR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < xnf; i++) od[n++] = xd[i];
    for (int i = ynf; i < yn; i++) od[n++] = yd[i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, n, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int mul_decode(oar_decode_ctx_t *d, void *out)
{
    oar_mul_attrs_t *a = out;
    a->xnf = oar_dec_i(d, "x_num_col_dims");
    a->ynf = oar_dec_i(d, "y_num_col_dims");
    return oar_dec_status(d);
}

static const oar_op_def_t mul_def = {
    .type = "mul", .inputs = xy_in, .outputs = out_slot, .attrs = mul_attrs,
    .infer = mul_infer, .grad = oar_grad_default, .dtype_slot = "X",
    .attrs_size = sizeof(oar_mul_attrs_t), .decode = mul_decode,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(mul_def)
static const oar_op_def_t mul_grad_def = {
    .type = "mul_grad", .inputs = grad_in, .outputs = grad_out, .attrs = mul_attrs,
    .infer = grad_infer, .dtype_slot = "X",
    .attrs_size = sizeof(oar_mul_attrs_t), .decode = mul_decode,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(mul_grad_def)

/* ---- matmul --------------------------------------------------------------- */
static const oar_attr_def_t matmul_attrs[] = {
    {"transpose_X", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"transpose_Y", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"alpha", OAR_ATTR_FLOAT, 1.0, NULL, false, 0, 0},
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"use_quantizer", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"mkldnn_data_type", OAR_ATTR_STRING, 0, "float32", false, 0, 0},
    {"force_fp32_output", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"head_number", OAR_ATTR_INT, 1, NULL, false, 0, 0},
    {"Scale_x", OAR_ATTR_FLOAT, 1.0, NULL, false, 0, 0},
    {"Scale_y", OAR_ATTR_FLOAT, 1.0, NULL, false, 0, 0},
    {"Scale_out", OAR_ATTR_FLOAT, 1.0, NULL, false, 0, 0},
    {"fused_reshape_X", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_reshape_Y", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_reshape_Out", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_transpose_X", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_transpose_Y", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_transpose_Out", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    OAR_PA_ONEDNN,
    ATTR_END};
/* Paddle 2.x's matmul_v2: numpy's matmul with trans_x/trans_y */
static const oar_attr_def_t matmul_v2_attrs[] = {
    {"trans_x", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"trans_y", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"mkldnn_data_type", OAR_ATTR_STRING, 0, "float32", false, 0, 0},
    {"force_fp32_output", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"fused_reshape_X", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_reshape_Y", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_reshape_Out", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_transpose_X", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_transpose_Y", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"fused_transpose_Out", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    OAR_PA_ONEDNN,
    ATTR_END};

static int matmul_infer(oar_infer_ctx_t *c)
{
    int xn, yn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!yd) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtypes(c));
    /* matmul_v2 (trans_x/trans_y) is numpy's matmul; matmul (v1) transposes vectors */
    bool v2 = oar_op_desc_attr_type(oar_ic_op(c), "trans_x") >= 0;
    bool tx = oar_attr_b(oar_ic_op(c), v2 ? "trans_x" : "transpose_X");
    bool ty = oar_attr_b(oar_ic_op(c), v2 ? "trans_y" : "transpose_Y");
    oar_mm_shape_t s;
    int rc = v2 ? oar_mm_shape(xd, xn, yd, yn, tx, ty, &s) : oar_mm_shape_v1(xd, xn, yd, yn, tx, ty, &s);
    if (rc != OAR_MM_OK) {
        char bx[160], by[160];
        oar_shape_str(xd, xn, bx, sizeof bx);
        oar_shape_str(yd, yn, by, sizeof by);
        if (rc == OAR_MM_RANK)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X shape %s and Y shape %s: both need rank >= 1", bx, by);
        if (rc == OAR_MM_K)
            return oar_ic_error(c, OAR_ERR_SHAPE,
                                "X '%s' shape %s (transpose_X %s) and Y '%s' shape %s (transpose_Y %s) do not multiply: "
                                "inner dims differ",
                                oar_ic_in_name(c, "X", 0), bx, tx ? "true" : "false", oar_ic_in_name(c, "Y", 0), by,
                                ty ? "true" : "false");
        return oar_ic_error(c, OAR_ERR_SHAPE, "batch dims of X '%s' shape %s and Y '%s' shape %s do not broadcast",
                            oar_ic_in_name(c, "X", 0), bx, oar_ic_in_name(c, "Y", 0), by);
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, s.out, s.ond, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int matmul_decode(oar_decode_ctx_t *d, void *out)
{
    oar_matmul_attrs_t *a = out;
    a->v2 = false;
    a->tx = oar_dec_b(d, "transpose_X");
    a->ty = oar_dec_b(d, "transpose_Y");
    a->alpha = oar_dec_f(d, "alpha");
    return oar_dec_status(d);
}

static int matmul_v2_decode(oar_decode_ctx_t *d, void *out)
{
    oar_matmul_attrs_t *a = out;
    a->v2 = true;
    a->tx = oar_dec_b(d, "trans_x");
    a->ty = oar_dec_b(d, "trans_y");
    a->alpha = 1.0;
    return oar_dec_status(d);
}
#define MM_DECODE .attrs_size = sizeof(oar_matmul_attrs_t), .decode = matmul_decode
#define MM_V2_DECODE .attrs_size = sizeof(oar_matmul_attrs_t), .decode = matmul_v2_decode

static const oar_op_def_t matmul_def = {
    .type = "matmul", .inputs = xy_in, .outputs = out_slot, .attrs = matmul_attrs,
    .infer = matmul_infer, .grad = oar_grad_default, .dtype_slot = "X", MM_DECODE,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(matmul_def)
static const oar_op_def_t matmul_grad_def = {
    .type = "matmul_grad", .inputs = grad_in, .outputs = grad_out, .attrs = matmul_attrs,
    .infer = grad_infer, .dtype_slot = "X", MM_DECODE,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(matmul_grad_def)

static const oar_op_def_t matmul_v2_def = {
    .type = "matmul_v2", .inputs = xy_in, .outputs = out_slot, .attrs = matmul_v2_attrs,
    .infer = matmul_infer, .grad = oar_grad_default, .dtype_slot = "X", MM_V2_DECODE,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(matmul_v2_def)
static const oar_op_def_t matmul_v2_grad_def = {
    .type = "matmul_v2_grad", .inputs = grad_in, .outputs = grad_out, .attrs = matmul_v2_attrs,
    .infer = grad_infer, .dtype_slot = "X", MM_V2_DECODE,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(matmul_v2_grad_def)
