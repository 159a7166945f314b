/*
 * kron_trace.cu — CUDA kernels of kron and trace and their grads, with the
 * CPU kernels' index rules (kernels/cpu/rearrange.c): kron for float32,
 * float64, int32 and int64 (its grad and trace for float32 and float64).
 *
 * trace sums each diagonal with one thread per Out element, in the CPU's
 * order. kron's grads give each X (Y) element the sum over every Y (X)
 * element, one thread per element, walking the other operand in order:
 * the CPU adds Out@GRAD position by position, which for one X element is
 * the same order, so the results are the CPU's bits (no atomics).
 */
#include "cuda_common.h"
extern "C" {
#include "ops/rearrange.h"
}

using namespace oarcu;

namespace {

/* ---- trace ---------------------------------------------------------------------------- */
/* for each Out element (the other dims, row-major) the first diagonal
 * element's offset; the diagonal's length and step */
struct Walk {
    int nrest;
    int64_t rest[OAR_MAX_DIMS], rstride[OAR_MAX_DIMS], len, step, start, n;
};

int trace_walk(oar_kernel_ctx_t *k, const oar_tensor_t *x, Walk *w)
{
    const oar_trace_attrs_t *a = (const oar_trace_attrs_t *)oar_k_attrs(k);
    const int nd = x->ndim;
    const int a1 = a->axis1 < 0 ? a->axis1 + nd : a->axis1, a2 = a->axis2 < 0 ? a->axis2 + nd : a->axis2;
    if (nd < 2 || a1 < 0 || a1 >= nd || a2 < 0 || a2 >= nd || a1 == a2)
        return oar_k_error(k, OAR_ERR_RANGE, "axis1 %d and axis2 %d do not name two dims of Input", a->axis1, a->axis2);
    int64_t st[OAR_MAX_DIMS], s = 1;
    for (int i = nd - 1; i >= 0; i--) { st[i] = s; s *= x->dims[i]; }
    const int64_t i0 = a->offset < 0 ? -(int64_t)a->offset : 0, j0 = a->offset > 0 ? a->offset : 0;
    const int64_t l1 = x->dims[a1] - i0, l2 = x->dims[a2] - j0;
    w->len = l1 < l2 ? l1 : l2;
    if (w->len < 0) w->len = 0;
    w->step = st[a1] + st[a2];
    w->start = i0 * st[a1] + j0 * st[a2];
    w->nrest = 0;
    w->n = 1;
    for (int i = 0; i < nd; i++)
        if (i != a1 && i != a2) { w->rest[w->nrest] = x->dims[i]; w->rstride[w->nrest++] = st[i]; w->n *= x->dims[i]; }
    return OAR_OK;
}

__device__ inline int64_t walk_base(const Walk &w, int64_t q)
{
    int64_t off = w.start;
    for (int i = w.nrest - 1; i >= 0; i--) { off += (q % w.rest[i]) * w.rstride[i]; q /= w.rest[i]; }
    return off;
}

template <class T>
__global__ void trace_k(const T *x, T *o, Walk w)
{
    OAR_CU_LOOP(q, w.n) {
        const int64_t b = walk_base(w, q);
        T s = T(0);
        for (int64_t i = 0; i < w.len; i++) s += x[b + i * w.step];
        o[q] = s;
    }
}

template <class T>
__global__ void zero_k(T *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = T(0);
}

template <class T>
__global__ void trace_grad_k(const T *g, T *dx, Walk w)
{
    OAR_CU_LOOP(q, w.n) {
        const int64_t b = walk_base(w, q);
        for (int64_t i = 0; i < w.len; i++) dx[b + i * w.step] = g[q];
    }
}

template <class T>
int trace_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_TRACE_INPUT, 0, dt, -1, &xt, &x));
    Walk w;
    OAR_TRY(trace_walk(k, xt, &w));
    void *o;
    OAR_TRY(out_data_at(k, OAR_TRACE_OUT, 0, dt, w.n, &o));
    if (w.n == 0) return OAR_OK;
    trace_k<T><<<grid_for(w.n), kThreads>>>((const T *)x, (T *)o, w);
    OAR_CU_LAUNCH(k, "trace");
    return OAR_OK;
}

