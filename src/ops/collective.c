/* collective.c — Fluid's collective ops (collective mode of Fluid 1.8):
 * c_allreduce_sum/_max/_min/_prod, c_broadcast and c_allgather, with Fluid's
 * slots (X -> Out) and attrs (ring_id, root, nranks, use_calc_stream), plus
 * the pair that fuses gradients into one buffer for a single allreduce:
 * c_coalesce (X... -> flat Out) and c_split_coalesced (flat X -> Out...,
 * shaped like Ref...). Kernels: kernels/cpu/collective.c (the communication
 * interface, src/comm.h) and kernels/cuda/collective.cu (NCCL).
 *
 * ring_id names a communicator in Fluid; oar has one (all the workers of
 * the job), so only ring 0 exists. use_calc_stream is accepted for Fluid's
 * programs; oar runs collectives in order with the compute (on CUDA, on the
 * device's one stream). The collectives have no gradient ops. */
#include "op.h"
#include "collective.h"
#include "paddle_attrs.h"

#include <string.h>

static const oar_slot_def_t x_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t out_out[] = {{"Out", 0}, {NULL, 0}};

#define RING_ATTR {.name = "ring_id", .type = OAR_ATTR_INT, .def = 0}
#define CALC_STREAM_ATTR {.name = "use_calc_stream", .type = OAR_ATTR_BOOLEAN, .def = 0}

static int dense_same_infer(oar_infer_ctx_t *c)
{
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt == OAR_VAR_SELECTED_ROWS)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "input X '%s' holds selected rows; reduce them as a dense "
                            "tensor, or gather them with c_allgather", oar_ic_in_name(c, "X", 0));
    return oar_infer_same_as(c, "X", "Out");
}

static int ring_decode(oar_decode_ctx_t *d, void *out)
{
    ((oar_collective_attrs_t *)out)->ring_id = oar_dec_i(d, "ring_id");
    return oar_dec_status(d);
}
#define COLL_DECODE(FN) .attrs_size = sizeof(oar_collective_attrs_t), .decode = FN

/* ---- c_allreduce_* -------------------------------------------------------- */
/* use_model_parallel (Paddle 2.x) picks another communicator: refused unless
 * false (src/attr_check.c) */
static const oar_attr_def_t allreduce_attrs[] = {
    RING_ATTR, CALC_STREAM_ATTR, OAR_PA_B("use_model_parallel", 0), {NULL}};

/* in place: the kernel reduces Out's buffer, which holds X (copied when not X's own) */
#define ALLREDUCE_DEF(NAME)                                                                      \
    static const oar_op_def_t NAME##_def = {                                                    \
        .type = #NAME, .inputs = x_in, .outputs = out_out, .attrs = allreduce_attrs,            \
        .infer = dense_same_infer, .flags = OAR_OP_INPLACE, COLL_DECODE(ring_decode)};         \
    OAR_REGISTER_OP(NAME##_def)

ALLREDUCE_DEF(c_allreduce_sum)
ALLREDUCE_DEF(c_allreduce_max)
ALLREDUCE_DEF(c_allreduce_min)
ALLREDUCE_DEF(c_allreduce_prod)

/* ---- c_broadcast ------------------------------------------------------------- */
static const oar_attr_def_t broadcast_attrs[] = {
    RING_ATTR, {.name = "root", .type = OAR_ATTR_INT, .def = 0, .min = 0, .max = 1 << 24}, CALC_STREAM_ATTR, {NULL}};

static int broadcast_decode(oar_decode_ctx_t *d, void *out)
{
    oar_collective_attrs_t *a = out;
    a->ring_id = oar_dec_i(d, "ring_id");
    a->root = oar_dec_i(d, "root");
    return oar_dec_status(d);
}

static const oar_op_def_t c_broadcast_def = {
    .type = "c_broadcast", .inputs = x_in, .outputs = out_out, .attrs = broadcast_attrs,
    .infer = dense_same_infer, .flags = OAR_OP_INPLACE, COLL_DECODE(broadcast_decode)};
OAR_REGISTER_OP(c_broadcast_def)

/* ---- c_allgather ------------------------------------------------------------- */
static const oar_attr_def_t allgather_attrs[] = {
    RING_ATTR, {.name = "nranks", .type = OAR_ATTR_INT, .required = true, .min = 1, .max = 1 << 24},
    CALC_STREAM_ATTR, {NULL}};

/* Out stacks every worker's X along dim 0: [nranks * d0, ...]. Selected rows
 * give selected rows holding every worker's rows (their count is known only
 * at run time). */
static int allgather_infer(oar_infer_ctx_t *c)
{
    bool rows = oar_ic_in_var_type(c, "X", 0) == OAR_VAR_SELECTED_ROWS;
    if (rows) {
        OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_SELECTED_ROWS));
        if (oar_ic_runtime(c)) return OAR_OK;   /* the kernel sizes the rows */
    }
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_INVALID;
    if (nd < 1)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' is a scalar; c_allgather stacks along dim 0",
                            oar_ic_in_name(c, "X", 0));
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    int nranks = oar_attr_i(oar_ic_op(c), "nranks");
    if (rows) return oar_ic_set_out(c, "Out", 0, dims, nd, oar_ic_in_dtype(c, "X", 0));
    if (dims[0] >= 0) dims[0] *= nranks;
    return oar_ic_set_out(c, "Out", 0, dims, nd, oar_ic_in_dtype(c, "X", 0));
}

