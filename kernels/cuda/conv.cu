/*
 * conv.cu — CUDA kernels of conv2d / depthwise_conv2d and their grads on
 * cuDNN (NCHW or NHWC; float16, float32, float64), with the CPU kernels'
 * geometry (kernels/cpu/conv.c): strides, dilations, groups, paddings {h, w}
 * or {top, bottom, left, right}. NHWC (data_format) is cuDNN's own
 * channels-last tensor format for Input and Output; the Filter keeps oar's
 * [M, C/groups, kh, kw] layout in either case.
 *
 * cuDNN pads symmetrically; asymmetric paddings are applied by copying the
 * input into a zero-padded buffer and convolving it without padding (the
 * input grad is computed for the padded buffer and cropped). Algorithms:
 * see "algorithm choice" below. Float32/64 convolutions prefer plain FMA
 * math (no TF32), so results match the CPU kernels to float rounding.
 * Float16 tensors convolve with float accumulation (the convolution
 * descriptor's compute type) and may use tensor cores.
 */
#include <limits.h>
#include <stdio.h>
#include <map>
#include <mutex>
#include <string.h>
#include "cuda_common.h"
#include "half.h"
extern "C" {
#include "ops/conv.h"
#include "ops/window.h"
}

using namespace oarcu;

namespace {

struct TensorDesc {
    cudnnTensorDescriptor_t d = nullptr;
    ~TensorDesc() { if (d) cudnnDestroyTensorDescriptor(d); }
};
struct FilterDesc {
    cudnnFilterDescriptor_t d = nullptr;
    ~FilterDesc() { if (d) cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
    cudnnConvolutionDescriptor_t d = nullptr;
    ~ConvDesc() { if (d) cudnnDestroyConvolutionDescriptor(d); }
};

struct Geom {
    int64_t n, c, h, w, m, kh, kw, oh, ow, groups;
    int64_t st[2], dl[2], pd[4];
    bool nhwc;            /* Input/Output channels-last: [N, H, W, C] */
    bool padded;          /* asymmetric paddings: convolve an explicitly padded copy */
    int64_t hp, wp;       /* the input's (padded) height and width as cuDNN sees it */
};

int conv_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *w, Geom *g)
{
    char xs[128], ws[128];
    const char *xn = nm(oar_k_input_name(k, OAR_CONV_INPUT, 0)), *wn = nm(oar_k_input_name(k, OAR_CONV_FILTER, 0));
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    oar_shape_str(w->dims, w->ndim, ws, sizeof ws);
    const oar_conv_attrs_t *a = (const oar_conv_attrs_t *)oar_k_attrs(k);
    g->nhwc = a->nhwc;
    if (x->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' must be 4-D %s, got shape %s", xn, g->nhwc ? "NHWC" : "NCHW",
                           xs);
    if (w->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "Filter '%s' must be 4-D, got shape %s", wn, ws);
    if (x->dtype != w->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Input '%s' is %s but Filter '%s' is %s", xn, oar_dtype_name(x->dtype), wn,
                           oar_dtype_name(w->dtype));
    memcpy(g->st, a->st, sizeof g->st);
    memcpy(g->dl, a->dl, sizeof g->dl);
    memcpy(g->pd, a->pd, sizeof g->pd);
    /* Fluid's SAME/VALID (SAME also sets dilations to 1), as the CPU kernel */
    g->n = x->dims[0];
    g->c = g->nhwc ? x->dims[3] : x->dims[1];
    g->h = g->nhwc ? x->dims[1] : x->dims[2];
    g->w = g->nhwc ? x->dims[2] : x->dims[3];
    const int64_t in_hw[2] = {g->h, g->w};
    /* the geometry conv_infer sized Output with (window.h) */
    oar_conv_win_t cw;
    const int r = oar_win_conv_plan(a->algo, in_hw, &w->dims[2], g->st, g->dl, g->pd, &cw);
    memcpy(g->pd, cw.pd, sizeof g->pd);
    memcpy(g->dl, cw.dl, sizeof g->dl);
    if (a->algo < 0 || a->algo > 2)
        return oar_k_error(k, OAR_ERR_INVALID, "attr padding_algorithm must be \"EXPLICIT\", \"SAME\" or \"VALID\"");
    g->groups = a->groups;
    if (g->groups < 1) return oar_k_error(k, OAR_ERR_INVALID, "attr groups = %lld must be >= 1", (long long)g->groups);
    for (int i = 0; i < 2; i++)
        if (g->st[i] < 1 || g->dl[i] < 1 || g->pd[2 * i] < 0 || g->pd[2 * i + 1] < 0)
            return oar_k_error(k, OAR_ERR_INVALID, "strides {%lld, %lld} and dilations {%lld, %lld} must be >= 1 and "
                               "paddings >= 0", (long long)g->st[0], (long long)g->st[1], (long long)g->dl[0],
                               (long long)g->dl[1]);
    g->m = w->dims[0]; g->kh = w->dims[2]; g->kw = w->dims[3];
    if (g->m < 1 || w->dims[1] < 1 || g->kh < 1 || g->kw < 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "Filter '%s' has an empty dimension: shape %s", wn, ws);
    if (g->c != w->dims[1] * g->groups || g->m % g->groups != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' %s and Filter '%s' %s do not agree with groups = %lld (need "
                           "C == Filter[1] * groups and Filter[0] divisible by groups)", xn, xs, wn, ws,
                           (long long)g->groups);
    if (g->h < 1 || g->w < 1) return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' %s has an empty spatial dimension", xn, xs);
    if (r == OAR_WIN_OVERFLOW)
        return oar_k_error(k, OAR_ERR_SHAPE, "sizes overflow: Input '%s' %s, Filter '%s' %s", xn, xs, wn, ws);
    if (r == OAR_WIN_EMPTY)
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s would be empty: Input '%s' %s, Filter '%s' %s",
                           cw.bad == 0 ? "height" : "width", xn, xs, wn, ws);
    const int64_t o[2] = {cw.out[0], cw.out[1]};
    g->oh = o[0]; g->ow = o[1];
    g->padded = g->pd[0] != g->pd[1] || g->pd[2] != g->pd[3];
    g->hp = g->padded ? g->h + g->pd[0] + g->pd[1] : g->h;
    g->wp = g->padded ? g->w + g->pd[2] + g->pd[3] : g->w;
    const int64_t big[] = {g->n, g->c, g->hp, g->wp, g->m, g->oh, g->ow, g->c * g->hp * g->wp, g->m * g->oh * g->ow};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        if (big[i] > INT_MAX)
            return oar_k_error(k, OAR_ERR_RANGE, "Input %s with Filter %s exceeds cuDNN's int dimensions", xs, ws);
    return OAR_OK;
}

