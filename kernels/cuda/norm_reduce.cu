/*
 * norm_reduce.cu — CUDA kernels of p_norm (norm_ext.ops), frobenius_norm
 * and dist (linalg2.ops) and their grads (float32, float64), with
 * the CPU kernels' formulas (kernels/cpu/norm_ext.c, linalg2.c).
 *
 * p_norm and frobenius_norm reduce groups of X: one block per output element, sums in double
 * (a tree order: the specs compare with a tolerance), max and min for
 * p_norm's infinite orders. The grads give each X element its group's
 * Out and Out@GRAD, one thread per element. dist reduces the broadcast
 * X - Y in two passes (64 blocks, then one); its grads give each element
 * of X (Y) the sum over the positions it was broadcast to, in increasing
 * order, as the CPU adds (no atomics).
 */
#include "cuda_common.h"
extern "C" {
#include "ops/linalg2.h"
#include "ops/norm_ext.h"
}

using namespace oarcu;

namespace {

unsigned threads_for(int64_t n)
{
    int64_t t = (n + 31) / 32 * 32;
    return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}

unsigned rows_grid(int64_t rows) { return (unsigned)(rows < 65535 ? rows : 65535); }

/* ---- p_norm: X as [outer, mid, inner], the norm over mid --------------------------- */
void pn_split(const oar_pnorm_attrs_t *a, const oar_tensor_t *x, int64_t *outer, int64_t *mid, int64_t *inner)
{
    *outer = *inner = 1;
    *mid = oar_tensor_numel_of(x);
    if (a->asvector || x->ndim == 0) return;
    const int ax = a->axis < 0 ? a->axis + x->ndim : a->axis;
    *mid = x->dims[ax];
    for (int i = 0; i < ax; i++) *outer *= x->dims[i];
    for (int i = ax + 1; i < x->ndim; i++) *inner *= x->dims[i];
}

template <class T>
__global__ void pn_k(const T *x, T *o, int64_t rows, int64_t mid, int64_t inner, double p)
{
    __shared__ double sh[32];
    const bool inf = isinf(p);
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / inner) * mid * inner + r % inner;
        /* +inf: max |x|; -inf: min |x| (as -max(-|x|)); else the sum of |x|^p or the nonzero count */
        double acc = inf ? -INFINITY : 0;
        for (int64_t i = threadIdx.x; i < mid; i += blockDim.x) {
            const double e = fabs((double)x[base + i * inner]);
            if (inf) acc = fmax(acc, p > 0 ? e : -e);
            else if (p == 0) acc += e != 0;
            else acc += pow(e, p);
        }
        double res;
        if (inf) {
            res = block_max(acc, sh);
            if (p < 0) res = -res;
        } else {
            res = block_sum(acc, sh);
            if (p != 0) res = pow(res, 1.0 / p);
        }
        if (threadIdx.x == 0) o[r] = (T)res;
    }
}

template <class T>
__global__ void pn_grad_k(const T *x, const T *nv, const T *g, T *dx, int64_t n, int64_t mid, int64_t inner, double p,
                          double eps)
{
    OAR_CU_LOOP(at, n) {
        const int64_t r = (at / (mid * inner)) * inner + at % inner;
        const double nrm = nv[r], dy = g[r], xv = x[at], e = fabs(xv), s = (xv > 0) - (xv < 0);
        double d;
        if (p == 0) d = 0;
        else if (isinf(p)) d = e == nrm ? s * dy : 0;
        /* Paddle: |x|^(p-1) sign(x) dy (norm + eps)^(1-p) */
        else d = pow(e, p - 1) * s * dy * pow(nrm + eps, 1 - p);
        dx[at] = (T)d;
    }
}

template <class T>
int pn_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_pnorm_attrs_t *a = (const oar_pnorm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_PN_X, 0, dt, -1, &xt, &x));
    int64_t outer, mid, inner;
    pn_split(a, xt, &outer, &mid, &inner);
    void *o;
    OAR_TRY(out_data_at(k, OAR_PN_OUT, 0, dt, outer * inner, &o));
    if (outer * inner == 0) return OAR_OK;
    pn_k<T><<<rows_grid(outer * inner), threads_for(mid)>>>((const T *)x, (T *)o, outer * inner, mid, inner,
                                                             (double)a->porder);
    OAR_CU_LAUNCH(k, "p_norm");
    return OAR_OK;
}

