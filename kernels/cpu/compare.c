/*
 * compare.c — CPU kernels of the comparisons (X, Y -> bool Out, broadcast
 * like elementwise ops) and of the logical ops on bool tensors.
 * Bools are one byte; inputs are read as bytes and any nonzero is true.
 */
#include "op.h"
#include "bcast_run.h"

static int bin_run(oar_kernel_ctx_t *k, oar_brows_fn fn)
{
    oar_bargs_t a;
    OAR_TRY(oar_bcast_setup(k, &a));
    void *o = oar_k_output_data(k, OAR_BCAST_OUT, 0, OAR_BOOL);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (a.plan.total > 0) oar_brun_rows(&a.plan, fn, a.xd, a.yd, o);
    return OAR_OK;
}

#define CMP_ONE(OP, SUF, T, DT, EXPR)                                                 \
    OAR_BROWS(OP##_##SUF##_rows, T, uint8_t, (uint8_t)(EXPR))                         \
    static int OP##_##SUF(oar_kernel_ctx_t *k) { return bin_run(k, OP##_##SUF##_rows); } \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CPU, DT, OP##_##SUF)

#define CMP(OP, EXPR)                                                                 \
    CMP_ONE(OP, f32, float, OAR_FP32, EXPR)                                           \
    CMP_ONE(OP, f64, double, OAR_FP64, EXPR)                                          \
    CMP_ONE(OP, i32, int32_t, OAR_INT32, EXPR)                                        \
    CMP_ONE(OP, i64, int64_t, OAR_INT64, EXPR)

CMP(less_than, a < b)
CMP(less_equal, a <= b)
CMP(greater_than, a > b)
CMP(greater_equal, a >= b)
CMP(equal, a == b)
CMP(not_equal, a != b)
/* bool operands compare as truth values */
CMP_ONE(equal, b8, uint8_t, OAR_BOOL, (a != 0) == (b != 0))
CMP_ONE(not_equal, b8, uint8_t, OAR_BOOL, (a != 0) != (b != 0))

CMP_ONE(logical_and, b8, uint8_t, OAR_BOOL, (a != 0) & (b != 0))
CMP_ONE(logical_or, b8, uint8_t, OAR_BOOL, (a != 0) | (b != 0))
CMP_ONE(logical_xor, b8, uint8_t, OAR_BOOL, (a != 0) ^ (b != 0))

static int logical_not_b8(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_BCAST_X, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X is missing");
    int64_t n = oar_tensor_numel_of(x);
    if (n > 0 && !oar_tensor_has_data(x))
        return oar_k_error(k, OAR_ERR_INVALID, "input X ('%s') holds no data", oar_k_input_name(k, OAR_BCAST_X, 0));
    const uint8_t *xs = oar_tensor_data(x);
    uint8_t *o = oar_k_output_data(k, OAR_BCAST_OUT, 0, OAR_BOOL);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    for (int64_t i = 0; i < n; i++) o[i] = xs[i] == 0;
    return OAR_OK;
}
OAR_REGISTER_KERNEL("logical_not", OAR_PLACE_CPU, OAR_BOOL, logical_not_b8)
