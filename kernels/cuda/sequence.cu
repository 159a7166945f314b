/*
 * sequence.cu — CUDA kernels of sequence_pool, sequence_softmax,
 * sequence_expand and their grads (float32, float64; sequence_expand also
 * int32/int64), with the CPU kernels' semantics (kernels/cpu/sequence.c):
 * every kernel works on the last LoD level of its input, rows flattened to
 * [rows, width]; grad outputs are written whole.
 *
 * The LoD lives on the host: its checks and the output LoDs are the
 * definition layer's (src/ops/seq_lod.c), and each call copies the offsets
 * its device code needs in one small host-to-device copy. Device code finds
 * a row's sequence by binary search over those offsets, so every output
 * element is written by one thread, with no atomics: sums run in the CPU
 * kernels' order and type, and pooling and expansion give the CPU's bits.
 */
#include <stdlib.h>
#include "sequence_args.cuh"

using namespace oarcu;
using oarcu::seq::seq_of;

namespace oarcu {
namespace seq {

int offsets_to_device(oar_kernel_ctx_t *k, Scratch &s, const int64_t *h, int64_t n, const char *what)
{
    const size_t bytes = sizeof(int64_t) * (size_t)(n > 0 ? n : 0);
    OAR_TRY(s.alloc(k, bytes, what));
    if (bytes) OAR_TRY(to_device(k, s.p, h, bytes, what));
    return OAR_OK;
}

}  // namespace seq
}  // namespace oarcu