static int allgather_decode(oar_decode_ctx_t *d, void *out)
{
    oar_collective_attrs_t *a = out;
    a->ring_id = oar_dec_i(d, "ring_id");
    a->nranks = oar_dec_i(d, "nranks");
    return oar_dec_status(d);
}

static const oar_op_def_t c_allgather_def = {
    .type = "c_allgather", .inputs = x_in, .outputs = out_out, .attrs = allgather_attrs,
    .infer = allgather_infer, COLL_DECODE(allgather_decode)};
OAR_REGISTER_OP(c_allgather_def)

/* ---- c_coalesce / c_split_coalesced ---------------------------------------- */
static const oar_slot_def_t multi_x_in[] = {{"X", OAR_SLOT_DUPLICABLE}, {NULL, 0}};

/* numel of input `slot`[i], -1 when unknown (compile time) */
static int in_numel(oar_infer_ctx_t *c, const char *slot, int i, int64_t *n)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, slot, i, &nd);
    if (!d) return OAR_ERR_INVALID;
    int64_t m = 1;
    for (int j = 0; j < nd; j++) {
        if (d[j] < 0) { *n = -1; return OAR_OK; }
        OAR_TRY(oar_mul_checked(m, d[j], &m));
    }
    *n = m;
    return OAR_OK;
}

/* Out: a 1-D tensor holding every X flattened, in order; all of one dtype */
static int coalesce_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "X");
    if (n < 1) return oar_ic_error(c, OAR_ERR_INVALID, "c_coalesce needs at least one input X");
    int dt = oar_ic_in_dtype(c, "X", 0);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (oar_ic_in_var_type(c, "X", i) == OAR_VAR_SELECTED_ROWS)
            return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "input X[%d] '%s' holds selected rows; only dense "
                                "tensors can be coalesced", i, oar_ic_in_name(c, "X", i));
        int di = oar_ic_in_dtype(c, "X", i);
        if (dt >= 0 && di >= 0 && di != dt)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s, X[0] '%s' has %s: coalesce "
                                "tensors of one dtype", i, oar_ic_in_name(c, "X", i), oar_dtype_name(di),
                                oar_ic_in_name(c, "X", 0), oar_dtype_name(dt));
        int64_t m;
        OAR_TRY(in_numel(c, "X", i, &m));
        if (m < 0 || total < 0) total = -1;
        else total += m;
    }
    int64_t dims[1] = {total};
    return oar_ic_set_out(c, "Out", 0, dims, 1, dt);
}

static const oar_op_def_t c_coalesce_def = {
    .type = "c_coalesce", .inputs = multi_x_in, .outputs = out_out, .infer = coalesce_infer};
OAR_REGISTER_OP(c_coalesce_def)

static const oar_slot_def_t split_in[] = {{"X", 0}, {"Ref", OAR_SLOT_DUPLICABLE}, {NULL, 0}};
static const oar_slot_def_t split_out[] = {{"Out", OAR_SLOT_DUPLICABLE}, {NULL, 0}};

/* Out[i] takes Ref[i]'s dims and X's dtype; X must hold exactly their
 * elements (Ref are usually the very tensors that were coalesced, and Out
 * the same variables: the split writes them back in place). */
static int split_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "Ref");
    if (n != oar_ic_out_count(c, "Out"))
        return oar_ic_error(c, OAR_ERR_INVALID, "c_split_coalesced has %d Ref and %d Out; give one Out per Ref", n,
                            oar_ic_out_count(c, "Out"));
    int64_t flat, total = 0;
    OAR_TRY(in_numel(c, "X", 0, &flat));
    int dt = oar_ic_in_dtype(c, "X", 0);
    for (int i = 0; i < n; i++) {
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "Ref", i, &nd);
        if (!d) return OAR_ERR_INVALID;
        int64_t m;
        OAR_TRY(in_numel(c, "Ref", i, &m));
        if (m < 0 || total < 0) total = -1;
        else total += m;
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
        OAR_TRY(oar_ic_set_out(c, "Out", i, dims, nd, dt));
    }
    if (flat >= 0 && total >= 0 && flat != total)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has %lld elements, the Ref tensors %lld",
                            oar_ic_in_name(c, "X", 0), (long long)flat, (long long)total);
    return OAR_OK;
}

static const oar_op_def_t c_split_coalesced_def = {
    .type = "c_split_coalesced", .inputs = split_in, .outputs = split_out, .infer = split_infer,
    .dtype_slot = "X"};
OAR_REGISTER_OP(c_split_coalesced_def)
