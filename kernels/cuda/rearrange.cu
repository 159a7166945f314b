/*
 * rearrange.cu — CUDA kernels of flip, roll, tril_triu, expand_as and
 * unstack and their grads, with the CPU kernels' index rules
 * (kernels/cpu/rearrange.c).
 *
 * The ops that only move elements (flip, roll, tril_triu, unstack) copy
 * 4- or 8-byte words, so one kernel serves float32, float64, int32 and
 * int64, the dtypes the CPU kernels have (flip's bool stays on the CPU).
 * flip and roll map each output element to its source by a per-dim offset
 * or mirror (a struct of OAR_MAX_DIMS entries passed by value). expand_as's
 * grad gives each X element the sum of Out@GRAD over its repeats, one
 * thread per X element, walking the repeats in row-major order: the same
 * order of additions as the CPU loop, so the same bits.
 */
#include <stdint.h>
#include "cuda_common.h"
extern "C" {
#include "ops/rearrange.h"
}

using namespace oarcu;

namespace {

/* ---- flip, roll: Out[idx] = X[src(idx)] ----------------------------------------- */
struct Perm {
    int nd;
    int64_t dims[OAR_MAX_DIMS], off[OAR_MAX_DIMS];
    bool rev[OAR_MAX_DIMS];
};

template <class W>
__global__ void perm_k(const W *x, W *o, int64_t n, Perm p)
{
    OAR_CU_LOOP(q, n) {
        int64_t r = q, s = 0, st = 1;
        for (int d = p.nd - 1; d >= 0; d--) {
            const int64_t i = r % p.dims[d];
            r /= p.dims[d];
            const int64_t j = p.rev[d] ? p.dims[d] - 1 - i : (i + p.off[d]) % p.dims[d];
            s += j * st;
            st *= p.dims[d];
        }
        o[q] = x[s];
    }
}

/* the word type of a dtype that only moves (4 or 8 bytes) */
int perm_run(oar_kernel_ctx_t *k, int dt, const void *x, void *o, int64_t n, const Perm &p, bool wide)
{
    (void)dt;
    if (n == 0) return OAR_OK;
    if (wide) perm_k<uint64_t><<<grid_for(n), kThreads>>>((const uint64_t *)x, (uint64_t *)o, n, p);
    else perm_k<uint32_t><<<grid_for(n), kThreads>>>((const uint32_t *)x, (uint32_t *)o, n, p);
    OAR_CU_LAUNCH(k, "of flip or roll (rearrange.cu)");
    return OAR_OK;
}

bool wide_of(int dt) { return oar_dtype_size(dt) == 8; }

int flip_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_flip_attrs_t *a = (const oar_flip_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_FLIP_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    void *o;
    OAR_TRY(out_data_at(k, OAR_FLIP_OUT, 0, dt, n, &o));
    Perm p = {};
    p.nd = xt->ndim > 0 ? xt->ndim : 1;
    for (int i = 0; i < p.nd; i++) p.dims[i] = xt->ndim > 0 ? xt->dims[i] : 1;
    for (int i = 0; i < a->dims.n; i++) {
        const int d = a->dims.v[i] < 0 ? a->dims.v[i] + xt->ndim : a->dims.v[i];
        if (d < 0 || d >= xt->ndim) return oar_k_error(k, OAR_ERR_RANGE, "dims[%d] = %d out of range", i, a->dims.v[i]);
        p.rev[d] = true;
    }
    return perm_run(k, dt, x, o, n, p, wide_of(dt));
}

/* Out[.., i, ..] = X[.., (i - shift) mod n, ..]; sign -1 rolls back (the grad) */
int roll_run(oar_kernel_ctx_t *k, int dt, int xs, int os, int sign)
{
    const oar_roll_attrs_t *a = (const oar_roll_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, xs, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    void *o;
    OAR_TRY(out_data_at(k, os, 0, dt, n, &o));
    Perm p = {};
    if (a->dims.n == 0) {   /* rolled as one flat list */
        if (a->shifts.n != 1) return oar_k_error(k, OAR_ERR_INVALID, "shifts must have one value when dims is empty");
        p.nd = 1;
        p.dims[0] = n;
    } else {
        if (a->shifts.n != a->dims.n) return oar_k_error(k, OAR_ERR_INVALID, "shifts and dims differ in length");
        p.nd = xt->ndim;
        for (int i = 0; i < p.nd; i++) p.dims[i] = xt->dims[i];
    }
    for (int i = 0; i < a->shifts.n; i++) {
        int d = 0;
        if (a->dims.n > 0) {
            d = (int)(a->dims.v[i] < 0 ? a->dims.v[i] + p.nd : a->dims.v[i]);
            if (d < 0 || d >= p.nd) return oar_k_error(k, OAR_ERR_RANGE, "dims[%d] out of range", i);
        }
        if (p.dims[d] == 0) continue;
        const int64_t s = (-sign * a->shifts.v[i]) % p.dims[d];
        p.off[d] = ((p.off[d] + s) % p.dims[d] + p.dims[d]) % p.dims[d];
    }
    return perm_run(k, dt, x, o, n, p, wide_of(dt));
}

int roll_fwd(oar_kernel_ctx_t *k, int dt) { return roll_run(k, dt, OAR_ROLL_X, OAR_ROLL_OUT, 1); }

int roll_bwd(oar_kernel_ctx_t *k, int dt)
{
    if (!oar_k_output(k, OAR_ROLL_G_DX, 0)) return OAR_OK;
    return roll_run(k, dt, OAR_ROLL_G_DOUT, OAR_ROLL_G_DX, -1);
}

/* ---- tril_triu ------------------------------------------------------------------- */
template <class W>
__global__ void tt_k(const W *x, W *o, int64_t n, int64_t h, int64_t w, int diagonal, bool lower)
{
    OAR_CU_LOOP(p, n) {
        const int64_t c = p % w, r = (p / w) % h, dlt = c - r;
        const bool keep = lower ? dlt <= diagonal : dlt >= diagonal;
        o[p] = keep ? x[p] : W(0);
    }
}

int tt_run(oar_kernel_ctx_t *k, int dt, int xs, int os)
{
    const oar_tt_attrs_t *a = (const oar_tt_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, xs, 0, dt, -1, &xt, &x));
    const int nd = xt->ndim;
    if (nd < 2) return oar_k_error(k, OAR_ERR_SHAPE, "the input must be at least 2-D");
    const int64_t n = oar_tensor_numel_of(xt), h = xt->dims[nd - 2], w = xt->dims[nd - 1];
    void *o;
    OAR_TRY(out_data_at(k, os, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    if (wide_of(dt))
        tt_k<uint64_t><<<grid_for(n), kThreads>>>((const uint64_t *)x, (uint64_t *)o, n, h, w, a->diagonal, a->lower);
    else
        tt_k<uint32_t><<<grid_for(n), kThreads>>>((const uint32_t *)x, (uint32_t *)o, n, h, w, a->diagonal, a->lower);
    OAR_CU_LAUNCH(k, "tril_triu");
    return OAR_OK;
}

int tt_fwd(oar_kernel_ctx_t *k, int dt) { return tt_run(k, dt, OAR_TT_X, OAR_TT_OUT); }

int tt_bwd(oar_kernel_ctx_t *k, int dt)
{
    if (!oar_k_output(k, OAR_TT_G_DX, 0)) return OAR_OK;
    return tt_run(k, dt, OAR_TT_G_DOUT, OAR_TT_G_DX);
}

/* ---- expand_as --------------------------------------------------------------------- */
struct Tile {
    int nd;
    int64_t xd[OAR_MAX_DIMS], od[OAR_MAX_DIMS];
};

int tile_of(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *o, Tile *t)
{
    if (o->ndim != x->ndim) return oar_k_error(k, OAR_ERR_SHAPE, "Out's rank differs from X's");
    t->nd = x->ndim;
    for (int i = 0; i < x->ndim; i++) {
        if (x->dims[i] == 0 ? o->dims[i] != 0 : o->dims[i] % x->dims[i] != 0)
            return oar_k_error(k, OAR_ERR_SHAPE, "dim %d of the target (%lld) is not a multiple of X's (%lld)", i,
                               (long long)o->dims[i], (long long)x->dims[i]);
        t->xd[i] = x->dims[i];
        t->od[i] = o->dims[i];
    }
    return OAR_OK;
}

template <class W>
__global__ void expand_k(const W *x, W *o, int64_t n, Tile t)
{
    OAR_CU_LOOP(q, n) {
        int64_t r = q, s = 0, st = 1;
        for (int d = t.nd - 1; d >= 0; d--) {
            s += (r % t.od[d]) % t.xd[d] * st;
            r /= t.od[d];
            st *= t.xd[d];
        }
        o[q] = x[s];
    }
}

int expand_as_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_EXPAND_AS_X, 0, dt, -1, &xt, &x));
    const oar_tensor_t *ot = oar_k_output(k, OAR_EXPAND_AS_OUT, 0);
    if (!ot) return oar_k_error(k, OAR_ERR_INVALID, "no output Out");
    Tile t;
    OAR_TRY(tile_of(k, xt, ot, &t));
    const int64_t n = oar_tensor_numel_of(ot);
    void *o;
    OAR_TRY(out_data_at(k, OAR_EXPAND_AS_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    if (wide_of(dt)) expand_k<uint64_t><<<grid_for(n), kThreads>>>((const uint64_t *)x, (uint64_t *)o, n, t);
    else expand_k<uint32_t><<<grid_for(n), kThreads>>>((const uint32_t *)x, (uint32_t *)o, n, t);
    OAR_CU_LAUNCH(k, "expand_as");
    return OAR_OK;
}

/* X@GRAD[s] = the sum of Out@GRAD over s's repeats, in row-major order */
template <class T>
__global__ void expand_grad_k(const T *g, T *dx, int64_t nx, int64_t reps, Tile t)
{
    OAR_CU_LOOP(s, nx) {
        int64_t xi[OAR_MAX_DIMS];
        int64_t r = s;
        for (int d = t.nd - 1; d >= 0; d--) { xi[d] = r % t.xd[d]; r /= t.xd[d]; }
        T acc = T(0);
        for (int64_t rep = 0; rep < reps; rep++) {
            /* rep's row-major digits over the repeat counts od / xd */
            int64_t rr = rep, q = 0, st = 1;
            for (int d = t.nd - 1; d >= 0; d--) {
                const int64_t times = t.od[d] / t.xd[d];
                q += ((rr % times) * t.xd[d] + xi[d]) * st;
                rr /= times;
                st *= t.od[d];
            }
            acc += g[q];
        }
        dx[s] = acc;
    }
}

template <class T>
int expand_as_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *gt;
    const void *x, *g;
    OAR_TRY(in_checked(k, OAR_EXPAND_AS_GRAD_X, "X", dt, false, false, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_EXPAND_AS_GRAD_DOUT, 0, dt, -1, &gt, &g));
    const int64_t nx = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_EXPAND_AS_GRAD_DX, 0, dt, nx, &dx));
    if (!dx) return OAR_OK;
    Tile t;
    OAR_TRY(tile_of(k, xt, gt, &t));
    if (nx == 0) return OAR_OK;
    const int64_t reps = oar_tensor_numel_of(gt) / nx;
    expand_grad_k<T><<<grid_for(nx), kThreads>>>((const T *)g, (T *)dx, nx, reps, t);
    OAR_CU_LAUNCH(k, "expand_as_grad");
    return OAR_OK;
}

