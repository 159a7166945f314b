/*
 * pool.cu — CUDA kernels of pool2d and pool2d_grad (NCHW or NHWC, max/avg;
 * float16 computing in float, float32, float64) with exactly the CPU kernels' semantics
 * (kernels/cpu/pool.c): windows [i*s - p, i*s - p + k) clipped to the input
 * (adaptive: [floor(i*H/OH), ceil((i+1)*H/OH))), ceil_mode, asymmetric
 * paddings, exclusive or kh*kw averages, a window wholly in the padding
 * giving 0, and max routing the gradient to the first maximum in row-major
 * window order with NaNs propagating.
 *
 * These are oar's own kernels rather than cuDNN's pooling: cuDNN has no
 * ceil_mode, adaptive windows or asymmetric padding, and its max-pooling
 * grad breaks ties (frequent after a ReLU: windows of zeros) its own way,
 * so results would differ from the CPU's. Forward: one thread per output;
 * grad: one thread per output adding into X@GRAD (atomics, as windows may
 * overlap). NHWC (data_format) indexes the same windows channels-last, in
 * place: a window's elements are c apart in a row, w * c between rows.
 */
#include <string.h>
#include "cuda_common.h"
#include "half.h"
extern "C" {
#include "ops/pool.h"
#include "ops/window.h"
}

using namespace oarcu;

namespace {

struct Geom {
    int64_t planes, c, h, w, oh, ow;   /* planes: images * channels */
    int64_t kh, kw, sh, sw, pt, pl;
    bool is_max, exclusive, adaptive, nhwc;
};

/* Output element q (in memory order) of either layout: its window's row i
 * and column j, where its input plane starts and how far apart the
 * plane's rows and columns are */
struct Loc {
    int64_t i, j, base, rs, cs;
};
__device__ inline Loc locate(int64_t q, const Geom &g)
{
    Loc l;
    if (g.nhwc) {
        const int64_t ch = q % g.c, r = q / g.c, img = r / (g.ow * g.oh);
        l.j = r % g.ow;
        l.i = (r / g.ow) % g.oh;
        l.base = img * g.h * g.w * g.c + ch;
        l.rs = g.w * g.c;
        l.cs = g.c;
    } else {
        l.j = q % g.ow;
        l.i = (q / g.ow) % g.oh;
        l.base = (q / (g.ow * g.oh)) * g.h * g.w;
        l.rs = g.w;
        l.cs = 1;
    }
    return l;
}

__device__ inline void window(int64_t i, int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool adaptive,
                              int64_t *lo, int64_t *hi)
{
    if (adaptive) {
        *lo = i * in / out;
        *hi = ((i + 1) * in + out - 1) / out;
        return;
    }
    int64_t a = i * s - p, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > in ? in : b;
}

int pool_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, Geom *g)
{
    const oar_pool_attrs_t *at = (const oar_pool_attrs_t *)oar_k_attrs(k);
    const char *xn = nm(oar_k_input_name(k, OAR_POOL_X, 0));
    char xs[128];
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    g->nhwc = at->nhwc;
    if (x->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' must be 4-D %s, got shape %s", xn, g->nhwc ? "NHWC" : "NCHW", xs);
    g->c = g->nhwc ? x->dims[3] : x->dims[1];
    g->h = g->nhwc ? x->dims[1] : x->dims[2];
    g->w = g->nhwc ? x->dims[2] : x->dims[3];
    const int64_t in_hw[2] = {g->h, g->w};
    g->is_max = at->type == OAR_POOL_MAX;
    g->exclusive = at->exclusive;
    g->adaptive = at->adaptive;
    const bool global = at->global, ceil_mode = at->ceil_mode;
    int64_t ks[2], st[2], pd[4];
    memcpy(st, at->st, sizeof st);
    memcpy(pd, at->pd, sizeof pd);
    if (global) {
        ks[0] = g->h;
        ks[1] = g->w;
        pd[0] = pd[1] = pd[2] = pd[3] = 0;
        g->adaptive = false;
    } else {
        memcpy(ks, at->ks, sizeof ks);
    }
    for (int i = 0; i < 2; i++)
        if ((!global && ks[i] < 1) || st[i] < 1 || pd[2 * i] < 0 || pd[2 * i + 1] < 0)
            return oar_k_error(k, OAR_ERR_INVALID, "ksize {%lld, %lld} and strides {%lld, %lld} must be >= 1, paddings >= 0",
                               (long long)ks[0], (long long)ks[1], (long long)st[0], (long long)st[1]);
    if (at->algo < 0 || at->algo > 2)
        return oar_k_error(k, OAR_ERR_INVALID, "attr padding_algorithm must be \"EXPLICIT\", \"SAME\" or \"VALID\"");
    /* the geometry pool_infer sized Out with (window.h) */
    oar_pool_win_t pw;
    const int r = oar_win_pool_plan(at->algo, global, at->adaptive, ceil_mode, in_hw, ks, st, pd, &pw);
    if (r == OAR_WIN_OVERFLOW) return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' %s is too large", xn, xs);
    if (r == OAR_WIN_EMPTY)
        return oar_k_error(k, OAR_ERR_SHAPE, "output would be empty: X '%s' %s, ksize {%lld, %lld}, strides {%lld, %lld}, "
                           "paddings {%lld, %lld, %lld, %lld}", xn, xs, (long long)pw.ks[0], (long long)pw.ks[1],
                           (long long)pw.st[0], (long long)pw.st[1], (long long)pw.pd[0], (long long)pw.pd[1],
                           (long long)pw.pd[2], (long long)pw.pd[3]);
    g->adaptive = pw.adaptive;
    memcpy(ks, pw.ks, sizeof ks);
    memcpy(pd, pw.pd, sizeof pd);
    const int64_t o[2] = {pw.out[0], pw.out[1]};
    if (oar_mul_checked(x->dims[0], g->c, &g->planes)) return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' %s is too large", xn, xs);
    g->oh = o[0]; g->ow = o[1];
    g->kh = ks[0]; g->kw = ks[1]; g->sh = st[0]; g->sw = st[1]; g->pt = pd[0]; g->pl = pd[2];
    return OAR_OK;
}

/* T: the storage type; comparisons and sums in A = acc_t<T> */
template <class T>
__global__ void pool_fwd_k(const T *x, T *y, Geom g)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(q, g.planes * g.oh * g.ow) {
        const Loc l = locate(q, g);
        const T *xp = x + l.base;
        int64_t h0, h1, w0, w1;
        window(l.i, g.h, g.oh, g.kh, g.sh, g.pt, g.adaptive, &h0, &h1);
        window(l.j, g.w, g.ow, g.kw, g.sw, g.pl, g.adaptive, &w0, &w1);
        A r = 0;
        if (h0 < h1 && w0 < w1) {
            if (g.is_max) {
                r = cvt<A>(xp[h0 * l.rs + w0 * l.cs]);
                for (int64_t a = h0; a < h1 && r == r; a++)
                    for (int64_t b = w0; b < w1; b++) {
                        A v = cvt<A>(xp[a * l.rs + b * l.cs]);
                        if (v > r || v != v) r = v;
                        if (r != r) break;
                    }
            } else {
                A s = 0;
                for (int64_t a = h0; a < h1; a++)
                    for (int64_t b = w0; b < w1; b++) s += cvt<A>(xp[a * l.rs + b * l.cs]);
                const int64_t cnt = (g.exclusive || g.adaptive) ? (h1 - h0) * (w1 - w0) : g.kh * g.kw;
                r = s / (A)cnt;
            }
        }
        y[q] = cvt<T>(r);
    }
}

