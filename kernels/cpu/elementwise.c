/*
 * elementwise.c — CPU kernels of elementwise_{add,sub,mul,div,max,min,pow}
 * and their grads, over Fluid broadcasting (broadcast.h).
 *
 * Every kernel walks a loop plan: outer rows (with operand offsets advanced
 * incrementally) around one tight inner loop in which each operand is either
 * a contiguous vector or a scalar. The inner loops are plain C the compiler
 * vectorizes; the op's arithmetic is pasted into them by macros, so there is
 * no per-element call or index arithmetic.
 */
#include <math.h>
#include <string.h>
#include "op.h"
#include "bcast_run.h"
#include "ops/elementwise.h"

static int ew_forward(oar_kernel_ctx_t *k, int dtype, oar_brows_fn fn)
{
    oar_bargs_t a;
    OAR_TRY(oar_bcast_setup(k, &a));
    void *o = oar_k_output_data(k, OAR_BCAST_OUT, 0, dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (a.plan.total == 0) return OAR_OK;
    oar_brun_rows(&a.plan, fn, a.xd, a.yd, o);
    return OAR_OK;
}

#define EW_FWD(OP, SUF, T, DT, EXPR)                                                  \
    OAR_BROWS(OP##_##SUF##_rows, T, T, EXPR)                                            \
    static int OP##_##SUF(oar_kernel_ctx_t *k) { return ew_forward(k, DT, OP##_##SUF##_rows); } \
    OAR_REGISTER_KERNEL("elementwise_" #OP, OAR_PLACE_CPU, DT, OP##_##SUF)

#define MAXE(a, b) ((a) > (b) ? (a) : (b))
#define MINE(a, b) ((a) < (b) ? (a) : (b))

EW_FWD(add, f32, float, OAR_FP32, a + b)
EW_FWD(add, f64, double, OAR_FP64, a + b)
EW_FWD(sub, f32, float, OAR_FP32, a - b)
EW_FWD(sub, f64, double, OAR_FP64, a - b)
EW_FWD(mul, f32, float, OAR_FP32, a * b)
EW_FWD(mul, f64, double, OAR_FP64, a * b)
EW_FWD(div, f32, float, OAR_FP32, a / b)
EW_FWD(div, f64, double, OAR_FP64, a / b)
EW_FWD(max, f32, float, OAR_FP32, MAXE(a, b))
EW_FWD(max, f64, double, OAR_FP64, MAXE(a, b))
EW_FWD(min, f32, float, OAR_FP32, MINE(a, b))
EW_FWD(min, f64, double, OAR_FP64, MINE(a, b))
EW_FWD(pow, f32, float, OAR_FP32, powf(a, b))
EW_FWD(pow, f64, double, OAR_FP64, pow(a, b))

/* Integers wrap on overflow (computed unsigned: signed overflow is undefined). */
#define WRAP32(e) ((int32_t)(uint32_t)(e))
#define WRAP64(e) ((int64_t)(uint64_t)(e))
EW_FWD(add, i32, int32_t, OAR_INT32, WRAP32((uint32_t)a + (uint32_t)b))
EW_FWD(add, i64, int64_t, OAR_INT64, WRAP64((uint64_t)a + (uint64_t)b))
EW_FWD(sub, i32, int32_t, OAR_INT32, WRAP32((uint32_t)a - (uint32_t)b))
EW_FWD(sub, i64, int64_t, OAR_INT64, WRAP64((uint64_t)a - (uint64_t)b))
EW_FWD(mul, i32, int32_t, OAR_INT32, WRAP32((uint32_t)a * (uint32_t)b))
EW_FWD(mul, i64, int64_t, OAR_INT64, WRAP64((uint64_t)a * (uint64_t)b))
EW_FWD(max, i32, int32_t, OAR_INT32, MAXE(a, b))
EW_FWD(max, i64, int64_t, OAR_INT64, MAXE(a, b))
EW_FWD(min, i32, int32_t, OAR_INT32, MINE(a, b))
EW_FWD(min, i64, int64_t, OAR_INT64, MINE(a, b))

/* Integer division truncates like C; MIN / -1 wraps instead of trapping, and
 * a zero divisor is an error found before any arithmetic. */
#define IDIV(T, UT, a, b) ((b) == -1 ? (T)(UT)(0u - (UT)(a)) : (a) / (b))
OAR_BROWS(div_i32_rows, int32_t, int32_t, IDIV(int32_t, uint32_t, a, b))
OAR_BROWS(div_i64_rows, int64_t, int64_t, IDIV(int64_t, uint64_t, a, b))

#define EW_IDIV(SUF, T, DT)                                                           \
    static int div_##SUF(oar_kernel_ctx_t *k)                                         \
    {                                                                                 \
        oar_bargs_t a;                                                                  \
        OAR_TRY(oar_bcast_setup(k, &a));                                                     \
        if (a.plan.total > 0) {                                                       \
            const T *y = a.yd;                                                        \
            for (int64_t i = 0; i < a.yn; i++)                                        \
                if (y[i] == 0)                                                        \
                    return oar_k_error(k, OAR_ERR_NUMERIC,                            \
                        "integer division by zero (Y[%lld] is 0, Y variable '%s')", \
                        (long long)i, oar_k_input_name(k, OAR_BCAST_Y, 0));          \
        }                                                                             \
        return ew_forward(k, DT, div_##SUF##_rows);                                   \
    }                                                                                 \
    OAR_REGISTER_KERNEL("elementwise_div", OAR_PLACE_CPU, DT, div_##SUF)
EW_IDIV(i32, int32_t, OAR_INT32)
EW_IDIV(i64, int64_t, OAR_INT64)

/* ---- gradients ----------------------------------------------------------
 * One pass per wanted input gradient. For side S (X or Y) the destination
 * dS has S's shape, so it is addressed with S's plan offsets. EXPR is the
 * contribution of one output element, from a (x), b (y), o (out), g (dout).
 * When S was not broadcast, dS is written directly (rows in parallel);
 * otherwise it is zeroed and accumulated (serially: rows collide). */
typedef void (*ew_grad_fn)(const oar_bplan_t *p, const void *x, const void *y, const void *out,
                           const void *g, void *d, int side, int64_t lo, int64_t hi);

#define EW_GRAD_ROWS(NAME, T, EXPR)                                                   \
    static void NAME(const oar_bplan_t *p, const void *xv, const void *yv, const void *ov, \
                     const void *gv, void *dv, int side, int64_t lo, int64_t hi)      \
    {                                                                                 \
        const T *x = xv, *y = yv, *out = ov, *gr = gv;                                \
        T *d = dv;                                                                    \
        const int dd = p->nd - 1;                                                     \
        const int64_t n = p->n[dd];                                                   \
        const bool xv1 = p->xs[dd] != 0, yv1 = p->ys[dd] != 0;                        \
        const bool full = side ? p->y_full : p->x_full;                               \
        const bool dv1 = side ? yv1 : xv1;                                            \
        int64_t xo, yo, idx[OAR_MAX_DIMS];                                            \
        if (lo >= hi) return;                                                         \
        oar_bplan_row(p, lo, &xo, &yo, idx);                                          \
        for (int64_t r = lo; r < hi; r++) {                                           \
            const T *xr = x + xo, *yr = y + yo, *orow = out + r * n, *grow = gr + r * n; \
            T *dr = d + (side ? yo : xo);                                             \
            if (!dv1) {                                                               \
                /* eight running sums, not one: a single float sum is a chain \
                 * of dependent adds the compiler may not reorder (a conv      \
                 * bias's gradient sums 576 values per row) */                \
                T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                  \
                int64_t i = 0;                                                        \
                if (xv1) { const T b = *yr;                                           \
                    for (; i + 8 <= n; i += 8)                                        \
                        for (int l = 0; l < 8; l++) { T a = xr[i + l], o = orow[i + l], g = grow[i + l]; \
                            (void)a; (void)b; (void)o; acc[l] += (EXPR); }            \
                    for (; i < n; i++) { T a = xr[i], o = orow[i], g = grow[i];       \
                        (void)a; (void)b; (void)o; acc[0] += (EXPR); } }              \
                else { const T a = *xr;                                               \
                    for (; i + 8 <= n; i += 8)                                        \
                        for (int l = 0; l < 8; l++) { T b = yr[i + l], o = orow[i + l], g = grow[i + l]; \
                            (void)a; (void)b; (void)o; acc[l] += (EXPR); }            \
                    for (; i < n; i++) { T b = yr[i], o = orow[i], g = grow[i];       \
                        (void)a; (void)b; (void)o; acc[0] += (EXPR); } }              \
                const T s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])); \
                *dr += s;   /* never full here: the operand repeats along the row */ \
            } else if (xv1 && yv1) {                                                  \
                if (full) for (int64_t i = 0; i < n; i++) {                           \
                    T a = xr[i], b = yr[i], o = orow[i], g = grow[i];                 \
                    (void)a; (void)b; (void)o; dr[i] = (EXPR); }                      \
                else for (int64_t i = 0; i < n; i++) {                                \
                    T a = xr[i], b = yr[i], o = orow[i], g = grow[i];                 \
                    (void)a; (void)b; (void)o; dr[i] += (EXPR); }                     \
            } else if (xv1) {                                                         \
                const T b = *yr;                                                      \
                if (full) for (int64_t i = 0; i < n; i++) {                           \
                    T a = xr[i], o = orow[i], g = grow[i];                            \
                    (void)a; (void)b; (void)o; dr[i] = (EXPR); }                      \
                else for (int64_t i = 0; i < n; i++) {                                \
                    T a = xr[i], o = orow[i], g = grow[i];                            \
                    (void)a; (void)b; (void)o; dr[i] += (EXPR); }                     \
            } else {                                                                  \
                const T a = *xr;                                                      \
                if (full) for (int64_t i = 0; i < n; i++) {                           \
                    T b = yr[i], o = orow[i], g = grow[i];                            \
                    (void)a; (void)b; (void)o; dr[i] = (EXPR); }                      \
                else for (int64_t i = 0; i < n; i++) {                                \
                    T b = yr[i], o = orow[i], g = grow[i];                            \
                    (void)a; (void)b; (void)o; dr[i] += (EXPR); }                     \
            }                                                                         \
            oar_bplan_next(p, &xo, &yo, idx);                                         \
        }                                                                             \
    }

typedef struct ew_grad_fns { ew_grad_fn dx, dy; bool needs_out; } ew_grad_fns_t;

static int ew_grad_side(oar_kernel_ctx_t *k, const oar_bargs_t *a, int dtype, int side,
                        ew_grad_fn fn, const void *out, const void *g)
{
    const int slot = side ? OAR_EWG_DY : OAR_EWG_DX;
    if (!oar_k_output(k, slot, 0)) return OAR_OK;     /* not wanted */
    void *d = oar_k_output_data(k, slot, 0, dtype);
    if (!d) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate %s", side ? "Y@GRAD" : "X@GRAD");
    const oar_bplan_t *p = &a->plan;
    bool full = side ? p->y_full : p->x_full;
    if (!full) memset(d, 0, (size_t)(side ? a->yn : a->xn) * oar_dtype_size(dtype));
    if (p->total == 0) return OAR_OK;
    const void *x = a->xd, *y = a->yd;
    int64_t rows = p->total / p->n[p->nd - 1];
    if (full && p->total > OAR_PAR_THRESHOLD && rows > 1) {
        #pragma omp parallel
        {
            int64_t lo, hi;
            oar_omp_range(rows, &lo, &hi);
            fn(p, x, y, out, g, d, side, lo, hi);
        }
    } else {
        fn(p, x, y, out, g, d, side, 0, rows);
    }
    return OAR_OK;
}

/* For add/sub: a gradient equal to dOut with the operand's shape shares
 * dOut's buffer (copy-on-write) instead of copying it. */
static bool ew_grad_share(oar_kernel_ctx_t *k, const oar_bargs_t *a, int side, const oar_tensor_t *dout,
                          int *rc)
{
    oar_tensor_t *d = oar_k_output(k, side ? OAR_EWG_DY : OAR_EWG_DX, 0);
    if (!d || !(side ? a->plan.y_full : a->plan.x_full)) return false;
    const oar_tensor_t *src = side ? a->y : a->x;
    *rc = oar_tensor_share(d, dout);
    if (*rc == OAR_OK) {
        /* keep the operand's own dims and LoD (same numel, maybe other rank) */
        int64_t lvl = src->lod_levels;
        memcpy(d->dims, src->dims, sizeof d->dims);
        d->ndim = src->ndim;
        if (lvl > 0 || d->lod_levels > 0) *rc = oar_tensor_copy_lod(d, src);
    }
    if (*rc != OAR_OK) *rc = oar_k_error(k, *rc, "cannot set %s", side ? "Y@GRAD" : "X@GRAD");
    return true;
}

static int ew_backward(oar_kernel_ctx_t *k, int dtype, const ew_grad_fns_t *f, bool share_x,
                       bool share_y)
{
    oar_bargs_t a;
    OAR_TRY(oar_bcast_setup(k, &a));
    const oar_tensor_t *dout = oar_k_input(k, OAR_EWG_DOUT, 0);
    if (!dout) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Out@GRAD is missing");
    if (oar_tensor_numel_of(dout) != a.plan.total || (a.plan.total > 0 && !oar_tensor_has_data(dout))) {
        char b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD shape %s does not match the broadcast of X and Y (%lld elements)",
                           oar_shape_str(dout->dims, dout->ndim, b, sizeof b),
                           (long long)a.plan.total);
    }
    if (oar_tensor_dtype(dout) != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Out@GRAD dtype %s differs from X dtype %s",
                           oar_dtype_name(oar_tensor_dtype(dout)), oar_dtype_name(dtype));
    const void *g = oar_tensor_data((oar_tensor_t *)dout);
    const void *out = g;   /* a valid pointer for the formulas that ignore Out */
    if (f->needs_out) {
        const oar_tensor_t *ot = oar_k_input(k, OAR_EWG_OUT, 0);
        if (!ot || oar_tensor_numel_of(ot) != a.plan.total || (a.plan.total > 0 && !oar_tensor_has_data(ot)))
            return oar_k_error(k, OAR_ERR_SHAPE, "input Out is missing or does not match Out@GRAD");
        out = oar_tensor_data((oar_tensor_t *)ot);
    }
    int rc = OAR_OK;
    if (!(share_x && ew_grad_share(k, &a, 0, dout, &rc))) rc = ew_grad_side(k, &a, dtype, 0, f->dx, out, g);
    OAR_TRY(rc);
    if (!(share_y && ew_grad_share(k, &a, 1, dout, &rc))) rc = ew_grad_side(k, &a, dtype, 1, f->dy, out, g);
    return rc;
}

#define EW_GRAD(OP, SUF, T, DT, NEEDS_OUT, SHARE_X, SHARE_Y, DX, DY)                   \
    EW_GRAD_ROWS(OP##_grad_dx_##SUF, T, DX)                                           \
    EW_GRAD_ROWS(OP##_grad_dy_##SUF, T, DY)                                           \
    static int OP##_grad_##SUF(oar_kernel_ctx_t *k)                                   \
    {                                                                                 \
        static const ew_grad_fns_t f = {OP##_grad_dx_##SUF, OP##_grad_dy_##SUF, NEEDS_OUT}; \
        return ew_backward(k, DT, &f, SHARE_X, SHARE_Y);                              \
    }                                                                                 \
    OAR_REGISTER_KERNEL("elementwise_" #OP "_grad", OAR_PLACE_CPU, DT, OP##_grad_##SUF)

EW_GRAD(add, f32, float, OAR_FP32, false, true, true, g, g)
EW_GRAD(add, f64, double, OAR_FP64, false, true, true, g, g)
EW_GRAD(sub, f32, float, OAR_FP32, false, true, false, g, -g)
EW_GRAD(sub, f64, double, OAR_FP64, false, true, false, g, -g)
EW_GRAD(mul, f32, float, OAR_FP32, false, false, false, g * b, g * a)
EW_GRAD(mul, f64, double, OAR_FP64, false, false, false, g * b, g * a)
/* d(x/y)/dy = -x/y^2 = -out/y */
EW_GRAD(div, f32, float, OAR_FP32, true, false, false, g / b, -g * o / b)
EW_GRAD(div, f64, double, OAR_FP64, true, false, false, g / b, -g * o / b)
/* ties send the gradient to Y, as Fluid does */
EW_GRAD(max, f32, float, OAR_FP32, false, false, false, a > b ? g : 0.0f, a > b ? 0.0f : g)
EW_GRAD(max, f64, double, OAR_FP64, false, false, false, a > b ? g : 0.0, a > b ? 0.0 : g)
EW_GRAD(min, f32, float, OAR_FP32, false, false, false, a < b ? g : 0.0f, a < b ? 0.0f : g)
EW_GRAD(min, f64, double, OAR_FP64, false, false, false, a < b ? g : 0.0, a < b ? 0.0 : g)
/* d(x^y)/dx = y x^(y-1); d(x^y)/dy = x^y ln x */
EW_GRAD(pow, f32, float, OAR_FP32, false, false, false, g * b * powf(a, b - 1.0f), g * powf(a, b) * logf(a))
EW_GRAD(pow, f64, double, OAR_FP64, false, false, false, g * b * pow(a, b - 1.0), g * pow(a, b) * log(a))
