/*
 * rnn_common.h — what the CUDA kernels of the recurrent ops (lstm.cu,
 * gru.cu) share: the gate activations, the sequence-to-batch layout on the
 * device, row copies along it, column sums and argument helpers on the
 * prepared-op API (slots by index). GEMMs: cuda_common.h's rm_gemm.
 *
 * The layout (ops/seq_layout.h) is index bookkeeping computed on the host
 * from the LoD, as on the CPU; its index arrays go to the device in one
 * copy per op call. Then every step is one cuBLAS GEMM on the step's prefix
 * of rows and a fused elementwise kernel, all on the default stream.
 */
#ifndef OAR_CUDA_RNN_COMMON_H
#define OAR_CUDA_RNN_COMMON_H
#include "cuda_common.h"
#include "ops/seq_layout.h"

namespace oarcu {
namespace rnn {

/* activation codes of the decoded attrs (ops/lstm.h, ops/gru.h) */
enum { kIdentity = 0, kSigmoid = 1, kTanh = 2, kRelu = 3 };

template <class T> __device__ inline T sigmoid(T x)
{
    if (x >= T(0)) return T(1) / (T(1) + exp(-x));
    const T e = exp(x);
    return e / (T(1) + e);
}
template <class T> __device__ inline T act_fwd(int a, T x)
{
    switch (a) {
    case kSigmoid: return sigmoid(x);
    case kTanh: return tanh(x);
    case kRelu: return x > T(0) ? x : T(0);
    default: return x;
    }
}
/* g times the activation's derivative, written from its output y */
template <class T> __device__ inline T act_bwd(int a, T y, T g)
{
    switch (a) {
    case kSigmoid: return g * y * (T(1) - y);
    case kTanh: return g * (T(1) - y * y);
    case kRelu: return y > T(0) ? g : T(0);
    default: return g;
    }
}

/* The layout of Input's sequences with its index arrays on the device:
 * row_of [rows], order [nseq] and, when asked for, prev [rows]
 * (oar_seqb_prev_rows: the previous step's row, in the LoD tensor's order
 * when prev_lod_rows, else in batch order; -1 - H0 row at step 0). */
struct Layout {
    oar_seqb_t sb{};
    Scratch idx;
    const int64_t *row_of = nullptr, *order = nullptr, *prev = nullptr;
    Layout() = default;
    Layout(const Layout &) = delete;
    Layout &operator=(const Layout &) = delete;
    ~Layout() { oar_seqb_free(&sb); }
    enum Prev { kNoPrev, kPrevLodRows, kPrevBatchRows };
    /* `in` the Input tensor of slot `slot` (its last LoD level) */
    int make(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *in, bool reverse, Prev prev);
    /* an initial state's rows [nseq, D] (H0, C0) gathered into sorted
     * order in s; nothing when state is NULL */
    int sorted_state(oar_kernel_ctx_t *k, int dt, const void *state, int64_t D, Scratch &s, const char *what) const;
};

/* ---- arguments ---------------------------------------------------------- */
/* input `slot` of dtype dt on the kernel's device; *p NULL when empty. An
 * optional input that the op does not name gives *t = NULL and OAR_OK. */
int input(oar_kernel_ctx_t *k, int slot, const char *name, int dt, bool optional, const oar_tensor_t **t,
          const void **p);
/* output `slot` of numel elements; *p NULL with OAR_OK when optional and
 * absent */
inline int output(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t numel, bool optional, void **p)
{
    return oar_k_output_sized(k, slot, name, dt, numel, optional, p);
}
/* output `slot`, or scratch (own) when the program dropped it (Paddle's
 * inference models have no Batch* outputs) */
int out_or_scratch(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t numel, Scratch &own, void **p);
/* an initial state (H0, C0; t NULL when absent) holds one row of D per sequence */
int check_state(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *t, int64_t nseq, int64_t D);
/* scratch of n values of dt, zeroed when `zero` */
int scratch(oar_kernel_ctx_t *k, Scratch &s, int dt, int64_t n, bool zero, const char *what);
int zero(oar_kernel_ctx_t *k, void *p, int dt, int64_t n);

/* ---- device work (dt float32 or float64; rows of w values) --------------- */
/* dst[r] = src[idx[r]] (+ add, a row of w, when not NULL), r < rows */
int gather(oar_kernel_ctx_t *k, int dt, const void *src, const int64_t *idx, void *dst, int64_t rows, int64_t w,
           const void *add = nullptr);
/* dst[idx[r]] = src[r], r < rows */
int scatter(oar_kernel_ctx_t *k, int dt, const void *src, const int64_t *idx, void *dst, int64_t rows, int64_t w);
/* dst[r] = src[prev[r]] when prev[r] >= 0, else init[-1 - prev[r]] (zeros
 * when init is NULL) */
int gather_prev(oar_kernel_ctx_t *k, int dt, const void *src, const void *init, const int64_t *prev, void *dst,
                int64_t rows, int64_t w);
/* y[r] += b (a row of w), r < rows */
int add_row(oar_kernel_ctx_t *k, int dt, void *y, const void *b, int64_t rows, int64_t w);
/* dst [w] = column sums of x [rows, w] (ld ldx), as a product with a row
 * of ones (deterministic, no atomics) */
int col_sum(oar_kernel_ctx_t *k, int dt, const void *x, int64_t rows, int64_t w, int64_t ldx, void *dst);

/* registers fwd and bwd (dtype-generic) as the CUDA float32 and float64
 * kernels of `type` and its grad (a registration needs one function name
 * per dtype) */
#define OAR_RNN_REGISTER(type, fwd, bwd)                                  \
    OAR_REGISTER_KERNEL(type, OAR_PLACE_CUDA, OAR_FP32, fwd)               \
    OAR_REGISTER_KERNEL(type "_grad", OAR_PLACE_CUDA, OAR_FP32, bwd)       \
    int fwd##64(oar_kernel_ctx_t *k) { return fwd(k); }                    \
    int bwd##64(oar_kernel_ctx_t *k) { return bwd(k); }                    \
    OAR_REGISTER_KERNEL(type, OAR_PLACE_CUDA, OAR_FP64, fwd##64)           \
    OAR_REGISTER_KERNEL(type "_grad", OAR_PLACE_CUDA, OAR_FP64, bwd##64)

/* element offsets of typed device pointers */
static inline const void *at(const void *p, int dt, int64_t n)
{
    return p ? (const char *)p + (size_t)n * oar_dtype_size(dt) : nullptr;
}
static inline void *at(void *p, int dt, int64_t n) { return p ? (char *)p + (size_t)n * oar_dtype_size(dt) : nullptr; }

}  // namespace rnn
}  // namespace oarcu
#endif
