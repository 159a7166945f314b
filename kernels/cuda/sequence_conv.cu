/*
 * sequence_conv.cu — CUDA kernels of sequence_conv and its grad (float32,
 * float64), with the CPU kernels' semantics (kernels/cpu/sequence_conv.c):
 * the context projection puts, for every row, the contextLength rows around
 * it (from contextStart on, within its sequence) side by side in a column
 * matrix col [N, contextLength * D], and Out = col Filter is one cuBLAS
 * GEMM. Positions outside a sequence read zeros or, with paddingTrainable,
 * rows of PaddingData (position q < 0: row up_pad + q; q >= L: row
 * up_pad + q - L). The grad: dFilter = col^T dOut, dcol = dOut Filter^T,
 * and dX / dPaddingData gather their dcol entries.
 *
 * The gathers replace the CPU kernel's scatter-add: each dX element sums
 * the context positions that read it, in the CPU's order, and each
 * PaddingData@GRAD element walks the sequences in order: one writer per
 * element, no atomics, deterministic.
 */
#include "sequence_args.cuh"

using namespace oarcu;
using oarcu::seq::seq_of;

namespace {

struct Geom {
    int64_t n, d, m, cl, cs, up, down, nseq;
    bool trainable;
    const int64_t *offs;   /* device copy of X's offsets (nseq + 1) */
};

/* col[row, j, c]: the value context position j of `row` reads */
template <class T>
__global__ void fill_col_k(const T *x, const T *pad, T *col, Geom g)
{
    OAR_CU_LOOP(e, g.n * g.cl * g.d) {
        const int64_t c = e % g.d, t = e / g.d, j = t % g.cl, row = t / g.cl;
        const int64_t s = seq_of(g.offs, g.nseq + 1, row);
        T v = 0;
        if (s >= 0 && s < g.nseq) {
            const int64_t b = g.offs[s], len = g.offs[s + 1] - b, q = row - b + g.cs + j;
            if (q >= 0 && q < len) v = x[(b + q) * g.d + c];
            else if (g.trainable && pad) v = pad[(q < 0 ? g.up + q : g.up + (q - len)) * g.d + c];
        }
        col[e] = v;
    }
}

/* dX[row, c]: the dcol entries of the context positions that read row, p
 * ascending (j descending), as the CPU's scatter adds them */
template <class T>
__global__ void gather_dx_k(const T *dcol, T *dx, Geom g)
{
    OAR_CU_LOOP(e, g.n * g.d) {
        const int64_t c = e % g.d, row = e / g.d, s = seq_of(g.offs, g.nseq + 1, row);
        T acc = 0;
        if (s >= 0 && s < g.nseq) {
            const int64_t b = g.offs[s], len = g.offs[s + 1] - b, q = row - b;
            for (int64_t j = g.cl - 1; j >= 0; j--) {
                const int64_t p = q - g.cs - j;
                if (p >= 0 && p < len) acc += dcol[((b + p) * g.cl + j) * g.d + c];
            }
        }
        dx[e] = acc;
    }
}

/* PaddingData@GRAD[pr, c]: over the sequences in order, the positions p
 * whose context reads padding row pr (q = pr - up_pad before the start,
 * q = len + pr - up_pad after the end) */
template <class T>
__global__ void gather_dpad_k(const T *dcol, T *dpad, Geom g)
{
    OAR_CU_LOOP(e, (g.up + g.down) * g.d) {
        const int64_t c = e % g.d, pr = e / g.d;
        T acc = 0;
        for (int64_t s = 0; s < g.nseq; s++) {
            const int64_t b = g.offs[s], len = g.offs[s + 1] - b;
            const int64_t q = pr < g.up ? pr - g.up : pr - g.up + len;
            int64_t p0 = q - g.cs - g.cl + 1, p1 = q - g.cs;   /* j = q - cs - p in [0, cl) */
            if (p0 < 0) p0 = 0;
            if (p1 > len - 1) p1 = len - 1;
            for (int64_t p = p0; p <= p1; p++) acc += dcol[((b + p) * g.cl + (q - g.cs - p)) * g.d + c];
        }
        dpad[e] = acc;
    }
}

/* inputs, attrs and shapes; *x, *f, *pad device data (pad NULL unless
 * trainable); the host offsets in *offs */
int conv_setup(oar_kernel_ctx_t *k, int dt, Geom *g, const void **x, const void **f, const void **pad,
               const int64_t **offs)
{
    const oar_tensor_t *xt, *ft, *pt;
    OAR_TRY(in_checked(k, OAR_SEQ_X, "X", dt, false, true, &xt, x));
    OAR_TRY(in_checked(k, OAR_SEQCONV_FILTER, "Filter", dt, false, true, &ft, f));
    const oar_seqconv_attrs_t *a = (const oar_seqconv_attrs_t *)oar_k_attrs(k);
    g->cl = a->context_length;
    g->cs = a->context_start;
    g->up = g->cs < 0 ? -g->cs : 0;
    g->down = g->cs + g->cl - 1 > 0 ? g->cs + g->cl - 1 : 0;
    g->trainable = a->padding_trainable;
    OAR_TRY(in_checked(k, OAR_SEQCONV_PADDING, "PaddingData", dt, true, g->trainable, &pt, pad));
    if (xt->ndim != 2 || ft->ndim != 2 || ft->dims[0] != g->cl * xt->dims[1]) {
        char bx[160], bf[160];
        return oar_k_error(k, OAR_ERR_SHAPE, "X shape %s and Filter shape %s do not fit contextLength %lld",
                           oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx),
                           oar_shape_str(ft->dims, ft->ndim, bf, sizeof bf), (long long)g->cl);
    }
    g->n = xt->dims[0];
    g->d = xt->dims[1];
    g->m = ft->dims[1];
    if (g->trainable && g->up + g->down > 0) {
        if (!pt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "paddingTrainable is true but PaddingData is missing");
        if (oar_tensor_numel_of(pt) != (g->up + g->down) * g->d)
            return oar_k_error(k, OAR_ERR_SHAPE, "PaddingData has %lld values; expected [%lld, %lld]",
                               (long long)oar_tensor_numel_of(pt), (long long)(g->up + g->down), (long long)g->d);
    }
    if (!g->trainable) *pad = nullptr;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", xt, offs, &no));
    g->nseq = no - 1;
    g->offs = nullptr;
    const int64_t dims[4] = {g->n, g->cl * g->d, g->m, g->d};
    return check_int_dims(k, 4, dims);
}

