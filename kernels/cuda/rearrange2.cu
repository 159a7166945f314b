/*
 * rearrange2.cu — CUDA kernels of cross, meshgrid and index_sample and
 * their grads, with the CPU kernels' index rules (kernels/cpu/
 * rearrange2.c).
 *
 * cross works on the 3-vectors along its dim, one thread per vector
 * (float32, float64, int32, int64, as the CPU). meshgrid's outputs copy
 * 4- or 8-byte words (every dtype the CPU has); its grad sums each Out@GRAD
 * over the grid positions of an X element, one thread per element, in
 * increasing position order, as the CPU loop adds. index_sample gathers
 * one element per (row, index) and checks the index inside the kernel
 * (BadFlag: the error names the first bad position); its grad adds each
 * Out@GRAD into its row with one thread per X@GRAD row, walking the
 * row's indices in order (no atomics, the CPU's order).
 */
#include <stdint.h>
#include "cuda_common.h"
extern "C" {
#include "ops/rearrange2.h"
}

using namespace oarcu;

namespace {

int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

bool wide_of(int dt) { return oar_dtype_size(dt) == 8; }

/* ---- cross ------------------------------------------------------------------------- */
/* the dim the 3-vectors lie along: attr dim, or the first of size 3 (dim 9) */
int cross_dim(oar_kernel_ctx_t *k, int dim, const oar_tensor_t *x, int *d)
{
    *d = -1;
    if (dim == 9) {
        for (int i = 0; i < x->ndim && *d < 0; i++)
            if (x->dims[i] == 3) *d = i;
    } else {
        *d = dim < 0 ? dim + x->ndim : dim;
    }
    if (*d < 0 || *d >= x->ndim || x->dims[*d] != 3)
        return oar_k_error(k, OAR_ERR_SHAPE, "no dim of size 3 at dim %d for the cross product", dim);
    return OAR_OK;
}

/* o = a x b over the 3-vectors (stride post) */
template <class T>
__global__ void cross3_k(const T *a, const T *b, T *o, int64_t pre, int64_t post)
{
    OAR_CU_LOOP(v, pre * post) {
        const int64_t i0 = (v / post) * 3 * post + v % post, i1 = i0 + post, i2 = i1 + post;
        const T x0 = a[i0], x1 = a[i1], x2 = a[i2], y0 = b[i0], y1 = b[i1], y2 = b[i2];
        o[i0] = x1 * y2 - x2 * y1;
        o[i1] = x2 * y0 - x0 * y2;
        o[i2] = x0 * y1 - x1 * y0;
    }
}

template <class T>
int cross_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_cross_attrs_t *a = (const oar_cross_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_CROSS_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_CROSS_Y, 0, dt, n, &yt, &y));
    int d;
    OAR_TRY(cross_dim(k, a->dim, xt, &d));
    void *o;
    OAR_TRY(out_data_at(k, OAR_CROSS_OUT, 0, dt, n, &o));
    const int64_t pre = prod(xt->dims, 0, d), post = prod(xt->dims, d + 1, xt->ndim);
    if (pre * post == 0) return OAR_OK;
    cross3_k<T><<<grid_for(pre * post), kThreads>>>((const T *)x, (const T *)y, (T *)o, pre, post);
    OAR_CU_LAUNCH(k, "cross");
    return OAR_OK;
}

template <class T>
int cross_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_cross_attrs_t *a = (const oar_cross_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *yt, *gt;
    const void *x, *y, *g;
    OAR_TRY(in_tensor_at(k, OAR_CROSS_G_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_CROSS_G_Y, 0, dt, n, &yt, &y));
    OAR_TRY(in_tensor_at(k, OAR_CROSS_G_DOUT, 0, dt, n, &gt, &g));
    int d;
    OAR_TRY(cross_dim(k, a->dim, xt, &d));
    const int64_t pre = prod(xt->dims, 0, d), post = prod(xt->dims, d + 1, xt->ndim);
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_CROSS_G_DX, 0, dt, n, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_CROSS_G_DY, 0, dt, n, &dy));
    if (pre * post == 0) return OAR_OK;
    /* d<g, x × y>/dx = y × g, /dy = g × x */
    if (dx) {
        cross3_k<T><<<grid_for(pre * post), kThreads>>>((const T *)y, (const T *)g, (T *)dx, pre, post);
        OAR_CU_LAUNCH(k, "cross_grad");
    }
    if (dy) {
        cross3_k<T><<<grid_for(pre * post), kThreads>>>((const T *)g, (const T *)x, (T *)dy, pre, post);
        OAR_CU_LAUNCH(k, "cross_grad");
    }
    return OAR_OK;
}

