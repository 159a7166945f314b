/*
 * shape_ops.c — CPU kernels of the data-moving ops in src/ops/shape_ops.c.
 * None of them does arithmetic, so each kernel works on raw elements of the
 * input's size and one function serves every dtype.
 *
 * Views. reshape, squeeze, unsqueeze, flatten (v1 and v2) and their grads
 * do not copy: Out shares X's buffer with its own dims and LoD. That is
 * safe because buffers are copy-on-write: oar_tensor_mutable hands a writer
 * a fresh buffer whenever the one it holds is shared, so nothing written
 * later to X (an in-place optimizer update of a parameter, a while-loop
 * overwrite) reaches Out, and nothing written to Out reaches X. A view
 * therefore has exactly the value semantics of Fluid's copy; writers of a
 * parameter that has a live view pay one allocation instead. Out and X
 * may even be the same variable (an in-place reshape): then only the dims
 * change, which run-time inference already did.
 */
#include "op.h"
#include "ops/attr_tensor.h"
#include "ops/lod_plumbing.h"
#include "ops/shape_ops.h"

#include <stdlib.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

/* input `slot` (`name` in messages) as a tensor with data (a zero-size
 * tensor may have none) */
static int input(oar_kernel_ctx_t *k, int slot, const char *name, int i, oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, i);
    if (!*t || (*t)->dtype < 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s[%d] '%s' has no value", name, i,
                           nm(oar_k_input_name(k, slot, i)));
    if (!oar_tensor_has_data(*t) && oar_tensor_numel_of(*t) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s[%d] '%s' has no data", name, i,
                           nm(oar_k_input_name(k, slot, i)));
    return OAR_OK;
}

/* the output exists and is not @EMPTY@ (a grad the pass left out): every
 * named variable is bound before the block runs */
static bool wanted(oar_kernel_ctx_t *k, int slot, int i) { return oar_k_output_var(k, slot, i) != NULL; }

/* ---- views -------------------------------------------------------------- */

/* out becomes a view of in with the dims and LoD run-time inference gave it */
static int view_into(oar_kernel_ctx_t *k, int in_slot, const char *in_name, int out_slot, const char *out_name)
{
    oar_tensor_t *in;
    OAR_TRY(input(k, in_slot, in_name, 0, &in));
    if (!wanted(k, out_slot, 0)) return OAR_OK;
    oar_tensor_t *out = oar_k_output(k, out_slot, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", out_name);
    if (oar_tensor_numel_of(out) != oar_tensor_numel_of(in))
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has %lld elements but input %s '%s' has %lld",
                           out_name, nm(oar_k_output_name(k, out_slot, 0)), (long long)oar_tensor_numel_of(out),
                           in_name, nm(oar_k_input_name(k, in_slot, 0)), (long long)oar_tensor_numel_of(in));
    if (out == in) return OAR_OK;
    if (!oar_tensor_has_data(in)) {
        /* zero elements and never allocated: give out storage of its own */
        return oar_tensor_mutable(out, in->dtype) ? OAR_OK : OAR_ERR_NOMEM;
    }
    return oar_tensor_share_data(out, in);   /* a view: in's buffer, out's dims and LoD */
}

/* the v2 ops' XShape holds no values; it gets an (empty) buffer so that it
 * counts as written and can be fetched */
