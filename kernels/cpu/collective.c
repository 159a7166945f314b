/* collective.c — CPU kernels of the collective ops (src/ops/collective.c):
 * data in host memory, carried by the communication interface (src/comm.h:
 * OpenMPI, or one worker alone). Before the first collective of a program
 * (and after the program changes) the workers check that they all run the
 * same program. Every kernel reads its input before asking for its output,
 * so in-place use (Out named like X, as the fleet's passes emit) works. */
#include "op.h"
#include "comm.h"
#include "ops/collective.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }
static const char *xname(const oar_kernel_ctx_t *k, int i) { return nm(oar_k_input_name(k, OAR_COLL_X, i)); }

/* an error from the communication layer, with the op's context added by the executor */
static int comm_error(oar_kernel_ctx_t *k, int rc)
{
    char msg[1536];
    snprintf(msg, sizeof msg, "%s", oar_last_error());
    return oar_k_error(k, rc, "%s", msg);
}

static int common_checks(oar_kernel_ctx_t *k)
{
    const oar_op_desc_t *op = oar_k_op(k);
    int ring = ((const oar_collective_attrs_t *)oar_k_attrs(k))->ring_id;
    if (ring != 0)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "ring_id %d: oar has one communicator (ring 0, every worker "
                           "of the job)", ring);
    int rc = oar_comm_check_once(oar_k_program(k), oar_op_desc_type(op));
    return rc == OAR_OK ? OAR_OK : comm_error(k, rc);
}

