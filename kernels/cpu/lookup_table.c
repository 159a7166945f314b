/*
 * lookup_table.c — CPU kernels of lookup_table and lookup_table_grad (dense
 * and SELECTED_ROWS). Ids are validated in one serial pass before any row
 * moves, so an out-of-range id fails the op without a partial result and
 * the copies can run in parallel.
 */
#include "op.h"
#include "ops/lookup_table.h"

#include <stdlib.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

typedef struct {
    const oar_tensor_t *w;
    const int64_t *ids;
    int64_t n, v, d, pad;
} lt_args_t;

/* W and Ids with data, each id in [0, V) or padding_idx */
static int lt_args(oar_kernel_ctx_t *k, lt_args_t *a)
{
    const oar_tensor_t *w = oar_k_input(k, OAR_LT_W, 0), *ids = oar_k_input(k, OAR_LT_IDS, 0);
    if (!w || !ids)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", !w ? "W" : "Ids");
    if (ids->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "input Ids '%s' has dtype %s, expected int64",
                           nm(oar_k_input_name(k, OAR_LT_IDS, 0)), nm(oar_dtype_name(ids->dtype)));
    if (w->ndim != 2) return oar_k_error(k, OAR_ERR_SHAPE, "input W is not 2-D");
    a->w = w;
    a->v = w->dims[0];
    a->d = w->dims[1];
    a->n = oar_tensor_numel_of(ids);
    a->ids = a->n > 0 ? oar_tensor_data((oar_tensor_t *)ids) : NULL;
    a->pad = ((const oar_lt_attrs_t *)oar_k_attrs(k))->padding_idx;
    if (a->n > 0 && !a->ids) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Ids has no data");
    for (int64_t i = 0; i < a->n; i++) {
        int64_t id = a->ids[i];
        /* padding_idx -1 means none, so -1 is never a valid id */
        if ((id < 0 || id >= a->v) && !(a->pad >= 0 && id == a->pad))
            return oar_k_error(k, OAR_ERR_RANGE, "Ids '%s' holds %lld at position %lld, out of range [0, %lld) "
                               "for W '%s' with V = %lld rows", nm(oar_k_input_name(k, OAR_LT_IDS, 0)), (long long)id,
                               (long long)i, (long long)a->v, nm(oar_k_input_name(k, OAR_LT_W, 0)), (long long)a->v);
    }
    return OAR_OK;
}

#define PAR_ROWS _Pragma("omp parallel for if(a.n * a.d > 65536)")