/* the descriptors of one convolution */
struct Descs {
    TensorDesc x, y;
    FilterDesc w;
    ConvDesc conv;
    cudnnDataType_t type;
};

int make_descs(oar_kernel_ctx_t *k, const Geom &g, int dt, Descs *d)
{
    d->type = dt == OAR_FP64 ? CUDNN_DATA_DOUBLE : dt == OAR_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    /* half data accumulates in float */
    const cudnnDataType_t compute = dt == OAR_FP16 ? CUDNN_DATA_FLOAT : d->type;
    /* the dimensions are given as N, C, H, W whatever the layout */
    const cudnnTensorFormat_t fmt = g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    OAR_CUDNN(k, cudnnCreateTensorDescriptor(&d->x.d), "cudnnCreateTensorDescriptor");
    OAR_CUDNN(k, cudnnCreateTensorDescriptor(&d->y.d), "cudnnCreateTensorDescriptor");
    OAR_CUDNN(k, cudnnCreateFilterDescriptor(&d->w.d), "cudnnCreateFilterDescriptor");
    OAR_CUDNN(k, cudnnCreateConvolutionDescriptor(&d->conv.d), "cudnnCreateConvolutionDescriptor");
    OAR_CUDNN(k, cudnnSetTensor4dDescriptor(d->x.d, fmt, d->type, (int)g.n, (int)g.c, (int)g.hp, (int)g.wp),
              "cudnnSetTensor4dDescriptor (Input)");
    OAR_CUDNN(k, cudnnSetTensor4dDescriptor(d->y.d, fmt, d->type, (int)g.n, (int)g.m, (int)g.oh, (int)g.ow),
              "cudnnSetTensor4dDescriptor (Output)");
    /* oar's filter is [M, C/groups, kh, kw] in both layouts */
    OAR_CUDNN(k, cudnnSetFilter4dDescriptor(d->w.d, d->type, CUDNN_TENSOR_NCHW, (int)g.m, (int)(g.c / g.groups),
                                            (int)g.kh, (int)g.kw), "cudnnSetFilter4dDescriptor");
    const int ph = g.padded ? 0 : (int)g.pd[0], pw = g.padded ? 0 : (int)g.pd[2];
    OAR_CUDNN(k, cudnnSetConvolution2dDescriptor(d->conv.d, ph, pw, (int)g.st[0], (int)g.st[1], (int)g.dl[0],
                                                 (int)g.dl[1], CUDNN_CROSS_CORRELATION, compute),
              "cudnnSetConvolution2dDescriptor");
    OAR_CUDNN(k, cudnnSetConvolutionGroupCount(d->conv.d, (int)g.groups), "cudnnSetConvolutionGroupCount");
    /* what cuDNN's heuristic ranks for; each candidate then sets its own */
    OAR_CUDNN(k, cudnnSetConvolutionMathType(d->conv.d, dt == OAR_FP16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
              "cudnnSetConvolutionMathType");
    return OAR_OK;
}

size_t workspace_limit(oar_kernel_ctx_t *k)
{
    int64_t mb = ((const oar_conv_attrs_t *)oar_k_attrs(k))->workspace_mb;
    if (mb <= 0) mb = 512;
    return (size_t)mb << 20;
}

/* ---- algorithm choice ------------------------------------------------------
 * The candidates of one direction come from cuDNN's heuristic ranking (the
 * *_v7 queries, asked under FMA math for float32/64 and tensor-op math for
 * float16; each entry an algorithm and a math type). Float32 and float64
 * first try every ranked algorithm under plain FMA math (no silent TF32:
 * the CPU is the reference), then the entries under their own math type:
 * default math (float32: may be TF32), then tensor-op math, never the
 * down-conversion of float32 to half; float16 keeps cuDNN's order.
 * Algorithm 0 (IMPLICIT_GEMM forward, ALGO_0 backward), the most widely
 * supported, comes last as a fallback if it was not ranked. A candidate
 * runs with the descriptor set to its math type and a workspace of its own
 * size (skipped when that exceeds the op's workspace_size_MB); one that
 * fails (not supported for this shape or layout, out of memory, ...) gives
 * way to the next. The first to run is cached per device and (direction,
 * dtype, layout, geometry, limit), so the search runs once per shape; a
 * cached algorithm that fails later is dropped and the search repeated. */
struct AlgoKey {
    int device, dir, dtype, nhwc;
    int64_t dims[16];
    bool operator<(const AlgoKey &o) const { return memcmp(this, &o, sizeof *this) < 0; }
};
struct Cand {
    int algo;
    cudnnMathType_t math;
    bool operator==(const Cand &o) const { return algo == o.algo && math == o.math; }
};
std::map<AlgoKey, Cand> g_algos;
std::mutex g_algos_lock;

AlgoKey algo_key(oar_kernel_ctx_t *k, int dir, int dt, const Geom &g, size_t limit)
{
    AlgoKey key;
    memset(&key, 0, sizeof key);   /* compared bytewise: no stray padding */
    key.device = oar_k_device(k);
    key.dir = dir;
    key.dtype = dt;
    key.nhwc = g.nhwc;
    const int64_t d[] = {g.n, g.c, g.hp, g.wp, g.m, g.kh, g.kw, g.st[0], g.st[1], g.dl[0], g.dl[1],
                         g.padded ? 0 : g.pd[0], g.padded ? 0 : g.pd[2], g.groups, (int64_t)limit};
    memcpy(key.dims, d, sizeof d);
    return key;
}

/* the order in which an entry's own math type is tried for dtype dt; -1: never */
int math_rank(cudnnMathType_t m, int dt)
{
    if (dt == OAR_FP16) return 0;   /* tensor cores are the point */
    if (m == CUDNN_FMA_MATH) return 0;
    if (m == CUDNN_DEFAULT_MATH) return dt == OAR_FP64 ? 0 : 1;   /* float32: may be TF32 */
    if (m == CUDNN_TENSOR_OP_MATH) return 2;
    return -1;                      /* CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: float32 as half */
}

/* The candidates of a ranking of n entries, in the order to try them (see
 * above), into c (room for 2 * n + 2); returns their count */
template <class Perf>
int candidates(const Perf *perf, int n, int dt, Cand *c)
{
    int m = 0;
    auto add = [&](const Cand &one) {
        for (int j = 0; j < m; j++)
            if (c[j] == one) return;
        c[m++] = one;
    };
    if (dt != OAR_FP16)
        for (int i = 0; i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS) add(Cand{(int)perf[i].algo, CUDNN_FMA_MATH});
    for (int rank = 0; rank <= 2; rank++)
        for (int i = 0; i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && math_rank(perf[i].mathType, dt) == rank)
                add(Cand{(int)perf[i].algo, perf[i].mathType});
    add(Cand{0, dt == OAR_FP16 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH});
    add(Cand{0, CUDNN_DEFAULT_MATH});
    return m;
}

const char *const kDirName[] = {"forward", "backward-data", "backward-filter"};

/* One direction of the convolution: the cached algorithm, else the
 * candidates in turn until one runs (then cached).
 *   rank(perf, cap, &n): cuDNN's heuristic ranking into perf (cap entries)
 *   wsq(algo, &bytes):   the workspace of algo under the current math type
 *   run(algo, ws, bytes): the cuDNN call itself */
template <class Perf, int kCount, class Rank, class WsQuery, class Run>
int run_conv(oar_kernel_ctx_t *k, const AlgoKey &key, cudnnConvolutionDescriptor_t conv, size_t limit, Rank rank,
             WsQuery wsq, Run run)
{
    /* CUDNN_STATUS_SUCCESS when c ran; a workspace over the limit or not
     * allocatable: CUDNN_STATUS_ALLOC_FAILED, with *too_big set for the former */
    auto attempt = [&](const Cand &c, bool *too_big) -> cudnnStatus_t {
        *too_big = false;
        cudnnStatus_t s = cudnnSetConvolutionMathType(conv, c.math);
        if (s != CUDNN_STATUS_SUCCESS) return s;
        size_t bytes = 0;
        s = wsq(c.algo, &bytes);
        if (s != CUDNN_STATUS_SUCCESS) return s;
        if (bytes > limit) { *too_big = true; return CUDNN_STATUS_ALLOC_FAILED; }
        Scratch ws;
        if (ws.alloc(k, bytes, "cuDNN workspace") != OAR_OK) return CUDNN_STATUS_ALLOC_FAILED;
        s = run(c.algo, ws.p, bytes);
        if (s == CUDNN_STATUS_ALLOC_FAILED) {   /* cuDNN's own allocations: once more after freeing the cache */
            release_cache(oar_k_device(k));
            s = run(c.algo, ws.p, bytes);
        }
        return s;
    };
    bool too_big = false;
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    int last_algo = -1, tried = 0, over_limit = 0;
    Cand cached{-1, CUDNN_DEFAULT_MATH};
    {
        std::lock_guard<std::mutex> lk(g_algos_lock);
        auto it = g_algos.find(key);
        if (it != g_algos.end()) cached = it->second;
    }
    if (cached.algo >= 0) {
        cudnnStatus_t s = attempt(cached, &too_big);
        if (s == CUDNN_STATUS_SUCCESS) return OAR_OK;
        std::lock_guard<std::mutex> lk(g_algos_lock);
        auto it = g_algos.find(key);
        if (it != g_algos.end() && it->second == cached) g_algos.erase(it);
        if (!too_big) { tried++; last = s; last_algo = cached.algo; }
    }
    Perf perf[kCount];
    int got = 0;
    if (rank(perf, kCount, &got) != CUDNN_STATUS_SUCCESS) got = 0;   /* no ranking: the fallback alone */
    if (got < 0) got = 0;
    if (got > kCount) got = kCount;
    Cand cands[2 * kCount + 2];
    const int n = candidates(perf, got, key.dtype, cands);
    for (int i = 0; i < n; i++) {
        if (cands[i] == cached) continue;   /* it just failed */
        cudnnStatus_t s = attempt(cands[i], &too_big);
        if (s == CUDNN_STATUS_SUCCESS) {
            std::lock_guard<std::mutex> lk(g_algos_lock);
            g_algos[key] = cands[i];
            return OAR_OK;
        }
        if (too_big) { over_limit++; continue; }
        tried++;
        last = s;
        last_algo = cands[i].algo;
    }
    const int status = last == CUDNN_STATUS_ALLOC_FAILED ? OAR_ERR_NOMEM
                     : last == CUDNN_STATUS_NOT_SUPPORTED ? OAR_ERR_UNSUPPORTED : OAR_ERR_DEVICE;
    char lastmsg[160] = "";
    if (last_algo >= 0)
        snprintf(lastmsg, sizeof lastmsg, "; the last, algorithm %d, failed with %s", last_algo,
                 cudnnGetErrorString(last));
    return oar_k_error(k, status, "cuDNN could not run the %s convolution on CUDA device %d (%s %s): %d algorithms "
                       "failed%s, %d needed more than the workspace limit of %zu MB (attr workspace_size_MB)",
                       kDirName[key.dir], oar_k_device(k), oar_dtype_name(key.dtype), key.nhwc ? "NHWC" : "NCHW", tried,
                       lastmsg, over_limit, limit >> 20);
}

/* The zero-padded copy of x (NCHW [n, c, h, w] or NHWC [n, h, w, c]) of
 * spatial size hp x wp, the input starting at row pt, column pl */
template <class T>
__global__ void pad_k(const T *x, T *xp, int64_t n, int64_t c, int64_t h, int64_t w, int64_t hp, int64_t wp,
                      int64_t pt, int64_t pl, bool nhwc)
{
    OAR_CU_LOOP(q, n * c * hp * wp) {
        int64_t j, i, p;   /* column, row, image * c + channel */
        if (nhwc) {
            const int64_t ch = q % c, r = q / c;
            j = r % wp; i = (r / wp) % hp; p = (r / (wp * hp)) * c + ch;
        } else {
            j = q % wp; i = (q / wp) % hp; p = q / (wp * hp);
        }
        const int64_t a = i - pt, b = j - pl;
        const bool in = a >= 0 && a < h && b >= 0 && b < w;
        const int64_t src = nhwc ? (((p / c) * h + a) * w + b) * c + p % c : (p * h + a) * w + b;
        xp[q] = in ? x[src] : cvt<T>(0.0f);
    }
}

/* the inverse: the h x w window at (pt, pl) of the padded xp into x */
template <class T>
__global__ void crop_k(const T *xp, T *x, int64_t n, int64_t c, int64_t h, int64_t w, int64_t hp, int64_t wp,
                       int64_t pt, int64_t pl, bool nhwc)
{
    OAR_CU_LOOP(q, n * c * h * w) {
        if (nhwc) {
            const int64_t ch = q % c, r = q / c, b = r % w, a = (r / w) % h, img = r / (w * h);
            x[q] = xp[((img * hp + a + pt) * wp + b + pl) * c + ch];
        } else {
            const int64_t b = q % w, a = (q / w) % h, p = q / (w * h);
            x[q] = xp[(p * hp + a + pt) * wp + b + pl];
        }
    }
}

/* Input as cuDNN sees it: itself, or a zero-padded copy in `buf` */
template <class T>
int input_view(oar_kernel_ctx_t *k, const Geom &g, const void *x, Scratch &buf, const void **view)
{
    *view = x;
    if (!g.padded) return OAR_OK;
    const int64_t n = g.n * g.c * g.hp * g.wp;
    OAR_TRY(buf.alloc(k, sizeof(T) * (size_t)n, "padded input"));
    pad_k<T><<<grid_for(n), kThreads>>>((const T *)x, buf.as<T>(), g.n, g.c, g.h, g.w, g.hp, g.wp, g.pd[0], g.pd[2],
                                        g.nhwc);
    OAR_CU_LAUNCH(k, "pad");
    *view = buf.p;
    return OAR_OK;
}

template <class T>
int conv_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *w;
    const void *xd, *wd;
    OAR_TRY(in_tensor_at(k, OAR_CONV_INPUT, 0, dt, -1, &x, &xd));
    OAR_TRY(in_tensor_at(k, OAR_CONV_FILTER, 0, dt, -1, &w, &wd));
    Geom g;
    OAR_TRY(conv_setup(k, x, w, &g));
    void *y;
    OAR_TRY(out_data_at(k, OAR_CONV_OUTPUT, 0, dt, g.n * g.m * g.oh * g.ow, &y));
    if (g.n == 0) return OAR_OK;
    cudnnHandle_t h;
    OAR_TRY(dnn_handle(k, &h));
    Descs d;
    OAR_TRY(make_descs(k, g, dt, &d));
    Scratch padded;
    const void *xv;
    OAR_TRY(input_view<T>(k, g, xd, padded, &xv));
    const size_t limit = workspace_limit(k);
    const acc_t<T> one = 1, zero = 0;   /* cuDNN's scaling factors: float for half data */
    return run_conv<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        k, algo_key(k, 0, dt, g, limit), d.conv.d, limit,
        [&](cudnnConvolutionFwdAlgoPerf_t *perf, int cap, int *got) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.conv.d, d.y.d, cap, got, perf);
        },
        [&](int a, size_t *b) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.d, d.w.d, d.conv.d, d.y.d,
                                                           (cudnnConvolutionFwdAlgo_t)a, b);
        },
        [&](int a, void *ws, size_t bytes) {
            return cudnnConvolutionForward(h, &one, d.x.d, xv, d.w.d, wd, d.conv.d, (cudnnConvolutionFwdAlgo_t)a, ws,
                                           bytes, &zero, d.y.d, y);
        });
}