namespace {

using seq::output;
using seq::row_width;

/* ---- sequence_pool ------------------------------------------------------------ */

template <class T>
__device__ inline T pool_scale(int type, int64_t len)
{
    return type == OAR_SEQPOOL_AVERAGE ? (T)1 / (T)len
         : type == OAR_SEQPOOL_SQRT ? (T)1 / (T)sqrt((double)len) : (T)1;
}

/* one thread per output element (sequence s, column j), rows in order */
template <class T>
__global__ void pool_fwd_k(int type, const T *x, T *o, int32_t *mi, const int64_t *offs, int64_t nseq, int64_t w,
                           T pad)
{
    OAR_CU_LOOP(i, nseq * w) {
        const int64_t s = i / w, j = i % w, b = offs[s], e = offs[s + 1], len = e - b;
        if (len <= 0) {
            o[i] = pad;
            if (mi) mi[i] = -1;
            continue;
        }
        switch (type) {
        case OAR_SEQPOOL_LAST: o[i] = x[(e - 1) * w + j]; break;
        case OAR_SEQPOOL_FIRST: o[i] = x[b * w + j]; break;
        case OAR_SEQPOOL_MAX: {
            T m = x[b * w + j];
            int64_t at = b;
            for (int64_t r = b + 1; r < e; r++) {
                const T v = x[r * w + j];
                if (v > m) { m = v; at = r; }
            }
            o[i] = m;
            if (mi) mi[i] = (int32_t)at;
            break;
        }
        default: {
            T acc = 0;
            for (int64_t r = b; r < e; r++) acc += x[r * w + j];
            if (type != OAR_SEQPOOL_SUM) acc *= pool_scale<T>(type, len);
            o[i] = acc;
        }
        }
    }
}

__global__ void fill_i32_k(int32_t *p, int64_t n, int32_t v)
{
    OAR_CU_LOOP(i, n) p[i] = v;
}

/* every pool type but MAX: one thread per element of X@GRAD */
template <class T>
__global__ void pool_bwd_k(int type, const T *g, T *dx, const int64_t *offs, int64_t nseq, int64_t rows, int64_t w)
{
    OAR_CU_LOOP(i, rows * w) {
        const int64_t r = i / w, j = i % w, s = seq_of(offs, nseq + 1, r);
        T v = 0;
        if (s >= 0 && s < nseq) {
            const int64_t b = offs[s], e = offs[s + 1];
            const T gs = g[s * w + j];
            switch (type) {
            case OAR_SEQPOOL_LAST: v = r == e - 1 ? gs : (T)0; break;
            case OAR_SEQPOOL_FIRST: v = r == b ? gs : (T)0; break;
            default: v = gs * pool_scale<T>(type, e - b);
            }
        }
        dx[i] = v;
    }
}

/* MAX: dX is zero but at each (sequence, column)'s maximum, taken from
 * MaxIndex (an index outside the sequence is ignored) or found again in X */
template <class T>
__global__ void pool_max_bwd_k(const T *x, const int32_t *mi, const T *g, T *dx, const int64_t *offs, int64_t nseq,
                               int64_t w)
{
    OAR_CU_LOOP(i, nseq * w) {
        const int64_t s = i / w, j = i % w, b = offs[s], e = offs[s + 1];
        if (e <= b) continue;
        int64_t r;
        if (mi) {
            r = mi[i];
        } else {
            r = b;
            for (int64_t q = b + 1; q < e; q++)
                if (x[q * w + j] > x[r * w + j]) r = q;
        }
        if (r >= b && r < e) dx[r * w + j] = g[i];
    }
}

template <class T>
int pool_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_seqpool_attrs_t *a = (const oar_seqpool_attrs_t *)oar_k_attrs(k);
    const int type = a->pooltype;
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_checked(k, OAR_SEQ_X, "X", dt, false, true, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", x, &offs, &no));
    if (offs[no - 1] > INT32_MAX && type == OAR_SEQPOOL_MAX)
        return oar_k_error(k, OAR_ERR_RANGE, "X has %lld rows; MaxIndex (int32) cannot index them",
                           (long long)offs[no - 1]);
    const int64_t nseq = no - 1, w = row_width(x), n = nseq * w;
    void *op, *mp = nullptr;
    OAR_TRY(output(k, OAR_SEQPOOL_OUT, "Out", dt, n, false, &op));
    if (type == OAR_SEQPOOL_MAX) {
        OAR_TRY(output(k, OAR_SEQPOOL_MAX_INDEX, "MaxIndex", OAR_INT32, n, true, &mp));
    } else if (oar_k_output(k, OAR_SEQPOOL_MAX_INDEX, 0)) {
        /* only MAX pooling has indices: -1 everywhere for the others */
        void *m;
        OAR_TRY(output(k, OAR_SEQPOOL_MAX_INDEX, "MaxIndex", OAR_INT32, n, true, &m));
        if (n > 0) {
            fill_i32_k<<<grid_for(n), kThreads>>>((int32_t *)m, n, -1);
            OAR_CU_LAUNCH(k, "sequence_pool MaxIndex fill");
        }
    }
    if (n > 0) {
        Scratch d;
        OAR_TRY(seq::offsets_to_device(k, d, offs, no, "X's LoD offsets"));
        pool_fwd_k<T><<<grid_for(n), kThreads>>>(type, (const T *)xp, (T *)op, (int32_t *)mp, d.as<int64_t>(), nseq,
                                                 w, (T)a->pad_value);
        OAR_CU_LAUNCH(k, "sequence_pool");
    }
    OAR_TRY(oar_seq_set_upper_lod(k, OAR_SEQPOOL_OUT, x));
    return oar_seq_set_upper_lod(k, OAR_SEQPOOL_MAX_INDEX, x);
}

template <class T>
int pool_bwd(oar_kernel_ctx_t *k, int dt)
{
    const int type = ((const oar_seqpool_attrs_t *)oar_k_attrs(k))->pooltype;
    const oar_tensor_t *x, *g, *mi = nullptr;
    const void *xp = nullptr, *gp, *mp = nullptr;
    OAR_TRY(in_checked(k, OAR_SEQ_X, "X", -1, false, false, &x, &xp));
    OAR_TRY(in_checked(k, OAR_SEQPOOLG_DOUT, "Out@GRAD", dt, false, true, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", x, &offs, &no));
    const int64_t nseq = no - 1, w = row_width(x), rows = offs[no - 1];
    if (oar_tensor_numel_of(g) != nseq * w)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld elements, expected %lld (%lld sequences x %lld)",
                           (long long)oar_tensor_numel_of(g), (long long)(nseq * w), (long long)nseq, (long long)w);
    if (type == OAR_SEQPOOL_MAX) {
        OAR_TRY(in_checked(k, OAR_SEQPOOLG_MAX_INDEX, "MaxIndex", OAR_INT32, true, true, &mi, &mp));
        if (mi && oar_tensor_numel_of(mi) != nseq * w)
            return oar_k_error(k, OAR_ERR_SHAPE, "MaxIndex has %lld elements, expected %lld",
                               (long long)oar_tensor_numel_of(mi), (long long)(nseq * w));
        if (!mi && x->dtype != dt)
            return oar_k_error(k, OAR_ERR_DTYPE, "X has dtype %s, Out@GRAD %s", nm(oar_dtype_name(x->dtype)),
                               nm(oar_dtype_name(dt)));
        if (!mi) {
            if (rows * w > 0 && !oar_tensor_has_data(x))
                return oar_k_error(k, OAR_ERR_NOT_FOUND,
                                   "X holds no data to find the maxima in (and MaxIndex is absent)");
            OAR_TRY(in_checked(k, OAR_SEQ_X, "X", dt, false, true, &x, &xp));
        }
    }
    void *dx;
    OAR_TRY(output(k, OAR_SEQG_DX, "X@GRAD", dt, rows * w, true, &dx));
    if (!dx || rows * w == 0) return OAR_OK;
    Scratch d;
    OAR_TRY(seq::offsets_to_device(k, d, offs, no, "X's LoD offsets"));
    if (type == OAR_SEQPOOL_MAX) {
        OAR_CU(k, cudaMemsetAsync(dx, 0, sizeof(T) * (size_t)(rows * w), 0), "cudaMemsetAsync");
        if (nseq * w > 0) {
            pool_max_bwd_k<T><<<grid_for(nseq * w), kThreads>>>((const T *)xp, (const int32_t *)mp, (const T *)gp,
                                                                (T *)dx, d.as<int64_t>(), nseq, w);
            OAR_CU_LAUNCH(k, "sequence_pool_grad (MAX)");
        }
        return OAR_OK;
    }
    pool_bwd_k<T><<<grid_for(rows * w), kThreads>>>(type, (const T *)gp, (T *)dx, d.as<int64_t>(), nseq, rows, w);
    OAR_CU_LAUNCH(k, "sequence_pool_grad");
    return OAR_OK;
}

int pool_fwd_f32(oar_kernel_ctx_t *k) { return pool_fwd<float>(k, OAR_FP32); }
int pool_fwd_f64(oar_kernel_ctx_t *k) { return pool_fwd<double>(k, OAR_FP64); }
int pool_bwd_f32(oar_kernel_ctx_t *k) { return pool_bwd<float>(k, OAR_FP32); }
int pool_bwd_f64(oar_kernel_ctx_t *k) { return pool_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sequence_pool", OAR_PLACE_CUDA, OAR_FP32, pool_fwd_f32)
OAR_REGISTER_KERNEL("sequence_pool", OAR_PLACE_CUDA, OAR_FP64, pool_fwd_f64)
OAR_REGISTER_KERNEL("sequence_pool_grad", OAR_PLACE_CUDA, OAR_FP32, pool_bwd_f32)
OAR_REGISTER_KERNEL("sequence_pool_grad", OAR_PLACE_CUDA, OAR_FP64, pool_bwd_f64)

/* ---- sequence_softmax ---------------------------------------------------------- */

constexpr unsigned kFull = 0xffffffffu;
template <class T> __device__ inline T warp_allmax(T v)
{
    for (int o = 16; o > 0; o >>= 1) {
        const T u = __shfl_xor_sync(kFull, v, o);
        v = u > v ? u : v;
    }
    return v;
}
__device__ inline double warp_allsum(double v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
    return v;
}

/* One warp per sequence (grid-stride over sequences; every lane of a warp
 * takes the same sequence, so the shuffles see the whole warp). Out may be
 * X (the op is in place): each value is read by the lane that writes it,
 * after the warp's maximum, which needs every read, is known. */
template <class T>
__global__ void seq_softmax_k(const T *x, T *o, const int64_t *offs, int64_t nseq)
{
    const int lane = threadIdx.x & 31;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t s = warp; s < nseq; s += nwarps) {
        const int64_t b = offs[s], e = offs[s + 1];
        if (e <= b) continue;
        T m = x[b];
        for (int64_t r = b + 1 + lane; r < e; r += 32) m = x[r] > m ? x[r] : m;
        m = warp_allmax(m);
        double sum = 0;
        for (int64_t r = b + lane; r < e; r += 32) {
            const T v = (T)exp((double)(x[r] - m));
            o[r] = v;
            sum += (double)v;
        }
        const T ts = (T)warp_allsum(sum);
        for (int64_t r = b + lane; r < e; r += 32) o[r] /= ts;
    }
}

/* dX = Out * (G - sum(G * Out)) within each sequence; one warp per sequence */
template <class T>
__global__ void seq_softmax_bwd_k(const T *o, const T *g, T *dx, const int64_t *offs, int64_t nseq)
{
    const int lane = threadIdx.x & 31;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t s = warp; s < nseq; s += nwarps) {
        const int64_t b = offs[s], e = offs[s + 1];
        if (e <= b) continue;
        double dot = 0;
        for (int64_t r = b + lane; r < e; r += 32) dot += (double)g[r] * (double)o[r];
        const T td = (T)warp_allsum(dot);
        for (int64_t r = b + lane; r < e; r += 32) dx[r] = o[r] * (g[r] - td);
    }
}

template <class T>
int softmax_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_checked(k, OAR_SEQ_X, "X", dt, false, true, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", x, &offs, &no));
    const int64_t rows = offs[no - 1];
    if (oar_tensor_numel_of(x) != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "X has %lld values in %lld rows; expected one value per row",
                           (long long)oar_tensor_numel_of(x), (long long)rows);
    void *op;
    OAR_TRY(output(k, OAR_SEQSM_OUT, "Out", dt, rows, false, &op));
    if (rows == 0) return OAR_OK;
    Scratch d;
    OAR_TRY(seq::offsets_to_device(k, d, offs, no, "X's LoD offsets"));
    seq_softmax_k<T><<<grid_for((no - 1) * 32), kThreads>>>((const T *)xp, (T *)op, d.as<int64_t>(), no - 1);
    OAR_CU_LAUNCH(k, "sequence_softmax");
    return OAR_OK;
}

template <class T>
int softmax_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *o, *g;
    const void *op, *gp;
    OAR_TRY(in_checked(k, OAR_SEQSMG_OUT, "Out", dt, false, true, &o, &op));
    OAR_TRY(in_checked(k, OAR_SEQSMG_DOUT, "Out@GRAD", dt, false, true, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQSMG_OUT, "Out", o, &offs, &no));
    const int64_t rows = offs[no - 1];
    if (oar_tensor_numel_of(o) != rows || oar_tensor_numel_of(g) != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out has %lld and Out@GRAD %lld values; expected %lld (one per row)",
                           (long long)oar_tensor_numel_of(o), (long long)oar_tensor_numel_of(g), (long long)rows);
    void *dx;
    OAR_TRY(output(k, OAR_SEQG_DX, "X@GRAD", dt, rows, true, &dx));
    if (!dx || rows == 0) return OAR_OK;
    Scratch d;
    OAR_TRY(seq::offsets_to_device(k, d, offs, no, "Out's LoD offsets"));
    seq_softmax_bwd_k<T><<<grid_for((no - 1) * 32), kThreads>>>((const T *)op, (const T *)gp, (T *)dx,
                                                                d.as<int64_t>(), no - 1);
    OAR_CU_LAUNCH(k, "sequence_softmax_grad");
    return OAR_OK;
}

