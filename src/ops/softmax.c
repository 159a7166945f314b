/*
 * softmax.c — definitions of softmax and log_softmax (X -> Out along `axis`)
 * and their grads, which read only Out and Out@GRAD.
 */
#include "op.h"
#include "softmax.h"
#include "paddle_attrs.h"

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}

static const oar_slot_def_t sm_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t sm_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t sm_grad_in[] = {{"Out", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t sm_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static const oar_attr_def_t softmax_attrs[] = {
    {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0},
    {"use_cudnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"data_format", OAR_ATTR_STRING, 0, "AnyLayout", false, 0, 0},
    {"is_test", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    ATTR_END};
static const oar_attr_def_t log_softmax_attrs[] = {
    {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0},
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, OAR_PA_ONEDNN,
    ATTR_END};

static int check_axis(oar_infer_ctx_t *c, const char *slot)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int axis = oar_attr_i(oar_ic_op(c), "axis");
    if (nd == 0 || axis < -nd || axis >= nd) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_INVALID, "axis %d out of range [%d, %d) for %s shape %s", axis, -nd, nd,
                            slot, oar_shape_str(d, nd, b, sizeof b));
    }
    return OAR_OK;
}

static int sm_decode(oar_decode_ctx_t *d, void *out)
{
    ((oar_softmax_attrs_t *)out)->axis = oar_dec_i(d, "axis");
    return oar_dec_status(d);
}

static int sm_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(check_axis(c, "X"));
    return oar_infer_same_as(c, "X", "Out");
}

/* X@GRAD takes Out's dims, dtype and LoD */
static int sm_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    OAR_TRY(check_axis(c, "Out"));
    return oar_infer_grad_like_out(c);
}

/* Kernels read a whole row before writing it, and each element before its
 * own write: the output may take the dying input's buffer. */
#define SM_DECODE .attrs_size = sizeof(oar_softmax_attrs_t), .decode = sm_decode, .flags = OAR_OP_INPLACE | OAR_OP_WRITES_OUTPUTS

static const oar_op_def_t softmax_def = {
    .type = "softmax", .inputs = sm_in, .outputs = sm_out, .attrs = softmax_attrs,
    .infer = sm_infer, .grad = oar_grad_default, .dtype_slot = "X", SM_DECODE};
OAR_REGISTER_OP(softmax_def)
static const oar_op_def_t softmax_grad_def = {
    .type = "softmax_grad", .inputs = sm_grad_in, .outputs = sm_grad_out, .attrs = softmax_attrs,
    .infer = sm_grad_infer, .dtype_slot = "Out", SM_DECODE};
OAR_REGISTER_OP(softmax_grad_def)

static const oar_op_def_t log_softmax_def = {
    .type = "log_softmax", .inputs = sm_in, .outputs = sm_out, .attrs = log_softmax_attrs,
    .infer = sm_infer, .grad = oar_grad_default, .dtype_slot = "X", SM_DECODE};
OAR_REGISTER_OP(log_softmax_def)
static const oar_op_def_t log_softmax_grad_def = {
    .type = "log_softmax_grad", .inputs = sm_grad_in, .outputs = sm_grad_out, .attrs = log_softmax_attrs,
    .infer = sm_grad_infer, .dtype_slot = "Out", SM_DECODE};
OAR_REGISTER_OP(log_softmax_grad_def)