template <class T>
int conv_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *w, *dy;
    const void *xd, *wd, *dyd;
    OAR_TRY(in_tensor_at(k, OAR_CONV_INPUT, 0, dt, -1, &x, &xd));
    OAR_TRY(in_tensor_at(k, OAR_CONV_FILTER, 0, dt, -1, &w, &wd));
    Geom g;
    OAR_TRY(conv_setup(k, x, w, &g));
    OAR_TRY(in_tensor_at(k, OAR_CONV_DOUTPUT, 0, dt, g.n * g.m * g.oh * g.ow, &dy, &dyd));
    void *dx, *dw;
    OAR_TRY(out_data_opt_at(k, OAR_CONV_DINPUT, 0, dt, oar_tensor_numel_of(x), &dx));
    OAR_TRY(out_data_opt_at(k, OAR_CONV_DFILTER, 0, dt, oar_tensor_numel_of(w), &dw));
    if (!dx && !dw) return OAR_OK;
    if (g.n == 0) {   /* no images: the filter grad is an empty sum */
        if (dw) OAR_CU(k, cudaMemsetAsync(dw, 0, sizeof(T) * (size_t)oar_tensor_numel_of(w), 0), "cudaMemsetAsync");
        return OAR_OK;
    }
    cudnnHandle_t h;
    OAR_TRY(dnn_handle(k, &h));
    Descs d;
    OAR_TRY(make_descs(k, g, dt, &d));
    const size_t limit = workspace_limit(k);
    const acc_t<T> one = 1, zero = 0;
    if (dx) {
        Scratch dpad;
        void *target = dx;
        if (g.padded) {
            OAR_TRY(dpad.alloc(k, sizeof(T) * (size_t)(g.n * g.c * g.hp * g.wp), "padded input grad"));
            target = dpad.p;
        }
        OAR_TRY((run_conv<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
            k, algo_key(k, 1, dt, g, limit), d.conv.d, limit,
            [&](cudnnConvolutionBwdDataAlgoPerf_t *perf, int cap, int *got) {
                return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.conv.d, d.x.d, cap, got, perf);
            },
            [&](int a, size_t *b) {
                return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.d, d.y.d, d.conv.d, d.x.d,
                                                                    (cudnnConvolutionBwdDataAlgo_t)a, b);
            },
            [&](int a, void *ws, size_t bytes) {
                return cudnnConvolutionBackwardData(h, &one, d.w.d, wd, d.y.d, dyd, d.conv.d,
                                                    (cudnnConvolutionBwdDataAlgo_t)a, ws, bytes, &zero, d.x.d, target);
            })));
        if (g.padded) {
            const int64_t n = g.n * g.c * g.h * g.w;
            crop_k<T><<<grid_for(n), kThreads>>>(dpad.as<T>(), (T *)dx, g.n, g.c, g.h, g.w, g.hp, g.wp, g.pd[0],
                                                 g.pd[2], g.nhwc);
            OAR_CU_LAUNCH(k, "crop");
        }
    }
    if (dw) {
        Scratch padded;
        const void *xv;
        OAR_TRY(input_view<T>(k, g, xd, padded, &xv));
        OAR_TRY((run_conv<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
            k, algo_key(k, 2, dt, g, limit), d.conv.d, limit,
            [&](cudnnConvolutionBwdFilterAlgoPerf_t *perf, int cap, int *got) {
                return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv.d, d.w.d, cap, got, perf);
            },
            [&](int a, size_t *b) {
                return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.d, d.y.d, d.conv.d, d.w.d,
                                                                      (cudnnConvolutionBwdFilterAlgo_t)a, b);
            },
            [&](int a, void *ws, size_t bytes) {
                return cudnnConvolutionBackwardFilter(h, &one, d.x.d, xv, d.y.d, dyd, d.conv.d,
                                                      (cudnnConvolutionBwdFilterAlgo_t)a, ws, bytes, &zero, d.w.d, dw);
            })));
    }
    return OAR_OK;
}

