/*
 * strided_slice.cu — CUDA kernels of strided_slice (forward: float32,
 * float64, int32, int64) and its grad (float32, float64), with the CPU
 * kernels' plan (kernels/cpu/rearrange2.c: Python slicing per axis,
 * src/ops/rearrange2_util.h's oar_py_slice).
 *
 * starts, ends and strides come from the attrs or from the StartsTensor /
 * StartsTensorList inputs (and the Ends, Strides ones), int32 or int64,
 * read on the host: the executor leaves these small inputs there; a copy
 * on the device is read back. One thread per Out element maps it to its
 * Input position; the grad zeroes Input@GRAD and writes each slice
 * position once (positions never repeat: no atomics).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cuda_common.h"
extern "C" {
#include "ops/rearrange2.h"
#include "ops/rearrange2_util.h"
}

using namespace oarcu;

namespace {

/* up to max ints of an int32/int64 tensor, on the host or the device */
int tensor_ints(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *what, int64_t *v, int max, int *n)
{
    if (!t || (oar_tensor_numel_of(t) > 0 && !oar_tensor_has_data(t)))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", what);
    if (t->dtype != OAR_INT32 && t->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s has dtype %s, expected int32 or int64", what,
                           nm(oar_dtype_name(t->dtype)));
    const int64_t cnt = oar_tensor_numel_of(t);
    if (cnt > max) return oar_k_error(k, OAR_ERR_SHAPE, "input %s has %lld values, at most %d are supported", what,
                                      (long long)cnt, max);
    int64_t buf[OAR_MAX_DIMS];
    const size_t bytes = (size_t)cnt * oar_dtype_size(t->dtype);
    if (cnt > 0) {
        if (t->buf->place == OAR_PLACE_CUDA) OAR_TRY(to_host(k, buf, t->buf->data, bytes, what));
        else memcpy(buf, t->buf->data, bytes);
    }
    for (int64_t j = 0; j < cnt; j++)
        v[j] = t->dtype == OAR_INT32 ? ((const int32_t *)buf)[j] : buf[j];
    *n = (int)cnt;
    return OAR_OK;
}

/* the values of the tensor input tslot, else of the one-value tensors of list lslot; *given false when neither */
int int_list(oar_kernel_ctx_t *k, int tslot, const char *tname, int lslot, const char *lname, int64_t *v, int *n,
             bool *given)
{
    *given = true;
    const oar_tensor_t *t = oar_k_input(k, tslot, 0);
    if (t) return tensor_ints(k, t, tname, v, OAR_MAX_DIMS, n);
    const int nl = oar_k_nin(k, lslot);
    if (nl <= 0) { *given = false; return OAR_OK; }
    if (nl > OAR_MAX_DIMS) return oar_k_error(k, OAR_ERR_SHAPE, "input %s has %d tensors, at most %d", lname, nl,
                                              OAR_MAX_DIMS);
    for (int i = 0; i < nl; i++) {
        int cnt = 0;
        char what[64];
        snprintf(what, sizeof what, "%s[%d]", lname, i);
        OAR_TRY(tensor_ints(k, oar_k_input(k, lslot, i), what, &v[i], 1, &cnt));
        if (cnt != 1) return oar_k_error(k, OAR_ERR_SHAPE, "input %s must hold one value", what);
    }
    *n = nl;
    return OAR_OK;
}

struct Slice {
    int nd;
    int64_t dims[OAR_MAX_DIMS], first[OAR_MAX_DIMS], step[OAR_MAX_DIMS], len[OAR_MAX_DIMS], total;
};

/* per dim of Input: the first index, the step and the count taken (forward
 * and grad declare the tensor slots first, at the same indices) */