template <class T>
int pn_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_pnorm_attrs_t *a = (const oar_pnorm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *nt, *gt;
    const void *x, *nv, *g;
    OAR_TRY(in_tensor_at(k, OAR_PNG_X, 0, dt, -1, &xt, &x));
    int64_t outer, mid, inner;
    pn_split(a, xt, &outer, &mid, &inner);
    OAR_TRY(in_tensor_at(k, OAR_PNG_OUT, 0, dt, outer * inner, &nt, &nv));
    OAR_TRY(in_tensor_at(k, OAR_PNG_DOUT, 0, dt, outer * inner, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_PNG_DX, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    pn_grad_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)nv, (const T *)g, (T *)dx, n, mid, inner,
                                             (double)a->porder, (double)a->epsilon);
    OAR_CU_LAUNCH(k, "p_norm_grad");
    return OAR_OK;
}

/* ---- frobenius_norm: sqrt of the sum of squares over the reduced dims ---------------- */
struct FnPlan {
    int nd, nk, nr;
    int64_t dims[OAR_MAX_DIMS], ost[OAR_MAX_DIMS];   /* Out's stride per X dim, 0 if reduced */
    int64_t kdim[OAR_MAX_DIMS], kxs[OAR_MAX_DIMS];   /* kept dims and their X strides */
    int64_t rdim[OAR_MAX_DIMS], rxs[OAR_MAX_DIMS];   /* reduced dims and their X strides */
    int64_t on, rn;                                  /* Out's elements, elements per group */
};

void fn_plan(const oar_fnorm_attrs_t *a, const oar_tensor_t *x, FnPlan *p)
{
    bool mask[OAR_MAX_DIMS];
    const int nd = x->ndim;
    p->nd = nd;
    for (int i = 0; i < nd; i++) mask[i] = a->reduce_all;
    for (int i = 0; i < a->dim.n && !a->reduce_all; i++) {
        const int d = a->dim.v[i] < 0 ? a->dim.v[i] + nd : a->dim.v[i];
        if (d >= 0 && d < nd) mask[d] = true;   /* inference checked the axes */
    }
    int64_t os = 1, xs = 1;
    p->nk = p->nr = 0;
    p->on = p->rn = 1;
    for (int i = nd - 1; i >= 0; i--) {
        p->dims[i] = x->dims[i];
        p->ost[i] = mask[i] ? 0 : os;
        if (!mask[i]) os *= x->dims[i];
        xs *= x->dims[i];
    }
    int64_t st = 1;
    int64_t xst[OAR_MAX_DIMS];
    for (int i = nd - 1; i >= 0; i--) { xst[i] = st; st *= x->dims[i]; }
    for (int i = 0; i < nd; i++) {
        if (mask[i]) { p->rdim[p->nr] = x->dims[i]; p->rxs[p->nr++] = xst[i]; p->rn *= x->dims[i]; }
        else { p->kdim[p->nk] = x->dims[i]; p->kxs[p->nk++] = xst[i]; p->on *= x->dims[i]; }
    }
    (void)xs;
}

template <class T>
__global__ void fn_k(const T *x, T *o, FnPlan p)
{
    __shared__ double sh[32];
    for (int64_t q = blockIdx.x; q < p.on; q += gridDim.x) {
        int64_t base = 0, r = q;
        for (int i = p.nk - 1; i >= 0; i--) { base += (r % p.kdim[i]) * p.kxs[i]; r /= p.kdim[i]; }
        double s = 0;
        for (int64_t e = threadIdx.x; e < p.rn; e += blockDim.x) {
            int64_t off = base, rr = e;
            for (int i = p.nr - 1; i >= 0; i--) { off += (rr % p.rdim[i]) * p.rxs[i]; rr /= p.rdim[i]; }
            s += (double)x[off] * (double)x[off];
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) o[q] = (T)sqrt(s);
    }
}

template <class T>
__global__ void fn_grad_k(const T *x, const T *ov, const T *g, T *dx, int64_t n, FnPlan p)
{
    OAR_CU_LOOP(i, n) {
        int64_t r = i, o = 0;
        for (int d = p.nd - 1; d >= 0; d--) { o += (r % p.dims[d]) * p.ost[d]; r /= p.dims[d]; }
        /* Out = 0: every X in its group is 0; take 0 rather than 0/0 */
        dx[i] = ov[o] == T(0) ? T(0) : (T)((double)g[o] * (double)x[i] / (double)ov[o]);
    }
}

template <class T>
int fn_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_FN_X, 0, dt, -1, &xt, &x));
    FnPlan p;
    fn_plan((const oar_fnorm_attrs_t *)oar_k_attrs(k), xt, &p);
    void *o;
    OAR_TRY(out_data_at(k, OAR_FN_OUT, 0, dt, p.on, &o));
    if (p.on == 0) return OAR_OK;
    fn_k<T><<<rows_grid(p.on), threads_for(p.rn)>>>((const T *)x, (T *)o, p);
    OAR_CU_LAUNCH(k, "frobenius_norm");
    return OAR_OK;
}

