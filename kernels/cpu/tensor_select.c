/*
 * tensor_select.c — CPU kernels of where_index, unique, unique_with_counts,
 * is_empty and equal_reduce (tensor_select.ops). where_index and the unique
 * ops size their outputs here (oar_k_output_resized): their lengths come
 * from the data.
 *
 * unique sorts (value, position) pairs, so it takes O(n log n); the groups
 * are then numbered in order of first appearance, as Fluid's hash-map
 * kernel numbers them (or kept ascending: Paddle 2.x's is_sorted). NaNs
 * compare equal to each other here (one group).
 */
#include "op.h"
#include "ops/tensor_select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reg_num4.h"

/* element i of t as a double / an int64, for the numeric dtypes */
static double as_f(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case OAR_FP32: return ((const float *)p)[i];
    case OAR_FP64: return ((const double *)p)[i];
    case OAR_INT32: return ((const int32_t *)p)[i];
    case OAR_INT64: return (double)((const int64_t *)p)[i];
    case OAR_BOOL: return ((const bool *)p)[i];
    case OAR_UINT8: return ((const uint8_t *)p)[i];
    case OAR_INT8: return ((const int8_t *)p)[i];
    default: return 0;
    }
}
static int64_t as_i(const void *p, int dt, int64_t i)
{
    return dt == OAR_INT64 ? ((const int64_t *)p)[i] : dt == OAR_INT32 ? ((const int32_t *)p)[i] : (int64_t)as_f(p, dt, i);
}

/* ---- where_index ------------------------------------------------------------------------ */
static int where_index_k(oar_kernel_ctx_t *k)
{
    oar_tensor_t *c = oar_k_input(k, OAR_WHERE_INDEX_CONDITION, 0);
    const int nd = c->ndim, dt = c->dtype;
    const int64_t n = oar_tensor_numel_of(c);
    const void *cv = n ? oar_tensor_data(c) : NULL;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) m += as_f(cv, dt, i) != 0;
    const int64_t od[2] = { m, nd };
    int64_t *o = oar_k_output_resized(k, OAR_WHERE_INDEX_OUT, od, 2, OAR_INT64);
    if (!o && m * nd > 0) return OAR_ERR_NOMEM;
    int64_t r = 0;
    for (int64_t i = 0; i < n; i++) {
        if (as_f(cv, dt, i) == 0) continue;
        int64_t rest = i;
        for (int d = nd - 1; d >= 0; d--) {
            o[r * nd + d] = rest % c->dims[d];
            rest /= c->dims[d];
        }
        r++;
    }
    return OAR_OK;
}
REG_NUM4("where_index", where_index_k)
REG1("where_index", where_index_k, OAR_BOOL, b8)

/* ---- unique / unique_with_counts ------------------------------------------------------------ */
typedef struct { double f; int64_t i; int64_t pos; } ukey_t;

static int cmp_f(const void *pa, const void *pb)
{
    const ukey_t *a = pa, *b = pb;
    const bool na = isnan(a->f), nb = isnan(b->f);
    if (na != nb) return na ? 1 : -1;
    if (!na && a->f != b->f) return a->f < b->f ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}
static int cmp_i(const void *pa, const void *pb)
{
    const ukey_t *a = pa, *b = pb;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}
static bool same_key(const ukey_t *a, const ukey_t *b, bool fl)
{
    if (!fl) return a->i == b->i;
    return a->f == b->f || (isnan(a->f) && isnan(b->f));
}
static void put_idx(void *p, int dt, int64_t i, int64_t v)
{
    if (dt == OAR_INT64) ((int64_t *)p)[i] = v;
    else ((int32_t *)p)[i] = (int32_t)v;
}