static int write_xshape(oar_kernel_ctx_t *k)
{
    if (!wanted(k, OAR_SHAPE_XSHAPE, 0)) return OAR_OK;
    oar_tensor_t *xs = oar_k_output(k, OAR_SHAPE_XSHAPE, 0);
    oar_tensor_t *x = oar_k_input(k, OAR_SHAPE_X, 0);
    if (!xs || !x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output XShape has no tensor variable");
    return oar_tensor_mutable(xs, x->dtype) ? OAR_OK : OAR_ERR_NOMEM;
}

static int view_fwd(oar_kernel_ctx_t *k)
{
    OAR_TRY(view_into(k, OAR_SHAPE_X, "X", OAR_SHAPE_OUT, "Out"));
    return oar_k_nout(k, OAR_SHAPE_XSHAPE) > 0 ? write_xshape(k) : OAR_OK;
}

static int view_bwd(oar_kernel_ctx_t *k)
{
    return view_into(k, OAR_SHAPEG_DOUT, "Out@GRAD", OAR_SHAPEG_DX, "X@GRAD");
}

/* ---- transpose ---------------------------------------------------------- */

/* The permutation reduced to output dims od[] and source strides ss[] (in
 * elements): size-1 axes dropped, output axes that stay adjacent in the
 * source merged. */
typedef struct { int n; int64_t od[OAR_MAX_DIMS], ss[OAR_MAX_DIMS]; } tplan_t;

static void tplan(const int64_t *xd, int nx, const int *perm, tplan_t *p)
{
    int64_t xs[OAR_MAX_DIMS];
    int64_t s = 1;
    for (int i = nx - 1; i >= 0; i--) { xs[i] = s; s *= xd[i]; }
    p->n = 0;
    for (int i = 0; i < nx; i++) {
        int64_t d = xd[perm[i]], st = xs[perm[i]];
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

#define TILE 32
/* Out[o] for o in output order; the last one or two axes run in the inner
 * loops: a contiguous row copy, a tiled 2-D transpose, or a strided gather. */
#define TRANSPOSE_T(T)                                                                            \
    static void transpose_##T(const T *x, T *y, const tplan_t *p)                                 \
    {                                                                                             \
        int n = p->n;                                                                             \
        if (n == 0) { y[0] = x[0]; return; }                                                      \
        int inner = (n >= 2 && p->ss[n - 1] != 1 && p->ss[n - 2] == 1) ? 2 : 1;                   \
        int outer_n = n - inner;                                                                  \
        int64_t outer = 1, idx[OAR_MAX_DIMS] = {0};                                               \
        for (int i = 0; i < outer_n; i++) outer *= p->od[i];                                      \
        int64_t block = 1;                                                                        \
        for (int i = outer_n; i < n; i++) block *= p->od[i];                                      \
        int64_t src = 0;                                                                          \
        for (int64_t o = 0; o < outer; o++) {                                                     \
            T *dst = y + o * block;                                                               \
            if (inner == 2) {                                                                     \
                int64_t A = p->od[n - 2], B = p->od[n - 1], sb = p->ss[n - 1];                    \
                for (int64_t a0 = 0; a0 < A; a0 += TILE)                                          \
                    for (int64_t b0 = 0; b0 < B; b0 += TILE) {                                    \
                        int64_t a1 = a0 + TILE < A ? a0 + TILE : A, b1 = b0 + TILE < B ? b0 + TILE : B; \
                        for (int64_t a = a0; a < a1; a++)                                         \
                            for (int64_t b = b0; b < b1; b++) dst[a * B + b] = x[src + a + b * sb]; \
                    }                                                                             \
            } else if (p->ss[n - 1] == 1) {                                                       \
                memcpy(dst, x + src, sizeof(T) * (size_t)block);                                  \
            } else {                                                                              \
                int64_t sb = p->ss[n - 1];                                                        \
                for (int64_t b = 0; b < block; b++) dst[b] = x[src + b * sb];                     \
            }                                                                                     \
            for (int i = outer_n - 1; i >= 0; i--) {                                              \
                src += p->ss[i];                                                                  \
                if (++idx[i] < p->od[i]) break;                                                   \
                src -= p->ss[i] * p->od[i];                                                       \
                idx[i] = 0;                                                                       \
            }                                                                                     \
        }                                                                                         \
    }
TRANSPOSE_T(uint8_t)
TRANSPOSE_T(uint16_t)
TRANSPOSE_T(uint32_t)
TRANSPOSE_T(uint64_t)

static int run_transpose(oar_kernel_ctx_t *k, const oar_tensor_t *x, oar_tensor_t *y, const int *perm)
{
    size_t es = oar_dtype_size(x->dtype);
    void *yv = oar_tensor_mutable(y, x->dtype);
    if (!yv) return OAR_ERR_NOMEM;
    if (oar_tensor_numel_of(x) == 0) return OAR_OK;
    tplan_t p;
    tplan(x->dims, x->ndim, perm, &p);
    const void *xv = x->buf->data;
    switch (es) {
    case 1: transpose_uint8_t(xv, yv, &p); break;
    case 2: transpose_uint16_t(xv, yv, &p); break;
    case 4: transpose_uint32_t(xv, yv, &p); break;
    case 8: transpose_uint64_t(xv, yv, &p); break;
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no transpose for dtype %s", nm(oar_dtype_name(x->dtype)));
    }
    return OAR_OK;
}

/* attr axis, normalized (inference validated it as a permutation) */
static void perm_attr(oar_kernel_ctx_t *k, int *perm, int n)
{
    oar_ints_t a = ((const oar_transpose_attrs_t *)oar_k_attrs(k))->axis;
    for (int i = 0; i < n && i < a.n; i++) perm[i] = a.v[i] < 0 ? a.v[i] + n : a.v[i];
}

static int transpose_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_SHAPE_X, "X", 0, &x));
    oar_tensor_t *y = oar_k_output(k, OAR_SHAPE_OUT, 0);
    if (!y) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    if (y == x)
        return oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is X itself; transpose cannot run in place",
                           nm(oar_k_output_name(k, OAR_SHAPE_OUT, 0)));
    int perm[OAR_MAX_DIMS];
    perm_attr(k, perm, x->ndim);
    OAR_TRY(run_transpose(k, x, y, perm));
    return oar_k_nout(k, OAR_SHAPE_XSHAPE) > 0 ? write_xshape(k) : OAR_OK;
}