/* ---- unstack: Y[i] = X[:, i, :] ------------------------------------------------------ */
/* dst rows [pre, row words] from src rows at stride `sstride` words (src NULL: zeros) */
template <class W>
__global__ void rows_k(const W *src, W *dst, int64_t pre, int64_t row, int64_t sstride, int64_t dstride)
{
    OAR_CU_LOOP(q, pre * row) {
        const int64_t p = q / row, j = q % row;
        dst[p * dstride + j] = src ? src[p * sstride + j] : W(0);
    }
}

int rows_copy(oar_kernel_ctx_t *k, int dt, const void *src, void *dst, int64_t pre, int64_t row, int64_t sstride,
              int64_t dstride)
{
    if (pre * row == 0) return OAR_OK;
    if (wide_of(dt))
        rows_k<uint64_t><<<grid_for(pre * row), kThreads>>>((const uint64_t *)src, (uint64_t *)dst, pre, row, sstride,
                                                            dstride);
    else
        rows_k<uint32_t><<<grid_for(pre * row), kThreads>>>((const uint32_t *)src, (uint32_t *)dst, pre, row, sstride,
                                                            dstride);
    OAR_CU_LAUNCH(k, "of unstack (rearrange.cu)");
    return OAR_OK;
}

int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

int unstack_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_unstack_attrs_t *a = (const oar_unstack_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_UNSTACK_X, 0, dt, -1, &xt, &x));
    const int nd = xt->ndim, ax = a->axis < 0 ? a->axis + nd : a->axis;
    if (ax < 0 || ax >= nd || xt->dims[ax] != a->num || oar_k_nout(k, OAR_UNSTACK_Y) != a->num)
        return oar_k_error(k, OAR_ERR_SHAPE, "X's dim %d is not num %d", a->axis, a->num);
    const int64_t pre = prod(xt->dims, 0, ax), n = xt->dims[ax], post = prod(xt->dims, ax + 1, nd);
    const size_t esz = oar_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        if (!oar_k_output(k, OAR_UNSTACK_Y, (int)i)) continue;
        void *y;
        OAR_TRY(out_data_at(k, OAR_UNSTACK_Y, (int)i, dt, pre * post, &y));
        OAR_TRY(rows_copy(k, dt, (const char *)x + (size_t)(i * post) * esz, y, pre, post, n * post, post));
    }
    return OAR_OK;
}

