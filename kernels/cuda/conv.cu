/*
 * conv.cu — CUDA kernels of conv2d / depthwise_conv2d and their grads on
 * cuDNN (NCHW; float16, float32, float64), with the CPU kernels' geometry
 * (kernels/cpu/conv.c): strides, dilations, groups, paddings {h, w} or
 * {top, bottom, left, right}.
 *
 * cuDNN pads symmetrically; asymmetric paddings are applied by copying the
 * input into a zero-padded buffer and convolving it without padding (the
 * input grad is computed for the padded buffer and cropped). Algorithms come
 * from cuDNN's heuristics (the *_v7 queries): the first whose own math type
 * keeps the precision and whose own workspace fits the op's
 * workspace_size_MB, cached per shape. Float32/64 convolutions use plain FMA
 * math (no TF32), so results match the CPU kernels to float rounding.
 * Float16 tensors convolve with float accumulation (the convolution
 * descriptor's compute type) and may use tensor cores.
 */
#include <limits.h>
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
    /* NHWC runs on the CPU kernels only (they transpose to NCHW) */
    if (a->nhwc)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "data_format \"NHWC\" is not supported on the GPU yet; use NCHW");
    if (x->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' must be 4-D NCHW, got shape %s", xn, xs);
    if (w->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "Filter '%s' must be 4-D, got shape %s", wn, ws);
    if (x->dtype != w->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Input '%s' is %s but Filter '%s' is %s", xn, oar_dtype_name(x->dtype), wn,
                           oar_dtype_name(w->dtype));
    memcpy(g->st, a->st, sizeof g->st);
    memcpy(g->dl, a->dl, sizeof g->dl);
    memcpy(g->pd, a->pd, sizeof g->pd);
    /* Fluid's SAME/VALID (SAME also sets dilations to 1), as the CPU kernel */
    static const char *const algo_names[] = {"EXPLICIT", "SAME", "VALID"};
    if (a->algo < 0 || a->algo > 2 ||
        !oar_win_resolve_pads(algo_names[a->algo], &x->dims[2], &w->dims[2], g->st, g->pd, g->dl))
        return oar_k_error(k, OAR_ERR_INVALID, "attr padding_algorithm must be \"EXPLICIT\", \"SAME\" or \"VALID\"");
    g->groups = a->groups;
    if (g->groups < 1) return oar_k_error(k, OAR_ERR_INVALID, "attr groups = %lld must be >= 1", (long long)g->groups);
    for (int i = 0; i < 2; i++)
        if (g->st[i] < 1 || g->dl[i] < 1 || g->pd[2 * i] < 0 || g->pd[2 * i + 1] < 0)
            return oar_k_error(k, OAR_ERR_INVALID, "strides {%lld, %lld} and dilations {%lld, %lld} must be >= 1 and "
                               "paddings >= 0", (long long)g->st[0], (long long)g->st[1], (long long)g->dl[0],
                               (long long)g->dl[1]);
    g->n = x->dims[0]; g->c = x->dims[1]; g->h = x->dims[2]; g->w = x->dims[3];
    g->m = w->dims[0]; g->kh = w->dims[2]; g->kw = w->dims[3];
    if (g->m < 1 || w->dims[1] < 1 || g->kh < 1 || g->kw < 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "Filter '%s' has an empty dimension: shape %s", wn, ws);
    if (g->c != w->dims[1] * g->groups || g->m % g->groups != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' %s and Filter '%s' %s do not agree with groups = %lld (need "
                           "C == Filter[1] * groups and Filter[0] divisible by groups)", xn, xs, wn, ws,
                           (long long)g->groups);
    if (g->h < 1 || g->w < 1) return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' %s has an empty spatial dimension", xn, xs);
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        int64_t room = x->dims[2 + i] + g->pd[2 * i] + g->pd[2 * i + 1] - (g->dl[i] * (w->dims[2 + i] - 1) + 1);
        if (room < 0)
            return oar_k_error(k, OAR_ERR_SHAPE, "output %s would be empty: Input '%s' %s, Filter '%s' %s",
                               i == 0 ? "height" : "width", xn, xs, wn, ws);
        o[i] = room / g->st[i] + 1;
    }
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
    OAR_CUDNN(k, cudnnCreateTensorDescriptor(&d->x.d), "cudnnCreateTensorDescriptor");
    OAR_CUDNN(k, cudnnCreateTensorDescriptor(&d->y.d), "cudnnCreateTensorDescriptor");
    OAR_CUDNN(k, cudnnCreateFilterDescriptor(&d->w.d), "cudnnCreateFilterDescriptor");
    OAR_CUDNN(k, cudnnCreateConvolutionDescriptor(&d->conv.d), "cudnnCreateConvolutionDescriptor");
    OAR_CUDNN(k, cudnnSetTensor4dDescriptor(d->x.d, CUDNN_TENSOR_NCHW, d->type, (int)g.n, (int)g.c, (int)g.hp, (int)g.wp),
              "cudnnSetTensor4dDescriptor (Input)");
    OAR_CUDNN(k, cudnnSetTensor4dDescriptor(d->y.d, CUDNN_TENSOR_NCHW, d->type, (int)g.n, (int)g.m, (int)g.oh, (int)g.ow),
              "cudnnSetTensor4dDescriptor (Output)");
    OAR_CUDNN(k, cudnnSetFilter4dDescriptor(d->w.d, d->type, CUDNN_TENSOR_NCHW, (int)g.m, (int)(g.c / g.groups),
                                            (int)g.kh, (int)g.kw), "cudnnSetFilter4dDescriptor");
    const int ph = g.padded ? 0 : (int)g.pd[0], pw = g.padded ? 0 : (int)g.pd[2];
    OAR_CUDNN(k, cudnnSetConvolution2dDescriptor(d->conv.d, ph, pw, (int)g.st[0], (int)g.st[1], (int)g.dl[0],
                                                 (int)g.dl[1], CUDNN_CROSS_CORRELATION, compute),
              "cudnnSetConvolution2dDescriptor");
    OAR_CUDNN(k, cudnnSetConvolutionGroupCount(d->conv.d, (int)g.groups), "cudnnSetConvolutionGroupCount");
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
 * cuDNN's heuristic ranks candidates, each with its own math type. A
 * candidate is usable when its math type keeps the op's precision (float32
 * and float64: FMA only, so no silent TF32; the CPU is the reference) and
 * the workspace cuDNN reports for it under that math type fits the limit;
 * the chosen algorithm runs with the descriptor set to its math type and a
 * workspace of its own size. Choices are cached per device and
 * (direction, dtype, geometry, limit): the heuristic runs once per shape. */