int softmax_fwd_f32(oar_kernel_ctx_t *k) { return softmax_fwd<float>(k, OAR_FP32); }
int softmax_fwd_f64(oar_kernel_ctx_t *k) { return softmax_fwd<double>(k, OAR_FP64); }
int softmax_bwd_f32(oar_kernel_ctx_t *k) { return softmax_bwd<float>(k, OAR_FP32); }
int softmax_bwd_f64(oar_kernel_ctx_t *k) { return softmax_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sequence_softmax", OAR_PLACE_CUDA, OAR_FP32, softmax_fwd_f32)
OAR_REGISTER_KERNEL("sequence_softmax", OAR_PLACE_CUDA, OAR_FP64, softmax_fwd_f64)
OAR_REGISTER_KERNEL("sequence_softmax_grad", OAR_PLACE_CUDA, OAR_FP32, softmax_bwd_f32)
OAR_REGISTER_KERNEL("sequence_softmax_grad", OAR_PLACE_CUDA, OAR_FP64, softmax_bwd_f64)

/* ---- sequence_expand ------------------------------------------------------------ */

/* The plan on the device: base[i] (nref values) is the first Out row of X
 * sequence i's copies (base[nref - 1] = Out's rows); xo (nref values, or
 * NULL: sequence i is X row i) X's offsets. */
struct ExpandDev { const int64_t *base, *xo; int64_t nref; };

__device__ inline int64_t x_start(const ExpandDev &p, int64_t i) { return p.xo ? p.xo[i] : i; }
__device__ inline int64_t x_len(const ExpandDev &p, int64_t i) { return p.xo ? p.xo[i + 1] - p.xo[i] : 1; }

/* one thread per Out element: Out row r is row (r - base[i]) mod len of X
 * sequence i, the sequence whose copies hold r */
template <class T>
__global__ void expand_fwd_k(const T *x, T *o, ExpandDev p, int64_t orows, int64_t w)
{
    OAR_CU_LOOP(e, orows * w) {
        const int64_t r = e / w, c = e % w, i = seq_of(p.base, p.nref, r);
        const int64_t len = x_len(p, i);   /* > 0: sequence i's copies hold row r */
        o[e] = x[(x_start(p, i) + (r - p.base[i]) % len) * w + c];
    }
}

/* one thread per X@GRAD element: the sum of its copies' gradients, in copy
 * order (the CPU kernel's) */
template <class T>
__global__ void expand_bwd_k(const T *g, T *dx, ExpandDev p, int64_t xrows, int64_t w)
{
    OAR_CU_LOOP(e, xrows * w) {
        const int64_t r = e / w, c = e % w;
        const int64_t i = p.xo ? seq_of(p.xo, p.nref, r) : r;
        T acc = 0;
        if (i >= 0 && i < p.nref - 1) {
            const int64_t len = x_len(p, i), q = r - x_start(p, i);
            const int64_t reps = (p.base[i + 1] - p.base[i]) / len;
            for (int64_t j = 0; j < reps; j++) acc += g[(p.base[i] + j * len + q) * w + c];
        }
        dx[e] = acc;
    }
}

/* the plan's device arrays: base then (when X has a LoD) X's offsets */
int expand_dev(oar_kernel_ctx_t *k, const oar_seq_expand_t *p, Scratch &s, ExpandDev *d)
{
    const int64_t n = p->nref;
    int64_t *h = (int64_t *)oar_xmalloc(sizeof(int64_t) * (size_t)(2 * n));
    if (!h) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the expansion plan of %lld sequences",
                               (long long)(n - 1));
    h[0] = 0;
    for (int64_t i = 0; i + 1 < n; i++) h[i + 1] = h[i] + oar_seq_expand_reps(p, i) * oar_seq_expand_len(p, i);
    if (p->xo) memcpy(h + n, p->xo, sizeof(int64_t) * (size_t)n);
    int rc = seq::offsets_to_device(k, s, h, p->xo ? 2 * n : n, "sequence_expand's plan");
    free(h);
    OAR_TRY(rc);
    *d = ExpandDev{s.as<int64_t>(), p->xo ? s.as<int64_t>() + n : nullptr, n};
    return OAR_OK;
}

