/*
 * reg_num4.h — one kernel body registered on the CPU for several dispatch
 * dtypes (kernels/cpu/tensor_create.c, tensor_shape.c, tensor_select.c):
 * REG1 for one dtype, REG_NUM4 for float32, float64, int32 and int64.
 */
#ifndef OAR_KERNELS_CPU_REG_NUM4_H
#define OAR_KERNELS_CPU_REG_NUM4_H
#include "op.h"

#define REG1(type, fn, DT, sfx)                                           \
    static int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }          \
    OAR_REGISTER_KERNEL(type, OAR_PLACE_CPU, DT, fn##_##sfx)
#define REG_NUM4(type, fn)                                                \
    REG1(type, fn, OAR_FP32, f32) REG1(type, fn, OAR_FP64, f64)           \
    REG1(type, fn, OAR_INT32, i32) REG1(type, fn, OAR_INT64, i64)
#endif