struct AlgoKey {
    int device, dir, dtype;
    int64_t dims[16];
    bool operator<(const AlgoKey &o) const { return memcmp(this, &o, sizeof *this) < 0; }
};
struct AlgoChoice { int algo; cudnnMathType_t math; size_t ws; };
std::map<AlgoKey, AlgoChoice> g_algos;
std::mutex g_algos_lock;

AlgoKey algo_key(oar_kernel_ctx_t *k, int dir, int dt, const Geom &g, size_t limit)
{
    AlgoKey key;
    memset(&key, 0, sizeof key);   /* compared bytewise: no stray padding */
    key.device = k->device;
    key.dir = dir;
    key.dtype = dt;
    const int64_t d[] = {g.n, g.c, g.hp, g.wp, g.m, g.kh, g.kw, g.st[0], g.st[1], g.dl[0], g.dl[1],
                         g.padded ? 0 : g.pd[0], g.padded ? 0 : g.pd[2], g.groups, (int64_t)limit};
    memcpy(key.dims, d, sizeof d);
    return key;
}

bool math_ok(cudnnMathType_t m, int dt)
{
    if (dt == OAR_FP16) return true;                      /* tensor cores are the point */
    if (dt == OAR_FP64) return m == CUDNN_DEFAULT_MATH || m == CUDNN_FMA_MATH;
    return m == CUDNN_FMA_MATH;                           /* float32: no TF32 */
}