template <class T>
int expand_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_checked(k, OAR_SEQ_X, "X", dt, false, true, &x, &xp));
    oar_seq_expand_t p;
    OAR_TRY(oar_seq_expand_plan(k, x, &p));
    const int64_t w = row_width(x);
    oar_tensor_t *ot = oar_k_output(k, OAR_SEQEXP_OUT, 0);
    if (!ot) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    const int64_t orows = ot->ndim > 0 ? ot->dims[0] : 1;
    void *op;
    OAR_TRY(output(k, OAR_SEQEXP_OUT, "Out", dt, orows * w, false, &op));
    OAR_TRY(oar_seq_expand_set_lod(k, x, &p, orows));
    if (orows * w == 0) return OAR_OK;
    if (p.nref <= 1) {   /* nothing to repeat by: Out is X */
        if (op != xp)
            OAR_CU(k, cudaMemcpyAsync(op, xp, sizeof(T) * (size_t)(orows * w), cudaMemcpyDeviceToDevice, 0),
                   "cudaMemcpyAsync");
        return OAR_OK;
    }
    Scratch s;
    ExpandDev d;
    OAR_TRY(expand_dev(k, &p, s, &d));
    expand_fwd_k<T><<<grid_for(orows * w), kThreads>>>((const T *)xp, (T *)op, d, orows, w);
    OAR_CU_LAUNCH(k, "sequence_expand");
    return OAR_OK;
}

