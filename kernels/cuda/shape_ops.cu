/*
 * shape_ops.cu — CUDA kernels of the data-moving ops of src/ops/shape_ops.c,
 * with the CPU kernels' semantics (kernels/cpu/shape_ops.c), for every dtype.
 *
 * Views (reshape, squeeze, unsqueeze, flatten, v1 and v2, and their grads)
 * share the input's device buffer: Out gets X's buffer with its own dims and
 * LoD. Buffers are copy-on-write (a writer of a shared buffer gets a fresh
 * one), so a view has a copy's value semantics, as on the CPU. Without these
 * kernels a CUDA run would fall back to the CPU for every view and carry
 * the data to the host and back.
 *
 * transpose gathers with the permutation reduced like the CPU's plan (size-1
 * axes dropped, adjacent axes merged); concat, split and stack are strided
 * 2-D copies (cudaMemcpy2DAsync), one per part.
 */
#include "cuda_common.h"
extern "C" {
#include "ops/lod_plumbing.h"
#include "ops/shape_ops.h"
}

using namespace oarcu;

namespace {

/* the output exists and is not @EMPTY@ (a grad the pass left out) */
bool wanted(oar_kernel_ctx_t *k, int slot, int i) { return oar_k_output_var(k, slot, i) != nullptr; }

int input(oar_kernel_ctx_t *k, int slot, int i, oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, i);
    if (!*t || (*t)->dtype < 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s[%d] '%s' has no value", in_slot_name(k, slot), i,
                           nm(oar_k_input_name(k, slot, i)));
    if (oar_tensor_numel_of(*t) > 0) {
        if (!oar_tensor_has_data(*t))
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s[%d] '%s' has no data", in_slot_name(k, slot), i,
                               nm(oar_k_input_name(k, slot, i)));
        if ((*t)->buf->place != OAR_PLACE_CUDA || (*t)->buf->device != oar_k_device(k))
            return oar_k_error(k, OAR_ERR_INVALID, "input %s[%d] '%s' is not on CUDA device %d",
                               in_slot_name(k, slot), i, nm(oar_k_input_name(k, slot, i)), oar_k_device(k));
    }
    return OAR_OK;
}

/* output data of src's dtype on the kernel's device (sized by inference) */
void *out_like(oar_kernel_ctx_t *k, int slot, int i, int dtype)
{
    void *p = oar_k_output_data(k, slot, i, dtype);
    if (!p) oar_error_prefix("%s: output %s[%d]: ", oar_k_op(k)->type, out_slot_name(k, slot), i);
    return p;
}

/* ---- views -------------------------------------------------------------- */
int view_into(oar_kernel_ctx_t *k, int in_slot, int out_slot)
{
    oar_tensor_t *in;
    OAR_TRY(input(k, in_slot, 0, &in));
    if (!wanted(k, out_slot, 0)) return OAR_OK;
    oar_tensor_t *out = oar_k_output(k, out_slot, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", out_slot_name(k, out_slot));
    if (oar_tensor_numel_of(out) != oar_tensor_numel_of(in))
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has %lld elements but input %s '%s' has %lld",
                           out_slot_name(k, out_slot), nm(oar_k_output_name(k, out_slot, 0)),
                           (long long)oar_tensor_numel_of(out), in_slot_name(k, in_slot),
                           nm(oar_k_input_name(k, in_slot, 0)), (long long)oar_tensor_numel_of(in));
    if (out == in) return OAR_OK;
    if (!oar_tensor_has_data(in)) return out_like(k, out_slot, 0, in->dtype) ? OAR_OK : OAR_ERR_NOMEM;
    return oar_tensor_share_data(out, in);   /* a view: in's buffer, out's dims and LoD */
}

