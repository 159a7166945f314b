/* fill.c — CPU kernels of fill_constant and fill_constant_batch_size_like.
 *
 * The output dtype is the `dtype` attr, not the dispatch dtype (the batch-size
 * op dispatches on its Input, fill_constant has no input), so one kernel
 * serves every registered dtype and switches on the attr. */
#include "op.h"
#include "ops/attr_tensor.h"
#include "ops/fill_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Saturating conversion: a float outside the integer range (or NaN) must not
 * hit C's undefined float->int conversion. */
static int64_t sat_int(double v, double lo, double hi)
{
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    /* hi of int64 is 2^63 as a double, one past INT64_MAX: never convert it */
    if (v >= hi) return hi >= 9223372036854775807.0 ? INT64_MAX : (int64_t)hi;
    return (int64_t)v;
}

/* The fill value: ValueTensor when given, else `str_value` when set (it
 * keeps int64 values a float32 attr would round), else `value`. Integers come
 * back in *iv, floats in *dv. */
static int fill_value(oar_kernel_ctx_t *k, const oar_fill_attrs_t *a, double *dv, int64_t *iv)
{
    double d = a->value;
    oar_tensor_t *vt = oar_k_input(k, a->value_slot, 0);
    if (vt) {
        /* ValueTensor overrides value and str_value; int64 keeps every digit */
        if (vt->dtype == OAR_INT64 && oar_tensor_numel_of(vt) == 1 && oar_tensor_has_data(vt)) {
            *iv = *(const int64_t *)oar_tensor_data(vt);
            *dv = (double)*iv;
            return OAR_OK;
        }
        OAR_TRY(oar_k_scalar_at(k, a->value_slot, "ValueTensor", &d));
    } else if (a->str_kind == OAR_FILL_STR_INT) {
        *iv = a->str_int;
        *dv = (double)a->str_int;
        return OAR_OK;
    } else if (a->str_kind == OAR_FILL_STR_FLOAT) {
        d = a->str_float;
    } else if (a->str_kind == OAR_FILL_STR_BAD) {
        return oar_k_error(k, OAR_ERR_INVALID, "attr str_value '%s' is not a number", a->str_value);
    }
    *dv = d;
    switch (a->dtype) {
    case OAR_BOOL: *iv = d != 0.0; break;
    case OAR_INT8: *iv = sat_int(d, -128.0, 127.0); break;
    case OAR_UINT8: *iv = sat_int(d, 0.0, 255.0); break;
    case OAR_INT16: *iv = sat_int(d, -32768.0, 32767.0); break;
    case OAR_INT32: *iv = sat_int(d, -2147483648.0, 2147483647.0); break;
    default: *iv = sat_int(d, -9223372036854775808.0, 9223372036854775807.0); break;
    }
    return OAR_OK;
}

#define FILL_LOOP(T, v) do { T *p_ = data; T v_ = (T)(v); \
    for (int64_t i_ = 0; i_ < n; i_++) p_[i_] = v_; } while (0)

static int fill_kernel(oar_kernel_ctx_t *k)
{
    const oar_fill_attrs_t *a = oar_k_attrs(k);
    int dtype = a->dtype;
    double dv = 0;
    int64_t iv = 0;
    OAR_TRY(fill_value(k, a, &dv, &iv));
    oar_tensor_t *out = oar_k_output(k, OAR_FILL_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    void *data = oar_k_output_data(k, OAR_FILL_OUT, 0, dtype);
    if (!data) return OAR_ERR_NOMEM;
    int64_t n = oar_tensor_numel_of(out);
    switch (dtype) {
    case OAR_FP32: FILL_LOOP(float, dv); break;
    case OAR_FP64: FILL_LOOP(double, dv); break;
    case OAR_INT64: FILL_LOOP(int64_t, iv); break;
    case OAR_INT32: FILL_LOOP(int32_t, iv); break;
    case OAR_INT16: FILL_LOOP(int16_t, iv); break;
    case OAR_INT8: FILL_LOOP(int8_t, iv); break;
    case OAR_UINT8: FILL_LOOP(uint8_t, iv); break;
    case OAR_BOOL: FILL_LOOP(bool, iv != 0); break;
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no CPU kernel for dtype %s",
                           oar_dtype_name(dtype) ? oar_dtype_name(dtype) : "?");
    }
    return OAR_OK;
}

/* one registration per dispatch dtype; the constructor names need distinct fns */
#define FILL_REG(op, sfx, dt) \
    static int op##_##sfx(oar_kernel_ctx_t *k) { return fill_kernel(k); } \
    OAR_REGISTER_KERNEL(#op, OAR_PLACE_CPU, dt, op##_##sfx)
#define FILL_REG_ALL(op) \
    FILL_REG(op, f32, OAR_FP32) FILL_REG(op, f64, OAR_FP64) FILL_REG(op, i64, OAR_INT64) \
    FILL_REG(op, i32, OAR_INT32) FILL_REG(op, i16, OAR_INT16) FILL_REG(op, i8, OAR_INT8) \
    FILL_REG(op, u8, OAR_UINT8) FILL_REG(op, b, OAR_BOOL)

FILL_REG_ALL(fill_constant)
FILL_REG_ALL(fill_constant_batch_size_like)