int ss_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, Slice *s)
{
    const oar_ss_attrs_t *a = (const oar_ss_attrs_t *)oar_k_attrs(k);
    int64_t v[3][OAR_MAX_DIMS];
    int n[3];
    const oar_ints_t *attr[3] = {&a->starts, &a->ends, &a->strides};
    static const char *const tn[3] = {"StartsTensor", "EndsTensor", "StridesTensor"};
    static const char *const ln[3] = {"StartsTensorList", "EndsTensorList", "StridesTensorList"};
    const int ts[3] = {OAR_SS_STARTS_T, OAR_SS_ENDS_T, OAR_SS_STRIDES_T};
    const int ls[3] = {OAR_SS_STARTS_L, OAR_SS_ENDS_L, OAR_SS_STRIDES_L};
    for (int j = 0; j < 3; j++) {
        bool given;
        OAR_TRY(int_list(k, ts[j], tn[j], ls[j], ln[j], v[j], &n[j], &given));
        if (!given) {
            n[j] = attr[j]->n > OAR_MAX_DIMS ? OAR_MAX_DIMS : attr[j]->n;
            for (int i = 0; i < n[j]; i++) v[j][i] = attr[j]->v[i];
        }
        if (n[j] != a->axes.n)
            return oar_k_error(k, OAR_ERR_SHAPE, "axes has %d values, %s %d", a->axes.n, ln[j], n[j]);
    }
    s->nd = x->ndim;
    for (int i = 0; i < x->ndim; i++) { s->dims[i] = x->dims[i]; s->first[i] = 0; s->step[i] = 1; s->len[i] = x->dims[i]; }
    for (int i = 0; i < a->axes.n; i++) {
        const int d = a->axes.v[i] < 0 ? a->axes.v[i] + x->ndim : a->axes.v[i];
        if (d < 0 || d >= x->ndim) return oar_k_error(k, OAR_ERR_RANGE, "axes[%d] is out of range", i);
        if (v[2][i] == 0) return oar_k_error(k, OAR_ERR_INVALID, "strides[%d] is 0", i);
        s->step[d] = v[2][i];
        oar_py_slice(x->dims[d], v[0][i], v[1][i], v[2][i], &s->first[d], &s->len[d]);
    }
    s->total = 1;
    for (int i = 0; i < x->ndim; i++) s->total *= s->len[i];
    return OAR_OK;
}

/* Input's flat position of slice element p */
__device__ inline int64_t ss_pos(const Slice &s, int64_t p)
{
    int64_t q = 0, st = 1;
    for (int d = s.nd - 1; d >= 0; d--) {
        q += (s.first[d] + (p % s.len[d]) * s.step[d]) * st;
        p /= s.len[d];
        st *= s.dims[d];
    }
    return q;
}

template <class T>
__global__ void ss_k(const T *x, T *o, Slice s)
{
    OAR_CU_LOOP(p, s.total) o[p] = x[ss_pos(s, p)];
}

template <class T>
__global__ void ss_grad_k(const T *g, T *dx, Slice s)
{
    OAR_CU_LOOP(p, s.total) dx[ss_pos(s, p)] = g[p];
}

template <class T>
__global__ void zero_k(T *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = T(0);
}

template <class T>
int ss_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_SS_INPUT, 0, dt, -1, &xt, &x));
    Slice s;
    OAR_TRY(ss_plan(k, xt, &s));
    void *o;
    OAR_TRY(out_data_at(k, OAR_SS_OUT, 0, dt, s.total, &o));
    if (s.total == 0) return OAR_OK;
    ss_k<T><<<grid_for(s.total), kThreads>>>((const T *)x, (T *)o, s);
    OAR_CU_LAUNCH(k, "strided_slice");
    return OAR_OK;
}

template <class T>
int ss_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *gt;
    const void *x, *g;
    OAR_TRY(in_checked(k, OAR_SS_G_INPUT, "Input", dt, false, false, &xt, &x));
    Slice s;
    OAR_TRY(ss_plan(k, xt, &s));
    OAR_TRY(in_tensor_at(k, OAR_SS_G_DOUT, 0, dt, s.total, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_SS_G_DINPUT, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    zero_k<T><<<grid_for(n), kThreads>>>((T *)dx, n);
    OAR_CU_LAUNCH(k, "strided_slice_grad");
    if (s.total == 0) return OAR_OK;
    ss_grad_k<T><<<grid_for(s.total), kThreads>>>((const T *)g, (T *)dx, s);
    OAR_CU_LAUNCH(k, "strided_slice_grad");
    return OAR_OK;
}

#define REG_T(OPNAME, FN, SFX, T, DT)                                                     \
    int FN##_##SFX(oar_kernel_ctx_t *k) { return FN<T>(k, DT); }                          \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, DT, FN##_##SFX)

REG_T("strided_slice", ss_fwd, f32, float, OAR_FP32)
REG_T("strided_slice", ss_fwd, f64, double, OAR_FP64)
REG_T("strided_slice", ss_fwd, i32, int32_t, OAR_INT32)
REG_T("strided_slice", ss_fwd, i64, int64_t, OAR_INT64)
REG_T("strided_slice_grad", ss_bwd, f32, float, OAR_FP32)
REG_T("strided_slice_grad", ss_bwd, f64, double, OAR_FP64)

}  // namespace
