/*
 * misc_ext.c — CPU kernels of fill_any_like, argsort(_grad),
 * reduce_all/reduce_any and elementwise_floordiv/mod (src/ops/misc_ext.c).
 *
 * floordiv and mod follow Paddle 2.x: the quotient rounds toward minus
 * infinity and the remainder takes the divisor's sign (Python's // and %);
 * an integer zero divisor is an error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "bcast_run.h"
#include "ops/misc_ext.h"

/* ---- fill_any_like --------------------------------------------------------- */
static int fal_run(oar_kernel_ctx_t *k)
{
    const oar_fal_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *xt = oar_k_input(k, OAR_FAL_X, 0);
    int dt = a->dtype == -1 ? xt->dtype : a->dtype;
    void *o = oar_k_output_data(k, OAR_FAL_OUT, 0, dt);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const int64_t n = oar_tensor_numel_of(xt);
    const double v = a->value;
    switch (dt) {
    case OAR_FP32: for (int64_t i = 0; i < n; i++) ((float *)o)[i] = (float)v; break;
    case OAR_FP64: for (int64_t i = 0; i < n; i++) ((double *)o)[i] = v; break;
    case OAR_INT32: for (int64_t i = 0; i < n; i++) ((int32_t *)o)[i] = (int32_t)v; break;
    case OAR_INT64: for (int64_t i = 0; i < n; i++) ((int64_t *)o)[i] = (int64_t)v; break;
    case OAR_BOOL: for (int64_t i = 0; i < n; i++) ((bool *)o)[i] = v != 0; break;
    default: return oar_k_error(k, OAR_ERR_DTYPE, "cannot fill %s", oar_dtype_name(dt));
    }
    return OAR_OK;
}

/* ---- argsort --------------------------------------------------------------- */
typedef struct { double v; int64_t i; } kv_t;
static int kv_asc(const void *a, const void *b)
{
    const kv_t *p = a, *q = b;
    if (p->v < q->v) return -1;
    if (p->v > q->v) return 1;
    return (p->i > q->i) - (p->i < q->i);   /* ties keep their order */
}
static int kv_desc(const void *a, const void *b)
{
    const kv_t *p = a, *q = b;
    if (p->v > q->v) return -1;
    if (p->v < q->v) return 1;
    return (p->i > q->i) - (p->i < q->i);
}

static void split3(const oar_tensor_t *t, int axis, int64_t *outer, int64_t *mid, int64_t *inner)
{
    if (axis < 0) axis += t->ndim;
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= t->dims[i];
    for (int i = axis + 1; i < t->ndim; i++) *inner *= t->dims[i];
    *mid = t->dims[axis];
}

