/*
 * rnn_common.cu — the layout on the device, row copies, column sums
 * and argument helpers of the recurrent CUDA kernels (see rnn_common.h).
 */
#include <stdlib.h>
#include "rnn_common.h"

namespace oarcu {
namespace rnn {

namespace {

template <class T>
__global__ void gather_k(const T *src, const int64_t *idx, T *dst, int64_t rows, int64_t w, const T *add)
{
    OAR_CU_LOOP(q, rows * w) {
        const int64_t r = q / w, j = q - r * w;
        T v = src[idx[r] * w + j];
        if (add) v += add[j];
        dst[q] = v;
    }
}

template <class T>
__global__ void scatter_k(const T *src, const int64_t *idx, T *dst, int64_t rows, int64_t w)
{
    OAR_CU_LOOP(q, rows * w) {
        const int64_t r = q / w, j = q - r * w;
        dst[idx[r] * w + j] = src[q];
    }
}

template <class T>
__global__ void gather_prev_k(const T *src, const T *init, const int64_t *prev, T *dst, int64_t rows, int64_t w)
{
    OAR_CU_LOOP(q, rows * w) {
        const int64_t r = q / w, j = q - r * w, p = prev[r];
        dst[q] = p >= 0 ? src[p * w + j] : init ? init[(-1 - p) * w + j] : T(0);
    }
}

template <class T> __global__ void add_row_k(T *y, const T *b, int64_t rows, int64_t w)
{
    OAR_CU_LOOP(q, rows * w) y[q] += b[q % w];
}

template <class T> __global__ void fill_k(T *p, int64_t n, T v)
{
    OAR_CU_LOOP(i, n) p[i] = v;
}

}  // namespace

int Layout::make(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *in, bool reverse, Prev want_prev)
{
    if (in->lod_levels < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "input Input '%s' has no LoD; a LoD tensor (level >= 1) is required",
                           nm(oar_k_input_name(k, slot, 0)));
    const int l = in->lod_levels - 1;
    const int64_t *offs = in->lod[l], noffs = in->lod_size[l];
    const int64_t rows = in->ndim > 0 ? in->dims[0] : 1;
    if (noffs < 1 || offs[noffs - 1] != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input Input '%s': LoD level %d ends at %lld but the tensor has %lld rows",
                           nm(oar_k_input_name(k, slot, 0)), l, (long long)(noffs > 0 ? offs[noffs - 1] : 0),
                           (long long)rows);
    if (oar_seqb_make(&sb, offs, noffs, reverse) != OAR_OK)
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the batch layout of %lld sequences",
                           (long long)(noffs - 1));
    /* one host block, one copy: row_of | order | prev */
    const int64_t n = sb.rows + sb.nseq + (want_prev != kNoPrev ? sb.rows : 0);
    const size_t bytes = sizeof(int64_t) * (size_t)n;
    OAR_TRY(idx.alloc(k, bytes, "the batch layout's index arrays"));
    if (n == 0) return OAR_OK;
    int64_t *h = (int64_t *)malloc(bytes);
    if (!h) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the batch layout of %lld rows", (long long)sb.rows);
    memcpy(h, sb.row_of, sizeof(int64_t) * (size_t)sb.rows);
    memcpy(h + sb.rows, sb.order, sizeof(int64_t) * (size_t)sb.nseq);
    if (want_prev != kNoPrev) oar_seqb_prev_rows(&sb, want_prev == kPrevLodRows ? sb.row_of : nullptr, h + sb.rows + sb.nseq);
    const int rc = to_device(k, idx.p, h, bytes, "the batch layout's index arrays");
    free(h);
    OAR_TRY(rc);
    row_of = idx.as<int64_t>();
    order = row_of + sb.rows;
    if (want_prev != kNoPrev) prev = order + sb.nseq;
    return OAR_OK;
}

int Layout::sorted_state(oar_kernel_ctx_t *k, int dt, const void *state, int64_t D, Scratch &s, const char *what) const
{
    if (!state) return OAR_OK;
    OAR_TRY(scratch(k, s, dt, sb.nseq * D, false, what));
    return gather(k, dt, state, order, s.p, sb.nseq, D);
}

int input(oar_kernel_ctx_t *k, int slot, const char *name, int dt, bool optional, const oar_tensor_t **t,
          const void **p)
{
    const oar_tensor_t *x = oar_k_input(k, slot, 0);
    if (!x || x->dtype < 0) {   /* absent, or a variable never written */
        *t = nullptr;
        *p = nullptr;
        if (optional && !oar_k_input_var(k, slot, 0)) return OAR_OK;
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name, nm(oar_k_input_name(k, slot, 0)));
    }
    return in_checked(k, slot, name, dt, false, true, t, p);
}