/* X@GRAD[:, i, :] = Y@GRAD[i]; a Y no loss reached has a zero gradient */
int unstack_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *dxt = oar_k_output(k, OAR_UNSTACK_G_DX, 0);
    if (!dxt) return OAR_OK;
    const oar_unstack_attrs_t *a = (const oar_unstack_attrs_t *)oar_k_attrs(k);
    const int nd = dxt->ndim, ax = a->axis < 0 ? a->axis + nd : a->axis;
    const int64_t pre = prod(dxt->dims, 0, ax), n = dxt->dims[ax], post = prod(dxt->dims, ax + 1, nd);
    const size_t esz = oar_dtype_size(dt);
    void *dx;
    OAR_TRY(out_data_at(k, OAR_UNSTACK_G_DX, 0, dt, pre * n * post, &dx));
    for (int64_t i = 0; i < n; i++) {
        const oar_tensor_t *g = i < oar_k_nin(k, OAR_UNSTACK_G_DY) ? oar_k_input(k, OAR_UNSTACK_G_DY, (int)i) : nullptr;
        const void *gd = nullptr;
        if (g && oar_tensor_has_data(g)) OAR_TRY(in_tensor_at(k, OAR_UNSTACK_G_DY, (int)i, dt, pre * post, &g, &gd));
        OAR_TRY(rows_copy(k, dt, gd, (char *)dx + (size_t)(i * post) * esz, pre, post, post, n * post));
    }
    return OAR_OK;
}