/* X@GRAD = Out@GRAD transposed by the inverse permutation */
static int transpose_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_SHAPEG_DOUT, "Out@GRAD", 0, &g));
    if (!wanted(k, OAR_SHAPEG_DX, 0)) return OAR_OK;
    oar_tensor_t *dx = oar_k_output(k, OAR_SHAPEG_DX, 0);
    if (!dx) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output X@GRAD has no tensor variable");
    int perm[OAR_MAX_DIMS], inv[OAR_MAX_DIMS];
    perm_attr(k, perm, g->ndim);
    for (int i = 0; i < g->ndim; i++) inv[perm[i]] = i;
    return run_transpose(k, g, dx, inv);
}

/* ---- concat / split / stack --------------------------------------------- */

/* dst row o = [src_0 chunk o | src_1 chunk o | ...] for o < outer */
static void join(char *dst, int64_t outer, int n, const char *const *src, const size_t *chunk)
{
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            if (chunk[i] && src[i]) memcpy(dst, src[i] + (size_t)o * chunk[i], chunk[i]);
            dst += chunk[i];
        }
}

/* the inverse: dst_i chunk o from src row o (NULL dst_i: skipped) */
static void cut(const char *src, int64_t outer, int n, char *const *dst, const size_t *chunk)
{
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            if (dst[i] && chunk[i]) memcpy(dst[i] + (size_t)o * chunk[i], src, chunk[i]);
            src += chunk[i];
        }
}

/* scratch arrays for n parts */
typedef struct { const char **src; char **dst; size_t *chunk; } parts_t;

static int parts_new(int n, parts_t *p)
{
    p->src = oar_xcalloc((size_t)n, sizeof *p->src);
    p->dst = oar_xcalloc((size_t)n, sizeof *p->dst);
    p->chunk = oar_xcalloc((size_t)n, sizeof *p->chunk);
    if (p->src && p->dst && p->chunk) return OAR_OK;
    free(p->src); free(p->dst); free(p->chunk);
    return OAR_ERR_NOMEM;
}

static void parts_free(parts_t *p) { free(p->src); free(p->dst); free(p->chunk); }

/* elements before / from `axis` of dims */
static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t r = 1;
    for (int i = from; i < to; i++) r *= d[i];
    return r;
}

/* attr axis, or AxisTensor when given (run-time inference has checked it) */
static int concat_axis(oar_kernel_ctx_t *k, int nd)
{
    const oar_axis_attrs_t *a_ = oar_k_attrs(k);
    double v = a_->axis;
    if (oar_k_scalar_at(k, a_->axis_slot, "AxisTensor", &v) != OAR_OK) return 0;
    int a = (int)v;
    return a < 0 ? a + nd : a;
}

