/* double_grad_ew.c — CPU kernels of elementwise_{add,sub,mul,div}_grad_grad
 * (src/ops/double_grad.ops) over Fluid broadcasting: one walk of the output
 * (DOut's shape) with each operand's offset from the loop plan
 * (src/ops/broadcast.h); gradients of a broadcast operand are summed into
 * its element. An absent DDX/DDY reads as zeros. */
#include <string.h>
#include "op.h"
#include "double_grad_io.h"
#include "ops/broadcast.h"
#include "ops/double_grad.h"

/* the plan of operands a (X's role) and b (Y's) at `axis`; the output, of
 * numel `on`, must be their broadcast */
static int plan_of(oar_kernel_ctx_t *k, const oar_tensor_t *a, const oar_tensor_t *b, int axis, int64_t on,
                   oar_bplan_t *p)
{
    int64_t od[OAR_MAX_DIMS], ap[OAR_MAX_DIMS], bp[OAR_MAX_DIMS];
    int nd;
    if (oar_bcast_shape(a->dims, a->ndim, b->dims, b->ndim, axis, od, ap, bp, &nd) != OAR_BCAST_OK)
        return oar_k_error(k, OAR_ERR_SHAPE, "the operands do not broadcast at axis %d", axis);
    oar_bplan_make(p, od, ap, bp, nd);
    if (p->total != on)
        return oar_k_error(k, OAR_ERR_SHAPE, "the broadcast of the operands has %lld values, DOut %lld",
                           (long long)p->total, (long long)on);
    return OAR_OK;
}