/* the v2 ops' XShape holds no values; an (empty) buffer marks it written */
int write_xshape(oar_kernel_ctx_t *k)
{
    if (oar_k_nout(k, OAR_SHAPE_XSHAPE) == 0 || !wanted(k, OAR_SHAPE_XSHAPE, 0)) return OAR_OK;
    const oar_tensor_t *x = oar_k_input(k, OAR_SHAPE_X, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X is missing");
    return out_like(k, OAR_SHAPE_XSHAPE, 0, x->dtype) ? OAR_OK : OAR_ERR_NOMEM;
}

int view_fwd(oar_kernel_ctx_t *k)
{
    OAR_TRY(view_into(k, OAR_SHAPE_X, OAR_SHAPE_OUT));
    return write_xshape(k);
}
int view_bwd(oar_kernel_ctx_t *k) { return view_into(k, OAR_SHAPEG_DOUT, OAR_SHAPEG_DX); }

/* ---- transpose ---------------------------------------------------------- */
struct TPlan { int n; int64_t od[OAR_MAX_DIMS], ss[OAR_MAX_DIMS]; };

void tplan(const int64_t *xd, int nx, const int *perm, TPlan *p)
{
    int64_t xs[OAR_MAX_DIMS], s = 1;
    for (int i = nx - 1; i >= 0; i--) { xs[i] = s; s *= xd[i]; }
    p->n = 0;
    for (int i = 0; i < nx; i++) {
        const int64_t d = xd[perm[i]], st = xs[perm[i]];
        if (d == 1) continue;
        if (p->n > 0 && p->ss[p->n - 1] == st * d) {
            p->od[p->n - 1] *= d;
            p->ss[p->n - 1] = st;
        } else {
            p->od[p->n] = d;
            p->ss[p->n] = st;
            p->n++;
        }
    }
}

template <class T>
__global__ void gather_k(const T *x, T *y, int64_t total, TPlan p)
{
    OAR_CU_LOOP(o, total) {
        int64_t r = o, src = 0;
        for (int i = p.n - 1; i >= 0; i--) {
            const int64_t c = r % p.od[i];
            r /= p.od[i];
            src += c * p.ss[i];
        }
        y[o] = x[src];
    }
}

int run_transpose(oar_kernel_ctx_t *k, const oar_tensor_t *x, int slot, const int *perm)
{
    void *y = out_like(k, slot, 0, x->dtype);
    if (!y) return OAR_ERR_NOMEM;
    const int64_t n = oar_tensor_numel_of(x);
    if (n == 0) return OAR_OK;
    TPlan p;
    tplan(x->dims, x->ndim, perm, &p);
    const void *xv = x->buf->data;
    switch (oar_dtype_size(x->dtype)) {
    case 1: gather_k<uint8_t><<<grid_for(n), kThreads>>>((const uint8_t *)xv, (uint8_t *)y, n, p); break;
    case 2: gather_k<uint16_t><<<grid_for(n), kThreads>>>((const uint16_t *)xv, (uint16_t *)y, n, p); break;
    case 4: gather_k<uint32_t><<<grid_for(n), kThreads>>>((const uint32_t *)xv, (uint32_t *)y, n, p); break;
    case 8: gather_k<uint64_t><<<grid_for(n), kThreads>>>((const uint64_t *)xv, (uint64_t *)y, n, p); break;
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no transpose for dtype %s", nm(oar_dtype_name(x->dtype)));
    }
    OAR_CU_LAUNCH(k, "transpose");
    return OAR_OK;
}

void perm_attr(oar_kernel_ctx_t *k, int *perm, int n)
{
    const oar_ints_t a = ((const oar_transpose_attrs_t *)oar_k_attrs(k))->axis;
    for (int i = 0; i < n && i < a.n; i++) perm[i] = a.v[i] < 0 ? a.v[i] + n : a.v[i];
}

int transpose_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_SHAPE_X, 0, &x));
    oar_tensor_t *y = oar_k_output(k, OAR_SHAPE_OUT, 0);
    if (!y) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    if (y == x)
        return oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is X itself; transpose cannot run in place",
                           nm(oar_k_output_name(k, OAR_SHAPE_OUT, 0)));
    int perm[OAR_MAX_DIMS];
    perm_attr(k, perm, x->ndim);
    OAR_TRY(run_transpose(k, x, OAR_SHAPE_OUT, perm));
    return write_xshape(k);
}

int transpose_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_SHAPEG_DOUT, 0, &g));
    if (!wanted(k, OAR_SHAPEG_DX, 0)) return OAR_OK;
    int perm[OAR_MAX_DIMS], inv[OAR_MAX_DIMS];
    perm_attr(k, perm, g->ndim);
    for (int i = 0; i < g->ndim; i++) inv[perm[i]] = i;
    return run_transpose(k, g, OAR_SHAPEG_DX, inv);
}

/* ---- concat / split / stack --------------------------------------------- */
int64_t prod(const int64_t *d, int from, int to)
{
    int64_t r = 1;
    for (int i = from; i < to; i++) r *= d[i];
    return r;
}

/* attr axis (an AxisTensor is not read here) */
int attr_axis(oar_kernel_ctx_t *k, int nd)
{
    const int a = ((const oar_axis_attrs_t *)oar_k_attrs(k))->axis;
    return a < 0 ? a + nd : a;
}

/* rows `outer` of `chunk` bytes from src (pitch chunk) to dst at column
 * `col` of rows of `row` bytes, or back when `to_parts` */
