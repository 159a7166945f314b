/*
 * sequence_batch.h — helpers shared by the CPU kernels of the sequence ops,
 * lstm/lstm_unit and gru/gru_unit (kernels/cpu/sequence*.c, lstm.c, gru.c).
 *
 * Sequence-to-batch layout: built by ops/seq_layout.h (place-neutral index
 * bookkeeping shared with the CUDA kernels); here the CPU's row copies
 * along it and its split across threads.
 */
#ifndef OAR_KERNELS_CPU_SEQUENCE_BATCH_H
#define OAR_KERNELS_CPU_SEQUENCE_BATCH_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"
#include "ops/seq_layout.h"

/* Sequences never read each other's rows, so a recurrent step loop splits
 * across OpenMP threads by sequence with no synchronization: part p takes the
 * sorted sequences [q[p], q[p + 1]) (about equal rows each), whose rows at
 * step t are rows step_start[t] + q[p] .. of that step (while the step holds
 * them) and whose previous rows are the same run of step t - 1. Each part
 * runs its own small GEMMs (single-threaded, gemm.h). Returns the number
 * of parts, decided by the shape alone so that the results never depend on
 * the thread count: one per OAR_SEQB_PART_SEQS sequences (at most
 * OAR_SEQB_MAX_PARTS), and 1 when a step of all sequences has fewer than
 * OAR_SEQB_PAR_MIN multiply-adds (step_macs). Threads take whole parts
 * (oar_seqb_threads). -DOAR_SEQB_PAR_MIN=0 -DOAR_SEQB_PART_SEQS=1 force
 * the split (to test it). */
#define OAR_SEQB_MAX_PARTS 8
#ifndef OAR_SEQB_PART_SEQS
#define OAR_SEQB_PART_SEQS 16
#endif
#ifndef OAR_SEQB_PAR_MIN
#define OAR_SEQB_PAR_MIN ((int64_t)1 << 18)
#endif
int oar_seqb_parts(const oar_seqb_t *b, int64_t step_macs, int64_t q[OAR_SEQB_MAX_PARTS + 1]);
/* the threads that run `parts` parts: OpenMP's count, at most one a part */
int oar_seqb_threads(int parts);

/* dst[batch row r] = src[row_of[r]] (gather) and dst[row_of[r]] = src[r]
 * (scatter); rows of `width` elements of `esize` bytes */
void oar_seqb_gather(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize);
void oar_seqb_scatter(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize);
/* per-sequence rows (initial states): dst[s] = src[order[s]] (to sorted
 * order) and dst[order[s]] = src[s] (back) */
void oar_seqb_sort_rows(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize);
void oar_seqb_unsort_rows(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize);

/* ---- activations (Fluid's codes: gru_unit's INT attrs use them) ---------- */
enum { OAR_ACT_IDENTITY = 0, OAR_ACT_SIGMOID = 1, OAR_ACT_TANH = 2, OAR_ACT_RELU = 3 };
/* "identity" | "sigmoid" | "tanh" | "relu" -> code, -1 if unknown */
int oar_act_code(const char *name);
const char *oar_act_name(int code);
/* x = act(x) in place over n elements */
void oar_act_fwd_f32(int act, float *x, int64_t n);
void oar_act_fwd_f64(int act, double *x, int64_t n);
/* g *= act'(.) written from the activation's output y */
void oar_act_bwd_f32(int act, const float *y, float *g, int64_t n);
void oar_act_bwd_f64(int act, const double *y, double *g, int64_t n);

/* ---- BLAS ----------------------------------------------------------------- */
/* row-major C (M x N) = alpha op(A) op(B) + beta C on float32 or float64, on
 * the calling thread (oar_gemm, gemm.h); callers check sizes with
 * oar_sk_blas_dims first */
void oar_sk_gemm(int dtype, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);
/* dst [cols, rows] (ld ldd) = src [rows, cols] (ld lds) transposed: the
 * recurrent backward steps multiply by W^T, and oneDNN's sgemm runs the
 * plain product of a transposed copy up to 2x faster than the transposed
 * product (16-32 rows x 512 deep: 114 vs 54-73 GFLOP/s) */
void oar_sk_transpose(int dtype, const void *src, int64_t rows, int64_t cols, int64_t lds, void *dst, int64_t ldd);
/* y[r] += b for rows of width w; dst = column sums of x [rows, w] */
void oar_sk_add_row(int dtype, void *y, const void *b, int64_t rows, int64_t w);
void oar_sk_col_sum(int dtype, const void *x, int64_t rows, int64_t w, void *dst);
/* error unless every value fits BLAS's int */
int oar_sk_blas_dims(oar_kernel_ctx_t *k, int n, const int64_t *dims);

/* Arguments on the prepared-op API (op.h, "kernel context"): `slot` is the
 * definition's slot index, `name` the slot's name for error messages. */
int oar_sk_input(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t, const void **p);
int oar_sk_opt_input(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t,
                     const void **p);
/* (outputs: oar_k_output_sized, op.h) */
/* output `slot` (when the program has it) gets one LoD level: offs (n offsets) */
int oar_sk_set_lod1(oar_kernel_ctx_t *k, int slot, const int64_t *offs, int64_t n);
/* ---- recurrent kernels (lstm.c, lstmp.c, gru.c) -------------------------------------- */
/* checked scratch of n elements of es bytes, zeroed when `zero` (else the
 * caller writes all of it), from the block cache (scratch.h): free it with
 * oar_scratch_free; NULL with *rc set on failure */
void *oar_sk_scratch(oar_kernel_ctx_t *k, int64_t n, size_t es, bool zero, int *rc);
/* output `slot` of n elements, or scratch (*own, freed by the caller with
 * oar_scratch_free) when the program dropped it (Paddle's inference models
 * have no Batch* outputs) */
int oar_sk_output_or_scratch(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t n, size_t es,
                             void **p, void **own);
/* an initial state (H0, C0; t NULL when absent) holds one row of D per sequence */
int oar_sk_check_state(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *t, int64_t nseq, int64_t D);
/* oar_seqb_make over the op's sequences, reversed when `reverse` */
int oar_sk_seqb_make(oar_kernel_ctx_t *k, oar_seqb_t *b, const int64_t *offs, int64_t noffs, bool reverse);
/* a scratch copy (oar_scratch_free) of an initial state's rows [nseq, D] in sorted order */
void *oar_sk_sorted_state(oar_kernel_ctx_t *k, const oar_seqb_t *b, const void *state, int64_t D, size_t es,
                          int *rc);

/* element count of one row (product of dims[1..]) */
static inline int64_t oar_sk_row_width(const oar_tensor_t *t)
{
    int64_t w = 1;
    for (int i = 1; i < t->ndim; i++) w *= t->dims[i];
    return w;
}
#endif