/* ---- meshgrid: Out[i][p] = X[i][(p / st[i]) % g[i]] ------------------------------------ */
template <class W>
__global__ void mesh_k(const W *x, W *o, int64_t total, int64_t st, int64_t g)
{
    OAR_CU_LOOP(p, total) o[p] = x[(p / st) % g];
}

/* the grid: g[i] = |X[i]|, st its row-major strides; returns the input count */
int mesh_grid(oar_kernel_ctx_t *k, int slot, int64_t *g, int64_t *st, int64_t *total)
{
    const int n = oar_k_nin(k, slot);
    if (n < 1 || n > OAR_MAX_DIMS) return oar_k_error(k, OAR_ERR_SHAPE, "X has %d tensors", n);
    for (int i = 0; i < n; i++) {
        const oar_tensor_t *x = oar_k_input(k, slot, i);
        if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X[%d] has no value", i);
        g[i] = oar_tensor_numel_of(x);
    }
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) { st[i] = s; s *= g[i]; }
    *total = s;
    return n;
}

int meshgrid_fwd(oar_kernel_ctx_t *k, int dt)
{
    int64_t g[OAR_MAX_DIMS], st[OAR_MAX_DIMS], total;
    const int n = mesh_grid(k, OAR_MESHGRID_X, g, st, &total);
    if (n < 0) return n;
    if (oar_k_nout(k, OAR_MESHGRID_OUT) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "X has %d tensors and Out %d outputs", n, oar_k_nout(k, OAR_MESHGRID_OUT));
    for (int i = 0; i < n; i++) {
        if (!oar_k_output(k, OAR_MESHGRID_OUT, i)) continue;
        const oar_tensor_t *xt;
        const void *x;
        OAR_TRY(in_tensor_at(k, OAR_MESHGRID_X, i, dt, -1, &xt, &x));
        void *o;
        OAR_TRY(out_data_at(k, OAR_MESHGRID_OUT, i, dt, total, &o));
        if (total == 0) continue;
        if (wide_of(dt)) mesh_k<uint64_t><<<grid_for(total), kThreads>>>((const uint64_t *)x, (uint64_t *)o, total, st[i], g[i]);
        else mesh_k<uint32_t><<<grid_for(total), kThreads>>>((const uint32_t *)x, (uint32_t *)o, total, st[i], g[i]);
        OAR_CU_LAUNCH(k, "meshgrid");
    }
    return OAR_OK;
}

/* X@GRAD[i][j] = the sum of Out@GRAD[i] over positions p with (p / st) % g == j,
 * in increasing p: p = (a g + j) st + b for a < total / (g st), b < st */
template <class T>
__global__ void mesh_grad_k(const T *go, T *dx, int64_t total, int64_t st, int64_t g)
{
    OAR_CU_LOOP(j, g) {
        const int64_t outer = total / (g * st);
        T s = T(0);
        for (int64_t a = 0; a < outer; a++)
            for (int64_t b = 0; b < st; b++) s += go[(a * g + j) * st + b];
        dx[j] = s;
    }
}