template <class T>
int expand_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(in_checked(k, OAR_SEQ_X, "X", -1, false, false, &x, &xp));
    OAR_TRY(in_checked(k, OAR_SEQEXPG_DOUT, "Out@GRAD", dt, false, true, &g, &gp));
    oar_seq_expand_t p;
    OAR_TRY(oar_seq_expand_plan(k, x, &p));
    const int64_t w = row_width(x);
    void *dx;
    OAR_TRY(output(k, OAR_SEQG_DX, "X@GRAD", dt, p.xrows * w, true, &dx));
    if (!dx) return OAR_OK;
    const int64_t want = oar_seq_expand_rows(&p);
    if (oar_tensor_numel_of(g) != want * w)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values; expected %lld rows of %lld",
                           (long long)oar_tensor_numel_of(g), (long long)want, (long long)w);
    if (p.xrows * w == 0) return OAR_OK;
    if (p.nref <= 1) {
        OAR_CU(k, cudaMemcpyAsync(dx, gp, sizeof(T) * (size_t)(p.xrows * w), cudaMemcpyDeviceToDevice, 0),
               "cudaMemcpyAsync");
        return OAR_OK;
    }
    Scratch s;
    ExpandDev d;
    OAR_TRY(expand_dev(k, &p, s, &d));
    expand_bwd_k<T><<<grid_for(p.xrows * w), kThreads>>>((const T *)gp, (T *)dx, d, p.xrows, w);
    OAR_CU_LAUNCH(k, "sequence_expand_grad");
    return OAR_OK;
}