/* X's data and Out's (the same when in place; else X copied into Out) */
static int x_into_out(oar_kernel_ctx_t *k, void **out, int64_t *numel)
{
    int dt = oar_k_dtype(k);
    oar_tensor_t *x = oar_k_input(k, OAR_COLL_X, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no value", xname(k, 0));
    if (x->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X '%s' has dtype %s, expected %s", xname(k, 0),
                           nm(oar_dtype_name(x->dtype)), nm(oar_dtype_name(dt)));
    int64_t n = oar_tensor_numel_of(x);
    const void *xp = oar_tensor_data(x);
    if (!xp && n > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no data", xname(k, 0));
    void *yp = oar_k_output_data(k, OAR_COLL_OUT, 0, dt);
    if (!yp && n > 0) return OAR_ERR_NOMEM;
    if (n > 0 && yp != xp) memcpy(yp, xp, (size_t)n * oar_dtype_size(dt));
    *out = yp;
    *numel = n;
    return OAR_OK;
}

/* ---- c_allreduce_* ------------------------------------------------------------ */
static int allreduce(oar_kernel_ctx_t *k, int op)
{
    OAR_TRY(common_checks(k));
    void *y;
    int64_t n;
    OAR_TRY(x_into_out(k, &y, &n));
    int rc = oar_comm_allreduce(y, n, oar_k_dtype(k), op);
    return rc == OAR_OK ? OAR_OK : comm_error(k, rc);
}

static int allreduce_sum(oar_kernel_ctx_t *k) { return allreduce(k, OAR_REDUCE_SUM); }
static int allreduce_max(oar_kernel_ctx_t *k) { return allreduce(k, OAR_REDUCE_MAX); }
static int allreduce_min(oar_kernel_ctx_t *k) { return allreduce(k, OAR_REDUCE_MIN); }
static int allreduce_prod(oar_kernel_ctx_t *k) { return allreduce(k, OAR_REDUCE_PROD); }

/* ---- c_broadcast ------------------------------------------------------------------ */
static int broadcast(oar_kernel_ctx_t *k)
{
    OAR_TRY(common_checks(k));
    int root = ((const oar_collective_attrs_t *)oar_k_attrs(k))->root;
    if (root >= oar_comm_size())
        return oar_k_error(k, OAR_ERR_RANGE, "root %d is not a worker: the job has %d", root, oar_comm_size());
    void *y;
    int64_t n;
    OAR_TRY(x_into_out(k, &y, &n));
    int rc = oar_comm_broadcast(y, (size_t)n * oar_dtype_size(oar_k_dtype(k)), root);
    return rc == OAR_OK ? OAR_OK : comm_error(k, rc);
}

/* ---- c_allgather ---------------------------------------------------------------- */
/* Selected rows: each worker's row count is gathered first; then rows and
 * values are gathered padded to the largest count and packed. */
static int allgather_rows(oar_kernel_ctx_t *k, oar_variable_t *xv, int nranks)
{
    const oar_selected_rows_t *src = xv->u.rows;
    const oar_tensor_t *v = src->value;
    const char *xn = xname(k, 0);
    int dt = oar_k_dtype(k);
    if (!v || v->ndim < 1 || v->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X '%s': its selected rows hold no %s value", xn,
                           nm(oar_dtype_name(dt)));
    int64_t width = 1;
    for (int i = 1; i < v->ndim; i++) width *= v->dims[i];
    size_t es = oar_dtype_size(dt);
    int64_t mine[3] = {src->nrows, src->height, width}, *all = oar_xmalloc(sizeof(int64_t) * 3 * (size_t)nranks);
    if (!all) return OAR_ERR_NOMEM;
    int rc = oar_comm_allgather(mine, all, sizeof mine);
    if (rc != OAR_OK) { free(all); return comm_error(k, rc); }
    int64_t most = 0, total = 0;
    for (int r = 0; r < nranks; r++) {
        if (all[3 * r + 1] != src->height || all[3 * r + 2] != width) {
            int64_t h = all[3 * r + 1], w = all[3 * r + 2];
            free(all);
            return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s': worker %d holds rows of height %lld and width %lld, "
                               "this worker %lld and %lld", xn, r, (long long)h, (long long)w,
                               (long long)src->height, (long long)width);
        }
        if (all[3 * r] > most) most = all[3 * r];
        total += all[3 * r];
    }
    size_t row_bytes = (size_t)width * es;
    int64_t *prow = oar_xcalloc((size_t)(most * nranks) + 1, sizeof(int64_t));
    char *pval = oar_xcalloc((size_t)(most * nranks) * row_bytes + 1, 1);
    int64_t *mrow = oar_xcalloc((size_t)most + 1, sizeof(int64_t));
    char *mval = oar_xcalloc((size_t)most * row_bytes + 1, 1);
    if (!prow || !pval || !mrow || !mval) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK && src->nrows > 0) {
        memcpy(mrow, src->rows, sizeof(int64_t) * (size_t)src->nrows);
        memcpy(mval, oar_tensor_data((oar_tensor_t *)v), (size_t)src->nrows * row_bytes);
    }
    if (rc == OAR_OK && (rc = oar_comm_allgather(mrow, prow, sizeof(int64_t) * (size_t)most)) != OAR_OK)
        rc = comm_error(k, rc);
    if (rc == OAR_OK && (rc = oar_comm_allgather(mval, pval, (size_t)most * row_bytes)) != OAR_OK)
        rc = comm_error(k, rc);
    oar_selected_rows_t *dst = NULL;
    if (rc == OAR_OK) {
        oar_variable_t *ov = oar_k_output_var(k, OAR_COLL_OUT, 0);
        dst = ov ? oar_var_selected_rows(ov) : NULL;
        if (!dst) rc = oar_k_error(k, OAR_ERR_INVALID, "output Out '%s' cannot hold selected rows",
                                   nm(oar_k_output_name(k, OAR_COLL_OUT, 0)));
    }
    if (rc == OAR_OK && total > dst->cap) {
        int64_t *r = oar_xrealloc(dst->rows, sizeof(int64_t) * (size_t)total);
        if (!r) rc = OAR_ERR_NOMEM;
        else { dst->rows = r; dst->cap = total; }
    }
    char *out = NULL;
    if (rc == OAR_OK) {
        /* the rows gathered from every rank: a data-dependent shape */
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, v->dims, sizeof(int64_t) * (size_t)v->ndim);
        dims[0] = total;
        if (!(out = oar_k_output_resized(k, OAR_COLL_OUT, dims, v->ndim, dt)) && total > 0) rc = OAR_ERR_NOMEM;
    }
    if (rc == OAR_OK) {
        int64_t at = 0;
        for (int r = 0; r < nranks; r++) {
            int64_t c = all[3 * r];
            memcpy(dst->rows + at, prow + (size_t)r * (size_t)most, sizeof(int64_t) * (size_t)c);
            memcpy(out + (size_t)at * row_bytes, pval + (size_t)r * (size_t)most * row_bytes, (size_t)c * row_bytes);
            at += c;
        }
        dst->nrows = total;
        dst->height = src->height;
    }
    free(all); free(prow); free(pval); free(mrow); free(mval);
    return rc;
}

