/*
 * elementwise.cu — CUDA kernels of elementwise_{add,sub,mul,div,max,min,pow}
 * and their grads (float16, float32, float64), with Fluid's broadcasting;
 * max/min route the gradient as the CPU kernels do (ties to Y). float16
 * computes in float (half.h), sums of broadcast grads included.
 *
 * The broadcast shape and the loop plan come from src/ops/broadcast.h,
 * as for the CPU kernels: up to OAR_MAX_DIMS merged dims with one element
 * stride per operand (0 along broadcast dims). Forward: one thread per
 * output element, operand offsets from the plan (same-shape operands use
 * the flat index). Grads: a side with the output's shape gets one value per
 * output element; a broadcast side sums the contributions of the output
 * elements that map to each of its elements (a thread per element, or a
 * block when each sums many). add/sub share Out@GRAD's buffer for a full
 * side instead of copying it, as on the CPU.
 */
#include "cuda_common.h"
/* the loop-plan helpers; its OpenMP row runner is for the CPU kernels only */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#pragma GCC diagnostic pop
#include "half.h"

using namespace oarcu;

namespace {

struct AddF { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct SubF { template <class T> __device__ T operator()(T a, T b) const { return a - b; } };
struct MulF { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct DivF { template <class T> __device__ T operator()(T a, T b) const { return a / b; } };
struct MaxF { template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
struct MinF { template <class T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
struct PowF { template <class T> __device__ T operator()(T a, T b) const { return pow(a, b); } };

/* grad formulas: contribution of one output element to dX / dY from
 * a = x, b = y, o = out, g = dout */
struct AddG {
    static constexpr bool needs_out = false;
    template <class T> __device__ static T dx(T, T, T, T g) { return g; }
    template <class T> __device__ static T dy(T, T, T, T g) { return g; }
};
struct SubG {
    static constexpr bool needs_out = false;
    template <class T> __device__ static T dx(T, T, T, T g) { return g; }
    template <class T> __device__ static T dy(T, T, T, T g) { return -g; }
};
struct MulG {
    static constexpr bool needs_out = false;
    template <class T> __device__ static T dx(T, T b, T, T g) { return g * b; }
    template <class T> __device__ static T dy(T a, T, T, T g) { return g * a; }
};
/* d(x/y)/dy = -x/y^2 = -out/y */
struct DivG {
    static constexpr bool needs_out = true;
    template <class T> __device__ static T dx(T, T b, T, T g) { return g / b; }
    template <class T> __device__ static T dy(T, T b, T o, T g) { return -g * o / b; }
};

struct MaxG {
    static constexpr bool needs_out = false;
    template <class T> __device__ static T dx(T a, T b, T, T g) { return a > b ? g : T(0); }
    template <class T> __device__ static T dy(T a, T b, T, T g) { return a > b ? T(0) : g; }
};
struct MinG {
    static constexpr bool needs_out = false;
    template <class T> __device__ static T dx(T a, T b, T, T g) { return a < b ? g : T(0); }
    template <class T> __device__ static T dy(T a, T b, T, T g) { return a < b ? T(0) : g; }
};
struct PowG {
    static constexpr bool needs_out = false;
    template <class T> __device__ static T dx(T a, T b, T, T g) { return g * b * pow(a, b - T(1)); }
    template <class T> __device__ static T dy(T a, T b, T, T g) { return g * pow(a, b) * log(a); }
};

/* operand offsets of output element i */
__device__ inline void plan_offsets(const oar_bplan_t &p, int64_t i, int64_t *xo, int64_t *yo)
{
    int64_t a = 0, b = 0;
    for (int d = p.nd - 1; d >= 0; d--) {
        int64_t c = i % p.n[d];
        i /= p.n[d];
        a += c * p.xs[d];
        b += c * p.ys[d];
    }
    *xo = a;
    *yo = b;
}

/* T: the storage type; formulas run in A = acc_t<T> */
template <class T, class F>
__global__ void ew_fwd_k(const T *x, const T *y, T *o, oar_bplan_t p, F f)
{
    typedef acc_t<T> A;
    const bool same = p.x_full && p.y_full;
    OAR_CU_LOOP(i, p.total) {
        int64_t xo = i, yo = i;
        if (!same) plan_offsets(p, i, &xo, &yo);
        o[i] = cvt<T>(f(cvt<A>(x[xo]), cvt<A>(y[yo])));
    }
}

/* A side S (0: X, 1: Y) with the output's shape: d[i] for output element i. */
template <class T, class G>
__global__ void ew_grad_full_k(const T *x, const T *y, const T *out, const T *g, T *d, oar_bplan_t p, int side)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(i, p.total) {
        int64_t xo = i, yo = i;
        if (!(p.x_full && p.y_full)) plan_offsets(p, i, &xo, &yo);
        A a = cvt<A>(x[xo]), b = cvt<A>(y[yo]), o = out ? cvt<A>(out[i]) : A(0), gi = cvt<A>(g[i]);
        d[i] = cvt<T>(side ? G::dy(a, b, o, gi) : G::dx(a, b, o, gi));
    }
}

/* A broadcast side: its element j sums over the output elements that map to
 * it. Kept dims (the side's stride != 0) locate j; reduced dims are summed. */
struct RPlan {
    int nk, nr;
    int64_t kn[OAR_MAX_DIMS], kother[OAR_MAX_DIMS], kout[OAR_MAX_DIMS];  /* innermost last */
    int64_t rn[OAR_MAX_DIMS], rother[OAR_MAX_DIMS], rout[OAR_MAX_DIMS];
    int64_t rcount, sn;   /* summed elements per j; elements of the side */
};

void rplan_make(const oar_bplan_t &p, int side, RPlan *r)
{
    int64_t ostride[OAR_MAX_DIMS], s = 1;
    for (int d = p.nd - 1; d >= 0; d--) { ostride[d] = s; s *= p.n[d]; }
    r->nk = r->nr = 0;
    r->rcount = r->sn = 1;
    for (int d = 0; d < p.nd; d++) {
        int64_t mine = side ? p.ys[d] : p.xs[d], other = side ? p.xs[d] : p.ys[d];
        if (mine != 0 || p.n[d] == 1) {
            r->kn[r->nk] = p.n[d]; r->kother[r->nk] = other; r->kout[r->nk] = ostride[d];
            r->nk++;
            r->sn *= p.n[d];
        } else {
            r->rn[r->nr] = p.n[d]; r->rother[r->nr] = other; r->rout[r->nr] = ostride[d];
            r->nr++;
            r->rcount *= p.n[d];
        }
    }
}

template <class T, class G>
__device__ inline acc_t<T> rsum_part(const T *x, const T *y, const T *out, const T *g, const RPlan &r, int side,
                              int64_t j, int64_t r0, int64_t rstep)
{
    int64_t ob = 0, gb = 0, jj = j;
    for (int d = r.nk - 1; d >= 0; d--) {
        int64_t c = jj % r.kn[d];
        jj /= r.kn[d];
        ob += c * r.kother[d];
        gb += c * r.kout[d];
    }
    typedef acc_t<T> A;
    const A mine = cvt<A>(side ? y[j] : x[j]);
    A acc = 0;
    for (int64_t q = r0; q < r.rcount; q += rstep) {
        int64_t oo = ob, go = gb, qq = q;
        for (int d = r.nr - 1; d >= 0; d--) {
            int64_t c = qq % r.rn[d];
            qq /= r.rn[d];
            oo += c * r.rother[d];
            go += c * r.rout[d];
        }
        const A o = out ? cvt<A>(out[go]) : A(0), gg = cvt<A>(g[go]);
        acc += side ? G::dy(cvt<A>(x[oo]), mine, o, gg) : G::dx(mine, cvt<A>(y[oo]), o, gg);
    }
    return acc;
}

template <class T, class G>
__global__ void ew_grad_reduce_thread_k(const T *x, const T *y, const T *out, const T *g, T *d, RPlan r, int side)
{
    OAR_CU_LOOP(j, r.sn) d[j] = cvt<T>(rsum_part<T, G>(x, y, out, g, r, side, j, 0, 1));
}

template <class T, class G>
__global__ void ew_grad_reduce_block_k(const T *x, const T *y, const T *out, const T *g, T *d, RPlan r, int side)
{
    typedef acc_t<T> A;
    __shared__ A sh[32];
    for (int64_t j = blockIdx.x; j < r.sn; j += gridDim.x) {
        A v = rsum_part<T, G>(x, y, out, g, r, side, j, threadIdx.x, blockDim.x);
        v = block_sum(v, sh);
        if (threadIdx.x == 0) d[j] = cvt<T>(v);
    }
}

struct BArgs {
    const oar_tensor_t *x, *y;
    const void *xd, *yd;
    oar_bplan_t plan;
};

int bsetup(oar_kernel_ctx_t *k, int dt, BArgs *a)
{
    /* X and Y have the same slots in the forward and the grad ops */
    OAR_TRY(in_tensor_at(k, OAR_EWG_X, 0, dt, -1, &a->x, &a->xd));
    OAR_TRY(in_tensor_at(k, OAR_EWG_Y, 0, dt, -1, &a->y, &a->yd));
    int64_t od[OAR_MAX_DIMS], xp[OAR_MAX_DIMS], yp[OAR_MAX_DIMS];
    int nd;
    const int axis = ((const oar_bcast_attrs_t *)oar_k_attrs(k))->axis;
    if (oar_bcast_shape(a->x->dims, a->x->ndim, a->y->dims, a->y->ndim, axis, od, xp, yp, &nd)) {
        char bx[128], by[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Y shape %s does not broadcast to X shape %s at axis %d",
                           oar_shape_str(a->y->dims, a->y->ndim, by, sizeof by),
                           oar_shape_str(a->x->dims, a->x->ndim, bx, sizeof bx), axis);
    }
    oar_bplan_make(&a->plan, od, xp, yp, nd);
    return OAR_OK;
}

template <class T, class F>
int ew_forward(oar_kernel_ctx_t *k, int dt)
{
    BArgs a;
    OAR_TRY(bsetup(k, dt, &a));
    void *o;
    OAR_TRY(out_data_at(k, OAR_BCAST_OUT, 0, dt, a.plan.total, &o));
    if (a.plan.total == 0) return OAR_OK;
    ew_fwd_k<T, F><<<grid_for(a.plan.total), kThreads>>>((const T *)a.xd, (const T *)a.yd, (T *)o, a.plan, F());
    OAR_CU_LAUNCH(k, "elementwise forward");
    return OAR_OK;
}

/* dOut shared into a full-shaped grad (add/sub), keeping the operand's dims and LoD */
int share_grad(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *dout, const oar_tensor_t *src)
{
    oar_tensor_t *d = oar_k_output(k, slot, 0);
    int rc = oar_tensor_share(d, dout);
    if (rc == OAR_OK) {
        memcpy(d->dims, src->dims, sizeof d->dims);
        d->ndim = src->ndim;
        if (src->lod_levels > 0 || d->lod_levels > 0) rc = oar_tensor_copy_lod(d, src);
    }
    if (rc != OAR_OK) return oar_k_error(k, rc, "cannot set %s", out_slot_name(k, slot));
    return OAR_OK;
}

template <class T, class G>
int ew_grad_side(oar_kernel_ctx_t *k, const BArgs &a, int dt, int side, const T *out, const T *g, bool share,
                 const oar_tensor_t *dout)
{
    const int slot = side ? OAR_EWG_DY : OAR_EWG_DX;
    if (!oar_k_output(k, slot, 0)) return OAR_OK;   /* not wanted */
    const oar_bplan_t &p = a.plan;
    const bool full = side ? p.y_full : p.x_full;
    if (full && share) return share_grad(k, slot, dout, side ? a.y : a.x);
    const oar_tensor_t *st = side ? a.y : a.x;
    void *dv;
    OAR_TRY(out_data_at(k, slot, 0, dt, oar_tensor_numel_of(st), &dv));
    T *d = (T *)dv;
    const T *x = (const T *)a.xd, *y = (const T *)a.yd;
    if (full) {
        if (p.total == 0) return OAR_OK;
        ew_grad_full_k<T, G><<<grid_for(p.total), kThreads>>>(x, y, out, g, d, p, side);
        OAR_CU_LAUNCH(k, "elementwise grad");
        return OAR_OK;
    }
    RPlan r;
    rplan_make(p, side, &r);
    if (r.sn == 0) return OAR_OK;
    if (p.total == 0) {   /* nothing maps to the side: its grad is 0 */
        OAR_CU(k, cudaMemsetAsync(d, 0, sizeof(T) * (size_t)r.sn, 0), "cudaMemsetAsync");
        return OAR_OK;
    }
    if (r.rcount >= 64) {
        unsigned blocks = (unsigned)(r.sn < 65536 ? r.sn : 65536);
        ew_grad_reduce_block_k<T, G><<<blocks, 128>>>(x, y, out, g, d, r, side);
    } else {
        ew_grad_reduce_thread_k<T, G><<<grid_for(r.sn), kThreads>>>(x, y, out, g, d, r, side);
    }
    OAR_CU_LAUNCH(k, "elementwise broadcast grad");
    return OAR_OK;
}

template <class T, class G>
int ew_backward(oar_kernel_ctx_t *k, int dt, bool share_x, bool share_y)
{
    BArgs a;
    OAR_TRY(bsetup(k, dt, &a));
    const oar_tensor_t *dout;
    const void *g;
    OAR_TRY(in_tensor_at(k, OAR_EWG_DOUT, 0, dt, a.plan.total, &dout, &g));
    const void *out = nullptr;
    if (G::needs_out) {
        const oar_tensor_t *ot;
        OAR_TRY(in_tensor_at(k, OAR_EWG_OUT, 0, dt, a.plan.total, &ot, &out));
    }
    OAR_TRY((ew_grad_side<T, G>(k, a, dt, 0, (const T *)out, (const T *)g, share_x, dout)));
    return ew_grad_side<T, G>(k, a, dt, 1, (const T *)out, (const T *)g, share_y, dout);
}

#define EW_REG_DT(OP, F, G, SX, SY, SFX, T, DT)                                                      \
    int OP##_##SFX(oar_kernel_ctx_t *k) { return ew_forward<T, F>(k, DT); }                          \
    int OP##_grad_##SFX(oar_kernel_ctx_t *k) { return ew_backward<T, G>(k, DT, SX, SY); }             \
    OAR_REGISTER_KERNEL("elementwise_" #OP, OAR_PLACE_CUDA, DT, OP##_##SFX)                           \
    OAR_REGISTER_KERNEL("elementwise_" #OP "_grad", OAR_PLACE_CUDA, DT, OP##_grad_##SFX)
#define EW_REG(OP, F, G, SX, SY)                               \
    EW_REG_DT(OP, F, G, SX, SY, f16, __half, OAR_FP16)         \
    EW_REG_DT(OP, F, G, SX, SY, f32, float, OAR_FP32)          \
    EW_REG_DT(OP, F, G, SX, SY, f64, double, OAR_FP64)

EW_REG(add, AddF, AddG, true, true)
EW_REG(sub, SubF, SubG, true, false)
EW_REG(mul, MulF, MulG, false, false)
EW_REG(div, DivF, DivG, false, false)
EW_REG(max, MaxF, MaxG, false, false)
EW_REG(min, MinF, MinG, false, false)
EW_REG(pow, PowF, PowG, false, false)

}  // namespace
