/*
 * layer_norm.cu — CUDA kernels of layer_norm and layer_norm_grad (float32,
 * float64), with the CPU kernels' semantics (kernels/cpu/layer_norm.c): X
 * is [left, right] split at begin_norm_axis; each row is normalized by its
 * mean and biased variance (two passes, in double), then scaled and shifted
 * by the optional Scale and Bias; Mean and Variance ([left]) keep the
 * statistics. With g = dY * Scale and xhat = (x - mean) * istd per row,
 *     dX = istd * (g - mean(g) - xhat * mean(g * xhat)),
 * dScale = sum over rows of dY * xhat, dBias = sum over rows of dY.
 *
 * One block per row (grid-stride over rows), its width fitted to the row.
 * dScale/dBias reduce over rows deterministically: blocks of 32 columns x 8
 * row lanes sum a chunk of rows each into a per-chunk partial (double), and
 * a second pass adds the chunks in order: no atomics, the same bits on
 * every run.
 */
#include "cuda_common.h"
extern "C" {
#include "ops/layer_norm.h"
}

using namespace oarcu;

namespace {

constexpr unsigned kMaxRowBlocks = 65535;

/* threads for a row of `right` values: a multiple of 32 in [32, 256] */
unsigned row_threads(int64_t right)
{
    int64_t t = (right + 31) / 32 * 32;
    return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}
unsigned row_blocks(int64_t left) { return (unsigned)(left < (int64_t)kMaxRowBlocks ? left : kMaxRowBlocks); }

template <class T>
__global__ void ln_fwd_k(const T *x, const T *scale, const T *bias, T *y, T *mean, T *var, int64_t left,
                         int64_t right, double eps)
{
    __shared__ double sh[32];
    for (int64_t i = blockIdx.x; i < left; i += gridDim.x) {
        const T *p = x + i * right;
        T *q = y + i * right;
        double s1 = 0;
        for (int64_t j = threadIdx.x; j < right; j += blockDim.x) s1 += (double)p[j];
        const double mu = block_sum(s1, sh) / (double)right;
        double s2 = 0;
        for (int64_t j = threadIdx.x; j < right; j += blockDim.x) {
            const double d = (double)p[j] - mu;
            s2 += d * d;
        }
        const double v = block_sum(s2, sh) / (double)right;
        /* the CPU kernel's arithmetic: the affine step in T */
        const T is = (T)(1.0 / sqrt(v + eps)), m = (T)mu;
        for (int64_t j = threadIdx.x; j < right; j += blockDim.x) {
            T h = (p[j] - m) * is;
            if (scale) h *= scale[j];
            if (bias) h += bias[j];
            q[j] = h;
        }
        if (threadIdx.x == 0) {
            if (mean) mean[i] = (T)mu;
            if (var) var[i] = (T)v;
        }
    }
}

template <class T>
__global__ void ln_dx_k(const T *x, const T *dy, const T *mean, const T *var, const T *scale, T *dx, int64_t left,
                        int64_t right, double eps)
{
    __shared__ double sh[32];
    for (int64_t i = blockIdx.x; i < left; i += gridDim.x) {
        const T *p = x + i * right, *g = dy + i * right;
        const double mu = (double)mean[i], is = 1.0 / sqrt((double)var[i] + eps);
        double sg = 0, sgx = 0;
        for (int64_t j = threadIdx.x; j < right; j += blockDim.x) {
            const double gj = scale ? (double)g[j] * (double)scale[j] : (double)g[j];
            sg += gj;
            sgx += gj * ((double)p[j] - mu) * is;
        }
        const double mg = block_sum(sg, sh) / (double)right;
        const double mgx = block_sum(sgx, sh) / (double)right;
        T *d = dx + i * right;
        for (int64_t j = threadIdx.x; j < right; j += blockDim.x) {
            const double gj = scale ? (double)g[j] * (double)scale[j] : (double)g[j];
            const double xh = ((double)p[j] - mu) * is;
            d[j] = (T)(is * (gj - mg - xh * mgx));
        }
    }
}

/* the column sums' first pass: block (tile, chunk) sums rows
 * [chunk * crows, (chunk + 1) * crows) of 32 columns into
 * part[chunk][col] (dScale sums) and part[nchunk + chunk][col] (dBias sums) */
constexpr int kColLanes = 8;
template <class T>
__global__ void ln_colsum_k(const T *x, const T *dy, const T *mean, const T *var, double *part, int64_t left,
                            int64_t right, int64_t crows, double eps)
{
    __shared__ double sa[kColLanes][33], sb[kColLanes][33];
    const int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = (int64_t)blockIdx.y * crows;
    const int64_t r1 = r0 + crows < left ? r0 + crows : left;
    double a = 0, b = 0;
    if (j < right)
        for (int64_t i = r0 + threadIdx.y; i < r1; i += kColLanes) {
            const double g = (double)dy[i * right + j];
            const double mu = (double)mean[i], is = 1.0 / sqrt((double)var[i] + eps);
            a += g * ((double)x[i * right + j] - mu) * is;
            b += g;
        }
    sa[threadIdx.y][threadIdx.x] = a;
    sb[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.y == 0 && j < right) {
        for (int l = 1; l < kColLanes; l++) { a += sa[l][threadIdx.x]; b += sb[l][threadIdx.x]; }
        const int64_t nchunk = gridDim.y;
        part[(int64_t)blockIdx.y * right + j] = a;
        part[(nchunk + blockIdx.y) * right + j] = b;
    }
}

/* second pass: the chunks of each column added in order */
template <class T>
__global__ void ln_colsum_end_k(const double *part, int64_t nchunk, int64_t right, T *dscale, T *dbias)
{
    OAR_CU_LOOP(j, right) {
        double a = 0, b = 0;
        for (int64_t c = 0; c < nchunk; c++) {
            a += part[c * right + j];
            b += part[(nchunk + c) * right + j];
        }
        if (dscale) dscale[j] = (T)a;
        if (dbias) dbias[j] = (T)b;
    }
}

/* ---- arguments ---------------------------------------------------------------- */

/* X (slot 0 of both ops) split at begin_norm_axis into [left, right] */
int ln_split(oar_kernel_ctx_t *k, const oar_tensor_t *x, int64_t *left, int64_t *right)
{
    const int axis = ((const oar_ln_attrs_t *)oar_k_attrs(k))->begin_norm_axis;
    if (axis < 1 || axis >= x->ndim) {
        char s[128];
        return oar_k_error(k, OAR_ERR_INVALID, "attr begin_norm_axis = %d must be in [1, %d) for X '%s' of shape %s",
                           axis, x->ndim, nm(oar_k_input_name(k, OAR_LN_X, 0)),
                           oar_shape_str(x->dims, x->ndim, s, sizeof s));
    }
    int64_t l = 1, r = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < axis) l *= x->dims[i];
        else r *= x->dims[i];
    }
    *left = l;
    *right = r;
    return OAR_OK;
}