/* The first usable candidate; wsq(algo, &bytes) asks cuDNN the workspace of
 * an algorithm under the descriptor's current math type. */
template <class Perf, class WsQuery>
int pick(oar_kernel_ctx_t *k, const AlgoKey &key, const Perf *perf, int n, size_t limit, const char *what,
         cudnnConvolutionDescriptor_t conv, WsQuery wsq, AlgoChoice *out)
{
    {
        std::lock_guard<std::mutex> lk(g_algos_lock);
        auto it = g_algos.find(key);
        if (it != g_algos.end()) {
            *out = it->second;
            OAR_CUDNN(k, cudnnSetConvolutionMathType(conv, out->math), "cudnnSetConvolutionMathType");
            return OAR_OK;
        }
    }
    for (int i = 0; i < n; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_ok(perf[i].mathType, key.dtype)) continue;
        if (cudnnSetConvolutionMathType(conv, perf[i].mathType) != CUDNN_STATUS_SUCCESS) continue;
        size_t ws = 0;
        if (wsq((int)perf[i].algo, &ws) != CUDNN_STATUS_SUCCESS || ws > limit) continue;
        *out = AlgoChoice{(int)perf[i].algo, perf[i].mathType, ws};
        std::lock_guard<std::mutex> lk(g_algos_lock);
        g_algos[key] = *out;
        return OAR_OK;
    }
    return oar_k_error(k, OAR_ERR_UNSUPPORTED, "cuDNN offers no %s algorithm for this convolution with %s math "
                       "within the workspace limit of %zu MB (attr workspace_size_MB)", what,
                       key.dtype == OAR_FP16 ? "any" : "FMA (non-TF32)", limit >> 20);
}

template <class T>
__global__ void pad_k(const T *x, T *xp, int64_t planes, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t pt,
                      int64_t pl)
{
    OAR_CU_LOOP(q, planes * hp * wp) {
        const int64_t j = q % wp, i = (q / wp) % hp, p = q / (wp * hp), a = i - pt, b = j - pl;
        xp[q] = (a >= 0 && a < h && b >= 0 && b < w) ? x[(p * h + a) * w + b] : cvt<T>(0.0f);
    }
}

