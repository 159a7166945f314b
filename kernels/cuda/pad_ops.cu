/*
 * pad_ops.cu — CUDA kernels of pad and pad3d and their grads, with the
 * CPU kernels' index rules (kernels/cpu/pad_ext.c, src/ops/pad_ext_util.h):
 * forward for float32, float64, int32 and int64, grads for float32 and
 * float64.
 *
 * The forward maps each output element to its source (or the pad value),
 * one thread per output element. In the reflect, replicate and circular
 * modes several outputs read one input, so the grad adds: per dim, the host
 * lists the output indices that read each input index (increasing), the
 * lists go to the device, and one thread per X element walks the product of
 * its dims' lists in row-major order, which is the order of increasing
 * output position in which the CPU adds: the CPU's bits, no atomics.
 * pad3d's Paddings tensor (6 int32 values) is read back to the host.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_common.h"
extern "C" {
#include "ops/pad_ext_util.h"
}

using namespace oarcu;

namespace {

struct Plan {
    int nd, mode;
    int64_t in[OAR_MAX_DIMS], out[OAR_MAX_DIMS], before[OAR_MAX_DIMS];
    int64_t in_total, out_total;
};

/* the pad plan of X for this op (pad3d: attr paddings or the Paddings tensor) */
int plan_of(oar_kernel_ctx_t *k, const oar_tensor_t *x, int pslot, Plan *p)
{
    const oar_pad_attrs_t *a = (const oar_pad_attrs_t *)oar_k_attrs(k);
    p->nd = x->ndim;
    p->mode = a->is3d ? a->mode : OAR_PAD_CONSTANT;
    int64_t pads[2 * OAR_MAX_DIMS] = {0};
    if (a->is3d) {
        int64_t six[6];
        if (oar_k_input(k, pslot, 0)) {
            const oar_tensor_t *t = oar_k_input(k, pslot, 0);
            if (oar_tensor_numel_of(t) != 6 || t->dtype != OAR_INT32 || !oar_tensor_has_data(t))
                return oar_k_error(k, OAR_ERR_INVALID, "Paddings must be 6 int32 values");
            /* a host input (the executor leaves it on the host) or a device tensor */
            int32_t v[6];
            if (t->buf->place == OAR_PLACE_CUDA) OAR_TRY(to_host(k, v, t->buf->data, sizeof v, "Paddings"));
            else memcpy(v, t->buf->data, sizeof v);
            for (int i = 0; i < 6; i++) six[i] = v[i];
        } else {
            if (a->paddings.n != 6) return oar_k_error(k, OAR_ERR_INVALID, "attr paddings must have 6 values");
            for (int i = 0; i < 6; i++) six[i] = a->paddings.v[i];
        }
        if (x->ndim != 5) return oar_k_error(k, OAR_ERR_SHAPE, "X must be 5-D");
        for (int i = 0; i < 3; i++) { pads[2 * (4 - i)] = six[2 * i]; pads[2 * (4 - i) + 1] = six[2 * i + 1]; }
    } else {
        if (a->paddings.n != 2 * x->ndim) return oar_k_error(k, OAR_ERR_INVALID, "attr paddings must have 2 per dim");
        for (int i = 0; i < 2 * x->ndim; i++) pads[i] = a->paddings.v[i];
    }
    p->in_total = p->out_total = 1;
    for (int i = 0; i < x->ndim; i++) {
        p->in[i] = x->dims[i];
        p->before[i] = pads[2 * i];
        p->out[i] = x->dims[i] + pads[2 * i] + pads[2 * i + 1];
        if (p->out[i] < 0) return oar_k_error(k, OAR_ERR_SHAPE, "the paddings of dim %d leave a negative size", i);
        p->in_total *= p->in[i];
        p->out_total *= p->out[i];
    }
    return OAR_OK;
}

__device__ inline int64_t pad_src(int mode, int64_t o, int64_t before, int64_t n)
{
    int64_t i = o - before;
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case OAR_PAD_REFLECT:
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    case OAR_PAD_REPLICATE: return i < 0 ? 0 : n - 1;
    case OAR_PAD_CIRCULAR: return ((i % n) + n) % n;
    default: return -1;
    }
}

template <class T>
__global__ void pad_k(const T *x, T *o, Plan p, T value)
{
    OAR_CU_LOOP(q, p.out_total) {
        int64_t r = q, src = 0, mul = 1;
        bool pad = false;
        for (int d = p.nd - 1; d >= 0; d--) {
            const int64_t s = pad_src(p.mode, r % p.out[d], p.before[d], p.in[d]);
            r /= p.out[d];
            if (s < 0) { pad = true; break; }
            src += s * mul;
            mul *= p.in[d];
        }
        o[q] = pad ? value : x[src];
    }
}

template <class T>
int pad_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_pad_attrs_t *a = (const oar_pad_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_PAD_X, 0, dt, -1, &xt, &x));
    Plan p;
    OAR_TRY(plan_of(k, xt, OAR_PAD_PADDINGS, &p));
    void *o;
    OAR_TRY(out_data_at(k, OAR_PAD_OUT, 0, dt, p.out_total, &o));
    if (p.out_total == 0) return OAR_OK;
    pad_k<T><<<grid_for(p.out_total), kThreads>>>((const T *)x, (T *)o, p, (T)a->value);
    OAR_CU_LAUNCH(k, "pad");
    return OAR_OK;
}

/* per dim d, input index s: the output indices reading it are
 * list[base[d] + start[base2[d] + s] .. start[base2[d] + s + 1]) */
struct Lists {
    int64_t base[OAR_MAX_DIMS], sbase[OAR_MAX_DIMS];
};