/* an optional parameter input holding n values of dtype dt (*p NULL if absent) */
int ln_param(oar_kernel_ctx_t *k, int slot, const char *name, int64_t n, int dt, const void **p)
{
    const oar_tensor_t *t;
    OAR_TRY(in_checked(k, slot, name, dt, true, true, &t, p));
    if (t && oar_tensor_numel_of(t) != n) {
        char s[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "%s '%s' is %s %s, expected %lld values of %s", name,
                           nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name(t->dtype)),
                           oar_shape_str(t->dims, t->ndim, s, sizeof s), (long long)n, nm(oar_dtype_name(dt)));
    }
    return OAR_OK;
}

/* output `slot` (`name` in errors) resized to dims when they differ; *p NULL
 * when the output is absent or empty */
int ln_out(oar_kernel_ctx_t *k, int slot, const char *name, const int64_t *dims, int nd, int dt, void **p)
{
    *p = nullptr;
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) return OAR_OK;
    /* inference sized it; a mismatch is a definition bug, not something to patch here */
    if (t->ndim != nd || memcmp(t->dims, dims, sizeof(int64_t) * (size_t)nd) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s has shape %s, expected %s", name,
                           oar_shape_str(t->dims, t->ndim, a, sizeof a), oar_shape_str(dims, nd, b, sizeof b));
    }
    void *d = oar_k_output_data(k, slot, 0, dt);
    if (!d) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate output %s", name);
    if (oar_tensor_numel_of(t) > 0) *p = d;
    return OAR_OK;
}

