/*
 * selected_rows.c — CPU kernels of merge_selected_rows,
 * get_tensor_from_selected_rows, split_selected_rows and
 * lookup_table_dequant (src/ops/selected_rows.ops). Rows and heights are
 * written here; a value tensor whose row count depends on the data is sized
 * with oar_k_output_resized (split's k-th output: a scratch tensor the
 * value then shares).
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/selected_rows.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* input `slot` as a SelectedRows with a value tensor, or an error naming it */
static int sr_input(oar_kernel_ctx_t *k, int slot, oar_selected_rows_t **out)
{
    oar_variable_t *v = oar_k_input_var(k, slot, 0);
    if (!v || oar_variable_type(v) != OAR_VAR_SELECTED_ROWS)
        return oar_k_error(k, OAR_ERR_INVALID, "input X '%s' is not a SelectedRows",
                           nm(oar_k_input_name(k, slot, 0)));
    oar_selected_rows_t *sr = oar_var_selected_rows(v);
    if (!sr || !sr->value || sr->value->ndim < 1 || sr->value->dims[0] != sr->nrows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s': its value does not hold one row per index",
                           nm(oar_k_input_name(k, slot, 0)));
    *out = sr;
    return OAR_OK;
}

/* output `slot`[i] as a SelectedRows with room for n rows and the given height */
static int sr_output(oar_kernel_ctx_t *k, int slot, int i, int64_t n, int64_t height, oar_selected_rows_t **out)
{
    oar_variable_t *v = oar_k_output_var(k, slot, i);
    oar_selected_rows_t *sr = v ? oar_var_selected_rows(v) : NULL;
    if (!sr)
        return oar_k_error(k, OAR_ERR_INVALID, "output Out '%s' cannot hold a SelectedRows",
                           nm(oar_k_output_name(k, slot, i)));
    if (sr->cap < n) {
        int64_t *r = oar_xrealloc(sr->rows, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        if (!r) return OAR_ERR_NOMEM;
        sr->rows = r;
        sr->cap = n;
    }
    sr->nrows = n;
    sr->height = height;
    *out = sr;
    return OAR_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

#define MERGE_KERNEL(SFX, T, DT)                                                                      \
    static int merge_##SFX(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                 \
        oar_selected_rows_t *x, *o;                                                                   \
        OAR_TRY(sr_input(k, OAR_MERGESR_X, &x));                                                      \
        const int64_t n = x->nrows, w = n > 0 ? oar_tensor_numel_of(x->value) / n : 0;                \
        int64_t *uniq = oar_xmalloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));                      \
        if (!uniq) return OAR_ERR_NOMEM;                                                              \
        if (n > 0) memcpy(uniq, x->rows, sizeof(int64_t) * (size_t)n);                                \
        qsort(uniq, (size_t)n, sizeof(int64_t), cmp_i64);                                             \
        int64_t m = 0;                                                                                \
        for (int64_t i = 0; i < n; i++)                                                               \
            if (m == 0 || uniq[m - 1] != uniq[i]) uniq[m++] = uniq[i];                                \
        const T *xv = n > 0 ? oar_tensor_data(x->value) : NULL;                                       \
        int rc = sr_output(k, OAR_MERGESR_OUT, 0, m, x->height, &o);                                  \
        int64_t d[OAR_MAX_DIMS];                                                                      \
        memcpy(d, x->value->dims, sizeof(int64_t) * (size_t)x->value->ndim);                          \
        d[0] = m;                                                                                     \
        T *ov = rc == OAR_OK ? oar_k_output_resized(k, OAR_MERGESR_OUT, d, x->value->ndim, DT) : NULL; \
        if (rc == OAR_OK && !ov && m * w > 0) rc = OAR_ERR_NOMEM;                                     \
        if (rc != OAR_OK) { free(uniq); return rc; }                                                  \
        memcpy(o->rows, uniq, sizeof(int64_t) * (size_t)m);                                           \
        if (ov) memset(ov, 0, sizeof(T) * (size_t)(m * w));                                           \
        for (int64_t i = 0; i < n; i++) {                                                             \
            const int64_t *p = bsearch(&x->rows[i], uniq, (size_t)m, sizeof(int64_t), cmp_i64);       \
            T *dst = ov + (p - uniq) * w;                                                             \
            for (int64_t j = 0; j < w; j++) dst[j] += xv[i * w + j];                                  \
        }                                                                                             \
        free(uniq);                                                                                   \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    OAR_REGISTER_KERNEL("merge_selected_rows", OAR_PLACE_CPU, DT, merge_##SFX)

MERGE_KERNEL(f32, float, OAR_FP32)
MERGE_KERNEL(f64, double, OAR_FP64)

/* the value's bytes, any dtype */
static int get_tensor(oar_kernel_ctx_t *k)
{
    oar_selected_rows_t *x;
    OAR_TRY(sr_input(k, OAR_GETSR_X, &x));
    int dt = x->value->dtype;
    int64_t n = oar_tensor_numel_of(x->value);
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_GETSR_OUT, "Out", dt, n, false, &o));
    if (n > 0) memcpy(o, oar_tensor_data(x->value), oar_dtype_size(dt) * (size_t)n);
    return OAR_OK;
}