#define CONV_REG(SFX, T, DT)                                                                 \
    int conv2d_##SFX(oar_kernel_ctx_t *k) { return conv_fwd<T>(k, DT); }                     \
    int conv2d_grad_##SFX(oar_kernel_ctx_t *k) { return conv_bwd<T>(k, DT); }                \
    int dw_conv2d_##SFX(oar_kernel_ctx_t *k) { return conv_fwd<T>(k, DT); }                  \
    int dw_conv2d_grad_##SFX(oar_kernel_ctx_t *k) { return conv_bwd<T>(k, DT); }             \
    OAR_REGISTER_KERNEL("conv2d", OAR_PLACE_CUDA, DT, conv2d_##SFX)                            \
    OAR_REGISTER_KERNEL("conv2d_grad", OAR_PLACE_CUDA, DT, conv2d_grad_##SFX)                  \
    OAR_REGISTER_KERNEL("depthwise_conv2d", OAR_PLACE_CUDA, DT, dw_conv2d_##SFX)               \
    OAR_REGISTER_KERNEL("depthwise_conv2d_grad", OAR_PLACE_CUDA, DT, dw_conv2d_grad_##SFX)
CONV_REG(f16, __half, OAR_FP16)
CONV_REG(f32, float, OAR_FP32)
CONV_REG(f64, double, OAR_FP64)

}  // namespace