/* the column matrix [N, contextLength * D] as device scratch */
int alloc_col(oar_kernel_ctx_t *k, const Geom &g, size_t es, Scratch &col)
{
    int64_t n;
    if (oar_mul_checked(g.n, g.cl * g.d, &n) != OAR_OK || oar_mul_checked(n, (int64_t)es, &n) != OAR_OK)
        return oar_k_error(k, OAR_ERR_NOMEM, "the context matrix [%lld, %lld] is too large", (long long)g.n,
                           (long long)(g.cl * g.d));
    return col.alloc(k, (size_t)n, "the context matrix");
}

template <class T>
int fill_col(oar_kernel_ctx_t *k, const Geom &g, const void *x, const void *pad, Scratch &col)
{
    const int64_t n = g.n * g.cl * g.d;
    if (n == 0) return OAR_OK;
    fill_col_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)pad, col.as<T>(), g);
    OAR_CU_LAUNCH(k, "sequence_conv context matrix");
    return OAR_OK;
}

template <class T>
int conv_fwd(oar_kernel_ctx_t *k, int dt)
{
    Geom g;
    const void *x, *f, *pad;
    const int64_t *offs;
    OAR_TRY(conv_setup(k, dt, &g, &x, &f, &pad, &offs));
    void *o;
    OAR_TRY(seq::output(k, OAR_SEQCONV_OUT, "Out", dt, g.n * g.m, false, &o));
    if (g.n * g.m == 0) return OAR_OK;
    Scratch d, col;
    OAR_TRY(seq::offsets_to_device(k, d, offs, g.nseq + 1, "X's LoD offsets"));
    g.offs = d.as<int64_t>();
    OAR_TRY(alloc_col(k, g, sizeof(T), col));
    OAR_TRY(fill_col<T>(k, g, x, pad, col));
    return rm_gemm(k, dt, false, false, g.n, g.m, g.cl * g.d, 1.0, col.p, g.cl * g.d, f, g.m, 0.0, o, g.m);
}