int out_or_scratch(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t numel, Scratch &own, void **p)
{
    if (oar_k_output(k, slot, 0)) return output(k, slot, name, dt, numel, false, p);
    OAR_TRY(scratch(k, own, dt, numel, false, name));
    *p = own.p;
    return OAR_OK;
}

int check_state(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *t, int64_t nseq, int64_t D)
{
    if (t && oar_tensor_numel_of(t) != nseq * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "%s has %lld values; expected [%lld sequences, %lld]", slot,
                           (long long)oar_tensor_numel_of(t), (long long)nseq, (long long)D);
    return OAR_OK;
}

int scratch(oar_kernel_ctx_t *k, Scratch &s, int dt, int64_t n, bool zero_it, const char *what)
{
    const size_t es = oar_dtype_size(dt);
    if (n < 0 || (uint64_t)n > SIZE_MAX / es)
        return oar_k_error(k, OAR_ERR_RANGE, "%s: %lld values do not fit in memory", what, (long long)n);
    OAR_TRY(s.alloc(k, (size_t)n * es, what));
    if (zero_it && n > 0) OAR_CU(k, cudaMemsetAsync(s.p, 0, (size_t)n * es, 0), "cudaMemsetAsync");
    return OAR_OK;
}

int zero(oar_kernel_ctx_t *k, void *p, int dt, int64_t n)
{
    if (p && n > 0) OAR_CU(k, cudaMemsetAsync(p, 0, (size_t)n * oar_dtype_size(dt), 0), "cudaMemsetAsync");
    return OAR_OK;
}

int gather(oar_kernel_ctx_t *k, int dt, const void *src, const int64_t *idx, void *dst, int64_t rows, int64_t w,
           const void *add)
{
    if (rows * w == 0) return OAR_OK;
    OAR_CU_FLOAT_SWITCH(dt, T, gather_k<T><<<grid_for(rows * w), kThreads>>>((const T *)src, idx, (T *)dst, rows, w,
                                                                             (const T *)add));
    OAR_CU_LAUNCH(k, "rnn gather");
    return OAR_OK;
}

int scatter(oar_kernel_ctx_t *k, int dt, const void *src, const int64_t *idx, void *dst, int64_t rows, int64_t w)
{
    if (rows * w == 0) return OAR_OK;
    OAR_CU_FLOAT_SWITCH(dt, T, scatter_k<T><<<grid_for(rows * w), kThreads>>>((const T *)src, idx, (T *)dst, rows, w));
    OAR_CU_LAUNCH(k, "rnn scatter");
    return OAR_OK;
}

int gather_prev(oar_kernel_ctx_t *k, int dt, const void *src, const void *init, const int64_t *prev, void *dst,
                int64_t rows, int64_t w)
{
    if (rows * w == 0) return OAR_OK;
    OAR_CU_FLOAT_SWITCH(dt, T, gather_prev_k<T><<<grid_for(rows * w), kThreads>>>((const T *)src, (const T *)init,
                                                                                  prev, (T *)dst, rows, w));
    OAR_CU_LAUNCH(k, "rnn gather_prev");
    return OAR_OK;
}

int add_row(oar_kernel_ctx_t *k, int dt, void *y, const void *b, int64_t rows, int64_t w)
{
    if (rows * w == 0) return OAR_OK;
    OAR_CU_FLOAT_SWITCH(dt, T, add_row_k<T><<<grid_for(rows * w), kThreads>>>((T *)y, (const T *)b, rows, w));
    OAR_CU_LAUNCH(k, "rnn add_row");
    return OAR_OK;
}

int col_sum(oar_kernel_ctx_t *k, int dt, const void *x, int64_t rows, int64_t w, int64_t ldx, void *dst)
{
    if (w == 0) return OAR_OK;
    Scratch ones;
    OAR_TRY(scratch(k, ones, dt, rows, false, "a row of ones"));
    if (rows > 0) {
        OAR_CU_FLOAT_SWITCH(dt, T, fill_k<T><<<grid_for(rows), kThreads>>>((T *)ones.p, rows, T(1)));
        OAR_CU_LAUNCH(k, "rnn fill");
    }
    /* [1, rows] x [rows, w] */
    return rm_gemm(k, dt, false, false, 1, w, rows, 1.0, ones.p, rows > 0 ? rows : 1, x, ldx, 0.0, dst, w);
}

}  // namespace rnn
}  // namespace oarcu