template <class T>
__global__ void crop_k(const T *xp, T *x, int64_t planes, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t pt,
                       int64_t pl)
{
    OAR_CU_LOOP(q, planes * h * w) {
        const int64_t b = q % w, a = (q / w) % h, p = q / (w * h);
        x[q] = xp[(p * hp + a + pt) * wp + b + pl];
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
    pad_k<T><<<grid_for(n), kThreads>>>((const T *)x, buf.as<T>(), g.n * g.c, g.h, g.w, g.hp, g.wp, g.pd[0], g.pd[2]);
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
    Scratch padded, ws;
    const void *xv;
    OAR_TRY(input_view<T>(k, g, xd, padded, &xv));
    const size_t limit = workspace_limit(k);
    const AlgoKey key = algo_key(k, 0, dt, g, limit);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    {
        std::lock_guard<std::mutex> lk(g_algos_lock);
        if (g_algos.count(key)) got = -1;   /* cached: skip the heuristic */
    }
    if (got == 0)
        OAR_CUDNN(k, cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.conv.d, d.y.d,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
                  "cudnnGetConvolutionForwardAlgorithm_v7");
    AlgoChoice ch;
    OAR_TRY(pick(k, key, perf, got < 0 ? 0 : got, limit, "forward", d.conv.d,
                 [&](int a, size_t *b) {
                     return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.d, d.w.d, d.conv.d, d.y.d,
                                                                    (cudnnConvolutionFwdAlgo_t)a, b);
                 }, &ch));
    OAR_TRY(ws.alloc(k, ch.ws, "cuDNN workspace"));
    const acc_t<T> one = 1, zero = 0;   /* cuDNN's scaling factors: float for half data */
    OAR_CUDNN(k, cudnnConvolutionForward(h, &one, d.x.d, xv, d.w.d, wd, d.conv.d, (cudnnConvolutionFwdAlgo_t)ch.algo,
                                         ws.p, ch.ws, &zero, d.y.d, y), "cudnnConvolutionForward");
    return OAR_OK;
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
        const AlgoKey key = algo_key(k, 1, dt, g, limit);
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int got = 0;
        {
            std::lock_guard<std::mutex> lk(g_algos_lock);
            if (g_algos.count(key)) got = -1;
        }
        if (got == 0)
            OAR_CUDNN(k, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.conv.d, d.x.d,
                                                                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf),
                      "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        AlgoChoice ch;
        OAR_TRY(pick(k, key, perf, got < 0 ? 0 : got, limit, "backward-data", d.conv.d,
                     [&](int a, size_t *b) {
                         return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.d, d.y.d, d.conv.d, d.x.d,
                                                                             (cudnnConvolutionBwdDataAlgo_t)a, b);
                     }, &ch));
        const int algo = ch.algo;
        const size_t wsz = ch.ws;
        Scratch ws, dpad;
        OAR_TRY(ws.alloc(k, wsz, "cuDNN workspace"));
        void *target = dx;
        if (g.padded) {
            OAR_TRY(dpad.alloc(k, sizeof(T) * (size_t)(g.n * g.c * g.hp * g.wp), "padded input grad"));
            target = dpad.p;
        }
        OAR_CUDNN(k, cudnnConvolutionBackwardData(h, &one, d.w.d, wd, d.y.d, dyd, d.conv.d,
                                                  (cudnnConvolutionBwdDataAlgo_t)algo, ws.p, wsz, &zero, d.x.d, target),
                  "cudnnConvolutionBackwardData");
        if (g.padded) {
            const int64_t n = g.n * g.c * g.h * g.w;
            crop_k<T><<<grid_for(n), kThreads>>>(dpad.as<T>(), (T *)dx, g.n * g.c, g.h, g.w, g.hp, g.wp, g.pd[0], g.pd[2]);
            OAR_CU_LAUNCH(k, "crop");
        }
    }
    if (dw) {
        const AlgoKey key = algo_key(k, 2, dt, g, limit);
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int got = 0;
        {
            std::lock_guard<std::mutex> lk(g_algos_lock);
            if (g_algos.count(key)) got = -1;
        }
        if (got == 0)
            OAR_CUDNN(k, cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv.d, d.w.d,
                                                                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
                                                                       perf),
                      "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        AlgoChoice ch;
        OAR_TRY(pick(k, key, perf, got < 0 ? 0 : got, limit, "backward-filter", d.conv.d,
                     [&](int a, size_t *b) {
                         return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.d, d.y.d, d.conv.d, d.w.d,
                                                                               (cudnnConvolutionBwdFilterAlgo_t)a, b);
                     }, &ch));
        const int algo = ch.algo;
        const size_t wsz = ch.ws;
        Scratch ws, padded;
        const void *xv;
        OAR_TRY(input_view<T>(k, g, xd, padded, &xv));
        OAR_TRY(ws.alloc(k, wsz, "cuDNN workspace"));
        OAR_CUDNN(k, cudnnConvolutionBackwardFilter(h, &one, d.x.d, xv, d.y.d, dyd, d.conv.d,
                                                    (cudnnConvolutionBwdFilterAlgo_t)algo, ws.p, wsz, &zero, d.w.d, dw),
                  "cudnnConvolutionBackwardFilter");
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