template <class T>
int meshgrid_bwd(oar_kernel_ctx_t *k, int dt)
{
    int64_t g[OAR_MAX_DIMS], st[OAR_MAX_DIMS], total;
    const int n = mesh_grid(k, OAR_MESHGRID_GRAD_X, g, st, &total);
    if (n < 0) return n;
    for (int i = 0; i < n && i < oar_k_nout(k, OAR_MESHGRID_GRAD_DX); i++) {
        if (!oar_k_output(k, OAR_MESHGRID_GRAD_DX, i)) continue;
        void *dx;
        OAR_TRY(out_data_at(k, OAR_MESHGRID_GRAD_DX, i, dt, g[i], &dx));
        if (g[i] == 0) continue;
        const oar_tensor_t *gt = i < oar_k_nin(k, OAR_MESHGRID_GRAD_DOUT) ? oar_k_input(k, OAR_MESHGRID_GRAD_DOUT, i)
                                                                           : nullptr;
        const void *gd = nullptr;
        /* an Out no loss reached: a zero gradient */
        if (gt && oar_tensor_has_data(gt)) OAR_TRY(in_tensor_at(k, OAR_MESHGRID_GRAD_DOUT, i, dt, total, &gt, &gd));
        /* with no Out@GRAD the walk is empty (total 0): zeros */
        mesh_grad_k<T><<<grid_for(g[i]), kThreads>>>((const T *)gd, (T *)dx, gd ? total : 0, st[i], g[i]);
        OAR_CU_LAUNCH(k, "meshgrid_grad");
    }
    return OAR_OK;
}

/* ---- index_sample: Out[r, j] = X[r, Index[r, j]] ---------------------------------------- */
template <class I>
__device__ inline int64_t idx_of(const void *ix, int64_t q)
{
    return (int64_t)((const I *)ix)[q];
}

template <class W>
__global__ void index_sample_k(const W *x, const void *ix, bool i64, W *o, int64_t b, int64_t kk, int64_t n,
                               unsigned long long *bad)
{
    OAR_CU_LOOP(q, b * kk) {
        const int64_t c = i64 ? idx_of<int64_t>(ix, q) : idx_of<int32_t>(ix, q);
        if (c < 0 || c >= n) { flag_bad(bad, q); o[q] = W(0); continue; }
        o[q] = x[(q / kk) * n + c];
    }
}

template <class T>
__global__ void index_sample_grad_k(const void *ix, bool i64, const T *g, T *dx, int64_t b, int64_t kk, int64_t n,
                                    unsigned long long *bad)
{
    OAR_CU_LOOP(r, b) {
        for (int64_t c = 0; c < n; c++) dx[r * n + c] = T(0);
        for (int64_t j = 0; j < kk; j++) {
            const int64_t q = r * kk + j, c = i64 ? idx_of<int64_t>(ix, q) : idx_of<int32_t>(ix, q);
            if (c < 0 || c >= n) { flag_bad(bad, q); continue; }
            dx[r * n + c] += g[q];
        }
    }
}

int index_prepare(oar_kernel_ctx_t *k, int xs, int is, int dt, const oar_tensor_t **xt, const void **x,
                  const oar_tensor_t **it, const void **ix, bool need_x)
{
    if (need_x) OAR_TRY(in_tensor_at(k, xs, 0, dt, -1, xt, x));
    else OAR_TRY(in_checked(k, xs, "X", dt, false, false, xt, x));
    OAR_TRY(in_tensor_at(k, is, 0, -1, -1, it, ix));
    if ((*it)->dtype != OAR_INT32 && (*it)->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "Index '%s' is %s; it must be int32 or int64",
                           nm(oar_k_input_name(k, is, 0)), nm(oar_dtype_name((*it)->dtype)));
    if ((*xt)->ndim != 2 || (*it)->ndim != 2 || (*xt)->dims[0] != (*it)->dims[0])
        return oar_k_error(k, OAR_ERR_SHAPE, "X and Index must be 2-D with one row count");
    return OAR_OK;
}

int index_report(oar_kernel_ctx_t *k, BadFlag &bad, int is, int64_t n)
{
    return bad.report(k, "Index '%s' holds a value out of range [0, %lld) (element)", nm(oar_k_input_name(k, is, 0)),
                      (long long)n);
}