#define LT_KERNELS(sfx, T, DT)                                                                    \
    static int lt_##sfx(oar_kernel_ctx_t *k)                                                      \
    {                                                                                             \
        lt_args_t a;                                                                              \
        OAR_TRY(lt_args(k, &a));                                                                  \
        if (a.w->dtype != DT) return oar_k_error(k, OAR_ERR_DTYPE, "input W has dtype %s",        \
                                                 nm(oar_dtype_name(a.w->dtype)));                 \
        const T *w = oar_tensor_data((oar_tensor_t *)a.w);                                        \
        if (!oar_k_output(k, OAR_LT_OUT, 0))                                                      \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");        \
        T *out = oar_k_output_data(k, OAR_LT_OUT, 0, DT);                                         \
        if (!out) return OAR_ERR_NOMEM;                                                           \
        PAR_ROWS for (int64_t i = 0; i < a.n; i++) {                                              \
            int64_t id = a.ids[i];                                                                \
            if (id == a.pad) memset(out + i * a.d, 0, sizeof(T) * (size_t)a.d);                   \
            else memcpy(out + i * a.d, w + id * a.d, sizeof(T) * (size_t)a.d);                    \
        }                                                                                         \
        return OAR_OK;                                                                            \
    }                                                                                             \
    OAR_REGISTER_KERNEL("lookup_table", OAR_PLACE_CPU, DT, lt_##sfx)                              \
    static int ltg_##sfx(oar_kernel_ctx_t *k)                                                     \
    {                                                                                             \
        lt_args_t a;                                                                              \
        OAR_TRY(lt_args(k, &a));                                                                  \
        const oar_tensor_t *gt = oar_k_input(k, OAR_LTG_DOUT, 0);                                 \
        if (!gt || gt->dtype != DT || oar_tensor_numel_of(gt) != a.n * a.d)                       \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' must hold %lld x %lld values of %s", \
                               nm(oar_k_input_name(k, OAR_LTG_DOUT, 0)), (long long)a.n, (long long)a.d, \
                               oar_dtype_name(DT));                                               \
        const T *g = oar_tensor_data((oar_tensor_t *)gt);                                         \
        oar_variable_t *gv = oar_k_output_var(k, OAR_LTG_DW, 0);                                  \
        if (!gv) return OAR_OK; /* no gradient wanted */                                          \
        if (((const oar_lt_attrs_t *)oar_k_attrs(k))->is_sparse)                                  \
            return ltg_sparse_##sfx(k, &a, g, gv);                                                \
        T *dw = oar_k_output_data(k, OAR_LTG_DW, 0, DT);                                          \
        if (!dw) return OAR_ERR_NOMEM;                                                            \
        memset(dw, 0, sizeof(T) * (size_t)(a.v * a.d));                                           \
        /* serial: duplicate ids add into the same row */                                         \
        for (int64_t i = 0; i < a.n; i++) {                                                       \
            int64_t id = a.ids[i];                                                                \
            if (id == a.pad) continue;                                                            \
            T *row = dw + id * a.d;                                                               \
            const T *gr = g + i * a.d;                                                            \
            for (int64_t j = 0; j < a.d; j++) row[j] += gr[j];                                    \
        }                                                                                         \
        return OAR_OK;                                                                            \
    }                                                                                             \
    OAR_REGISTER_KERNEL("lookup_table_grad", OAR_PLACE_CPU, DT, ltg_##sfx)

/* SELECTED_ROWS grad: height V, rows = ids, value [N, D] = Out@GRAD with
 * padding rows zeroed */
#define LT_SPARSE(sfx, T, DT)                                                                     \
    static int ltg_sparse_##sfx(oar_kernel_ctx_t *k, const lt_args_t *a, const T *g,             \
                                oar_variable_t *gv)                                               \
    {                                                                                             \
        oar_selected_rows_t *sr = oar_var_selected_rows(gv);                                      \
        if (!sr) {                                                                                \
            oar_error_prefix("%s: W@GRAD '%s' (is_sparse): ", oar_k_op(k)->type,                  \
                             nm(oar_k_output_name(k, OAR_LTG_DW, 0)));                            \
            return OAR_ERR_DTYPE;                                                                 \
        }                                                                                         \
        if (sr->cap < a->n) {                                                                     \
            int64_t *r = oar_xrealloc(sr->rows, sizeof(int64_t) * (size_t)(a->n > 0 ? a->n : 1)); \
            if (!r) return OAR_ERR_NOMEM;                                                         \
            sr->rows = r;                                                                         \
            sr->cap = a->n;                                                                       \
        }                                                                                         \
        if (a->n > 0) memcpy(sr->rows, a->ids, sizeof(int64_t) * (size_t)a->n);                   \
        sr->nrows = a->n;                                                                         \
        sr->height = a->v;                                                                        \
        /* the row count is the number of ids: a data-dependent shape */                          \
        int64_t vd[2] = {a->n, a->d};                                                             \
        T *val = oar_k_output_resized(k, OAR_LTG_DW, vd, 2, DT);                                  \
        if (!val && a->n * a->d > 0) return OAR_ERR_NOMEM;                                        \
        oar_tensor_clear_lod(sr->value);                                                          \
        for (int64_t i = 0; i < a->n; i++) {                                                      \
            if (a->ids[i] == a->pad) memset(val + i * a->d, 0, sizeof(T) * (size_t)a->d);         \
            else memcpy(val + i * a->d, g + i * a->d, sizeof(T) * (size_t)a->d);                  \
        }                                                                                         \
        return OAR_OK;                                                                            \
    }

LT_SPARSE(f32, float, OAR_FP32)
LT_SPARSE(f64, double, OAR_FP64)
LT_KERNELS(f32, float, OAR_FP32)
LT_KERNELS(f64, double, OAR_FP64)

/* lookup_table_v2: the same rows; only the shapes (set by inference) differ */
static int lt_v2_f32(oar_kernel_ctx_t *k) { return lt_f32(k); }
static int lt_v2_f64(oar_kernel_ctx_t *k) { return lt_f64(k); }
static int ltg_v2_f32(oar_kernel_ctx_t *k) { return ltg_f32(k); }
static int ltg_v2_f64(oar_kernel_ctx_t *k) { return ltg_f64(k); }
OAR_REGISTER_KERNEL("lookup_table_v2", OAR_PLACE_CPU, OAR_FP32, lt_v2_f32)
OAR_REGISTER_KERNEL("lookup_table_v2", OAR_PLACE_CPU, OAR_FP64, lt_v2_f64)
OAR_REGISTER_KERNEL("lookup_table_v2_grad", OAR_PLACE_CPU, OAR_FP32, ltg_v2_f32)
OAR_REGISTER_KERNEL("lookup_table_v2_grad", OAR_PLACE_CPU, OAR_FP64, ltg_v2_f64)
