/*
 * sequence_batch.c — row copies along the sequence-to-batch layout
 * (ops/seq_layout.h), activations, GEMM and
 * argument helpers shared by the sequence, lstm and gru CPU kernels
 * (see sequence_batch.h).
 */
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "sequence_batch.h"
#include "scratch.h"
#include "gemm.h"
#include "act_f32.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* ---- layout (the layout itself is ops/seq_layout.c) ------------------------ */

int oar_seqb_parts(const oar_seqb_t *b, int64_t step_macs, int64_t q[OAR_SEQB_MAX_PARTS + 1])
{
    /* the shape alone decides, never the thread count: each sequence's
     * rows then go through the same GEMMs whatever the count */
    const int64_t by_size = b->nseq / OAR_SEQB_PART_SEQS;
    int nth = by_size > OAR_SEQB_MAX_PARTS ? OAR_SEQB_MAX_PARTS : (int)by_size;
    if (nth < 2 || step_macs < OAR_SEQB_PAR_MIN) nth = 1;
    q[0] = 0;
    int p = 1;
    int64_t acc = 0;
    for (int64_t s = 0; s < b->nseq && p < nth; s++) {
        int64_t len = 0;   /* steps holding sorted sequence s */
        while (len < b->nsteps && oar_seqb_count(b, len) > s) len++;
        acc += len;
        if (acc * nth >= b->rows * p) q[p++] = s + 1;
    }
    q[p] = b->nseq;
    return p;
}

int oar_seqb_threads(int parts)
{
    const int t = omp_in_parallel() ? 1 : omp_get_max_threads();
    return t < parts ? (t < 1 ? 1 : t) : parts;
}

void oar_seqb_gather(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize)
{
    size_t rb = (size_t)width * esize;
    for (int64_t r = 0; r < b->rows; r++)
        memcpy((char *)dst + (size_t)r * rb, (const char *)src + (size_t)b->row_of[r] * rb, rb);
}

void oar_seqb_scatter(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize)
{
    size_t rb = (size_t)width * esize;
    for (int64_t r = 0; r < b->rows; r++)
        memcpy((char *)dst + (size_t)b->row_of[r] * rb, (const char *)src + (size_t)r * rb, rb);
}

void oar_seqb_sort_rows(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize)
{
    size_t rb = (size_t)width * esize;
    for (int64_t s = 0; s < b->nseq; s++)
        memcpy((char *)dst + (size_t)s * rb, (const char *)src + (size_t)b->order[s] * rb, rb);
}

void oar_seqb_unsort_rows(const oar_seqb_t *b, const void *src, void *dst, int64_t width, size_t esize)
{
    size_t rb = (size_t)width * esize;
    for (int64_t s = 0; s < b->nseq; s++)
        memcpy((char *)dst + (size_t)b->order[s] * rb, (const char *)src + (size_t)s * rb, rb);
}

/* ---- activations --------------------------------------------------------------- */

static const char *const act_names[] = {"identity", "sigmoid", "tanh", "relu"};

int oar_act_code(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(name, act_names[i]) == 0) return i;
    return -1;
}

const char *oar_act_name(int code) { return code >= 0 && code < 4 ? act_names[code] : "?"; }

static void sigmoid_rows_f32(float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f_t v;
        memcpy(&v, x + i, sizeof v);
        v = 1.0f / (1.0f + exp8(-v));
        memcpy(x + i, &v, sizeof v);
    }
    for (; i < n; i++) x[i] = sigmoid_f32(x[i]);
}

static void tanh_rows_f32(float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f_t v;
        memcpy(&v, x + i, sizeof v);
        v = tanh8(v);
        memcpy(x + i, &v, sizeof v);
    }
    for (; i < n; i++) x[i] = tanh_f32(x[i]);
}