int index_sample_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *it;
    const void *x, *ix;
    OAR_TRY(index_prepare(k, OAR_INDEX_SAMPLE_X, OAR_INDEX_SAMPLE_INDEX, dt, &xt, &x, &it, &ix, true));
    const int64_t b = it->dims[0], kk = it->dims[1], n = xt->dims[1];
    void *o;
    OAR_TRY(out_data_at(k, OAR_INDEX_SAMPLE_OUT, 0, dt, b * kk, &o));
    if (b * kk == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    const bool i64 = it->dtype == OAR_INT64;
    if (wide_of(dt))
        index_sample_k<uint64_t><<<grid_for(b * kk), kThreads>>>((const uint64_t *)x, ix, i64, (uint64_t *)o, b, kk, n,
                                                                 bad.ptr());
    else
        index_sample_k<uint32_t><<<grid_for(b * kk), kThreads>>>((const uint32_t *)x, ix, i64, (uint32_t *)o, b, kk, n,
                                                                 bad.ptr());
    OAR_CU_LAUNCH(k, "index_sample");
    return index_report(k, bad, OAR_INDEX_SAMPLE_INDEX, n);
}

template <class T>
int index_sample_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *it, *gt;
    const void *x, *ix, *g;
    OAR_TRY(index_prepare(k, OAR_INDEX_SAMPLE_GRAD_X, OAR_INDEX_SAMPLE_GRAD_INDEX, dt, &xt, &x, &it, &ix, false));
    const int64_t b = it->dims[0], kk = it->dims[1], n = xt->dims[1];
    OAR_TRY(in_tensor_at(k, OAR_INDEX_SAMPLE_GRAD_DOUT, 0, dt, b * kk, &gt, &g));
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_INDEX_SAMPLE_GRAD_DX, 0, dt, b * n, &dx));
    if (!dx || b * n == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    index_sample_grad_k<T><<<grid_for(b), kThreads>>>(ix, it->dtype == OAR_INT64, (const T *)g, (T *)dx, b, kk, n,
                                                       bad.ptr());
    OAR_CU_LAUNCH(k, "index_sample_grad");
    return index_report(k, bad, OAR_INDEX_SAMPLE_GRAD_INDEX, n);
}

#define REG_T(OPNAME, FN, SFX, T, DT)                                                     \
    int FN##_##SFX(oar_kernel_ctx_t *k) { return FN<T>(k, DT); }                          \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, DT, FN##_##SFX)
#define REG_W(OPNAME, FN, SFX, DT)                                                        \
    int FN##_##SFX(oar_kernel_ctx_t *k) { return FN(k, DT); }                             \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, DT, FN##_##SFX)

REG_T("cross", cross_fwd, f32, float, OAR_FP32)
REG_T("cross", cross_fwd, f64, double, OAR_FP64)
REG_T("cross", cross_fwd, i32, int32_t, OAR_INT32)
REG_T("cross", cross_fwd, i64, int64_t, OAR_INT64)
REG_T("cross_grad", cross_bwd, f32, float, OAR_FP32)
REG_T("cross_grad", cross_bwd, f64, double, OAR_FP64)
REG_T("cross_grad", cross_bwd, i32, int32_t, OAR_INT32)
REG_T("cross_grad", cross_bwd, i64, int64_t, OAR_INT64)
REG_W("meshgrid", meshgrid_fwd, f32, OAR_FP32)
REG_W("meshgrid", meshgrid_fwd, f64, OAR_FP64)
REG_W("meshgrid", meshgrid_fwd, i32, OAR_INT32)
REG_W("meshgrid", meshgrid_fwd, i64, OAR_INT64)
REG_T("meshgrid_grad", meshgrid_bwd, f32, float, OAR_FP32)
REG_T("meshgrid_grad", meshgrid_bwd, f64, double, OAR_FP64)
REG_W("index_sample", index_sample_fwd, f32, OAR_FP32)
REG_W("index_sample", index_sample_fwd, f64, OAR_FP64)
REG_W("index_sample", index_sample_fwd, i32, OAR_INT32)
REG_W("index_sample", index_sample_fwd, i64, OAR_INT64)
REG_T("index_sample_grad", index_sample_bwd, f32, float, OAR_FP32)
REG_T("index_sample_grad", index_sample_bwd, f64, double, OAR_FP64)

}  // namespace
