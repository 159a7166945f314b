/* train_extras.c — CPU kernels of average_accumulates and dgc_clip_by_norm
 * (src/ops/train_extras.ops). */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/train_extras.h"

/* Fluid moves sum_1 into sum_2 every this many updates */
#define MAX_NUM_ACCUMULATES 16384

static int counter(oar_kernel_ctx_t *k, int slot, const char *name, int64_t *v)
{
    const void *p;
    OAR_TRY(oar_k_input_sized(k, slot, name, OAR_INT64, 1, &p));
    *v = *(const int64_t *)p;
    return OAR_OK;
}

static int set_counter(oar_kernel_ctx_t *k, int slot, const char *name, int64_t v)
{
    void *p;
    OAR_TRY(oar_k_output_sized(k, slot, name, OAR_INT64, 1, false, &p));
    *(int64_t *)p = v;
    return OAR_OK;
}

#define AVGACC(NAME, T, DT)                                                                            \
    static int NAME(oar_kernel_ctx_t *k)                                                              \
    {                                                                                                 \
        const oar_avgacc_attrs_t *a = oar_k_attrs(k);                                                 \
        const int64_t n = oar_tensor_numel(oar_k_input(k, OAR_AVGACC_PARAM, 0));                      \
        int64_t nacc, nold, nupd;                                                                     \
        OAR_TRY(counter(k, OAR_AVGACC_IN_NUM_ACCUMULATES, "in_num_accumulates", &nacc));              \
        OAR_TRY(counter(k, OAR_AVGACC_IN_OLD_NUM_ACCUMULATES, "in_old_num_accumulates", &nold));      \
        OAR_TRY(counter(k, OAR_AVGACC_IN_NUM_UPDATES, "in_num_updates", &nupd));                      \
        const T *p, *s1, *s2, *s3;                                                                    \
        OAR_TRY(oar_k_input_sized(k, OAR_AVGACC_PARAM, "param", DT, n, (const void **)&p));           \
        OAR_TRY(oar_k_input_sized(k, OAR_AVGACC_IN_SUM_1, "in_sum_1", DT, n, (const void **)&s1));    \
        OAR_TRY(oar_k_input_sized(k, OAR_AVGACC_IN_SUM_2, "in_sum_2", DT, n, (const void **)&s2));    \
        OAR_TRY(oar_k_input_sized(k, OAR_AVGACC_IN_SUM_3, "in_sum_3", DT, n, (const void **)&s3));    \
        nupd++;                                                                                       \
        nacc++;                                                                                       \
        const bool move = nupd % MAX_NUM_ACCUMULATES == 0;                                            \
        const double win = (double)nupd * (double)a->average_window;                                  \
        const double lim = (double)a->max_average_window < win ? (double)a->max_average_window : win; \
        const bool full = nacc >= a->min_average_window && (double)nacc >= lim;                       \
        void *o1, *o2, *o3;                                                                           \
        OAR_TRY(oar_k_output_sized(k, OAR_AVGACC_OUT_SUM_1, "out_sum_1", DT, n, false, &o1));         \
        OAR_TRY(oar_k_output_sized(k, OAR_AVGACC_OUT_SUM_2, "out_sum_2", DT, n, false, &o2));         \
        OAR_TRY(oar_k_output_sized(k, OAR_AVGACC_OUT_SUM_3, "out_sum_3", DT, n, false, &o3));         \
        T *r1 = o1, *r2 = o2, *r3 = o3;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                             \
            /* read every input element before writing (outputs may share them) */                   \
            const T a1 = s1[i], a2 = s2[i], a3 = s3[i], pv = p[i];                                    \
            T b1 = a1 + pv, b2 = a2, b3 = a3;                                                         \
            if (move) { b2 = a2 + a1; b1 = 0; }                                                       \
            if (full) { b3 = a1 + a2; b1 = 0; b2 = 0; }                                               \
            r1[i] = b1; r2[i] = b2; r3[i] = b3;                                                       \
        }                                                                                             \
        if (full) { nold = nacc; nacc = 0; }                                                          \
        OAR_TRY(set_counter(k, OAR_AVGACC_OUT_NUM_ACCUMULATES, "out_num_accumulates", nacc));         \
        OAR_TRY(set_counter(k, OAR_AVGACC_OUT_OLD_NUM_ACCUMULATES, "out_old_num_accumulates", nold)); \
        return set_counter(k, OAR_AVGACC_OUT_NUM_UPDATES, "out_num_updates", nupd);                   \
    }                                                                                                 \
    OAR_REGISTER_KERNEL("average_accumulates", OAR_PLACE_CPU, DT, NAME)

AVGACC(avgacc_f32, float, OAR_FP32)
AVGACC(avgacc_f64, double, OAR_FP64)

#define DGC_CBN(NAME, T, DT)                                                                           \
    static int NAME(oar_kernel_ctx_t *k)                                                              \
    {                                                                                                 \
        const oar_dgccbn_attrs_t *a = oar_k_attrs(k);                                                 \
        const int64_t n = oar_tensor_numel(oar_k_input(k, OAR_DGCCBN_X, 0));                          \
        const T *x, *step;                                                                            \
        OAR_TRY(oar_k_input_sized(k, OAR_DGCCBN_X, "X", DT, n, (const void **)&x));                   \
        OAR_TRY(oar_k_input_sized(k, OAR_DGCCBN_CURRENT_STEP, "current_step", DT, 1, (const void **)&step)); \
        void *o;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_DGCCBN_OUT, "Out", DT, n, false, &o));                      \
        T *out = o;                                                                                   \
        /* Fluid compares the integer parts */                                                        \
        const bool clip = (int64_t)a->rampup_begin_step >= 0 && (int64_t)*step >= (int64_t)a->rampup_begin_step; \
        double scale = 1.0;                                                                           \
        if (clip) {                                                                                   \
            double sq = 0;                                                                            \
            for (int64_t i = 0; i < n; i++) sq += (double)x[i] * x[i];                                \
            const double norm = sqrt(sq);                                                             \
            if (norm > a->max_norm) scale = a->max_norm / norm;                                       \
        }                                                                                             \
        for (int64_t i = 0; i < n; i++) out[i] = (T)(x[i] * scale);                                   \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    OAR_REGISTER_KERNEL("dgc_clip_by_norm", OAR_PLACE_CPU, DT, NAME)

DGC_CBN(dgccbn_f32, float, OAR_FP32)
DGC_CBN(dgccbn_f64, double, OAR_FP64)