int expand_fwd_f32(oar_kernel_ctx_t *k) { return expand_fwd<float>(k, OAR_FP32); }
int expand_fwd_f64(oar_kernel_ctx_t *k) { return expand_fwd<double>(k, OAR_FP64); }
int expand_fwd_i32(oar_kernel_ctx_t *k) { return expand_fwd<int32_t>(k, OAR_INT32); }
int expand_fwd_i64(oar_kernel_ctx_t *k) { return expand_fwd<int64_t>(k, OAR_INT64); }
int expand_bwd_f32(oar_kernel_ctx_t *k) { return expand_bwd<float>(k, OAR_FP32); }
int expand_bwd_f64(oar_kernel_ctx_t *k) { return expand_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CUDA, OAR_FP32, expand_fwd_f32)
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CUDA, OAR_FP64, expand_fwd_f64)
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CUDA, OAR_INT32, expand_fwd_i32)
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CUDA, OAR_INT64, expand_fwd_i64)
OAR_REGISTER_KERNEL("sequence_expand_grad", OAR_PLACE_CUDA, OAR_FP32, expand_bwd_f32)
OAR_REGISTER_KERNEL("sequence_expand_grad", OAR_PLACE_CUDA, OAR_FP64, expand_bwd_f64)

}  // namespace