static int allgather(oar_kernel_ctx_t *k)
{
    OAR_TRY(common_checks(k));
    int nranks = ((const oar_collective_attrs_t *)oar_k_attrs(k))->nranks;
    if (nranks != oar_comm_size())
        return oar_k_error(k, OAR_ERR_INVALID, "attr nranks is %d but the job has %d workers", nranks, oar_comm_size());
    oar_variable_t *xv = oar_k_input_var(k, OAR_COLL_X, 0);
    if (xv && oar_variable_type(xv) == OAR_VAR_SELECTED_ROWS) return allgather_rows(k, xv, nranks);
    int dt = oar_k_dtype(k);
    oar_tensor_t *x = oar_k_input(k, OAR_COLL_X, 0);
    if (!x || x->dtype != dt)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no %s value", xname(k, 0), nm(oar_dtype_name(dt)));
    size_t bytes = (size_t)oar_tensor_numel_of(x) * oar_dtype_size(dt);
    const void *xp = oar_tensor_data(x);
    if (!xp && bytes > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no data", xname(k, 0));
    /* X may be Out: keep X's bytes before Out gets its buffer */
    void *mine = bytes > 0 ? oar_xmalloc(bytes) : NULL;
    if (bytes > 0 && !mine) return OAR_ERR_NOMEM;
    if (bytes > 0) memcpy(mine, xp, bytes);
    void *y = oar_k_output_data(k, OAR_COLL_OUT, 0, dt);
    int rc = OAR_OK;
    if (!y && bytes > 0) rc = OAR_ERR_NOMEM;
    else if ((rc = oar_comm_allgather(mine, y, bytes)) != OAR_OK) rc = comm_error(k, rc);
    free(mine);
    return rc;
}

/* ---- c_coalesce / c_split_coalesced -------------------------------------------- */
static int coalesce(oar_kernel_ctx_t *k)
{
    int n = oar_k_nin(k, OAR_COLL_X), dt = oar_k_dtype(k);
    size_t es = oar_dtype_size(dt);
    for (int i = 0; i < n; i++) {
        oar_tensor_t *x = oar_k_input(k, OAR_COLL_X, i);
        if (!x || x->dtype != dt || (!oar_tensor_data(x) && oar_tensor_numel_of(x) > 0))
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X[%d] '%s' has no %s value", i, xname(k, i),
                               nm(oar_dtype_name(dt)));
    }
    char *y = oar_k_output_data(k, OAR_COLL_OUT, 0, dt);
    oar_tensor_t *yt = oar_k_output(k, OAR_COLL_OUT, 0);
    if (!y && yt && oar_tensor_numel_of(yt) > 0) return OAR_ERR_NOMEM;
    size_t at = 0, cap = yt ? (size_t)oar_tensor_numel_of(yt) * es : 0;
    for (int i = 0; i < n; i++) {
        oar_tensor_t *x = oar_k_input(k, OAR_COLL_X, i);
        size_t b = (size_t)oar_tensor_numel_of(x) * es;
        if (at + b > cap) return oar_k_error(k, OAR_ERR_SHAPE, "output Out is smaller than the inputs");
        if (b) memcpy(y + at, oar_tensor_data(x), b);
        at += b;
    }
    return OAR_OK;
}

static int split_coalesced(oar_kernel_ctx_t *k)
{
    int n = oar_k_nout(k, OAR_COLL_OUT), dt = oar_k_dtype(k);
    size_t es = oar_dtype_size(dt);
    oar_tensor_t *x = oar_k_input(k, OAR_COLL_X, 0);
    if (!x || x->dtype != dt)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no %s value", xname(k, 0), nm(oar_dtype_name(dt)));
    const char *xp = oar_tensor_data(x);
    size_t at = 0, total = (size_t)oar_tensor_numel_of(x) * es;
    for (int i = 0; i < n; i++) {
        oar_tensor_t *o = oar_k_output(k, OAR_COLL_OUT, i);
        if (!o) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out[%d] is missing", i);
        size_t b = (size_t)oar_tensor_numel_of(o) * es;
        if (at + b > total)
            return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' holds %zu elements, fewer than the outputs need",
                               xname(k, 0), total / es);
        void *y = oar_k_output_data(k, OAR_COLL_OUT, i, dt);
        if (!y && b > 0) return OAR_ERR_NOMEM;
        if (b) memcpy(y, xp + at, b);
        at += b;
    }
    if (at != total)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' holds %zu elements, the outputs %zu",
                           xname(k, 0), total / es, at / es);
    return OAR_OK;
}

/* one registration per (op, dtype): the kernels dispatch on oar_k_dtype */
#define REG(TYPE, FN, DT, TAG) \
    static int FN##_##TAG(oar_kernel_ctx_t *k) { return FN(k); } \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, DT, FN##_##TAG)
#define REG_ALL(TYPE, FN)                  \
    REG(TYPE, FN, OAR_FP32, f32)           \
    REG(TYPE, FN, OAR_FP64, f64)           \
    REG(TYPE, FN, OAR_INT32, i32)          \
    REG(TYPE, FN, OAR_INT64, i64)

REG_ALL("c_allreduce_sum", allreduce_sum)
REG_ALL("c_allreduce_max", allreduce_max)
REG_ALL("c_allreduce_min", allreduce_min)
REG_ALL("c_allreduce_prod", allreduce_prod)
REG_ALL("c_broadcast", broadcast)
REG_ALL("c_allgather", allgather)
REG_ALL("c_coalesce", coalesce)
REG_ALL("c_split_coalesced", split_coalesced)
