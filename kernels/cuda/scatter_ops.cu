/*
 * scatter_ops.cu — CUDA kernels of scatter, scatter_nd_add and gather_nd
 * and their grads, with the CPU kernels' rules (kernels/cpu/rearrange2.c,
 * tensor_ext.c): forward for float32, float64, int32 and int64, grads for
 * float32 and float64; indices int32 or int64.
 *
 * Several updates may name one row, so the CPU's order decides the result
 * (overwrite: the last wins; add: the sum in update order). Each thread
 * owns one column of the slice and walks the updates in order, so the
 * result is the CPU's, bit for bit, without atomics; the parallelism is the
 * slice size (a scatter of scalars runs on one thread). gather_nd_grad adds
 * the same way. Indices out of range are flagged inside the kernels
 * (BadFlag): the error names the first bad update or index row.
 */
#include <stdint.h>
#include "cuda_common.h"
extern "C" {
#include "ops/rearrange2.h"
#include "ops/tensor_ext.h"
}

using namespace oarcu;

namespace {

int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

__device__ inline int64_t idx_at(const void *ix, bool i64, int64_t q)
{
    return i64 ? ((const int64_t *)ix)[q] : (int64_t)((const int32_t *)ix)[q];
}

/* the flat offset (in slices) of index tuple i (kd values), or -1 when out of range */
struct NdDims {
    int kd;
    int64_t dims[OAR_MAX_DIMS];
};

__device__ inline int64_t nd_off(const void *ix, bool i64, int64_t i, const NdDims &d)
{
    int64_t o = 0;
    for (int j = 0; j < d.kd; j++) {
        const int64_t v = idx_at(ix, i64, i * d.kd + j);
        if (v < 0 || v >= d.dims[j]) return -1;
        o = o * d.dims[j] + v;
    }
    return o;
}

int index_input(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t **t, const void **p)
{
    OAR_TRY(in_tensor_at(k, slot, 0, -1, -1, t, p));
    if ((*t)->dtype != OAR_INT32 && (*t)->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "%s '%s' is %s; it must be int32 or int64", name,
                           nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name((*t)->dtype)));
    return OAR_OK;
}

template <class T>
__global__ void copy_k(const T *s, T *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = s[i];
}

template <class T>
int copy_if_apart(oar_kernel_ctx_t *k, const void *s, void *d, int64_t n)
{
    if (n == 0 || s == d) return OAR_OK;
    copy_k<T><<<grid_for(n), kThreads>>>((const T *)s, (T *)d, n);
    OAR_CU_LAUNCH(k, "of a copy (scatter_ops.cu)");
    return OAR_OK;
}

/* ---- scatter: rows Ids[i] of Out take (overwrite) or add (zeroed first) Updates[i] ---- */
template <class T>
__global__ void scatter_k(const void *ids, bool i64, const T *u, T *o, int64_t m, int64_t rows, int64_t slice,
                          bool overwrite, unsigned long long *bad)
{
    OAR_CU_LOOP(j, slice) {
        if (!overwrite)
            for (int64_t i = 0; i < m; i++) {
                const int64_t r = idx_at(ids, i64, i);
                if (r >= 0 && r < rows) o[r * slice + j] = T(0);
            }
        for (int64_t i = 0; i < m; i++) {
            const int64_t r = idx_at(ids, i64, i);
            if (r < 0 || r >= rows) { if (j == 0) flag_bad(bad, i); continue; }
            if (overwrite) o[r * slice + j] = u[i * slice + j];
            else o[r * slice + j] += u[i * slice + j];
        }
    }
}