int copy2d(oar_kernel_ctx_t *k, char *wide, size_t row, size_t col, char *part, size_t chunk, int64_t outer,
           bool to_parts)
{
    if (!chunk || !outer) return OAR_OK;
    if (to_parts)
        OAR_CU(k, cudaMemcpy2DAsync(part, chunk, wide + col, row, chunk, (size_t)outer, cudaMemcpyDeviceToDevice, 0),
               "cudaMemcpy2DAsync");
    else
        OAR_CU(k, cudaMemcpy2DAsync(wide + col, row, part, chunk, chunk, (size_t)outer, cudaMemcpyDeviceToDevice, 0),
               "cudaMemcpy2DAsync");
    return OAR_OK;
}

int concat_fwd(oar_kernel_ctx_t *k)
{
    const int n = oar_k_nin(k, OAR_CONCAT_X);
    oar_tensor_t *out = oar_k_output(k, OAR_CONCAT_OUT, 0);
    if (!out || n < 1) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    oar_tensor_t *xs[256];
    if (n > 256) return oar_k_error(k, OAR_ERR_UNSUPPORTED, "concat of %d inputs on CUDA (at most 256)", n);
    for (int i = 0; i < n; i++) {
        OAR_TRY(input(k, OAR_CONCAT_X, i, &xs[i]));
        if (xs[i] == out)
            return oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is also input X[%d]; concat cannot run in place",
                               nm(oar_k_output_name(k, OAR_CONCAT_OUT, 0)), i);
    }
    const int axis = attr_axis(k, xs[0]->ndim);
    const size_t es = oar_dtype_size(xs[0]->dtype);
    char *y = (char *)out_like(k, OAR_CONCAT_OUT, 0, xs[0]->dtype);
    if (!y) return OAR_ERR_NOMEM;
    const int64_t outer = prod(out->dims, 0, axis);
    const size_t row = (size_t)prod(out->dims, axis, out->ndim) * es;
    size_t col = 0;
    for (int i = 0; i < n; i++) {
        const size_t chunk = (size_t)prod(xs[i]->dims, axis, xs[i]->ndim) * es;
        if (oar_tensor_numel_of(xs[i]) > 0)
            OAR_TRY(copy2d(k, y, row, col, (char *)xs[i]->buf->data, chunk, outer, false));
        col += chunk;
    }
    return axis == 0 ? oar_cf_concat_lod(n, xs, out) : OAR_OK;
}

/* Cuts src along axis into the outputs `slot` (sizes from input slot
 * `size_slot`'s tensors when >= 0: an @EMPTY@ grad has no tensor of its own). */
int cut_into(oar_kernel_ctx_t *k, const oar_tensor_t *src, int axis, int slot, int size_slot)
{
    const int n = oar_k_nout(k, slot);
    const size_t es = oar_dtype_size(src->dtype);
    const int64_t outer = prod(src->dims, 0, axis);
    const size_t row = (size_t)prod(src->dims, axis, src->ndim) * es;
    int64_t total = 0;
    size_t sum = 0;
    for (int i = 0; i < n; i++) {
        const oar_tensor_t *shape_of = size_slot >= 0 ? oar_k_input(k, size_slot, i) : oar_k_output(k, slot, i);
        if (!shape_of)
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "%s[%d] has no tensor",
                               size_slot >= 0 ? in_slot_name(k, size_slot) : out_slot_name(k, slot), i);
        total += shape_of->dims[axis];
        sum += (size_t)prod(shape_of->dims, axis, shape_of->ndim) * es;
    }
    if (total != src->dims[axis] || sum != row)
        return oar_k_error(k, OAR_ERR_SHAPE, "the parts have %lld entries along axis %d but the input has %lld (or "
                           "their other dims differ from the input's)", (long long)total, axis,
                           (long long)src->dims[axis]);
    size_t col = 0;
    for (int i = 0; i < n; i++) {
        const oar_tensor_t *shape_of = size_slot >= 0 ? oar_k_input(k, size_slot, i) : oar_k_output(k, slot, i);
        const size_t chunk = (size_t)prod(shape_of->dims, axis, shape_of->ndim) * es;
        if (wanted(k, slot, i)) {
            oar_tensor_t *o = oar_k_output(k, slot, i);
            if (!o)
                return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s[%d] has no tensor variable",
                                   out_slot_name(k, slot), i);
            if (o == src)
                return oar_k_error(k, OAR_ERR_INVALID, "output %s[%d] '%s' is the input itself",
                                   out_slot_name(k, slot), i, nm(oar_k_output_name(k, slot, i)));
            char *d = (char *)out_like(k, slot, i, src->dtype);
            if (!d) return OAR_ERR_NOMEM;
            if (oar_tensor_numel_of(src) > 0)
                OAR_TRY(copy2d(k, (char *)src->buf->data, row, col, d, chunk, outer, true));
        }
        col += chunk;
    }
    return OAR_OK;
}

int concat_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_CONCATG_DOUT, 0, &g));
    return cut_into(k, g, attr_axis(k, g->ndim), OAR_CONCATG_DX, OAR_CONCAT_X);
}