static double load(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case OAR_FP32: return ((const float *)p)[i];
    case OAR_FP64: return ((const double *)p)[i];
    case OAR_INT32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

static int as_run(oar_kernel_ctx_t *k)
{
    const oar_argsort_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *xt = oar_k_input(k, OAR_AS_X, 0);
    const int dt = xt->dtype;
    char *o = oar_k_output_data(k, OAR_AS_OUT, 0, dt);
    int64_t *idx = oar_k_output_data(k, OAR_AS_INDICES, 0, OAR_INT64);
    if (!o || !idx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out/Indices");
    int64_t outer, mid, inner;
    split3(xt, a->axis, &outer, &mid, &inner);
    const char *x = oar_tensor_data(xt);
    const size_t es = oar_dtype_size(dt);
    kv_t *buf = malloc(sizeof(kv_t) * (size_t)(mid > 0 ? mid : 1));
    if (!buf) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the sort buffer");
    for (int64_t u = 0; u < outer; u++)
        for (int64_t v = 0; v < inner; v++) {
            for (int64_t i = 0; i < mid; i++) {
                buf[i].v = load(x, dt, (u * mid + i) * inner + v);
                buf[i].i = i;
            }
            qsort(buf, (size_t)mid, sizeof *buf, a->descending ? kv_desc : kv_asc);
            for (int64_t i = 0; i < mid; i++) {
                const int64_t at = (u * mid + i) * inner + v;
                idx[at] = buf[i].i;
                memcpy(o + at * es, x + ((u * mid + buf[i].i) * inner + v) * es, es);
            }
        }
    free(buf);
    return OAR_OK;
}

#define AS_GRAD(T, SUF, DT)                                                                     \
    static int as_bwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        if (!oar_k_output(k, OAR_ASG_DX, 0)) return OAR_OK;                                     \
        const oar_argsort_attrs_t *a = oar_k_attrs(k);                                          \
        oar_tensor_t *xt = oar_k_input(k, OAR_AS_X, 0), *it = oar_k_input(k, OAR_ASG_INDICES, 0); \
        oar_tensor_t *gt = oar_k_input(k, OAR_ASG_DOUT, 0);                                     \
        const int64_t n = oar_tensor_numel_of(xt);                                              \
        if (oar_tensor_numel_of(it) != n || oar_tensor_numel_of(gt) != n || it->dtype != OAR_INT64) \
            return oar_k_error(k, OAR_ERR_SHAPE, "Indices / Out@GRAD do not match X");          \
        T *dx = oar_k_output_data(k, OAR_ASG_DX, 0, DT);                                        \
        if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");                \
        int64_t outer, mid, inner;                                                              \
        split3(xt, a->axis, &outer, &mid, &inner);                                              \
        const int64_t *idx = oar_tensor_data(it);                                               \
        const T *g = oar_tensor_data(gt);                                                       \
        memset(dx, 0, sizeof(T) * (size_t)n);                                                   \
        for (int64_t u = 0; u < outer; u++)                                                     \
            for (int64_t i = 0; i < mid; i++)                                                   \
                for (int64_t v = 0; v < inner; v++) {                                           \
                    const int64_t at = (u * mid + i) * inner + v, j = idx[at];                  \
                    if (j < 0 || j >= mid) return oar_k_error(k, OAR_ERR_RANGE, "Indices out of range"); \
                    dx[(u * mid + j) * inner + v] += g[at];                                     \
                }                                                                               \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("argsort_grad", OAR_PLACE_CPU, DT, as_bwd_##SUF)
AS_GRAD(float, f32, OAR_FP32)
AS_GRAD(double, f64, OAR_FP64)

/* ---- reduce_all / reduce_any ---------------------------------------------- */
static int rb_run(oar_kernel_ctx_t *k)
{
    const oar_rbool_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *xt = oar_k_input(k, OAR_RB_X, 0), *ot = oar_k_output(k, OAR_RB_OUT, 0);
    bool *o = oar_k_output_data(k, OAR_RB_OUT, 0, OAR_BOOL);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const bool *x = oar_tensor_data(xt);
    const int64_t on = oar_tensor_numel_of(ot), xn = oar_tensor_numel_of(xt);
    for (int64_t i = 0; i < on; i++) o[i] = a->all;
    /* Out's flat index of each X element: X's index with reduced dims dropped
     * (inference checked the axes against X's rank) */
    const bool every = a->reduce_all;
    uint32_t mask = every ? ~0u : 0;
    for (int i = 0; i < a->ndim && !every; i++) mask |= 1u << (a->dim[i] < 0 ? a->dim[i] + xt->ndim : a->dim[i]);
    for (int64_t p = 0; p < xn; p++) {
        int64_t r = p, oi = 0, mul = 1;
        for (int dd = xt->ndim - 1; dd >= 0; dd--) {
            int64_t i = r % xt->dims[dd];
            r /= xt->dims[dd];
            if (mask & (1u << dd)) continue;
            oi += i * mul;
            mul *= xt->dims[dd];
        }
        if (a->all) o[oi] = o[oi] && x[p];
        else o[oi] = o[oi] || x[p];
    }
    return OAR_OK;
}
OAR_REGISTER_KERNEL("reduce_all", OAR_PLACE_CPU, OAR_BOOL, rb_run)
static int rb_any(oar_kernel_ctx_t *k) { return rb_run(k); }
OAR_REGISTER_KERNEL("reduce_any", OAR_PLACE_CPU, OAR_BOOL, rb_any)

/* ---- elementwise_floordiv / elementwise_mod ------------------------------ */
#define IFLOORDIV(a, b) ((a) % (b) != 0 && (((a) < 0) != ((b) < 0)) ? (a) / (b) - 1 : (a) / (b))
#define IMOD(a, b) ((a) % (b) != 0 && (((a) % (b) < 0) != ((b) < 0)) ? (a) % (b) + (b) : (a) % (b))
#define FMODP(a, b) (fmod(a, b) != 0 && ((fmod(a, b) < 0) != ((b) < 0)) ? fmod(a, b) + (b) : fmod(a, b))

OAR_BROWS(fdiv_f32_rows, float, float, floorf(a / b))
OAR_BROWS(fdiv_f64_rows, double, double, floor(a / b))
OAR_BROWS(fdiv_i32_rows, int32_t, int32_t, IFLOORDIV(a, b))
OAR_BROWS(fdiv_i64_rows, int64_t, int64_t, IFLOORDIV(a, b))
OAR_BROWS(mod_f32_rows, float, float, (float)FMODP((double)a, (double)b))
OAR_BROWS(mod_f64_rows, double, double, FMODP(a, b))
OAR_BROWS(mod_i32_rows, int32_t, int32_t, IMOD(a, b))
OAR_BROWS(mod_i64_rows, int64_t, int64_t, IMOD(a, b))

static int ew_run(oar_kernel_ctx_t *k, int dtype, oar_brows_fn fn, bool check_zero)
{
    oar_bargs_t a;
    OAR_TRY(oar_bcast_setup(k, &a));
    if (check_zero && a.plan.total > 0)
        for (int64_t i = 0; i < a.yn; i++) {
            bool zero = dtype == OAR_INT32 ? ((const int32_t *)a.yd)[i] == 0 : ((const int64_t *)a.yd)[i] == 0;
            if (zero)
                return oar_k_error(k, OAR_ERR_NUMERIC, "integer division by zero (Y[%lld] is 0, Y variable '%s')",
                                   (long long)i, oar_k_input_name(k, OAR_BCAST_Y, 0));
        }
    void *o = oar_k_output_data(k, OAR_BCAST_OUT, 0, dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (a.plan.total > 0) oar_brun_rows(&a.plan, fn, a.xd, a.yd, o);
    return OAR_OK;
}

#define EW_REG(TYPE, OP, SUF, DT, ZERO)                                                         \
    static int OP##_##SUF(oar_kernel_ctx_t *k) { return ew_run(k, DT, OP##_##SUF##_rows, ZERO); } \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, DT, OP##_##SUF)
EW_REG("elementwise_floordiv", fdiv, f32, OAR_FP32, false)
EW_REG("elementwise_floordiv", fdiv, f64, OAR_FP64, false)
EW_REG("elementwise_floordiv", fdiv, i32, OAR_INT32, true)
EW_REG("elementwise_floordiv", fdiv, i64, OAR_INT64, true)
EW_REG("elementwise_mod", mod, f32, OAR_FP32, false)
EW_REG("elementwise_mod", mod, f64, OAR_FP64, false)
EW_REG("elementwise_mod", mod, i32, OAR_INT32, true)
EW_REG("elementwise_mod", mod, i64, OAR_INT64, true)

/* fill_any_like and argsort for each input dtype */
#define ANY_DT(TYPE, NAME, FN)                                                                  \
    static int NAME##_f32(oar_kernel_ctx_t *k) { return FN(k); }                                \
    static int NAME##_f64(oar_kernel_ctx_t *k) { return FN(k); }                                \
    static int NAME##_i32(oar_kernel_ctx_t *k) { return FN(k); }                                \
    static int NAME##_i64(oar_kernel_ctx_t *k) { return FN(k); }                                \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, OAR_FP32, NAME##_f32)                              \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, OAR_FP64, NAME##_f64)                              \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, OAR_INT32, NAME##_i32)                             \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, OAR_INT64, NAME##_i64)
ANY_DT("fill_any_like", fal, fal_run)
ANY_DT("argsort", as, as_run)
static int fal_bool(oar_kernel_ctx_t *k) { return fal_run(k); }
OAR_REGISTER_KERNEL("fill_any_like", OAR_PLACE_CPU, OAR_BOOL, fal_bool)
