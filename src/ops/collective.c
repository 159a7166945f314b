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
 * device's one stream). The collectives have no gradient ops.
 *
 * The ops are declared in collective.ops; this file holds their inference. */
#include "op.h"
#include "ops/collective.h"   /* generated from collective.ops: slots, oar_collective_attrs_t */

#include <string.h>

static int dense_same_infer(oar_infer_ctx_t *c)
{
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt == OAR_VAR_SELECTED_ROWS)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "input X '%s' holds selected rows; reduce them as a dense "
                            "tensor, or gather them with c_allgather", oar_ic_in_name(c, "X", 0));
    return oar_infer_same_as(c, "X", "Out");
}

/* ---- c_allgather ------------------------------------------------------------- */
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
    const oar_collective_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int nranks = a->nranks;
    if (rows) return oar_ic_set_out(c, "Out", 0, dims, nd, oar_ic_in_dtype(c, "X", 0));
    if (dims[0] >= 0) dims[0] *= nranks;
    return oar_ic_set_out(c, "Out", 0, dims, nd, oar_ic_in_dtype(c, "X", 0));
}

/* ---- c_coalesce / c_split_coalesced ---------------------------------------- */
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

#define OAR_OPS_DEFINE
#include "ops/collective.h"   /* the tables, the decoders and the registrations */