/* the movers: float32, float64, int32, int64 (one word kernel per width) */
#define MOVE_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN(k, OAR_FP32); }                         \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN(k, OAR_FP64); }                         \
    int FN##_i32(oar_kernel_ctx_t *k) { return FN(k, OAR_INT32); }                        \
    int FN##_i64(oar_kernel_ctx_t *k) { return FN(k, OAR_INT64); }                        \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_INT32, FN##_i32)                      \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_INT64, FN##_i64)

MOVE_REG("flip", flip_fwd)
MOVE_REG("roll", roll_fwd)
MOVE_REG("roll_grad", roll_bwd)
MOVE_REG("tril_triu", tt_fwd)
MOVE_REG("tril_triu_grad", tt_bwd)
MOVE_REG("expand_as", expand_as_fwd)
MOVE_REG("unstack", unstack_fwd)
MOVE_REG("unstack_grad", unstack_bwd)

int expand_as_bwd_f32(oar_kernel_ctx_t *k) { return expand_as_bwd<float>(k, OAR_FP32); }
int expand_as_bwd_f64(oar_kernel_ctx_t *k) { return expand_as_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("expand_as_grad", OAR_PLACE_CUDA, OAR_FP32, expand_as_bwd_f32)
OAR_REGISTER_KERNEL("expand_as_grad", OAR_PLACE_CUDA, OAR_FP64, expand_as_bwd_f64)

}  // namespace