/* BODY runs for every output element o with operand offsets xi, yi */
#define WALK(P, ...)                                                                                \
    do {                                                                                           \
        const int64_t inner_ = (P)->n[(P)->nd - 1], rows_ = inner_ ? (P)->total / inner_ : 0;       \
        const int64_t sx_ = (P)->xs[(P)->nd - 1], sy_ = (P)->ys[(P)->nd - 1];                     \
        int64_t idx_[OAR_MAX_DIMS];                                                                \
        for (int64_t r_ = 0; r_ < rows_; r_++) {                                                   \
            int64_t xo_, yo_;                                                                      \
            oar_bplan_row(P, r_, &xo_, &yo_, idx_);                                                \
            for (int64_t j_ = 0; j_ < inner_; j_++) {                                              \
                const int64_t o = r_ * inner_ + j_, xi = xo_ + j_ * sx_, yi = yo_ + j_ * sy_;      \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* add (SIGN 1), sub (SIGN -1) and mul (MUL 1) */
#define EW_GG(NAME, TYPE, T, DT, MUL, SIGN)                                                          \
    static int NAME(oar_kernel_ctx_t *k)                                                            \
    {                                                                                               \
        const oar_ewgg_attrs_t *at = oar_k_attrs(k);                                                \
        oar_tensor_t *xt = oar_k_input(k, OAR_EWGG_X, 0), *yt = oar_k_input(k, OAR_EWGG_Y, 0);      \
        oar_tensor_t *gt = oar_k_input(k, OAR_EWGG_DOUT, 0);                                        \
        const int64_t xn = oar_tensor_numel(xt), yn = oar_tensor_numel(yt), on = oar_tensor_numel(gt); \
        oar_bplan_t p;                                                                              \
        OAR_TRY(plan_of(k, xt, yt, at->axis, on, &p));                                              \
        const T *x = oar_tensor_data(xt), *y = oar_tensor_data(yt), *dout = oar_tensor_data(gt);     \
        const T *ddx, *ddy;                                                                         \
        OAR_TRY(opt_in(k, OAR_EWGG_DDX, "DDX", DT, xn, (const void **)&ddx));                       \
        OAR_TRY(opt_in(k, OAR_EWGG_DDY, "DDY", DT, yn, (const void **)&ddy));                       \
        void *a = NULL, *b = NULL, *c = NULL;                                                       \
        OAR_TRY(zeroed(k, OAR_EWGG_DX, "DX", DT, sizeof(T), xn, &a));                               \
        OAR_TRY(zeroed(k, OAR_EWGG_DY, "DY", DT, sizeof(T), yn, &b));                               \
        OAR_TRY(oar_k_output_sized(k, OAR_EWGG_DDOUT, "DDOut", DT, on, true, &c));                  \
        T *dx = a, *dy = b, *ddout = c;                                                             \
        WALK(&p, {                                                                                  \
            const T u = ddx ? ddx[xi] : (T)0, w = ddy ? ddy[yi] : (T)0;                             \
            if (MUL) {                                                                              \
                if (ddout) ddout[o] = u * y[yi] + x[xi] * w;                                        \
                if (dx) dx[xi] += w * dout[o];                                                      \
                if (dy) dy[yi] += u * dout[o];                                                      \
            } else if (ddout) {                                                                     \
                ddout[o] = u + (SIGN) * w;                                                          \
            }                                                                                       \
        });                                                                                         \
        return OAR_OK;                                                                              \
    }                                                                                               \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, DT, NAME)

EW_GG(add_gg_f32, "elementwise_add_grad_grad", float, OAR_FP32, 0, 1)
EW_GG(add_gg_f64, "elementwise_add_grad_grad", double, OAR_FP64, 0, 1)
EW_GG(sub_gg_f32, "elementwise_sub_grad_grad", float, OAR_FP32, 0, -1)
EW_GG(sub_gg_f64, "elementwise_sub_grad_grad", double, OAR_FP64, 0, -1)
EW_GG(mul_gg_f32, "elementwise_mul_grad_grad", float, OAR_FP32, 1, 1)
EW_GG(mul_gg_f64, "elementwise_mul_grad_grad", double, OAR_FP64, 1, 1)

/* div, Fluid's formulas from the first-order DX (X of Out's shape):
 * DDOut = (DDX - Out DDY) / Y, DOut = -DX DDY, Y@GRAD = sum (Out DDY - DDX) DX / Y */
#define DIV_GG(NAME, T, DT)                                                                          \
    static int NAME(oar_kernel_ctx_t *k)                                                            \
    {                                                                                               \
        const oar_elementwise_div_grad_grad_attrs_t *at = oar_k_attrs(k);                           \
        oar_tensor_t *yt = oar_k_input(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_Y, 0);                      \
        oar_tensor_t *ot = oar_k_input(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_OUT, 0);                    \
        oar_tensor_t *dxt = oar_k_input(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_DX, 0);                    \
        const int64_t xn = oar_tensor_numel(dxt), yn = oar_tensor_numel(yt), on = oar_tensor_numel(ot); \
        oar_bplan_t p;                                                                              \
        OAR_TRY(plan_of(k, dxt, yt, at->axis, on, &p));                                             \
        const T *y = oar_tensor_data(yt), *out = oar_tensor_data(ot), *dxv = oar_tensor_data(dxt);  \
        const T *ddx, *ddy;                                                                         \
        OAR_TRY(opt_in(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_DDX, "DDX", DT, xn, (const void **)&ddx));  \
        OAR_TRY(opt_in(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_DDY, "DDY", DT, yn, (const void **)&ddy));  \
        void *a = NULL, *b = NULL, *c = NULL;                                                       \
        OAR_TRY(zeroed(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_Y_GRAD, "Y@GRAD", DT, sizeof(T), yn, &a));   \
        OAR_TRY(oar_k_output_sized(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_DOUT, "DOut", DT, on, true, &b)); \
        OAR_TRY(oar_k_output_sized(k, OAR_ELEMENTWISE_DIV_GRAD_GRAD_DDOUT, "DDOut", DT, on, true, &c)); \
        T *dy = a, *dout = b, *ddout = c;                                                           \
        WALK(&p, {                                                                                  \
            const T u = ddx ? ddx[xi] : (T)0, w = ddy ? ddy[yi] : (T)0;                             \
            if (ddout) ddout[o] = (u - out[o] * w) / y[yi];                                         \
            if (dout) dout[o] = -dxv[xi] * w;                                                       \
            if (dy) dy[yi] += (out[o] * w - u) * dxv[xi] / y[yi];                                   \
        });                                                                                         \
        return OAR_OK;                                                                              \
    }                                                                                               \
    OAR_REGISTER_KERNEL("elementwise_div_grad_grad", OAR_PLACE_CPU, DT, NAME)

DIV_GG(div_gg_f32, float, OAR_FP32)
DIV_GG(div_gg_f64, double, OAR_FP64)