static int concat_fwd(oar_kernel_ctx_t *k)
{
    int n = oar_k_nin(k, OAR_CONCAT_X);
    oar_tensor_t *out = oar_k_output(k, OAR_CONCAT_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    parts_t p;
    OAR_TRY(parts_new(n, &p));
    oar_tensor_t **xs = oar_xcalloc((size_t)n, sizeof *xs);
    int rc = xs ? OAR_OK : OAR_ERR_NOMEM;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        rc = input(k, OAR_CONCAT_X, "X", i, &xs[i]);
        if (rc == OAR_OK && xs[i] == out)
            rc = oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is also input X[%d]; concat cannot run in place",
                             nm(oar_k_output_name(k, OAR_CONCAT_OUT, 0)), i);
    }
    int axis = rc == OAR_OK ? concat_axis(k, xs[0]->ndim) : 0;
    size_t es = rc == OAR_OK ? oar_dtype_size(xs[0]->dtype) : 0;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        p.src[i] = xs[i]->buf ? xs[i]->buf->data : NULL;
        p.chunk[i] = (size_t)prod(xs[i]->dims, axis, xs[i]->ndim) * es;
    }
    char *y = rc == OAR_OK ? oar_tensor_mutable(out, xs[0]->dtype) : NULL;
    if (rc == OAR_OK && !y) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK) join(y, prod(out->dims, 0, axis), n, p.src, p.chunk);
    if (rc == OAR_OK && axis == 0) rc = oar_cf_concat_lod(n, xs, out);
    free(xs);
    parts_free(&p);
    return rc;
}

/* Cuts `src` along axis into the outputs `slot` whose sizes inference set
 * (X@GRAD: sizes come from X since an @EMPTY@ grad has no tensor). */
static int cut_into(oar_kernel_ctx_t *k, const oar_tensor_t *src, int axis, int slot, const char *name,
                    int size_slot, const char *size_name)
{
    int n = oar_k_nout(k, slot);
    parts_t p;
    OAR_TRY(parts_new(n, &p));
    size_t es = oar_dtype_size(src->dtype);
    int64_t total = 0;
    int rc = OAR_OK;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        const oar_tensor_t *shape_of = size_slot >= 0 ? oar_k_input(k, size_slot, i) : oar_k_output(k, slot, i);
        if (!shape_of) {
            rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "%s[%d] has no tensor", size_slot >= 0 ? size_name : name, i);
            break;
        }
        p.chunk[i] = (size_t)prod(shape_of->dims, axis, shape_of->ndim) * es;
        total += shape_of->dims[axis];
        if (!wanted(k, slot, i)) continue;
        oar_tensor_t *o = oar_k_output(k, slot, i);
        if (!o) { rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s[%d] has no tensor variable", name, i); break; }
        if (o == src) {
            rc = oar_k_error(k, OAR_ERR_INVALID, "output %s[%d] '%s' is the input itself", name, i,
                             nm(oar_k_output_name(k, slot, i)));
            break;
        }
        if (!(p.dst[i] = oar_tensor_mutable(o, src->dtype))) rc = OAR_ERR_NOMEM;
    }
    size_t row = 0;
    for (int i = 0; i < n; i++) row += p.chunk[i];
    if (rc == OAR_OK && (total != src->dims[axis] || row != (size_t)prod(src->dims, axis, src->ndim) * es))
        rc = oar_k_error(k, OAR_ERR_SHAPE, "the parts have %lld entries along axis %d but the input has %lld "
                         "(or their other dims differ from the input's)", (long long)total, axis,
                         (long long)src->dims[axis]);
    if (rc == OAR_OK && oar_tensor_numel_of(src) > 0)
        cut(src->buf->data, prod(src->dims, 0, axis), n, p.dst, p.chunk);
    parts_free(&p);
    return rc;
}

static int concat_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_CONCATG_DOUT, "Out@GRAD", 0, &g));
    return cut_into(k, g, concat_axis(k, g->ndim), OAR_CONCATG_DX, "X@GRAD", OAR_CONCAT_X, "X");
}

static int split_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x;
    OAR_TRY(input(k, OAR_CONCAT_X, "X", 0, &x));
    return cut_into(k, x, concat_axis(k, x->ndim), OAR_CONCAT_OUT, "Out", -1, NULL);
}