template <class T>
int scatter_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_scatter_attrs_t *a = (const oar_scatter_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *it, *ut;
    const void *x, *ids, *u;
    OAR_TRY(in_tensor_at(k, OAR_SCATTER_X, 0, dt, -1, &xt, &x));
    OAR_TRY(index_input(k, OAR_SCATTER_IDS, "Ids", &it, &ids));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim ? xt->dims[0] : 1;
    const int64_t slice = rows ? n / rows : 0, m = oar_tensor_numel_of(it);
    OAR_TRY(in_tensor_at(k, OAR_SCATTER_UPDATES, 0, dt, m * slice, &ut, &u));
    void *o;
    OAR_TRY(out_data_at(k, OAR_SCATTER_OUT, 0, dt, n, &o));
    OAR_TRY(copy_if_apart<T>(k, x, o, n));
    if (m == 0 || slice == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    scatter_k<T><<<grid_for(slice), kThreads>>>(ids, it->dtype == OAR_INT64, (const T *)u, (T *)o, m, rows, slice,
                                                 a->overwrite, bad.ptr());
    OAR_CU_LAUNCH(k, "scatter");
    return bad.report(k, "Ids '%s' holds a row out of range [0, %lld) (update)",
                      nm(oar_k_input_name(k, OAR_SCATTER_IDS, 0)), (long long)rows);
}

/* ---- scatter_nd_add: Out = X, then Out[Index[i]] += Updates[i] in order ---------------- */
template <class T>
__global__ void sna_k(const void *ix, bool i64, const T *u, T *o, int64_t m, int64_t slice, NdDims d,
                      unsigned long long *bad)
{
    OAR_CU_LOOP(j, slice) {
        for (int64_t i = 0; i < m; i++) {
            const int64_t off = nd_off(ix, i64, i, d);
            if (off < 0) { if (j == 0) flag_bad(bad, i); continue; }
            o[off * slice + j] += u[i * slice + j];
        }
    }
}

int nd_plan(oar_kernel_ctx_t *k, const oar_tensor_t *it, const oar_tensor_t *xt, NdDims *d)
{
    d->kd = it->ndim ? (int)it->dims[it->ndim - 1] : 0;
    if (it->ndim < 1 || d->kd > xt->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Index's last dim exceeds X's rank");
    for (int i = 0; i < d->kd; i++) d->dims[i] = xt->dims[i];
    return OAR_OK;
}

template <class T>
int sna_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *it, *ut;
    const void *x, *ix, *u;
    OAR_TRY(in_tensor_at(k, OAR_SCATTER_ND_ADD_X, 0, dt, -1, &xt, &x));
    OAR_TRY(index_input(k, OAR_SCATTER_ND_ADD_INDEX, "Index", &it, &ix));
    NdDims d;
    OAR_TRY(nd_plan(k, it, xt, &d));
    const int64_t n = oar_tensor_numel_of(xt), slice = prod(xt->dims, d.kd, xt->ndim);
    const int64_t m = prod(it->dims, 0, it->ndim - 1);
    OAR_TRY(in_tensor_at(k, OAR_SCATTER_ND_ADD_UPDATES, 0, dt, m * slice, &ut, &u));
    void *o;
    OAR_TRY(out_data_at(k, OAR_SCATTER_ND_ADD_OUT, 0, dt, n, &o));
    OAR_TRY(copy_if_apart<T>(k, x, o, n));
    if (m == 0 || slice == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    sna_k<T><<<grid_for(slice), kThreads>>>(ix, it->dtype == OAR_INT64, (const T *)u, (T *)o, m, slice, d, bad.ptr());
    OAR_CU_LAUNCH(k, "scatter_nd_add");
    return bad.report(k, "Index '%s' holds a tuple out of X's range (update)",
                      nm(oar_k_input_name(k, OAR_SCATTER_ND_ADD_INDEX, 0)));
}

/* ---- their grads: X@GRAD = Out@GRAD (scatter: the named rows zeroed); Updates@GRAD[i] =
 * Out@GRAD at update i's row or tuple -------------------------------------------------- */
template <class T>
__global__ void scatter_grad_k(const void *ix, bool i64, const T *g, T *dx, T *du, int64_t m, int64_t slice,
                               bool nd, NdDims d, int64_t rows, unsigned long long *bad)
{
    OAR_CU_LOOP(q, m * slice) {
        const int64_t i = q / slice, j = q % slice;
        int64_t r;
        if (nd) r = nd_off(ix, i64, i, d);
        else { r = idx_at(ix, i64, i); if (r >= rows) r = -1; }
        if (r < 0) { if (j == 0) flag_bad(bad, i); continue; }
        if (du) du[q] = g[r * slice + j];
        if (dx && !nd) dx[r * slice + j] = T(0);
    }
}

template <class T>
int scatter_bwd_common(oar_kernel_ctx_t *k, int dt, bool nd, int s_ids, int s_upd, int s_dout, int s_dx, int s_du)
{
    const oar_tensor_t *it, *ut, *gt;
    const void *ix, *u, *g;
    OAR_TRY(index_input(k, s_ids, nd ? "Index" : "Ids", &it, &ix));
    OAR_TRY(in_tensor_at(k, s_dout, 0, dt, -1, &gt, &g));
    const int64_t n = oar_tensor_numel_of(gt);
    int64_t m, slice, rows = gt->ndim ? gt->dims[0] : 1;
    NdDims d = {};
    if (nd) {
        OAR_TRY(nd_plan(k, it, gt, &d));
        slice = prod(gt->dims, d.kd, gt->ndim);
        m = prod(it->dims, 0, it->ndim - 1);
    } else {
        slice = rows ? n / rows : 0;
        m = oar_tensor_numel_of(it);
    }
    OAR_TRY(in_checked(k, s_upd, "Updates", dt, false, false, &ut, &u));
    if (oar_tensor_numel_of(ut) != m * slice)
        return oar_k_error(k, OAR_ERR_SHAPE, "Updates does not match the indices");
    void *dx, *du;
    OAR_TRY(out_data_opt_at(k, s_dx, 0, dt, n, &dx));
    OAR_TRY(out_data_opt_at(k, s_du, 0, dt, m * slice, &du));
    if (dx) OAR_TRY(copy_if_apart<T>(k, g, dx, n));
    if (m * slice == 0 || (!du && (nd || !dx))) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    scatter_grad_k<T><<<grid_for(m * slice), kThreads>>>(ix, it->dtype == OAR_INT64, (const T *)g, (T *)dx, (T *)du, m,
                                                          slice, nd, d, rows, bad.ptr());
    OAR_CU_LAUNCH(k, "of a scatter grad (scatter_ops.cu)");
    return bad.report(k, "%s '%s' holds an index out of range (update)", nd ? "Index" : "Ids",
                      nm(oar_k_input_name(k, s_ids, 0)));
}

template <class T>
int scatter_bwd(oar_kernel_ctx_t *k, int dt)
{
    return scatter_bwd_common<T>(k, dt, false, OAR_SCATTER_G_IDS, OAR_SCATTER_G_UPDATES, OAR_SCATTER_G_DOUT,
                                 OAR_SCATTER_G_DX, OAR_SCATTER_G_DUPDATES);
}

template <class T>
int sna_bwd(oar_kernel_ctx_t *k, int dt)
{
    return scatter_bwd_common<T>(k, dt, true, OAR_SNA_G_INDEX, OAR_SNA_G_UPDATES, OAR_SNA_G_DOUT, OAR_SNA_G_DX,
                                 OAR_SNA_G_DUPDATES);
}

/* ---- gather_nd: Out[r] = X's slice at Index row r (an empty row: all of X) ------------- */
void gnd_sizes(const oar_tensor_t *xt, const oar_tensor_t *it, NdDims *d, int64_t *rows, int64_t *slice)
{
    d->kd = it->ndim > 0 ? (int)it->dims[it->ndim - 1] : 0;
    *rows = d->kd > 0 ? oar_tensor_numel_of(it) / d->kd : oar_tensor_numel_of(it);
    if (d->kd == 0) {
        *rows = 1;
        for (int i = 0; i < it->ndim - 1; i++) *rows *= it->dims[i];
    }
    for (int i = 0; i < d->kd && i < xt->ndim; i++) d->dims[i] = xt->dims[i];
    *slice = 1;
    for (int i = d->kd; i < xt->ndim; i++) *slice *= xt->dims[i];
}

template <class T>
__global__ void gnd_k(const T *x, const void *ix, bool i64, T *o, int64_t rows, int64_t slice, NdDims d,
                      unsigned long long *bad)
{
    OAR_CU_LOOP(q, rows * slice) {
        const int64_t r = q / slice, off = nd_off(ix, i64, r, d);
        if (off < 0) { if (q % slice == 0) flag_bad(bad, r); o[q] = T(0); continue; }
        o[q] = x[off * slice + q % slice];
    }
}

template <class T>
__global__ void gnd_grad_k(const void *ix, bool i64, const T *g, T *dx, int64_t rows, int64_t slice, NdDims d,
                           unsigned long long *bad)
{
    OAR_CU_LOOP(j, slice) {
        for (int64_t r = 0; r < rows; r++) {
            const int64_t off = nd_off(ix, i64, r, d);
            if (off < 0) { if (j == 0) flag_bad(bad, r); continue; }
            dx[off * slice + j] += g[r * slice + j];
        }
    }
}

int gnd_report(oar_kernel_ctx_t *k, BadFlag &bad)
{
    return bad.report(k, "Index '%s' holds an entry out of X's range (index row)",
                      nm(oar_k_input_name(k, OAR_GND_INDEX, 0)));
}

template <class T>
int gnd_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *it;
    const void *x, *ix;
    OAR_TRY(in_tensor_at(k, OAR_GND_X, 0, dt, -1, &xt, &x));
    OAR_TRY(index_input(k, OAR_GND_INDEX, "Index", &it, &ix));
    NdDims d;
    int64_t rows, slice;
    gnd_sizes(xt, it, &d, &rows, &slice);
    if (d.kd > xt->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Index's last dim exceeds X's rank");
    void *o;
    OAR_TRY(out_data_at(k, OAR_GND_OUT, 0, dt, rows * slice, &o));
    if (rows * slice == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    gnd_k<T><<<grid_for(rows * slice), kThreads>>>((const T *)x, ix, it->dtype == OAR_INT64, (T *)o, rows, slice, d,
                                                    bad.ptr());
    OAR_CU_LAUNCH(k, "gather_nd");
    return gnd_report(k, bad);
}

template <class T>
__global__ void zero_k(T *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = T(0);
}

template <class T>
int gnd_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *it, *gt;
    const void *x, *ix, *g;
    OAR_TRY(in_checked(k, OAR_GND_X, "X", dt, false, false, &xt, &x));
    OAR_TRY(index_input(k, OAR_GND_INDEX, "Index", &it, &ix));
    NdDims d;
    int64_t rows, slice;
    gnd_sizes(xt, it, &d, &rows, &slice);
    if (d.kd > xt->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Index's last dim exceeds X's rank");
    OAR_TRY(in_tensor_at(k, OAR_GND_DOUT, 0, dt, rows * slice, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_GND_DX, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    zero_k<T><<<grid_for(n), kThreads>>>((T *)dx, n);
    OAR_CU_LAUNCH(k, "gather_nd_grad");
    if (rows * slice == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    gnd_grad_k<T><<<grid_for(slice), kThreads>>>(ix, it->dtype == OAR_INT64, (const T *)g, (T *)dx, rows, slice, d,
                                                  bad.ptr());
    OAR_CU_LAUNCH(k, "gather_nd_grad");
    return gnd_report(k, bad);
}

#define REG_T(OPNAME, FN, SFX, T, DT)                                                     \
    int FN##_##SFX(oar_kernel_ctx_t *k) { return FN<T>(k, DT); }                          \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, DT, FN##_##SFX)
#define REG_ALL(OPNAME, FN)                                                               \
    REG_T(OPNAME, FN, f32, float, OAR_FP32)                                               \
    REG_T(OPNAME, FN, f64, double, OAR_FP64)                                              \
    REG_T(OPNAME, FN, i32, int32_t, OAR_INT32)                                            \
    REG_T(OPNAME, FN, i64, int64_t, OAR_INT64)
#define REG_FLOAT(OPNAME, FN)                                                             \
    REG_T(OPNAME, FN, f32, float, OAR_FP32)                                               \
    REG_T(OPNAME, FN, f64, double, OAR_FP64)

REG_ALL("scatter", scatter_fwd)
REG_FLOAT("scatter_grad", scatter_bwd)
REG_ALL("scatter_nd_add", sna_fwd)
REG_FLOAT("scatter_nd_add_grad", sna_bwd)
REG_ALL("gather_nd", gnd_fwd)
REG_FLOAT("gather_nd_grad", gnd_bwd)

}  // namespace