template <class T>
int fn_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *ot, *gt;
    const void *x, *ov, *g;
    OAR_TRY(in_tensor_at(k, OAR_FN_G_X, 0, dt, -1, &xt, &x));
    FnPlan p;
    fn_plan((const oar_fnorm_attrs_t *)oar_k_attrs(k), xt, &p);
    OAR_TRY(in_tensor_at(k, OAR_FN_G_OUT, 0, dt, p.on, &ot, &ov));
    OAR_TRY(in_tensor_at(k, OAR_FN_G_DOUT, 0, dt, p.on, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_FN_G_DX, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    fn_grad_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)ov, (const T *)g, (T *)dx, n, p);
    OAR_CU_LAUNCH(k, "frobenius_norm_grad");
    return OAR_OK;
}

/* ---- dist: the p-norm of X - Y, broadcast against each other ----------------------------- */
/* X and Y right-aligned to the common rank nd (leading 1s), Out's dims o */
struct Bc {
    int nd;
    int64_t o[OAR_MAX_DIMS], xd[OAR_MAX_DIMS], yd[OAR_MAX_DIMS], total;
};

int bc_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *y, Bc *b)
{
    b->nd = x->ndim > y->ndim ? x->ndim : y->ndim;
    b->total = 1;
    for (int i = 0; i < b->nd; i++) {
        const int xi = i - (b->nd - x->ndim), yi = i - (b->nd - y->ndim);
        b->xd[i] = xi >= 0 ? x->dims[xi] : 1;
        b->yd[i] = yi >= 0 ? y->dims[yi] : 1;
        if (b->xd[i] != b->yd[i] && b->xd[i] != 1 && b->yd[i] != 1)
            return oar_k_error(k, OAR_ERR_SHAPE, "X and Y do not broadcast at dim %d", i);
        b->o[i] = b->xd[i] == 1 ? b->yd[i] : b->xd[i];
        b->total *= b->o[i];
    }
    return OAR_OK;
}

/* X's and Y's offsets of broadcast position q */
__device__ inline void bc_offsets(const Bc &b, int64_t q, int64_t *xo, int64_t *yo)
{
    int64_t xs = 1, ys = 1;
    *xo = *yo = 0;
    for (int d = b.nd - 1; d >= 0; d--) {
        const int64_t i = q % b.o[d];
        q /= b.o[d];
        if (b.xd[d] != 1) *xo += i * xs;
        if (b.yd[d] != 1) *yo += i * ys;
        xs *= b.xd[d];
        ys *= b.yd[d];
    }
}

/* mode: 0 count nonzeros, 1 max, 2 min (as -max(-z)), 3 sum of z^p */
__device__ inline double dist_term(double z, int mode, double p)
{
    return mode == 0 ? (double)(z != 0) : mode == 1 ? z : mode == 2 ? -z : pow(z, p);
}

template <class T>
__global__ void dist_part_k(const T *x, const T *y, Bc b, int mode, double p, double *part)
{
    __shared__ double sh[32];
    double acc = mode == 1 || mode == 2 ? -INFINITY : 0;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < b.total; q += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo;
        bc_offsets(b, q, &xo, &yo);
        const double t = dist_term(fabs((double)x[xo] - (double)y[yo]), mode, p);
        acc = mode == 1 || mode == 2 ? fmax(acc, t) : acc + t;
    }
    acc = mode == 1 || mode == 2 ? block_max(acc, sh) : block_sum(acc, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

template <class T>
__global__ void dist_final_k(const double *part, int parts, int mode, double p, T *out)
{
    __shared__ double sh[32];
    double acc = mode == 1 || mode == 2 ? -INFINITY : 0;
    for (int i = threadIdx.x; i < parts; i += blockDim.x) acc = mode == 1 || mode == 2 ? fmax(acc, part[i]) : acc + part[i];
    acc = mode == 1 || mode == 2 ? block_max(acc, sh) : block_sum(acc, sh);
    if (threadIdx.x == 0) {
        double r = mode == 2 ? -acc : acc;
        if (mode == 3) r = pow(r, 1.0 / p);
        out[0] = (T)r;
    }
}

constexpr int kDistParts = 64;

int dist_mode(double p) { return p == 0 ? 0 : p == INFINITY ? 1 : p == -INFINITY ? 2 : 3; }

template <class T>
int dist_fwd(oar_kernel_ctx_t *k, int dt)
{
    const double p = ((const oar_dist_attrs_t *)oar_k_attrs(k))->p;
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_DIST_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_DIST_Y, 0, dt, -1, &yt, &y));
    Bc b;
    OAR_TRY(bc_plan(k, xt, yt, &b));
    void *o;
    OAR_TRY(out_data_at(k, OAR_DIST_OUT, 0, dt, 1, &o));
    Scratch part;
    OAR_TRY(part.alloc(k, sizeof(double) * kDistParts, "dist partial sums"));
    const int mode = dist_mode(p);
    dist_part_k<T><<<kDistParts, kThreads>>>((const T *)x, (const T *)y, b, mode, p, (double *)part.p);
    OAR_CU_LAUNCH(k, "dist");
    dist_final_k<T><<<1, kThreads>>>((const double *)part.p, kDistParts, mode, p, (T *)o);
    OAR_CU_LAUNCH(k, "dist");
    return OAR_OK;
}

