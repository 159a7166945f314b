/*
 * lookup_table.cu — CUDA kernels of lookup_table and lookup_table_grad
 * (float32, float64; dense and SELECTED_ROWS grads), as
 * kernels/cpu/lookup_table.c: Out row i is W row Ids[i] (zeros for
 * padding_idx); the dense grad adds Out@GRAD rows into W@GRAD (atomics, as
 * ids repeat); the sparse grad is a SELECTED_ROWS of height V whose rows are
 * the ids (copied to the host, where selected rows keep them) and whose
 * value is Out@GRAD with padding rows zeroed. Ids are range-checked inside
 * the kernels and the first bad position reported, as on the CPU.
 */
#include "cuda_common.h"
#include "ops/lookup_table.h"

using namespace oarcu;

namespace {

__device__ inline bool bad_id(int64_t id, int64_t v, int64_t pad) { return (id < 0 || id >= v) && !(pad >= 0 && id == pad); }

template <class T>
__global__ void lt_k(const T *w, const int64_t *ids, T *out, int64_t n, int64_t v, int64_t d, int64_t pad,
                     unsigned long long *bad)
{
    OAR_CU_LOOP(q, n * d) {
        const int64_t i = q / d, id = ids[i];
        if (bad_id(id, v, pad)) {
            if (q % d == 0) flag_bad(bad, i);
            out[q] = T(0);
        } else {
            out[q] = id == pad ? T(0) : w[id * d + q % d];
        }
    }
}

template <class T>
__global__ void ltg_dense_k(const int64_t *ids, const T *g, T *dw, int64_t n, int64_t v, int64_t d, int64_t pad,
                            unsigned long long *bad)
{
    OAR_CU_LOOP(q, n * d) {
        const int64_t i = q / d, id = ids[i];
        if (bad_id(id, v, pad)) { if (q % d == 0) flag_bad(bad, i); continue; }
        if (id != pad) atomicAdd(dw + id * d + q % d, g[q]);
    }
}

template <class T>
__global__ void ltg_sparse_k(const int64_t *ids, const T *g, T *val, int64_t n, int64_t v, int64_t d, int64_t pad,
                             unsigned long long *bad)
{
    OAR_CU_LOOP(q, n * d) {
        const int64_t i = q / d, id = ids[i];
        if (bad_id(id, v, pad) && q % d == 0) flag_bad(bad, i);
        val[q] = id == pad ? T(0) : g[q];
    }
}

struct Lt {
    const oar_tensor_t *w, *ids;
    const void *wd, *idd;
    int64_t n, v, d, pad;
};

int lt_args(oar_kernel_ctx_t *k, Lt *a)
{
    OAR_TRY(in_tensor_at(k, OAR_LT_W, 0, -1, -1, &a->w, &a->wd));
    OAR_TRY(in_tensor_at(k, OAR_LT_IDS, 0, OAR_INT64, -1, &a->ids, &a->idd));
    if (a->w->ndim != 2) return oar_k_error(k, OAR_ERR_SHAPE, "input W is not 2-D");
    a->v = a->w->dims[0];
    a->d = a->w->dims[1];
    a->n = oar_tensor_numel_of(a->ids);
    a->pad = ((const oar_lt_attrs_t *)oar_k_attrs(k))->padding_idx;
    return OAR_OK;
}

int id_check(oar_kernel_ctx_t *k, BadFlag &bad, const Lt &a)
{
    return bad.report(k, "Ids '%s' holds an id out of range [0, %lld) for W '%s' with V = %lld rows",
                      nm(oar_k_input_name(k, OAR_LT_IDS, 0)), (long long)a.v, nm(oar_k_input_name(k, OAR_LT_W, 0)),
                      (long long)a.v);
}

template <class T>
int lt_fwd(oar_kernel_ctx_t *k, int dt)
{
    Lt a;
    OAR_TRY(lt_args(k, &a));
    if (a.w->dtype != dt) return oar_k_error(k, OAR_ERR_DTYPE, "input W has dtype %s", nm(oar_dtype_name(a.w->dtype)));
    void *out;
    OAR_TRY(out_data_at(k, OAR_LT_OUT, 0, dt, a.n * a.d, &out));
    if (a.n * a.d == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    lt_k<T><<<grid_for(a.n * a.d), kThreads>>>((const T *)a.wd, (const int64_t *)a.idd, (T *)out, a.n, a.v, a.d, a.pad,
                                               bad.ptr());
    OAR_CU_LAUNCH(k, "lookup_table");
    return id_check(k, bad, a);
}

template <class T>
int ltg_sparse(oar_kernel_ctx_t *k, int dt, const Lt &a, const T *g, oar_variable_t *gv)
{
    oar_selected_rows_t *sr = oar_var_selected_rows(gv);
    if (!sr) {
        oar_error_prefix("%s: W@GRAD '%s' (is_sparse): ", oar_k_op(k)->type, nm(oar_k_output_name(k, OAR_LTG_DW, 0)));
        return OAR_ERR_DTYPE;
    }
    if (sr->cap < a.n) {
        int64_t *r = (int64_t *)oar_xrealloc(sr->rows, sizeof(int64_t) * (size_t)(a.n > 0 ? a.n : 1));
        if (!r) return OAR_ERR_NOMEM;
        sr->rows = r;
        sr->cap = a.n;
    }
    /* the row count is the number of ids: a data-dependent shape */
    int64_t vd[2] = {a.n, a.d};
    T *val = (T *)oar_k_output_resized(k, OAR_LTG_DW, vd, 2, dt);
    if (!val && a.n * a.d > 0) return OAR_ERR_NOMEM;
    oar_tensor_clear_lod(sr->value);
    if (a.n > 0) OAR_TRY(to_host(k, sr->rows, a.idd, sizeof(int64_t) * (size_t)a.n, "copying Ids to the rows"));
    sr->nrows = a.n;
    sr->height = a.v;
    if (a.n * a.d == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    ltg_sparse_k<T><<<grid_for(a.n * a.d), kThreads>>>((const int64_t *)a.idd, g, val, a.n, a.v, a.d, a.pad, bad.ptr());
    OAR_CU_LAUNCH(k, "lookup_table_grad (sparse)");
    return id_check(k, bad, a);
}

template <class T>
int lt_bwd(oar_kernel_ctx_t *k, int dt)
{
    Lt a;
    OAR_TRY(lt_args(k, &a));
    const oar_tensor_t *gt;
    const void *g;
    OAR_TRY(in_tensor_at(k, OAR_LTG_DOUT, 0, dt, a.n * a.d, &gt, &g));
    oar_variable_t *gv = oar_k_output_var(k, OAR_LTG_DW, 0);
    if (!gv) return OAR_OK;   /* no gradient wanted */
    if (((const oar_lt_attrs_t *)oar_k_attrs(k))->is_sparse) return ltg_sparse<T>(k, dt, a, (const T *)g, gv);
    void *dw;
    OAR_TRY(out_data_at(k, OAR_LTG_DW, 0, dt, a.v * a.d, &dw));
    if (a.v * a.d > 0) OAR_CU(k, cudaMemsetAsync(dw, 0, sizeof(T) * (size_t)(a.v * a.d), 0), "cudaMemsetAsync");
    if (a.n * a.d == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    ltg_dense_k<T><<<grid_for(a.n * a.d), kThreads>>>((const int64_t *)a.idd, (const T *)g, (T *)dw, a.n, a.v, a.d,
                                                      a.pad, bad.ptr());
    OAR_CU_LAUNCH(k, "lookup_table_grad");
    return id_check(k, bad, a);
}

int lt_f32(oar_kernel_ctx_t *k) { return lt_fwd<float>(k, OAR_FP32); }
int lt_f64(oar_kernel_ctx_t *k) { return lt_fwd<double>(k, OAR_FP64); }
int ltg_f32(oar_kernel_ctx_t *k) { return lt_bwd<float>(k, OAR_FP32); }
int ltg_f64(oar_kernel_ctx_t *k) { return lt_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("lookup_table", OAR_PLACE_CUDA, OAR_FP32, lt_f32)
OAR_REGISTER_KERNEL("lookup_table", OAR_PLACE_CUDA, OAR_FP64, lt_f64)
OAR_REGISTER_KERNEL("lookup_table_grad", OAR_PLACE_CUDA, OAR_FP32, ltg_f32)
OAR_REGISTER_KERNEL("lookup_table_grad", OAR_PLACE_CUDA, OAR_FP64, ltg_f64)

}  // namespace