/* stack is a concat of the inputs viewed with a size-1 axis inserted */
static int stack_fwd(oar_kernel_ctx_t *k)
{
    int n = oar_k_nin(k, OAR_STACK_X);
    oar_tensor_t *y = oar_k_output(k, OAR_STACK_Y, 0);
    if (!y) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y has no tensor variable");
    int axis = concat_axis(k, y->ndim);
    parts_t p;
    OAR_TRY(parts_new(n, &p));
    int rc = OAR_OK, dtype = -1;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        oar_tensor_t *x;
        rc = input(k, OAR_STACK_X, "X", i, &x);
        if (rc != OAR_OK) break;
        if (x == y) {
            rc = oar_k_error(k, OAR_ERR_INVALID, "Y is also input X[%d]; stack cannot run in place", i);
            break;
        }
        dtype = x->dtype;
        p.src[i] = x->buf ? x->buf->data : NULL;
        p.chunk[i] = (size_t)prod(x->dims, axis, x->ndim) * oar_dtype_size(x->dtype);
    }
    char *yv = rc == OAR_OK ? oar_tensor_mutable(y, dtype) : NULL;
    if (rc == OAR_OK && !yv) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK) join(yv, prod(y->dims, 0, axis), n, p.src, p.chunk);
    parts_free(&p);
    return rc;
}

static int stack_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *g;
    OAR_TRY(input(k, OAR_STACKG_DY, "Y@GRAD", 0, &g));
    int axis = concat_axis(k, g->ndim);
    int n = oar_k_nout(k, OAR_STACKG_DX);
    parts_t p;
    OAR_TRY(parts_new(n, &p));
    size_t chunk = (size_t)prod(g->dims, axis + 1, g->ndim) * oar_dtype_size(g->dtype);
    int rc = OAR_OK;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        p.chunk[i] = chunk;
        if (!wanted(k, OAR_STACKG_DX, i)) continue;
        oar_tensor_t *o = oar_k_output(k, OAR_STACKG_DX, i);
        if (!o) rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "output X@GRAD[%d] has no tensor variable", i);
        else if (!(p.dst[i] = oar_tensor_mutable(o, g->dtype))) rc = OAR_ERR_NOMEM;
    }
    if (rc == OAR_OK && oar_tensor_numel_of(g) > 0) cut(g->buf->data, prod(g->dims, 0, axis), n, p.dst, p.chunk);
    parts_free(&p);
    return rc;
}

/* ---- registration: every dtype, one function each ----------------------- */
#define REG1(op, fn, sfx, dt)                                                \
    static int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }            \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, dt, fn##_##sfx)
#define REG_ALL(op, fn)                                                      \
    REG1(op, fn, f32, OAR_FP32) REG1(op, fn, f64, OAR_FP64)                  \
    REG1(op, fn, f16, OAR_FP16) REG1(op, fn, i64, OAR_INT64)                 \
    REG1(op, fn, i32, OAR_INT32) REG1(op, fn, i16, OAR_INT16)                \
    REG1(op, fn, i8, OAR_INT8) REG1(op, fn, u8, OAR_UINT8) REG1(op, fn, b, OAR_BOOL)

#define VIEW_REG(name)                                                        \
    static int name##_f(oar_kernel_ctx_t *k) { return view_fwd(k); }         \
    static int name##_b(oar_kernel_ctx_t *k) { return view_bwd(k); }         \
    REG_ALL(#name, name##_f) REG_ALL(#name "_grad", name##_b)

VIEW_REG(reshape)
VIEW_REG(reshape2)
VIEW_REG(squeeze)
VIEW_REG(squeeze2)
VIEW_REG(unsqueeze)
VIEW_REG(unsqueeze2)
VIEW_REG(flatten)
VIEW_REG(flatten2)
VIEW_REG(flatten_contiguous_range)

static int transpose1_f(oar_kernel_ctx_t *k) { return transpose_fwd(k); }
static int transpose2_f(oar_kernel_ctx_t *k) { return transpose_fwd(k); }
static int transpose1_b(oar_kernel_ctx_t *k) { return transpose_bwd(k); }
static int transpose2_b(oar_kernel_ctx_t *k) { return transpose_bwd(k); }
REG_ALL("transpose", transpose1_f)
REG_ALL("transpose2", transpose2_f)
REG_ALL("transpose_grad", transpose1_b)
REG_ALL("transpose2_grad", transpose2_b)
REG_ALL("concat", concat_fwd)
REG_ALL("concat_grad", concat_bwd)
REG_ALL("split", split_fwd)
REG_ALL("stack", stack_fwd)
REG_ALL("stack_grad", stack_bwd)