/* d = d Out / d z at broadcast position q (z = X - Y there) */
template <class T>
__device__ inline double dist_d(const T *x, const T *y, const Bc &b, int64_t q, double p, double out, double g)
{
    int64_t xo, yo;
    bc_offsets(b, q, &xo, &yo);
    const double z = (double)x[xo] - (double)y[yo], az = fabs(z), s = (z > 0) - (z < 0);
    return isinf(p) ? (az == out ? s * g : 0) : pow(az / out, p - 1) * s * g;
}

/* the grad of one operand (dims od of the broadcast b): each element sums
 * sign * d over the positions it was broadcast to, in increasing order */
template <class T>
__global__ void dist_grad_k(const T *x, const T *y, Bc b, bool is_x, const T *outv, const T *gv, double p, T *d,
                            int64_t n)
{
    OAR_CU_LOOP(e, n) {
        const double out = outv[0], g = gv[0];
        const int64_t *od = is_x ? b.xd : b.yd;
        int64_t fix[OAR_MAX_DIMS], r = e, reps = 1;
        for (int i = b.nd - 1; i >= 0; i--) { fix[i] = r % od[i]; r /= od[i]; if (od[i] == 1) reps *= b.o[i]; }
        T acc = T(0);
        if (p != 0 && out != 0)
            for (int64_t t = 0; t < reps; t++) {
                /* t's digits over the broadcast dims, row-major, the kept dims fixed */
                int64_t q = 0, st = 1, tt = t;
                for (int i = b.nd - 1; i >= 0; i--) {
                    int64_t idx = fix[i];
                    if (od[i] == 1) { idx = tt % b.o[i]; tt /= b.o[i]; }
                    q += idx * st;
                    st *= b.o[i];
                }
                const T v = (T)dist_d(x, y, b, q, p, out, g);
                acc += is_x ? v : -v;
            }
        d[e] = acc;
    }
}

template <class T>
int dist_bwd(oar_kernel_ctx_t *k, int dt)
{
    const double p = ((const oar_dist_attrs_t *)oar_k_attrs(k))->p;
    const oar_tensor_t *xt, *yt, *ot, *gt;
    const void *x, *y, *ov, *g;
    OAR_TRY(in_tensor_at(k, OAR_DIST_G_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_DIST_G_Y, 0, dt, -1, &yt, &y));
    OAR_TRY(in_tensor_at(k, OAR_DIST_G_OUT, 0, dt, 1, &ot, &ov));
    OAR_TRY(in_tensor_at(k, OAR_DIST_G_DOUT, 0, dt, 1, &gt, &g));
    Bc b;
    OAR_TRY(bc_plan(k, xt, yt, &b));
    const int64_t nx = oar_tensor_numel_of(xt), ny = oar_tensor_numel_of(yt);
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_DIST_G_DX, 0, dt, nx, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_DIST_G_DY, 0, dt, ny, &dy));
    if (dx && nx > 0) {
        dist_grad_k<T><<<grid_for(nx), kThreads>>>((const T *)x, (const T *)y, b, true, (const T *)ov, (const T *)g, p,
                                                    (T *)dx, nx);
        OAR_CU_LAUNCH(k, "dist_grad");
    }
    if (dy && ny > 0) {
        dist_grad_k<T><<<grid_for(ny), kThreads>>>((const T *)x, (const T *)y, b, false, (const T *)ov, (const T *)g,
                                                    p, (T *)dy, ny);
        OAR_CU_LAUNCH(k, "dist_grad");
    }
    return OAR_OK;
}

#define NORM_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN<float>(k, OAR_FP32); }                  \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN<double>(k, OAR_FP64); }                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

NORM_REG("p_norm", pn_fwd)
NORM_REG("p_norm_grad", pn_bwd)
NORM_REG("frobenius_norm", fn_fwd)
NORM_REG("frobenius_norm_grad", fn_bwd)
NORM_REG("dist", dist_fwd)
NORM_REG("dist_grad", dist_bwd)

}  // namespace