int split_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_SHAPE_X, 0, &x));
    return cut_into(k, x, attr_axis(k, x->ndim), OAR_CONCAT_OUT, -1);
}

/* stack: a concat of the inputs viewed with a size-1 axis inserted */
int stack_fwd(oar_kernel_ctx_t *k)
{
    const int n = oar_k_nin(k, OAR_STACK_X);
    oar_tensor_t *y = oar_k_output(k, OAR_STACK_Y, 0);
    if (!y || n < 1) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y has no tensor variable");
    const int axis = attr_axis(k, y->ndim);
    oar_tensor_t *x0;
    OAR_TRY(input(k, OAR_STACK_X, 0, &x0));
    const size_t es = oar_dtype_size(x0->dtype);
    char *yv = (char *)out_like(k, OAR_STACK_Y, 0, x0->dtype);
    if (!yv) return OAR_ERR_NOMEM;
    const int64_t outer = prod(y->dims, 0, axis);
    const size_t row = (size_t)prod(y->dims, axis, y->ndim) * es;
    size_t col = 0;
    for (int i = 0; i < n; i++) {
        oar_tensor_t *x;
        OAR_TRY(input(k, OAR_STACK_X, i, &x));
        if (x == y) return oar_k_error(k, OAR_ERR_INVALID, "Y is also input X[%d]; stack cannot run in place", i);
        const size_t chunk = (size_t)prod(x->dims, axis, x->ndim) * es;
        if (oar_tensor_numel_of(x) > 0) OAR_TRY(copy2d(k, yv, row, col, (char *)x->buf->data, chunk, outer, false));
        col += chunk;
    }
    return OAR_OK;
}

int stack_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_STACKG_DY, 0, &g));
    const int axis = attr_axis(k, g->ndim);
    const int n = oar_k_nout(k, OAR_STACKG_DX);
    const size_t es = oar_dtype_size(g->dtype);
    const size_t chunk = (size_t)prod(g->dims, axis + 1, g->ndim) * es;
    const int64_t outer = prod(g->dims, 0, axis);
    const size_t row = chunk * (size_t)n;
    for (int i = 0; i < n; i++) {
        if (!wanted(k, OAR_STACKG_DX, i)) continue;
        char *d = (char *)out_like(k, OAR_STACKG_DX, i, g->dtype);
        if (!d) return OAR_ERR_NOMEM;
        if (oar_tensor_numel_of(g) > 0) OAR_TRY(copy2d(k, (char *)g->buf->data, row, chunk * (size_t)i, d, chunk, outer, true));
    }
    return OAR_OK;
}

/* ---- registration: every dtype ------------------------------------------ */
#define REG1(op, fn, sfx, dt)                                                 \
    int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }                     \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CUDA, dt, fn##_##sfx)
#define REG_ALL(op, fn)                                                       \
    REG1(op, fn, f32, OAR_FP32) REG1(op, fn, f64, OAR_FP64)                   \
    REG1(op, fn, f16, OAR_FP16) REG1(op, fn, i64, OAR_INT64)                  \
    REG1(op, fn, i32, OAR_INT32) REG1(op, fn, i16, OAR_INT16)                 \
    REG1(op, fn, i8, OAR_INT8) REG1(op, fn, u8, OAR_UINT8) REG1(op, fn, b, OAR_BOOL)
#define VIEW_REG(name)                                                         \
    int name##_f(oar_kernel_ctx_t *k) { return view_fwd(k); }                  \
    int name##_b(oar_kernel_ctx_t *k) { return view_bwd(k); }                  \
    REG_ALL(#name, name##_f) REG_ALL(#name "_grad", name##_b)

VIEW_REG(reshape)
VIEW_REG(reshape2)
VIEW_REG(squeeze)
VIEW_REG(squeeze2)
VIEW_REG(unsqueeze)
VIEW_REG(unsqueeze2)
VIEW_REG(flatten)
VIEW_REG(flatten2)

int transpose1_f(oar_kernel_ctx_t *k) { return transpose_fwd(k); }
int transpose2_f(oar_kernel_ctx_t *k) { return transpose_fwd(k); }
int transpose1_b(oar_kernel_ctx_t *k) { return transpose_bwd(k); }
int transpose2_b(oar_kernel_ctx_t *k) { return transpose_bwd(k); }
REG_ALL("transpose", transpose1_f)
REG_ALL("transpose2", transpose2_f)
REG_ALL("transpose_grad", transpose1_b)
REG_ALL("transpose2_grad", transpose2_b)
REG_ALL("concat", concat_fwd)
REG_ALL("concat_grad", concat_bwd)
REG_ALL("split", split_fwd)
REG_ALL("stack", stack_fwd)
REG_ALL("stack_grad", stack_bwd)

}  // namespace