/* float16 adds into X@GRAD with half atomics (sm_70 and later) */
template <class T>
__global__ void pool_bwd_k(const T *x, const T *dy, T *dx, Geom g)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(q, g.planes * g.oh * g.ow) {
        const Loc l = locate(q, g);
        const T *xp = x + l.base;
        T *dxp = dx + l.base;
        int64_t h0, h1, w0, w1;
        window(l.i, g.h, g.oh, g.kh, g.sh, g.pt, g.adaptive, &h0, &h1);
        window(l.j, g.w, g.ow, g.kw, g.sw, g.pl, g.adaptive, &w0, &w1);
        if (h0 >= h1 || w0 >= w1) continue;
        const A d = cvt<A>(dy[q]);
        if (g.is_max) {
            int64_t at = h0 * l.rs + w0 * l.cs;
            A r = cvt<A>(xp[at]);
            for (int64_t a = h0; a < h1; a++)
                for (int64_t b = w0; b < w1; b++) {
                    A v = cvt<A>(xp[a * l.rs + b * l.cs]);
                    if (v > r || (v != v && r == r)) { r = v; at = a * l.rs + b * l.cs; }
                }
            atomicAdd(dxp + at, cvt<T>(d));
        } else {
            const int64_t cnt = (g.exclusive || g.adaptive) ? (h1 - h0) * (w1 - w0) : g.kh * g.kw;
            const T s = cvt<T>(d / (A)cnt);
            for (int64_t a = h0; a < h1; a++)
                for (int64_t b = w0; b < w1; b++) atomicAdd(dxp + a * l.rs + b * l.cs, s);
        }
    }
}