static int split(oar_kernel_ctx_t *k)
{
    const oar_splitsr_attrs_t *a = oar_k_attrs(k);
    oar_selected_rows_t *x;
    OAR_TRY(sr_input(k, OAR_SPLITSR_X, &x));
    const int parts = a->height_sections.n;
    if (parts != oar_k_nout(k, OAR_SPLITSR_OUT))
        return oar_k_error(k, OAR_ERR_INVALID, "height_sections has %d values but Out has %d variables", parts,
                           oar_k_nout(k, OAR_SPLITSR_OUT));
    int64_t total = 0;
    for (int p = 0; p < parts; p++) total += a->height_sections.v[p];
    const int dt = x->value->dtype;
    const int64_t n = x->nrows, w = n > 0 ? oar_tensor_numel_of(x->value) / n : 0;
    const size_t rb = oar_dtype_size(dt) * (size_t)w;
    for (int64_t i = 0; i < n; i++)
        if (x->rows[i] < 0 || x->rows[i] >= total)
            return oar_k_error(k, OAR_ERR_RANGE, "X '%s' holds row %lld, past the sections' total %lld",
                               nm(oar_k_input_name(k, OAR_SPLITSR_X, 0)), (long long)x->rows[i], (long long)total);
    const char *xv = n > 0 ? oar_tensor_data(x->value) : NULL;
    int64_t lo = 0;
    for (int p = 0; p < parts; p++) {
        const int64_t hi = lo + a->height_sections.v[p];
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++) m += x->rows[i] >= lo && x->rows[i] < hi;
        oar_selected_rows_t *o;
        OAR_TRY(sr_output(k, OAR_SPLITSR_OUT, p, m, a->height_sections.v[p], &o));
        int64_t d[OAR_MAX_DIMS];
        memcpy(d, x->value->dims, sizeof(int64_t) * (size_t)x->value->ndim);
        d[0] = m;
        oar_tensor_t *t;
        OAR_TRY(oar_tensor_new_sized(&t, d, x->value->ndim));
        char *ov = m * w > 0 ? oar_tensor_mutable(t, dt) : NULL;
        int rc = m * w > 0 && !ov ? OAR_ERR_NOMEM : OAR_OK;
        if (rc == OAR_OK && !o->value) rc = oar_tensor_new_empty(&o->value);
        if (rc == OAR_OK) {
            int64_t j = 0;
            for (int64_t i = 0; i < n; i++) {
                if (x->rows[i] < lo || x->rows[i] >= hi) continue;
                o->rows[j] = x->rows[i] - lo;
                if (ov) memcpy(ov + (size_t)j * rb, xv + (size_t)i * rb, rb);
                j++;
            }
            if (!ov) oar_tensor_mutable(t, dt);   /* an empty part still has X's dtype */
            rc = oar_tensor_share(o->value, t);
        }
        oar_tensor_free(t);
        if (rc != OAR_OK) return oar_k_error(k, rc, "output Out[%d]: %s", p, oar_last_error());
        lo = hi;
    }
    return OAR_OK;
}

