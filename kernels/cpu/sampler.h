/* sampler.h — the class samplers of nce and sample_logits (Fluid 1.8's
 * math/sampler): uniform over [0, range], log-uniform (Zipfian) and a custom
 * distribution drawn by the alias method; and the SELECTED_ROWS gradient
 * output nce and hierarchical_sigmoid share. Header-only: static functions
 * for kernels/cpu/nce.c, hsigmoid.c and sample_logits.c. */
#ifndef OAR_KERNELS_SAMPLER_H
#define OAR_KERNELS_SAMPLER_H
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"

enum { SMP_UNIFORM = 0, SMP_LOG_UNIFORM = 1, SMP_CUSTOM = 2 };

typedef struct {
    int kind;
    int64_t range;        /* draws are in [0, range]; range = classes - 1 */
    double log_range;     /* log(range + 1), the log-uniform normaliser */
    /* custom: per-class probability, alias (-1: none) and keep probability */
    const oar_tensor_t *probs, *alias, *alias_probs;
    oar_rng_t rng;
    bool local;           /* seed != 0: a generator of its own, reseeded each run */
} smp_t;

static inline double smp_real(const oar_tensor_t *t, int64_t i)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_FP64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline int64_t smp_int(const oar_tensor_t *t, int64_t i)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_INT64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

static inline void smp_init(smp_t *s, int kind, int64_t classes, int seed)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->range = classes - 1;
    s->log_range = log((double)classes);
    s->local = seed != 0;
    if (s->local) oar_rng_seed(&s->rng, (uint64_t)(uint32_t)seed);
}

/* the custom distribution's three tables: each `classes` long, the alias
 * ids in [-1, classes), the probabilities in [0, 1] */
static inline int smp_set_custom(oar_kernel_ctx_t *k, smp_t *s, const oar_tensor_t *p, const oar_tensor_t *a,
                                 const oar_tensor_t *ap)
{
    const int64_t n = s->range + 1;
    if (!p || !a || !ap) return oar_k_error(k, OAR_ERR_NOT_FOUND, "sampler 2 (custom_dist) needs CustomDistProbs, "
                                            "CustomDistAlias and CustomDistAliasProbs");
    if (oar_tensor_numel_of(p) != n || oar_tensor_numel_of(a) != n || oar_tensor_numel_of(ap) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "the custom distribution's tables must hold %lld values each "
                           "(num_total_classes)", (long long)n);
    if ((p->dtype != OAR_FP32 && p->dtype != OAR_FP64) || (ap->dtype != OAR_FP32 && ap->dtype != OAR_FP64) ||
        (a->dtype != OAR_INT32 && a->dtype != OAR_INT64))
        return oar_k_error(k, OAR_ERR_DTYPE, "CustomDistProbs and CustomDistAliasProbs must be float32/float64, "
                           "CustomDistAlias int32/int64");
    for (int64_t i = 0; i < n; i++) {
        int64_t al = smp_int(a, i);
        double pi = smp_real(p, i), api = smp_real(ap, i);
        if (al < -1 || al >= n || !(pi >= 0 && pi <= 1) || !(api >= 0 && api <= 1))
            return oar_k_error(k, OAR_ERR_RANGE, "custom distribution entry %lld: probability %g, alias %lld, keep "
                               "probability %g; expected probabilities in [0, 1] and an alias in [-1, %lld)",
                               (long long)i, pi, (long long)al, api, (long long)n);
    }
    s->probs = p;
    s->alias = a;
    s->alias_probs = ap;
    return OAR_OK;
}

static inline double smp_u01(smp_t *s) { return s->local ? oar_rng_uniform_r(&s->rng) : oar_rng_uniform(); }

/* an integer uniform in [0, range] */
static inline int64_t smp_uint(smp_t *s)
{
    int64_t v = (int64_t)(smp_u01(s) * (double)(s->range + 1));
    return v > s->range ? s->range : v;
}

static inline int64_t smp_draw(smp_t *s)
{
    switch (s->kind) {
    case SMP_LOG_UNIFORM: {
        /* exp(u log(range + 1)) - 1 lies in [0, range); range 0 draws 0 */
        int64_t v = (int64_t)exp(smp_u01(s) * s->log_range) - 1;
        return s->range > 0 ? v % s->range : 0;
    }
    case SMP_CUSTOM: {
        int64_t i = smp_uint(s);
        if (smp_u01(s) > smp_real(s->alias_probs, i)) {
            int64_t al = smp_int(s->alias, i);
            return al < 0 ? i : al;
        }
        return i;
    }
    default: return smp_uint(s);
    }
}

/* the probability of drawing class v */
static inline double smp_prob(const smp_t *s, int64_t v)
{
    switch (s->kind) {
    case SMP_LOG_UNIFORM: return log((v + 2.0) / (v + 1.0)) / s->log_range;
    case SMP_CUSTOM: return smp_real(s->probs, v);
    default: return 1.0 / (double)(s->range + 1);
    }
}

static int smp_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ids[0..n) sorted and deduplicated in place; returns the distinct count */
static inline int64_t smp_unique(int64_t *ids, int64_t n)
{
    if (n == 0) return 0;
    qsort(ids, (size_t)n, sizeof *ids, smp_cmp_i64);
    int64_t m = 1;
    for (int64_t i = 1; i < n; i++)
        if (ids[i] != ids[m - 1]) ids[m++] = ids[i];
    return m;
}

/* the position of id among the sorted rows[0..n) */
static inline int64_t smp_row_index(const int64_t *rows, int64_t n, int64_t id)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (rows[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* the SELECTED_ROWS output of slot: height rows, the given sorted row ids,
 * and a zeroed value [nrows, width] of dtype dt into *val */
static inline int smp_sparse_out(oar_kernel_ctx_t *k, int slot, const char *name, const int64_t *rows, int64_t nrows,
                                 int64_t height, int64_t width, int dt, void **val)
{
    oar_variable_t *gv = oar_k_output_var(k, slot, 0);
    oar_selected_rows_t *sr = gv ? oar_var_selected_rows(gv) : NULL;
    if (!sr)
        return oar_k_error(k, OAR_ERR_DTYPE, "%s '%s' must be a SELECTED_ROWS variable (is_sparse)", name,
                           oar_k_output_name(k, slot, 0) ? oar_k_output_name(k, slot, 0) : "?");
    if (sr->cap < nrows) {
        int64_t *r = oar_xrealloc(sr->rows, sizeof(int64_t) * (size_t)(nrows > 0 ? nrows : 1));
        if (!r) return OAR_ERR_NOMEM;
        sr->rows = r;
        sr->cap = nrows;
    }
    if (nrows > 0) memcpy(sr->rows, rows, sizeof(int64_t) * (size_t)nrows);
    sr->nrows = nrows;
    sr->height = height;
    int64_t vd[2] = {nrows, width};
    *val = oar_k_output_resized(k, slot, vd, 2, dt);
    if (!*val && nrows * width > 0) return OAR_ERR_NOMEM;
    oar_tensor_clear_lod(sr->value);
    if (nrows * width > 0) memset(*val, 0, (size_t)(nrows * width) * (dt == OAR_FP64 ? 8 : 4));
    return OAR_OK;
}

#endif
