/*
 * compare.cu — CUDA kernels of the comparisons (X, Y -> bool Out, with
 * elementwise broadcasting) and the logical ops on bool tensors, with the
 * CPU kernels' semantics (kernels/cpu/compare.c): bools are one byte, any
 * nonzero byte is true. Slots by index and the decoded axis (the
 * definitions' oar_bcast_attrs_t), the broadcast plan from ops/broadcast.h.
 */
#include "cuda_common.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#include "ops/broadcast.h"
#pragma GCC diagnostic pop

using namespace oarcu;

namespace {

__device__ inline void offsets(const oar_bplan_t &p, int64_t i, int64_t *xo, int64_t *yo)
{
    int64_t a = 0, b = 0;
    for (int d = p.nd - 1; d >= 0; d--) {
        const int64_t c = i % p.n[d];
        i /= p.n[d];
        a += c * p.xs[d];
        b += c * p.ys[d];
    }
    *xo = a;
    *yo = b;
}

template <class T, class F>
__global__ void cmp_k(const T *x, const T *y, uint8_t *o, oar_bplan_t p, F f)
{
    const bool same = p.x_full && p.y_full;
    OAR_CU_LOOP(i, p.total) {
        int64_t xo = i, yo = i;
        if (!same) offsets(p, i, &xo, &yo);
        o[i] = f(x[xo], y[yo]) ? 1 : 0;
    }
}

/* operand data on the kernel's device (NULL when empty) */
int operand(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t, const void **p)
{
    *p = nullptr;
    *t = oar_k_input(k, slot, 0);
    if (!*t || (*t)->dtype < 0) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", name);
    if ((*t)->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name,
                           nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name((*t)->dtype)), nm(oar_dtype_name(dtype)));
    if (oar_tensor_numel_of(*t) == 0) return OAR_OK;
    if (!oar_tensor_has_data(*t) || (*t)->buf->place != OAR_PLACE_CUDA || (*t)->buf->device != oar_k_device(k))
        return oar_k_error(k, OAR_ERR_INVALID, "input %s '%s' has no data on CUDA device %d", name,
                           nm(oar_k_input_name(k, slot, 0)), oar_k_device(k));
    *p = (*t)->buf->data;
    return OAR_OK;
}

template <class T, class F>
int cmp_run(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *y;
    const void *xd, *yd;
    OAR_TRY(operand(k, OAR_BCAST_X, "X", dt, &x, &xd));
    OAR_TRY(operand(k, OAR_BCAST_Y, "Y", dt, &y, &yd));
    const int axis = ((const oar_bcast_attrs_t *)oar_k_attrs(k))->axis;
    int64_t od[OAR_MAX_DIMS], xp[OAR_MAX_DIMS], yp[OAR_MAX_DIMS];
    int nd;
    if (oar_bcast_shape(x->dims, x->ndim, y->dims, y->ndim, axis, od, xp, yp, &nd)) {
        char bx[128], by[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Y shape %s does not broadcast to X shape %s at axis %d",
                           oar_shape_str(y->dims, y->ndim, by, sizeof by), oar_shape_str(x->dims, x->ndim, bx, sizeof bx),
                           axis);
    }
    oar_bplan_t plan;
    oar_bplan_make(&plan, od, xp, yp, nd);
    uint8_t *o = (uint8_t *)oar_k_output_data(k, OAR_BCAST_OUT, 0, OAR_BOOL);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (plan.total == 0) return OAR_OK;
    cmp_k<T, F><<<grid_for(plan.total), kThreads>>>((const T *)xd, (const T *)yd, o, plan, F());
    OAR_CU_LAUNCH(k, "compare");
    return OAR_OK;
}

struct LtF { template <class T> __device__ bool operator()(T a, T b) const { return a < b; } };
struct LeF { template <class T> __device__ bool operator()(T a, T b) const { return a <= b; } };
struct GtF { template <class T> __device__ bool operator()(T a, T b) const { return a > b; } };
struct GeF { template <class T> __device__ bool operator()(T a, T b) const { return a >= b; } };
struct EqF { template <class T> __device__ bool operator()(T a, T b) const { return a == b; } };
struct NeF { template <class T> __device__ bool operator()(T a, T b) const { return a != b; } };
/* bool operands compare as truth values */
struct BEqF { __device__ bool operator()(uint8_t a, uint8_t b) const { return (a != 0) == (b != 0); } };
struct BNeF { __device__ bool operator()(uint8_t a, uint8_t b) const { return (a != 0) != (b != 0); } };
struct AndF { __device__ bool operator()(uint8_t a, uint8_t b) const { return (a != 0) && (b != 0); } };
struct OrF { __device__ bool operator()(uint8_t a, uint8_t b) const { return (a != 0) || (b != 0); } };
struct XorF { __device__ bool operator()(uint8_t a, uint8_t b) const { return (a != 0) != (b != 0); } };

#define CMP_ONE(OP, SUF, T, DT, F)                                                 \
    int OP##_##SUF(oar_kernel_ctx_t *k) { return cmp_run<T, F>(k, DT); }           \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CUDA, DT, OP##_##SUF)
#define CMP(OP, F)                                                                 \
    CMP_ONE(OP, f32, float, OAR_FP32, F)                                           \
    CMP_ONE(OP, f64, double, OAR_FP64, F)                                          \
    CMP_ONE(OP, i32, int32_t, OAR_INT32, F)                                        \
    CMP_ONE(OP, i64, int64_t, OAR_INT64, F)

CMP(less_than, LtF)
CMP(less_equal, LeF)
CMP(greater_than, GtF)
CMP(greater_equal, GeF)
CMP(equal, EqF)
CMP(not_equal, NeF)
CMP_ONE(equal, b8, uint8_t, OAR_BOOL, BEqF)
CMP_ONE(not_equal, b8, uint8_t, OAR_BOOL, BNeF)
CMP_ONE(logical_and, b8, uint8_t, OAR_BOOL, AndF)
CMP_ONE(logical_or, b8, uint8_t, OAR_BOOL, OrF)
CMP_ONE(logical_xor, b8, uint8_t, OAR_BOOL, XorF)

__global__ void not_k(const uint8_t *x, uint8_t *o, int64_t n)
{
    OAR_CU_LOOP(i, n) o[i] = x[i] == 0;
}

int logical_not_b8(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(operand(k, OAR_BCAST_X, "X", OAR_BOOL, &x, &xd));
    uint8_t *o = (uint8_t *)oar_k_output_data(k, OAR_BCAST_OUT, 0, OAR_BOOL);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const int64_t n = oar_tensor_numel_of(x);
    if (n == 0) return OAR_OK;
    not_k<<<grid_for(n), kThreads>>>((const uint8_t *)xd, o, n);
    OAR_CU_LAUNCH(k, "logical_not");
    return OAR_OK;
}
OAR_REGISTER_KERNEL("logical_not", OAR_PLACE_CUDA, OAR_BOOL, logical_not_b8)

}  // namespace