template <class T>
int pool_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_POOL_X, 0, dt, -1, &x, &xd));
    if (!xd) return oar_k_error(k, OAR_ERR_NOT_FOUND, "X '%s' has no data", nm(oar_k_input_name(k, OAR_POOL_X, 0)));
    Geom g;
    OAR_TRY(pool_setup(k, x, &g));
    oar_tensor_t *yt = oar_k_output(k, OAR_POOL_OUT, 0);
    if (!yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    /* run-time inference sized Out; a disagreement is a bug to report, not to paper over */
    int64_t want[4] = {x->dims[0], g.c, g.oh, g.ow};
    if (g.nhwc) { want[1] = g.oh; want[2] = g.ow; want[3] = g.c; }
    if (yt->ndim != 4 || memcmp(yt->dims, want, sizeof want) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out was sized %s by shape inference but the kernel computes %s",
                           oar_shape_str(yt->dims, yt->ndim, a, sizeof a), oar_shape_str(want, 4, b, sizeof b));
    }
    void *y;
    OAR_TRY(out_data_at(k, OAR_POOL_OUT, 0, dt, g.planes * g.oh * g.ow, &y));
    const int64_t n = g.planes * g.oh * g.ow;
    if (n == 0) return OAR_OK;
    pool_fwd_k<T><<<grid_for(n), kThreads>>>((const T *)xd, (T *)y, g);
    OAR_CU_LAUNCH(k, "pool2d");
    return OAR_OK;
}

template <class T>
int pool_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *dy;
    const void *xd, *dyd;
    OAR_TRY(in_tensor_at(k, OAR_POOL_X, 0, dt, -1, &x, &xd));
    if (!xd) return oar_k_error(k, OAR_ERR_NOT_FOUND, "X '%s' has no data", nm(oar_k_input_name(k, OAR_POOL_X, 0)));
    Geom g;
    OAR_TRY(pool_setup(k, x, &g));
    int64_t want[4] = {x->dims[0], g.c, g.oh, g.ow};
    if (g.nhwc) { want[1] = g.oh; want[2] = g.ow; want[3] = g.c; }
    OAR_TRY(in_tensor_at(k, OAR_POOL_DOUT, 0, dt, -1, &dy, &dyd));
    if (dy->ndim != 4 || memcmp(dy->dims, want, sizeof want) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' is %s, expected %s", nm(oar_k_input_name(k, OAR_POOL_DOUT, 0)),
                           oar_shape_str(dy->dims, dy->ndim, a, sizeof a), oar_shape_str(want, 4, b, sizeof b));
    }
    oar_tensor_t *dxt = oar_k_output(k, OAR_POOL_DX, 0);
    if (!dxt) return OAR_OK;
    if (dxt->ndim != 4 || memcmp(dxt->dims, x->dims, sizeof want) != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "X@GRAD was not sized like X by shape inference");
    void *dx;
    const int64_t xn = oar_tensor_numel_of(x), n = g.planes * g.oh * g.ow;
    OAR_TRY(out_data_at(k, OAR_POOL_DX, 0, dt, xn, &dx));
    if (xn > 0) OAR_CU(k, cudaMemsetAsync(dx, 0, sizeof(T) * (size_t)xn, 0), "cudaMemsetAsync");
    if (n == 0) return OAR_OK;
    pool_bwd_k<T><<<grid_for(n), kThreads>>>((const T *)xd, (const T *)dyd, (T *)dx, g);
    OAR_CU_LAUNCH(k, "pool2d_grad");
    return OAR_OK;
}

#define POOL_REG(SFX, T, DT)                                                          \
    int pool2d_##SFX(oar_kernel_ctx_t *k) { return pool_fwd<T>(k, DT); }              \
    int pool2d_grad_##SFX(oar_kernel_ctx_t *k) { return pool_bwd<T>(k, DT); }         \
    OAR_REGISTER_KERNEL("pool2d", OAR_PLACE_CUDA, DT, pool2d_##SFX)                     \
    OAR_REGISTER_KERNEL("pool2d_grad", OAR_PLACE_CUDA, DT, pool2d_grad_##SFX)
POOL_REG(f16, __half, OAR_FP16)
POOL_REG(f32, float, OAR_FP32)
POOL_REG(f64, double, OAR_FP64)

}  // namespace