template <class T>
int conv_bwd(oar_kernel_ctx_t *k, int dt)
{
    Geom g;
    const void *x, *f, *pad, *gp;
    const int64_t *offs;
    const oar_tensor_t *gt;
    OAR_TRY(conv_setup(k, dt, &g, &x, &f, &pad, &offs));
    OAR_TRY(in_checked(k, OAR_SEQCONVG_DOUT, "Out@GRAD", dt, false, true, &gt, &gp));
    if (oar_tensor_numel_of(gt) != g.n * g.m)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values; expected [%lld, %lld]",
                           (long long)oar_tensor_numel_of(gt), (long long)g.n, (long long)g.m);
    void *dx, *df, *dpad;
    OAR_TRY(seq::output(k, OAR_SEQCONVG_DX, "X@GRAD", dt, g.n * g.d, true, &dx));
    OAR_TRY(seq::output(k, OAR_SEQCONVG_DFILTER, "Filter@GRAD", dt, g.cl * g.d * g.m, true, &df));
    OAR_TRY(seq::output(k, OAR_SEQCONVG_DPADDING, "PaddingData@GRAD", dt, (g.up + g.down) * g.d, true, &dpad));
    Scratch d, col;
    OAR_TRY(seq::offsets_to_device(k, d, offs, g.nseq + 1, "X's LoD offsets"));
    g.offs = d.as<int64_t>();
    OAR_TRY(alloc_col(k, g, sizeof(T), col));
    if (df) {
        OAR_TRY(fill_col<T>(k, g, x, pad, col));
        OAR_TRY(rm_gemm(k, dt, true, false, g.cl * g.d, g.m, g.n, 1.0, col.p, g.cl * g.d, gp, g.m, 0.0, df, g.m));
    }
    /* without trainable padding the padding's grad is zero */
    const int64_t npad = (g.up + g.down) * g.d;
    if (dpad && !g.trainable && npad > 0)
        OAR_CU(k, cudaMemsetAsync(dpad, 0, sizeof(T) * (size_t)npad, 0), "cudaMemsetAsync");
    void *dp = g.trainable ? dpad : nullptr;
    if (!dx && !dp) return OAR_OK;
    /* dcol = dOut Filter^T, reusing the column matrix (the dFilter GEMM is queued before it) */
    OAR_TRY(rm_gemm(k, dt, false, true, g.n, g.cl * g.d, g.m, 1.0, gp, g.m, f, g.m, 0.0, col.p, g.cl * g.d));
    if (dx && g.n * g.d > 0) {
        gather_dx_k<T><<<grid_for(g.n * g.d), kThreads>>>(col.as<T>(), (T *)dx, g);
        OAR_CU_LAUNCH(k, "sequence_conv_grad X@GRAD");
    }
    if (dp && npad > 0) {
        gather_dpad_k<T><<<grid_for(npad), kThreads>>>(col.as<T>(), (T *)dp, g);
        OAR_CU_LAUNCH(k, "sequence_conv_grad PaddingData@GRAD");
    }
    return OAR_OK;
}

int conv_fwd_f32(oar_kernel_ctx_t *k) { return conv_fwd<float>(k, OAR_FP32); }
int conv_fwd_f64(oar_kernel_ctx_t *k) { return conv_fwd<double>(k, OAR_FP64); }
int conv_bwd_f32(oar_kernel_ctx_t *k) { return conv_bwd<float>(k, OAR_FP32); }
int conv_bwd_f64(oar_kernel_ctx_t *k) { return conv_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sequence_conv", OAR_PLACE_CUDA, OAR_FP32, conv_fwd_f32)
OAR_REGISTER_KERNEL("sequence_conv", OAR_PLACE_CUDA, OAR_FP64, conv_fwd_f64)
OAR_REGISTER_KERNEL("sequence_conv_grad", OAR_PLACE_CUDA, OAR_FP32, conv_bwd_f32)
OAR_REGISTER_KERNEL("sequence_conv_grad", OAR_PLACE_CUDA, OAR_FP64, conv_bwd_f64)

}  // namespace