/* groups ordered by their first position */
typedef struct { int64_t first, g; } gorder_t;
static int cmp_first(const void *pa, const void *pb)
{
    const gorder_t *a = pa, *b = pb;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* an optional output of n elements (NULL when the op has no such output or nobody wants it) */
static int opt_out(oar_kernel_ctx_t *k, int slot, int64_t n, int dt, void **p)
{
    *p = NULL;
    if (slot < 0 || !oar_k_output(k, slot, 0)) return OAR_OK;
    *p = oar_k_output_resized(k, slot, &n, 1, dt);
    return *p || n == 0 ? OAR_OK : OAR_ERR_NOMEM;
}

/* unique (Fluid 1.8's first-appearance order, or Paddle 2.x's is_sorted) and
 * unique_with_counts: the groups of equal values come from sorting
 * (value, position) pairs; `uwc` selects unique_with_counts' slots */
static int unique_run(oar_kernel_ctx_t *k, bool uwc)
{
    const oar_unique_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_UNIQUE_X, 0);
    const int dt = x->dtype, idt = a->dtype;
    const bool fl = dt == OAR_FP32 || dt == OAR_FP64, sorted = !uwc && a->is_sorted;
    const int64_t n = oar_tensor_numel_of(x);
    const char *xv = n ? oar_tensor_data(x) : NULL;
    const size_t cap = (size_t)(n ? n : 1);
    ukey_t *keys = oar_xmalloc(sizeof(ukey_t) * cap);
    int64_t *sg = oar_xmalloc(sizeof(int64_t) * cap);     /* position -> its group in sorted order */
    int64_t *jmap = oar_xmalloc(sizeof(int64_t) * cap);   /* sorted group -> output position */
    int64_t *cnt = oar_xmalloc(sizeof(int64_t) * cap);
    gorder_t *go = oar_xmalloc(sizeof(gorder_t) * cap);
    int rc = OAR_OK;
    if (!keys || !sg || !jmap || !cnt || !go) { rc = OAR_ERR_NOMEM; goto done; }
    for (int64_t i = 0; i < n; i++) {
        keys[i].f = fl ? as_f(xv, dt, i) : 0;
        keys[i].i = fl ? 0 : as_i(xv, dt, i);
        keys[i].pos = i;
    }
    qsort(keys, (size_t)n, sizeof *keys, fl ? cmp_f : cmp_i);
    int64_t m = 0;
    for (int64_t s = 0; s < n;) {
        int64_t e = s + 1;
        while (e < n && same_key(&keys[s], &keys[e], fl)) e++;
        go[m].first = keys[s].pos;   /* sorted by position within a group: the first appearance */
        go[m].g = m;
        for (int64_t j = s; j < e; j++) sg[keys[j].pos] = m;
        m++;
        s = e;
    }
    if (!sorted) qsort(go, (size_t)m, sizeof *go, cmp_first);   /* Fluid 1.8: first-appearance order */
    for (int64_t j = 0; j < m; j++) jmap[go[j].g] = j;
    const int64_t od = m;
    char *out = oar_k_output_resized(k, OAR_UNIQUE_OUT, &od, 1, dt);
    void *idx, *ind, *cout;
    if (!out && m) { rc = OAR_ERR_NOMEM; goto done; }
    if ((rc = opt_out(k, OAR_UNIQUE_INDEX, n, idt, &idx)) != OAR_OK ||
        (rc = opt_out(k, uwc ? -1 : OAR_UNIQUE_INDICES, m, idt, &ind)) != OAR_OK ||
        (rc = opt_out(k, uwc ? OAR_UWC_COUNT : OAR_UNIQUE_COUNTS, m, idt, &cout)) != OAR_OK)
        goto done;
    const size_t es = oar_dtype_size(dt);
    for (int64_t j = 0; j < m; j++) {
        memcpy(out + (size_t)j * es, xv + (size_t)go[j].first * es, es);
        if (ind) put_idx(ind, idt, j, go[j].first);
        cnt[j] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t j = jmap[sg[i]];
        if (idx) put_idx(idx, idt, i, j);
        cnt[j]++;
    }
    for (int64_t j = 0; cout && j < m; j++) put_idx(cout, idt, j, cnt[j]);
done:
    free(keys);
    free(sg);
    free(jmap);
    free(cnt);
    free(go);
    return rc;
}
static int unique_k(oar_kernel_ctx_t *k) { return unique_run(k, false); }
static int uwc_k(oar_kernel_ctx_t *k) { return unique_run(k, true); }
REG_NUM4("unique", unique_k)
REG_NUM4("unique_with_counts", uwc_k)

/* ---- is_empty ------------------------------------------------------------------------------ */
static int is_empty_k(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_IS_EMPTY_X, 0);
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_IS_EMPTY_OUT, "Out", OAR_BOOL, 1, false, &o));
    *(bool *)o = !x || oar_tensor_numel_of(x) == 0;
    return OAR_OK;
}
REG_NUM4("is_empty", is_empty_k)
REG1("is_empty", is_empty_k, OAR_BOOL, b8)
REG1("is_empty", is_empty_k, OAR_UINT8, u8)
REG1("is_empty", is_empty_k, OAR_INT8, i8)
REG1("is_empty", is_empty_k, OAR_INT16, i16)
REG1("is_empty", is_empty_k, OAR_FP16, f16)

/* ---- equal_reduce ---------------------------------------------------------------------------- */
static int equal_reduce_k(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_EQUAL_REDUCE_X, 0), *y = oar_k_input(k, OAR_EQUAL_REDUCE_Y, 0);
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_EQUAL_REDUCE_OUT, "Out", OAR_BOOL, 1, false, &o));
    bool eq = x->ndim == y->ndim && x->dtype == y->dtype;
    for (int i = 0; eq && i < x->ndim; i++) eq = x->dims[i] == y->dims[i];
    const int64_t n = eq ? oar_tensor_numel_of(x) : 0;
    const void *xv = n ? oar_tensor_data(x) : NULL, *yv = n ? oar_tensor_data(y) : NULL;
    const bool fl = x->dtype == OAR_FP32 || x->dtype == OAR_FP64;
    for (int64_t i = 0; eq && i < n; i++)
        eq = fl ? as_f(xv, x->dtype, i) == as_f(yv, x->dtype, i) : as_i(xv, x->dtype, i) == as_i(yv, x->dtype, i);
    *(bool *)o = eq;
    return OAR_OK;
}
REG_NUM4("equal_reduce", equal_reduce_k)
REG1("equal_reduce", equal_reduce_k, OAR_BOOL, b8)
static int equal_all_k(oar_kernel_ctx_t *k) { return equal_reduce_k(k); }
REG_NUM4("equal_all", equal_all_k)
REG1("equal_all", equal_all_k, OAR_BOOL, b8)