template <class T>
int ln_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_checked(k, OAR_LN_X, "X", dt, false, true, &x, &xd));
    int64_t left, right;
    OAR_TRY(ln_split(k, x, &left, &right));
    const void *scale, *bias;
    OAR_TRY(ln_param(k, OAR_LN_SCALE, "Scale", right, dt, &scale));
    OAR_TRY(ln_param(k, OAR_LN_BIAS, "Bias", right, dt, &bias));
    const double eps = ((const oar_ln_attrs_t *)oar_k_attrs(k))->epsilon;
    if (!oar_k_output(k, OAR_LN_Y, 0)) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y is missing");
    void *y, *mean, *var;
    OAR_TRY(ln_out(k, OAR_LN_Y, "Y", x->dims, x->ndim, dt, &y));
    const int64_t ld[1] = {left};
    OAR_TRY(ln_out(k, OAR_LN_MEAN, "Mean", ld, 1, dt, &mean));
    OAR_TRY(ln_out(k, OAR_LN_VARIANCE, "Variance", ld, 1, dt, &var));
    if (left == 0) return OAR_OK;
    ln_fwd_k<T><<<row_blocks(left), row_threads(right)>>>((const T *)xd, (const T *)scale, (const T *)bias, (T *)y,
                                                           (T *)mean, (T *)var, left, right, eps);
    OAR_CU_LAUNCH(k, "layer_norm");
    return OAR_OK;
}