template <class T>
int trace_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *gt;
    const void *x, *g;
    OAR_TRY(in_checked(k, OAR_TRACE_G_INPUT, "Input", dt, false, false, &xt, &x));
    Walk w;
    OAR_TRY(trace_walk(k, xt, &w));
    OAR_TRY(in_tensor_at(k, OAR_TRACE_G_DOUT, 0, dt, w.n, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_TRACE_G_DINPUT, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    zero_k<T><<<grid_for(n), kThreads>>>((T *)dx, n);
    OAR_CU_LAUNCH(k, "trace_grad");
    if (w.n == 0) return OAR_OK;
    trace_grad_k<T><<<grid_for(w.n), kThreads>>>((const T *)g, (T *)dx, w);
    OAR_CU_LAUNCH(k, "trace_grad");
    return OAR_OK;
}

/* ---- kron ---------------------------------------------------------------------------------- */
/* X's and Y's dims padded with leading 1s to Out's rank r */
struct Kron {
    int r;
    int64_t xd[OAR_MAX_DIMS], yd[OAR_MAX_DIMS], od[OAR_MAX_DIMS], xn, yn, on;
};

void kron_dims(const oar_tensor_t *x, const oar_tensor_t *y, Kron *p)
{
    p->r = x->ndim > y->ndim ? x->ndim : y->ndim;
    p->xn = p->yn = p->on = 1;
    for (int i = 0; i < p->r; i++) {
        const int xi = i - (p->r - x->ndim), yi = i - (p->r - y->ndim);
        p->xd[i] = xi >= 0 ? x->dims[xi] : 1;
        p->yd[i] = yi >= 0 ? y->dims[yi] : 1;
        p->od[i] = p->xd[i] * p->yd[i];
        p->xn *= p->xd[i];
        p->yn *= p->yd[i];
        p->on *= p->od[i];
    }
}

/* Out's flat position of X element a and Y element b */
__device__ inline int64_t kron_pos(const Kron &p, int64_t a, int64_t b)
{
    int64_t q = 0, st = 1;
    for (int i = p.r - 1; i >= 0; i--) {
        q += ((a % p.xd[i]) * p.yd[i] + b % p.yd[i]) * st;
        a /= p.xd[i];
        b /= p.yd[i];
        st *= p.od[i];
    }
    return q;
}

template <class T>
__global__ void kron_k(const T *x, const T *y, T *o, Kron p)
{
    OAR_CU_LOOP(q, p.on) {
        int64_t a = 0, b = 0, r = q, ast = 1, bst = 1;
        for (int i = p.r - 1; i >= 0; i--) {
            const int64_t idx = r % p.od[i];
            r /= p.od[i];
            a += (idx / p.yd[i]) * ast;
            b += (idx % p.yd[i]) * bst;
            ast *= p.xd[i];
            bst *= p.yd[i];
        }
        o[q] = x[a] * y[b];
    }
}

/* d[i] = the sum over j of g[pos(i, j)] * other[j] (X side) or g[pos(j, i)] * other[j] */
template <class T>
__global__ void kron_grad_k(const T *g, const T *other, T *d, int64_t n, int64_t m, bool x_side, Kron p)
{
    OAR_CU_LOOP(i, n) {
        T s = T(0);
        for (int64_t j = 0; j < m; j++) s += g[x_side ? kron_pos(p, i, j) : kron_pos(p, j, i)] * other[j];
        d[i] = s;
    }
}

template <class T>
int kron_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_KRON_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_KRON_Y, 0, dt, -1, &yt, &y));
    Kron p;
    kron_dims(xt, yt, &p);
    void *o;
    OAR_TRY(out_data_at(k, OAR_KRON_OUT, 0, dt, p.on, &o));
    if (p.on == 0) return OAR_OK;
    kron_k<T><<<grid_for(p.on), kThreads>>>((const T *)x, (const T *)y, (T *)o, p);
    OAR_CU_LAUNCH(k, "kron");
    return OAR_OK;
}

template <class T>
int kron_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt, *gt;
    const void *x, *y, *g;
    OAR_TRY(in_tensor_at(k, OAR_KRON_GRAD_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_KRON_GRAD_Y, 0, dt, -1, &yt, &y));
    Kron p;
    kron_dims(xt, yt, &p);
    OAR_TRY(in_tensor_at(k, OAR_KRON_GRAD_DOUT, 0, dt, p.on, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_KRON_GRAD_DX, 0, dt, p.xn, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_KRON_GRAD_DY, 0, dt, p.yn, &dy));
    /* an empty other operand leaves zeros (the loop adds nothing) */
    if (dx && p.xn > 0) {
        kron_grad_k<T><<<grid_for(p.xn), kThreads>>>((const T *)g, (const T *)y, (T *)dx, p.xn, p.yn, true, p);
        OAR_CU_LAUNCH(k, "kron_grad");
    }
    if (dy && p.yn > 0) {
        kron_grad_k<T><<<grid_for(p.yn), kThreads>>>((const T *)g, (const T *)x, (T *)dy, p.yn, p.xn, false, p);
        OAR_CU_LAUNCH(k, "kron_grad");
    }
    return OAR_OK;
}

#define REG_T(OPNAME, FN, SFX, T, DT)                                                     \
    int FN##_##SFX(oar_kernel_ctx_t *k) { return FN<T>(k, DT); }                          \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, DT, FN##_##SFX)

REG_T("trace", trace_fwd, f32, float, OAR_FP32)
REG_T("trace", trace_fwd, f64, double, OAR_FP64)
REG_T("trace_grad", trace_bwd, f32, float, OAR_FP32)
REG_T("trace_grad", trace_bwd, f64, double, OAR_FP64)
REG_T("kron", kron_fwd, f32, float, OAR_FP32)
REG_T("kron", kron_fwd, f64, double, OAR_FP64)
REG_T("kron", kron_fwd, i32, int32_t, OAR_INT32)
REG_T("kron", kron_fwd, i64, int64_t, OAR_INT64)
REG_T("kron_grad", kron_bwd, f32, float, OAR_FP32)
REG_T("kron_grad", kron_bwd, f64, double, OAR_FP64)

}  // namespace