template <class T>
__global__ void pad_grad_k(const T *g, T *dx, Plan p, Lists l, const int64_t *start, const int64_t *list)
{
    OAR_CU_LOOP(s, p.in_total) {
        int64_t idx[OAR_MAX_DIMS], lo[OAR_MAX_DIMS], hi[OAR_MAX_DIMS], cur[OAR_MAX_DIMS];
        int64_t r = s;
        bool empty = false;
        for (int d = p.nd - 1; d >= 0; d--) {
            idx[d] = r % p.in[d];
            r /= p.in[d];
            lo[d] = start[l.sbase[d] + idx[d]];
            hi[d] = start[l.sbase[d] + idx[d] + 1];
            cur[d] = lo[d];
            if (lo[d] == hi[d]) empty = true;
        }
        T acc = T(0);
        if (!empty && p.nd > 0) {
            for (;;) {
                int64_t q = 0;
                for (int d = 0; d < p.nd; d++) q = q * p.out[d] + list[l.base[d] + cur[d]];
                acc += g[q];
                int d = p.nd - 1;
                while (d >= 0 && ++cur[d] == hi[d]) { cur[d] = lo[d]; d--; }
                if (d < 0) break;
            }
        } else if (p.nd == 0) {
            acc = g[0];
        }
        dx[s] = acc;
    }
}

/* the host-built lists of plan p, on the device in `lists` (start offsets then indices) */
int build_lists(oar_kernel_ctx_t *k, const Plan &p, Scratch &dev, Lists *l, const int64_t **start,
                const int64_t **list)
{
    int64_t nstart = 0, nlist = 0;
    for (int d = 0; d < p.nd; d++) { nstart += p.in[d] + 1; nlist += p.out[d]; }
    const size_t bytes = sizeof(int64_t) * (size_t)(nstart + nlist + 1);
    int64_t *h = (int64_t *)calloc(1, bytes);
    if (!h) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the pad grad's index lists");
    int64_t *hs = h, *hl = h + nstart, so = 0, lo = 0;
    for (int d = 0; d < p.nd; d++) {
        l->sbase[d] = so;
        l->base[d] = lo;
        /* counting pass, then the lists in increasing output order */
        for (int64_t s = 0; s <= p.in[d]; s++) hs[so + s] = 0;
        for (int64_t o = 0; o < p.out[d]; o++) {
            const int64_t s = oar_pad_src(p.mode, o, p.before[d], p.in[d]);
            if (s >= 0) hs[so + s + 1]++;
        }
        for (int64_t s = 0; s < p.in[d]; s++) hs[so + s + 1] += hs[so + s];
        int64_t *fill = (int64_t *)calloc((size_t)(p.in[d] + 1), sizeof(int64_t));
        if (!fill) { free(h); return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the pad grad's index lists"); }
        for (int64_t o = 0; o < p.out[d]; o++) {
            const int64_t s = oar_pad_src(p.mode, o, p.before[d], p.in[d]);
            if (s >= 0) hl[lo + hs[so + s] + fill[s]++] = o;
        }
        free(fill);
        so += p.in[d] + 1;
        lo += p.out[d];
    }
    int rc = dev.alloc(k, bytes, "the pad grad's index lists");
    if (rc == OAR_OK) rc = to_device(k, dev.p, h, bytes, "the pad grad's index lists");
    free(h);
    OAR_TRY(rc);
    *start = (const int64_t *)dev.p;
    *list = (const int64_t *)dev.p + nstart;
    return OAR_OK;
}

template <class T>
int pad_bwd(oar_kernel_ctx_t *k, int dt)
{
    if (!oar_k_output(k, OAR_PADG_DX, 0)) return OAR_OK;
    const oar_pad_attrs_t *a = (const oar_pad_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *gt;
    const void *x, *g;
    OAR_TRY(in_checked(k, OAR_PADG_X, "X", dt, false, false, &xt, &x));
    Plan p;
    OAR_TRY(plan_of(k, xt, OAR_PADG_PADDINGS, &p));
    /* Out@GRAD is the last input: 1 for pad, 2 for pad3d */
    OAR_TRY(in_tensor_at(k, a->is3d ? (int)OAR_PADG_DOUT3D : (int)OAR_PADG_DOUT, 0, dt, p.out_total, &gt, &g));
    void *dx;
    OAR_TRY(out_data_at(k, OAR_PADG_DX, 0, dt, p.in_total, &dx));
    if (p.in_total == 0) return OAR_OK;
    Scratch dev;
    Lists l;
    const int64_t *start, *list;
    OAR_TRY(build_lists(k, p, dev, &l, &start, &list));
    pad_grad_k<T><<<grid_for(p.in_total), kThreads>>>((const T *)g, (T *)dx, p, l, start, list);
    OAR_CU_LAUNCH(k, "pad_grad");
    return OAR_OK;
}

#define REG_T(OPNAME, FN, SFX, T, DT)                                                     \
    int FN##_##SFX(oar_kernel_ctx_t *k) { return FN<T>(k, DT); }                          \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, DT, FN##_##SFX)
#define REG_PAD(NAME)                                                                     \
    REG_T(#NAME, pad_fwd, NAME##_f32, float, OAR_FP32)                                    \
    REG_T(#NAME, pad_fwd, NAME##_f64, double, OAR_FP64)                                   \
    REG_T(#NAME, pad_fwd, NAME##_i32, int32_t, OAR_INT32)                                 \
    REG_T(#NAME, pad_fwd, NAME##_i64, int64_t, OAR_INT64)                                 \
    REG_T(#NAME "_grad", pad_bwd, NAME##_g32, float, OAR_FP32)                            \
    REG_T(#NAME "_grad", pad_bwd, NAME##_g64, double, OAR_FP64)

REG_PAD(pad)
REG_PAD(pad3d)

}  // namespace