static int dequant(oar_kernel_ctx_t *k)
{
    const oar_ltdq_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *w = oar_k_input(k, OAR_LTDQ_W, 0), *ids = oar_k_input(k, OAR_LTDQ_IDS, 0);
    const void *wp, *ip;
    OAR_TRY(oar_k_input_sized(k, OAR_LTDQ_W, "W", OAR_FP32, -1, &wp));
    OAR_TRY(oar_k_input_sized(k, OAR_LTDQ_IDS, "Ids", OAR_INT64, -1, &ip));
    const int64_t V = w->dims[0], Q = w->dims[1], width = (Q - 2) * 4, n = oar_tensor_numel_of(ids);
    void *op;
    OAR_TRY(oar_k_output_sized(k, OAR_LTDQ_OUT, "Out", OAR_FP32, n * width, false, &op));
    const float *table = wp;
    const int64_t *id = ip;
    float *out = op;
    for (int64_t i = 0; i < n; i++) {
        float *dst = out + i * width;
        if (a->padding_idx != -1 && id[i] == a->padding_idx) {
            memset(dst, 0, sizeof(float) * (size_t)width);
            continue;
        }
        if (id[i] < 0 || id[i] >= V)
            return oar_k_error(k, OAR_ERR_RANGE, "Ids '%s' holds %lld at %lld; expected 0 <= id < %lld (W's rows)",
                               nm(oar_k_input_name(k, OAR_LTDQ_IDS, 0)), (long long)id[i], (long long)i, (long long)V);
        const float *row = table + id[i] * Q;
        const float lo = row[0], scale = (row[1] - row[0]) / 256.0f;
        const unsigned char *q = (const unsigned char *)(row + 2);
        for (int64_t j = 0; j < width; j++) dst[j] = scale * (float)q[j] + lo;
    }
    return OAR_OK;
}

OAR_REGISTER_KERNEL("get_tensor_from_selected_rows", OAR_PLACE_CPU, OAR_FP32, get_tensor)
static int get_tensor_f64(oar_kernel_ctx_t *k) { return get_tensor(k); }
static int get_tensor_i32(oar_kernel_ctx_t *k) { return get_tensor(k); }
static int get_tensor_i64(oar_kernel_ctx_t *k) { return get_tensor(k); }
OAR_REGISTER_KERNEL("get_tensor_from_selected_rows", OAR_PLACE_CPU, OAR_FP64, get_tensor_f64)
OAR_REGISTER_KERNEL("get_tensor_from_selected_rows", OAR_PLACE_CPU, OAR_INT32, get_tensor_i32)
OAR_REGISTER_KERNEL("get_tensor_from_selected_rows", OAR_PLACE_CPU, OAR_INT64, get_tensor_i64)
OAR_REGISTER_KERNEL("split_selected_rows", OAR_PLACE_CPU, OAR_FP32, split)
static int split_f64(oar_kernel_ctx_t *k) { return split(k); }
static int split_i32(oar_kernel_ctx_t *k) { return split(k); }
static int split_i64(oar_kernel_ctx_t *k) { return split(k); }
OAR_REGISTER_KERNEL("split_selected_rows", OAR_PLACE_CPU, OAR_FP64, split_f64)
OAR_REGISTER_KERNEL("split_selected_rows", OAR_PLACE_CPU, OAR_INT32, split_i32)
OAR_REGISTER_KERNEL("split_selected_rows", OAR_PLACE_CPU, OAR_INT64, split_i64)
OAR_REGISTER_KERNEL("lookup_table_dequant", OAR_PLACE_CPU, OAR_FP32, dequant)