static inline double sigmoid_f64(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static void sigmoid_rows_f64(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = sigmoid_f64(x[i]);
}

static void tanh_rows_f64(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = tanh(x[i]);
}

#define ACT_IMPL(SFX, T)                                                              \
    void oar_act_fwd_##SFX(int act, T *x, int64_t n)                                  \
    {                                                                                 \
        switch (act) {                                                                \
        case OAR_ACT_SIGMOID:                                                         \
            sigmoid_rows_##SFX(x, n);                                                 \
            break;                                                                    \
        case OAR_ACT_TANH:                                                            \
            tanh_rows_##SFX(x, n);                                                    \
            break;                                                                    \
        case OAR_ACT_RELU:                                                            \
            for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;               \
            break;                                                                    \
        default:                                                                      \
            break;                                                                    \
        }                                                                             \
    }                                                                                 \
    void oar_act_bwd_##SFX(int act, const T *y, T *g, int64_t n)                      \
    {                                                                                 \
        switch (act) {                                                                \
        case OAR_ACT_SIGMOID:                                                         \
            for (int64_t i = 0; i < n; i++) g[i] *= y[i] * ((T)1 - y[i]);             \
            break;                                                                    \
        case OAR_ACT_TANH:                                                            \
            for (int64_t i = 0; i < n; i++) g[i] *= (T)1 - y[i] * y[i];               \
            break;                                                                    \
        case OAR_ACT_RELU:                                                            \
            for (int64_t i = 0; i < n; i++) g[i] = y[i] > 0 ? g[i] : 0;               \
            break;                                                                    \
        default:                                                                      \
            break;                                                                    \
        }                                                                             \
    }

ACT_IMPL(f32, float)
ACT_IMPL(f64, double)

/* ---- BLAS ------------------------------------------------------------------------ */

void oar_sk_gemm(int dtype, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    oar_gemm(dtype, 1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void oar_sk_transpose(int dtype, const void *src, int64_t rows, int64_t cols, int64_t lds, void *dst, int64_t ldd)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            if (dtype == OAR_FP32) ((float *)dst)[c * ldd + r] = ((const float *)src)[r * lds + c];
            else ((double *)dst)[c * ldd + r] = ((const double *)src)[r * lds + c];
        }
}

void oar_sk_add_row(int dtype, void *y, const void *b, int64_t rows, int64_t w)
{
    for (int64_t r = 0; r < rows; r++) {
        if (dtype == OAR_FP32) {
            float *yr = (float *)y + r * w;
            const float *bb = b;
            for (int64_t j = 0; j < w; j++) yr[j] += bb[j];
        } else {
            double *yr = (double *)y + r * w;
            const double *bb = b;
            for (int64_t j = 0; j < w; j++) yr[j] += bb[j];
        }
    }
}

void oar_sk_col_sum(int dtype, const void *x, int64_t rows, int64_t w, void *dst)
{
    if (dtype == OAR_FP32) {
        float *d = dst;
        memset(d, 0, sizeof(float) * (size_t)w);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < w; j++) d[j] += ((const float *)x)[r * w + j];
    } else {
        double *d = dst;
        memset(d, 0, sizeof(double) * (size_t)w);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < w; j++) d[j] += ((const double *)x)[r * w + j];
    }
}

int oar_sk_blas_dims(oar_kernel_ctx_t *k, int n, const int64_t *dims)
{
    for (int i = 0; i < n; i++)
        if (dims[i] < 0 || dims[i] > INT_MAX)
            return oar_k_error(k, OAR_ERR_RANGE, "size %lld exceeds the BLAS int range", (long long)dims[i]);
    return OAR_OK;
}

/* ---- arguments -------------------------------------------------------------------- */


static int input_at(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t,
                    const void **p, bool optional)
{
    *t = oar_k_input(k, slot, 0);
    *p = NULL;
    if (!*t) {
        if (optional && !oar_k_input_var(k, slot, 0)) return OAR_OK;
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name, nm(oar_k_input_name(k, slot, 0)));
    }
    if (dtype >= 0 && (*t)->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name,
                           nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name((*t)->dtype)),
                           nm(oar_dtype_name(dtype)));
    *p = oar_tensor_data((oar_tensor_t *)*t);
    if (!*p && oar_tensor_numel_of(*t) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' holds no data", name, nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

int oar_sk_input(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t, const void **p)
{
    return input_at(k, slot, name, dtype, t, p, false);
}

int oar_sk_opt_input(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t,
                     const void **p)
{
    return input_at(k, slot, name, dtype, t, p, true);
}

void *oar_sk_scratch(oar_kernel_ctx_t *k, int64_t n, size_t es, bool zero, int *rc)
{
    size_t count = (size_t)(n > 0 ? n : 1);
    void *p = count <= SIZE_MAX / es ? oar_scratch_alloc(count * es) : NULL;
    if (!p) *rc = oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate %lld scratch values", (long long)n);
    else if (zero) memset(p, 0, count * es);
    return p;
}

int oar_sk_output_or_scratch(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t n, size_t es,
                             void **p, void **own)
{
    int rc = OAR_OK;
    if (oar_k_output(k, slot, 0)) return oar_k_output_sized(k, slot, name, dt, n, false, p);
    *own = *p = oar_sk_scratch(k, n, es, false, &rc);
    return *p ? OAR_OK : rc;
}

int oar_sk_set_lod1(oar_kernel_ctx_t *k, int slot, const int64_t *offs, int64_t n)
{
    oar_tensor_t *o = oar_k_output(k, slot, 0);
    if (!o) return OAR_OK;
    const int64_t *lv[1] = {offs};
    int64_t sz[1] = {n};
    int rc = oar_tensor_set_lod(o, 1, lv, sz);
    if (rc != OAR_OK) return oar_k_error(k, rc, "cannot set the output's LoD: %s", oar_last_error());
    return OAR_OK;
}

int oar_sk_check_state(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *t, int64_t nseq, int64_t D)
{
    if (t && oar_tensor_numel_of(t) != nseq * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "%s has %lld values; expected [%lld sequences, %lld]", slot,
                           (long long)oar_tensor_numel_of(t), (long long)nseq, (long long)D);
    return OAR_OK;
}

int oar_sk_seqb_make(oar_kernel_ctx_t *k, oar_seqb_t *b, const int64_t *offs, int64_t noffs, bool reverse)
{
    if (oar_seqb_make(b, offs, noffs, reverse) != OAR_OK)
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the batch layout of %lld sequences",
                           (long long)(noffs - 1));
    return OAR_OK;
}

void *oar_sk_sorted_state(oar_kernel_ctx_t *k, const oar_seqb_t *b, const void *state, int64_t D, size_t es,
                          int *rc)
{
    void *p = oar_sk_scratch(k, b->nseq * D, es, true, rc);
    if (p) oar_seqb_sort_rows(b, state, p, D, es);
    return p;
}