template <class T>
int ln_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *dy;
    const void *xd, *dyd;
    OAR_TRY(in_checked(k, OAR_LNG_X, "X", dt, false, true, &x, &xd));
    OAR_TRY(in_checked(k, OAR_LNG_DY, "Y@GRAD", dt, false, true, &dy, &dyd));
    int64_t left, right;
    OAR_TRY(ln_split(k, x, &left, &right));
    if (dy->ndim != x->ndim || memcmp(dy->dims, x->dims, sizeof(int64_t) * (size_t)x->ndim) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD '%s' has shape %s but X has %s",
                           nm(oar_k_input_name(k, OAR_LNG_DY, 0)), oar_shape_str(dy->dims, dy->ndim, a, sizeof a),
                           oar_shape_str(x->dims, x->ndim, b, sizeof b));
    }
    const void *mean, *var, *scale;
    OAR_TRY(ln_param(k, OAR_LNG_MEAN, "Mean", left, dt, &mean));
    OAR_TRY(ln_param(k, OAR_LNG_VARIANCE, "Variance", left, dt, &var));
    if (!oar_k_input(k, OAR_LNG_MEAN, 0) || !oar_k_input(k, OAR_LNG_VARIANCE, 0))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "inputs Mean and Variance are required");
    OAR_TRY(ln_param(k, OAR_LNG_SCALE, "Scale", right, dt, &scale));
    const double eps = ((const oar_ln_attrs_t *)oar_k_attrs(k))->epsilon;
    void *dx;
    OAR_TRY(ln_out(k, OAR_LNG_DX, "X@GRAD", x->dims, x->ndim, dt, &dx));
    const oar_tensor_t *st = oar_k_input(k, OAR_LNG_SCALE, 0), *bt = oar_k_input(k, OAR_LNG_BIAS, 0);
    const bool want_ds = oar_k_output(k, OAR_LNG_DSCALE, 0) != nullptr, want_db = oar_k_output(k, OAR_LNG_DBIAS, 0) != nullptr;
    if ((want_ds && !st) || (want_db && !bt))
        return oar_k_error(k, OAR_ERR_INVALID, "%s@GRAD is requested but %s is not an input",
                           want_ds && !st ? "Scale" : "Bias", want_ds && !st ? "Scale" : "Bias");
    void *dscale = nullptr, *dbias = nullptr;
    if (want_ds) OAR_TRY(ln_out(k, OAR_LNG_DSCALE, "Scale@GRAD", st->dims, st->ndim, dt, &dscale));
    if (want_db) OAR_TRY(ln_out(k, OAR_LNG_DBIAS, "Bias@GRAD", bt->dims, bt->ndim, dt, &dbias));
    if (left > 0 && dx) {
        ln_dx_k<T><<<row_blocks(left), row_threads(right)>>>((const T *)xd, (const T *)dyd, (const T *)mean,
                                                              (const T *)var, (const T *)scale, (T *)dx, left, right,
                                                              eps);
        OAR_CU_LAUNCH(k, "layer_norm_grad dX");
    }
    if ((!dscale && !dbias) || right == 0) return OAR_OK;
    /* chunks of rows: enough blocks to fill the device, few enough partials */
    const int64_t tiles = (right + 31) / 32;
    int64_t nchunk = (left + 31) / 32, cap = 2048 / tiles;
    if (nchunk > cap) nchunk = cap;
    if (nchunk < 1) nchunk = 1;
    const int64_t crows = (left + nchunk - 1) / nchunk;
    if (tiles > 2147483647) return oar_k_error(k, OAR_ERR_RANGE, "%lld columns are too many", (long long)right);
    Scratch part;
    OAR_TRY(part.alloc(k, sizeof(double) * 2 * (size_t)nchunk * (size_t)right, "the Scale/Bias grad partial sums"));
    if (left > 0) {
        ln_colsum_k<T><<<dim3((unsigned)tiles, (unsigned)nchunk), dim3(32, kColLanes)>>>(
            (const T *)xd, (const T *)dyd, (const T *)mean, (const T *)var, part.as<double>(), left, right, crows, eps);
        OAR_CU_LAUNCH(k, "layer_norm_grad column sums");
    } else {
        OAR_CU(k, cudaMemsetAsync(part.p, 0, sizeof(double) * 2 * (size_t)nchunk * (size_t)right, 0),
               "cudaMemsetAsync");
    }
    ln_colsum_end_k<T><<<grid_for(right), kThreads>>>(part.as<double>(), nchunk, right, (T *)dscale, (T *)dbias);
    OAR_CU_LAUNCH(k, "layer_norm_grad Scale/Bias grads");
    return OAR_OK;
}

int layer_norm_f32(oar_kernel_ctx_t *k) { return ln_fwd<float>(k, OAR_FP32); }
int layer_norm_f64(oar_kernel_ctx_t *k) { return ln_fwd<double>(k, OAR_FP64); }
int layer_norm_grad_f32(oar_kernel_ctx_t *k) { return ln_bwd<float>(k, OAR_FP32); }
int layer_norm_grad_f64(oar_kernel_ctx_t *k) { return ln_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("layer_norm", OAR_PLACE_CUDA, OAR_FP32, layer_norm_f32)
OAR_REGISTER_KERNEL("layer_norm", OAR_PLACE_CUDA, OAR_FP64, layer_norm_f64)
OAR_REGISTER_KERNEL("layer_norm_grad", OAR_PLACE_CUDA, OAR_FP32, layer_norm_grad_f32)
OAR_REGISTER_KERNEL("layer_norm_grad", OAR_PLACE_CUDA, OAR_FP64, layer_norm_grad_f64)

}  // namespace
