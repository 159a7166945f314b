/*
 * optimizer.cu — CUDA kernels of sgd, momentum, adam, adagrad, rmsprop,
 * adamax and adadelta (float32, float64) with the CPU kernels' update rules
 * (kernels/cpu/optimizer.c).
 *
 * Every input is read (its pointer taken) before any output is requested,
 * since ParamOut is normally Param itself. The one-element inputs
 * (LearningRate, Beta1Pow, ...) stay on the device and are read by the
 * kernels, so a step needs no host round trip.
 *
 * A SELECTED_ROWS gradient (rows on the host, values on the device) has
 * its rows checked on the host, then either
 *  - sgd, adagrad, adam with lazy_mode: duplicate rows are merged (sorted on the host,
 *    values summed on the device) and only those rows are updated, or
 *  - momentum, adam, rmsprop, adamax, adadelta: the gradient is densified (absent rows are zero) and
 *    every element steps, which is the dense update of the densified gradient.
 */
#include <stdlib.h>
#include "cuda_common.h"
#include "ops/optimizer_util.h"

using namespace oarcu;

namespace {

/* a one-element float32/float64 device input; `def` when p is NULL */
struct DScalar { const void *p; int f64; double def; };
__device__ inline double ld(const DScalar &s)
{
    if (!s.p) return s.def;
    return s.f64 ? *(const double *)s.p : (double)*(const float *)s.p;
}

/* update element q of the gradient: the parameter element it belongs to */
struct Idx { const int64_t *rows; int64_t width; };
__device__ inline int64_t pidx(const Idx &ix, int64_t q)
{
    return ix.rows ? ix.rows[q / ix.width] * ix.width + q % ix.width : q;
}

template <class T>
__global__ void sgd_k(const T *p, T *po, const T *g, int64_t n, DScalar lr, Idx ix)
{
    const T l = (T)ld(lr);
    OAR_CU_LOOP(q, n) {
        const int64_t i = pidx(ix, q);
        po[i] = p[i] - l * g[q];
    }
}

/* v = mu v + g; p -= lr v  (nesterov: p -= lr (g + mu v)) */
template <class T>
__global__ void momentum_k(const T *p, T *po, const T *v, T *vo, const T *g, int64_t n, DScalar lr, T mu, bool nest,
                           Idx ix)
{
    const T l = (T)ld(lr);
    OAR_CU_LOOP(q, n) {
        const int64_t i = pidx(ix, q);
        const T gq = g[q], vn = mu * v[i] + gq, pv = p[i];
        vo[i] = vn;
        po[i] = nest ? pv - (gq + mu * vn) * l : pv - l * vn;
    }
}

/* Fluid 1.8 adam: lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t),
 * p -= lr_t m1 / (sqrt(m2) + eps sqrt(1 - beta2^t)) */
template <class T>
__global__ void adam_k(const T *p, T *po, const T *m1, T *m1o, const T *m2, T *m2o, const T *g, int64_t n,
                       DScalar lr, DScalar b1p, DScalar b2p, DScalar beta1, DScalar beta2, double eps, Idx ix)
{
    const double bp1 = ld(b1p), bp2 = ld(b2p);
    const T b1 = (T)ld(beta1), b2 = (T)ld(beta2);
    const T lr_t = (T)(ld(lr) * sqrt(1.0 - bp2) / (1.0 - bp1));
    const T eps_t = (T)(eps * sqrt(1.0 - bp2));
    OAR_CU_LOOP(q, n) {
        const int64_t i = pidx(ix, q);
        const T gq = g[q];
        const T a = b1 * m1[i] + (T(1) - b1) * gq;
        const T b = b2 * m2[i] + (T(1) - b2) * gq * gq;
        const T pv = p[i];
        m1o[i] = a;
        m2o[i] = b;
        po[i] = pv - lr_t * a / (sqrt(b) + eps_t);
    }
}

/* Beta1PowOut = Beta1Pow * beta1 (and beta2), after the update read them */
__global__ void adam_pow_k(DScalar b1p, DScalar b2p, DScalar beta1, DScalar beta2, void *o1, int o1_f64, void *o2,
                           int o2_f64)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const double v1 = ld(b1p) * ld(beta1), v2 = ld(b2p) * ld(beta2);
    if (o1) { if (o1_f64) *(double *)o1 = v1; else *(float *)o1 = (float)v1; }
    if (o2) { if (o2_f64) *(double *)o2 = v2; else *(float *)o2 = (float)v2; }
}

template <class T>
__global__ void scatter_k(const int64_t *dst_rows, const T *val, T *out, int64_t nrows, int64_t width)
{
    OAR_CU_LOOP(q, nrows * width) atomicAdd(out + dst_rows[q / width] * width + q % width, val[q]);
}

/* ---- inputs ------------------------------------------------------------------- */
int scalar_in(oar_kernel_ctx_t *k, int slot, DScalar *s, double def)
{
    s->p = nullptr;
    s->f64 = 0;
    s->def = def;
    if (!oar_k_input(k, slot, 0)) {
        if (def == def) return OAR_OK;   /* optional with a default */
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", in_slot_name(k, slot));
    }
    const oar_tensor_t *t;
    OAR_TRY(in_tensor_at(k, slot, 0, -1, 1, &t, &s->p));
    if (t->dtype != OAR_FP32 && t->dtype != OAR_FP64)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected float32 or float64",
                           in_slot_name(k, slot), nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name(t->dtype)));
    s->f64 = t->dtype == OAR_FP64;
    return OAR_OK;
}

struct Grad {
    bool sparse = false;
    const void *dense = nullptr;      /* dense Grad, or the densified / merged sparse one */
    Scratch buf, rows;                /* densified or merged values; merged rows on the device */
    int64_t n = 0;                    /* elements to update */
    Idx ix{nullptr, 1};
};

struct RowRef { int64_t row, idx; };
int cmp_ref(const void *a, const void *b)
{
    const RowRef *x = (const RowRef *)a, *y = (const RowRef *)b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* the gradient of a step: dense, densified (merge == false) or merged rows */
template <class T>
int grad_in(oar_kernel_ctx_t *k, int slot, int dt, int64_t numel, int64_t height, int64_t width, bool merge, Grad *g)
{
    oar_variable_t *gv = oar_k_input_var(k, slot, 0);
    g->sparse = gv && oar_variable_type(gv) == OAR_VAR_SELECTED_ROWS;
    if (!g->sparse) {
        const oar_tensor_t *t;
        OAR_TRY(in_tensor_at(k, slot, 0, dt, numel, &t, &g->dense));
        g->n = numel;
        return OAR_OK;
    }
    const oar_selected_rows_t *sr = gv->u.rows;
    const char *gname = nm(oar_k_input_name(k, slot, 0));
    const int64_t nr = sr->nrows;
    int64_t need;
    if (oar_mul_checked(nr, width, &need) != OAR_OK) return OAR_ERR_SHAPE;
    const oar_tensor_t *v = sr->value;
    if (nr > 0) {
        if (!v || !oar_tensor_has_data(v))
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "sparse Grad '%s' has %lld rows but no value tensor", gname,
                               (long long)nr);
        if (v->dtype != dt)
            return oar_k_error(k, OAR_ERR_DTYPE, "sparse Grad '%s' has dtype %s, expected %s like Param", gname,
                               nm(oar_dtype_name(v->dtype)), oar_dtype_name(dt));
        if (oar_tensor_numel_of(v) != need)
            return oar_k_error(k, OAR_ERR_SHAPE, "sparse Grad '%s' has %lld rows and %lld values; Param rows have "
                               "%lld elements, so %lld values were expected", gname, (long long)nr,
                               (long long)oar_tensor_numel_of(v), (long long)width, (long long)need);
        if (v->buf->place != OAR_PLACE_CUDA || v->buf->device != oar_k_device(k))
            return oar_k_error(k, OAR_ERR_INVALID, "sparse Grad '%s': its value is not on CUDA device %d", gname,
                               oar_k_device(k));
    }
    for (int64_t i = 0; i < nr; i++)
        if (sr->rows[i] < 0 || sr->rows[i] >= height)
            return oar_k_error(k, OAR_ERR_RANGE, "sparse Grad '%s' names row %lld, but Param '%s' has %lld rows",
                               gname, (long long)sr->rows[i], nm(oar_k_input_name(k, OAR_OPT_PARAM, 0)),
                               (long long)height);
    const size_t es = sizeof(T);
    if (!merge) {   /* densify */
        OAR_TRY(g->buf.alloc(k, es * (size_t)numel, "densified gradient"));
        if (numel > 0) OAR_CU(k, cudaMemsetAsync(g->buf.p, 0, es * (size_t)numel, 0), "cudaMemsetAsync");
        if (need > 0) {
            OAR_TRY(g->rows.alloc(k, sizeof(int64_t) * (size_t)nr, "gradient rows"));
            OAR_TRY(to_device(k, g->rows.p, sr->rows, sizeof(int64_t) * (size_t)nr, "gradient rows"));
            scatter_k<T><<<grid_for(need), kThreads>>>(g->rows.as<int64_t>(), (const T *)v->buf->data, g->buf.as<T>(),
                                                       nr, width);
            OAR_CU_LAUNCH(k, "densify sparse gradient");
        }
        g->dense = g->buf.p;
        g->n = numel;
        return OAR_OK;
    }
    /* merge: distinct rows sorted, each row's values summed */
    g->n = 0;
    if (nr == 0) return OAR_OK;
    RowRef *refs = (RowRef *)oar_xmalloc(sizeof *refs * (size_t)nr);
    int64_t *map = refs ? (int64_t *)oar_xmalloc(sizeof *map * (size_t)nr * 2) : nullptr;
    if (!map) { free(refs); return OAR_ERR_NOMEM; }
    int64_t *urows = map + nr, nu = 0;
    for (int64_t i = 0; i < nr; i++) refs[i] = RowRef{sr->rows[i], i};
    qsort(refs, (size_t)nr, sizeof *refs, cmp_ref);
    for (int64_t i = 0; i < nr; i++) {
        if (nu == 0 || urows[nu - 1] != refs[i].row) urows[nu++] = refs[i].row;
        map[refs[i].idx] = nu - 1;
    }
    free(refs);
    Scratch dmap;
    int rc = dmap.alloc(k, sizeof(int64_t) * (size_t)nr, "gradient row map");
    if (rc == OAR_OK) rc = g->rows.alloc(k, sizeof(int64_t) * (size_t)nu, "merged gradient rows");
    if (rc == OAR_OK) rc = g->buf.alloc(k, es * (size_t)(nu * width), "merged gradient");
    if (rc == OAR_OK) rc = to_device(k, dmap.p, map, sizeof(int64_t) * (size_t)nr, "gradient row map");
    if (rc == OAR_OK) rc = to_device(k, g->rows.p, urows, sizeof(int64_t) * (size_t)nu, "merged gradient rows");
    free(map);
    OAR_TRY(rc);
    if (nu * width > 0) {
        OAR_CU(k, cudaMemsetAsync(g->buf.p, 0, es * (size_t)(nu * width), 0), "cudaMemsetAsync");
        scatter_k<T><<<grid_for(need), kThreads>>>(dmap.as<int64_t>(), (const T *)v->buf->data, g->buf.as<T>(), nr,
                                                   width);
        OAR_CU_LAUNCH(k, "merge sparse gradient");
    }
    g->dense = g->buf.p;
    g->n = nu * width;
    g->ix = Idx{g->rows.as<int64_t>(), width};
    return OAR_OK;
}

/* Param and the state inputs (slots ins[i], ins[0] Param's) with Param's dtype and size */
struct Opt {
    int dt;
    int64_t numel, height, width;
    const void *in[4];
    void *out[4];
};

int states_in(oar_kernel_ctx_t *k, int dt, const int *ins, int n, Opt *o)
{
    o->dt = dt;
    const oar_tensor_t *pt;
    OAR_TRY(in_tensor_at(k, ins[0], 0, dt, -1, &pt, &o->in[0]));
    o->numel = oar_tensor_numel_of(pt);
    o->height = pt->ndim > 0 ? pt->dims[0] : 1;
    o->width = o->height > 0 ? o->numel / o->height : 0;
    for (int i = 1; i < n; i++) {
        const oar_tensor_t *t;
        OAR_TRY(in_tensor_at(k, ins[i], 0, dt, o->numel, &t, &o->in[i]));
    }
    return OAR_OK;
}

/* outputs; with a row update, states whose output got a new buffer start as a copy */
int states_out(oar_kernel_ctx_t *k, const int *outs, int n, bool rows_only, Opt *o)
{
    const size_t bytes = oar_dtype_size(o->dt) * (size_t)o->numel;
    for (int i = 0; i < n; i++) {
        OAR_TRY(out_data_at(k, outs[i], 0, o->dt, o->numel, &o->out[i]));
        if (rows_only && o->out[i] != o->in[i] && bytes > 0)
            OAR_CU(k, cudaMemcpyAsync(o->out[i], o->in[i], bytes, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
    }
    return OAR_OK;
}

const oar_opt_attrs_t *attrs(oar_kernel_ctx_t *k) { return (const oar_opt_attrs_t *)oar_k_attrs(k); }

/* ---- sgd ------------------------------------------------------------------------ */
template <class T>
int sgd_run(oar_kernel_ctx_t *k, int dt)
{
    static const int ins[] = {OAR_OPT_PARAM}, outs[] = {OAR_OPT_PARAM_OUT};
    Opt o;
    OAR_TRY(states_in(k, dt, ins, 1, &o));
    DScalar lr;
    OAR_TRY(scalar_in(k, OAR_SGD_LR, &lr, NAN));
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_SGD_GRAD, dt, o.numel, o.height, o.width, true, &g));
    OAR_TRY(states_out(k, outs, 1, g.sparse, &o));
    if (g.n == 0) return OAR_OK;
    sgd_k<T><<<grid_for(g.n), kThreads>>>((const T *)o.in[0], (T *)o.out[0], (const T *)g.dense, g.n, lr, g.ix);
    OAR_CU_LAUNCH(k, "sgd");
    return OAR_OK;
}

/* ---- momentum -------------------------------------------------------------------- */
template <class T>
int momentum_run(oar_kernel_ctx_t *k, int dt)
{
    static const int ins[] = {OAR_OPT_PARAM, OAR_MOMENTUM_VELOCITY};
    static const int outs[] = {OAR_OPT_PARAM_OUT, OAR_MOMENTUM_VELOCITY_OUT};
    const oar_opt_attrs_t *a = attrs(k);
    Opt o;
    OAR_TRY(states_in(k, dt, ins, 2, &o));
    DScalar lr;
    OAR_TRY(scalar_in(k, OAR_MOMENTUM_LR, &lr, NAN));
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_MOMENTUM_GRAD, dt, o.numel, o.height, o.width, false, &g));
    OAR_TRY(states_out(k, outs, 2, false, &o));
    if (g.n == 0) return OAR_OK;
    momentum_k<T><<<grid_for(g.n), kThreads>>>((const T *)o.in[0], (T *)o.out[0], (const T *)o.in[1], (T *)o.out[1],
                                               (const T *)g.dense, g.n, lr, (T)a->mu, a->use_nesterov, g.ix);
    OAR_CU_LAUNCH(k, "momentum");
    return OAR_OK;
}

/* ---- adam ------------------------------------------------------------------------- */
template <class T>
int adam_run(oar_kernel_ctx_t *k, int dt)
{
    static const int ins[] = {OAR_OPT_PARAM, OAR_ADAM_MOMENT1, OAR_ADAM_MOMENT2};
    static const int outs[] = {OAR_OPT_PARAM_OUT, OAR_ADAM_MOMENT1_OUT, OAR_ADAM_MOMENT2_OUT};
    const oar_opt_attrs_t *a = attrs(k);
    Opt o;
    OAR_TRY(states_in(k, dt, ins, 3, &o));
    DScalar lr, b1p, b2p, beta1, beta2;
    OAR_TRY(scalar_in(k, OAR_ADAM_LR, &lr, NAN));
    OAR_TRY(scalar_in(k, OAR_ADAM_BETA1_POW, &b1p, NAN));
    OAR_TRY(scalar_in(k, OAR_ADAM_BETA2_POW, &b2p, NAN));
    /* Beta1Tensor/Beta2Tensor override the attrs (schedules of beta) */
    OAR_TRY(scalar_in(k, OAR_ADAM_BETA1_TENSOR, &beta1, a->beta1));
    OAR_TRY(scalar_in(k, OAR_ADAM_BETA2_TENSOR, &beta2, a->beta2));
    const bool lazy = a->lazy_mode;
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_ADAM_GRAD, dt, o.numel, o.height, o.width, lazy, &g));
    OAR_TRY(states_out(k, outs, 3, g.sparse && lazy, &o));
    if (g.n > 0) {
        adam_k<T><<<grid_for(g.n), kThreads>>>((const T *)o.in[0], (T *)o.out[0], (const T *)o.in[1], (T *)o.out[1],
                                               (const T *)o.in[2], (T *)o.out[2], (const T *)g.dense, g.n, lr, b1p, b2p,
                                               beta1, beta2, a->epsilon, g.ix);
        OAR_CU_LAUNCH(k, "adam");
    }
    /* the powers advance after the update read them (same stream) */
    void *o1 = nullptr, *o2 = nullptr;
    int f1 = 0, f2 = 0;
    if (oar_k_output(k, OAR_ADAM_BETA1_POW_OUT, 0)) {
        f1 = b1p.f64;
        OAR_TRY(out_data_at(k, OAR_ADAM_BETA1_POW_OUT, 0, f1 ? OAR_FP64 : OAR_FP32, 1, &o1));
    }
    if (oar_k_output(k, OAR_ADAM_BETA2_POW_OUT, 0)) {
        f2 = b2p.f64;
        OAR_TRY(out_data_at(k, OAR_ADAM_BETA2_POW_OUT, 0, f2 ? OAR_FP64 : OAR_FP32, 1, &o2));
    }
    if (o1 || o2) {
        adam_pow_k<<<1, 32>>>(b1p, b2p, beta1, beta2, o1, f1, o2, f2);
        OAR_CU_LAUNCH(k, "adam beta powers");
    }
    return OAR_OK;
}

/* ---- adagrad: m += g^2; p -= lr g / (sqrt(m) + eps) ----------------------------- */
template <class T>
__global__ void adagrad_k(const T *p, T *po, const T *m, T *mo, const T *g, int64_t n, DScalar lr, T eps, Idx ix)
{
    const T l = (T)ld(lr);
    OAR_CU_LOOP(q, n) {
        const int64_t i = pidx(ix, q);
        const T gq = g[q], mn = m[i] + gq * gq, pv = p[i];
        mo[i] = mn;
        po[i] = pv - l * gq / (sqrt(mn) + eps);
    }
}

template <class T>
int adagrad_run(oar_kernel_ctx_t *k, int dt)
{
    static const int ins[] = {OAR_OPT_PARAM, OAR_ADAGRAD_MOMENT}, outs[] = {OAR_OPT_PARAM_OUT, OAR_ADAGRAD_MOMENT_OUT};
    Opt o;
    OAR_TRY(states_in(k, dt, ins, 2, &o));
    DScalar lr;
    OAR_TRY(scalar_in(k, OAR_ADAGRAD_LR, &lr, NAN));
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_ADAGRAD_GRAD, dt, o.numel, o.height, o.width, true, &g));
    OAR_TRY(states_out(k, outs, 2, g.sparse, &o));
    if (g.n == 0) return OAR_OK;
    adagrad_k<T><<<grid_for(g.n), kThreads>>>((const T *)o.in[0], (T *)o.out[0], (const T *)o.in[1], (T *)o.out[1],
                                              (const T *)g.dense, g.n, lr, (T)attrs(k)->epsilon, g.ix);
    OAR_CU_LAUNCH(k, "adagrad");
    return OAR_OK;
}

/* ---- rmsprop ------------------------------------------------------------------------
 * ms = rho ms + (1 - rho) g^2; centered: mg = rho mg + (1 - rho) g and the
 * denominator loses mg^2; mom = momentum mom + lr g / sqrt(ms (- mg^2) + eps);
 * p -= mom. A MeanGrad given but unused is carried over. */
template <class T>
__global__ void rmsprop_k(const T *p, T *po, const T *ms, T *mso, const T *mom, T *momo, const T *mg, T *mgo,
                          const T *g, int64_t n, DScalar lr, T rho, T mc, T eps, bool centered)
{
    const T l = (T)ld(lr);
    OAR_CU_LOOP(i, n) {
        const T gq = g[i], msn = rho * ms[i] + (T(1) - rho) * gq * gq;
        T denom = msn + eps;
        if (centered) {
            const T mgn = rho * mg[i] + (T(1) - rho) * gq;
            mgo[i] = mgn;
            denom -= mgn * mgn;
        } else if (mgo) {
            mgo[i] = mg[i];
        }
        const T mn = mc * mom[i] + l * gq / sqrt(denom), pv = p[i];
        mso[i] = msn;
        momo[i] = mn;
        po[i] = pv - mn;
    }
}

template <class T>
int rmsprop_run(oar_kernel_ctx_t *k, int dt)
{
    const oar_opt_attrs_t *a = attrs(k);
    const bool centered = a->centered;
    const bool has_mg = oar_k_input(k, OAR_RMSPROP_MEAN_GRAD, 0) != nullptr;
    if (centered && !has_mg) return oar_k_error(k, OAR_ERR_INVALID, "centered rmsprop needs input MeanGrad");
    static const int ins[] = {OAR_OPT_PARAM, OAR_RMSPROP_MEAN_SQUARE, OAR_RMSPROP_MOMENT, OAR_RMSPROP_MEAN_GRAD};
    static const int outs[] = {OAR_OPT_PARAM_OUT, OAR_RMSPROP_MEAN_SQUARE_OUT, OAR_RMSPROP_MOMENT_OUT,
                               OAR_RMSPROP_MEAN_GRAD_OUT};
    Opt o;
    OAR_TRY(states_in(k, dt, ins, has_mg ? 4 : 3, &o));
    DScalar lr;
    OAR_TRY(scalar_in(k, OAR_RMSPROP_LR, &lr, NAN));
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_RMSPROP_GRAD, dt, o.numel, o.height, o.width, false, &g));
    const bool mg_out = has_mg && oar_k_output(k, OAR_RMSPROP_MEAN_GRAD_OUT, 0);
    OAR_TRY(states_out(k, outs, mg_out ? 4 : 3, false, &o));
    if (centered && !mg_out) return oar_k_error(k, OAR_ERR_INVALID, "centered rmsprop needs output MeanGradOut");
    if (g.n == 0) return OAR_OK;
    rmsprop_k<T><<<grid_for(g.n), kThreads>>>(
        (const T *)o.in[0], (T *)o.out[0], (const T *)o.in[1], (T *)o.out[1], (const T *)o.in[2], (T *)o.out[2],
        has_mg ? (const T *)o.in[3] : nullptr, mg_out ? (T *)o.out[3] : nullptr, (const T *)g.dense, g.n, lr,
        (T)a->decay, (T)a->momentum, (T)a->epsilon, centered);
    OAR_CU_LAUNCH(k, "rmsprop");
    return OAR_OK;
}

/* ---- adamax: m = b1 m + (1 - b1) g; u = max(b2 u + eps, |g|); p -= lr/(1 - b1^t) m/u */
template <class T>
__global__ void adamax_k(const T *p, T *po, const T *m, T *mo, const T *u, T *uo, const T *g, int64_t n, DScalar lr,
                         DScalar b1p, T b1, T b2, T eps)
{
    const T lr_t = (T)(ld(lr) / (1.0 - ld(b1p)));
    OAR_CU_LOOP(i, n) {
        const T gq = g[i], mn = b1 * m[i] + (T(1) - b1) * gq;
        T un = b2 * u[i] + eps;
        const T ag = gq < T(0) ? -gq : gq;
        if (ag > un) un = ag;
        const T pv = p[i];
        mo[i] = mn;
        uo[i] = un;
        po[i] = pv - lr_t * mn / un;
    }
}

template <class T>
int adamax_run(oar_kernel_ctx_t *k, int dt)
{
    static const int ins[] = {OAR_OPT_PARAM, OAR_ADAMAX_MOMENT, OAR_ADAMAX_INF_NORM};
    static const int outs[] = {OAR_OPT_PARAM_OUT, OAR_ADAMAX_MOMENT_OUT, OAR_ADAMAX_INF_NORM_OUT};
    const oar_opt_attrs_t *a = attrs(k);
    Opt o;
    OAR_TRY(states_in(k, dt, ins, 3, &o));
    DScalar lr, b1p;
    OAR_TRY(scalar_in(k, OAR_ADAMAX_LR, &lr, NAN));
    OAR_TRY(scalar_in(k, OAR_ADAMAX_BETA1_POW, &b1p, NAN));
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_ADAMAX_GRAD, dt, o.numel, o.height, o.width, false, &g));
    OAR_TRY(states_out(k, outs, 3, false, &o));
    if (g.n == 0) return OAR_OK;
    adamax_k<T><<<grid_for(g.n), kThreads>>>((const T *)o.in[0], (T *)o.out[0], (const T *)o.in[1], (T *)o.out[1],
                                             (const T *)o.in[2], (T *)o.out[2], (const T *)g.dense, g.n, lr, b1p,
                                             (T)a->beta1, (T)a->beta2, (T)a->epsilon);
    OAR_CU_LAUNCH(k, "adamax");
    return OAR_OK;
}

/* ---- adadelta: Eg2 = rho Eg2 + (1 - rho) g^2; dx = -sqrt((Edx2 + eps)/(Eg2 + eps)) g;
 * Edx2 = rho Edx2 + (1 - rho) dx^2; p += dx */
template <class T>
__global__ void adadelta_k(const T *p, T *po, const T *eg, T *ego, const T *ex, T *exo, const T *g, int64_t n, T rho,
                           T eps)
{
    OAR_CU_LOOP(i, n) {
        const T gq = g[i], eg2 = rho * eg[i] + (T(1) - rho) * gq * gq;
        const T dx = -sqrt((ex[i] + eps) / (eg2 + eps)) * gq;
        const T edx2 = rho * ex[i] + (T(1) - rho) * dx * dx, pv = p[i];
        ego[i] = eg2;
        exo[i] = edx2;
        po[i] = pv + dx;
    }
}

template <class T>
int adadelta_run(oar_kernel_ctx_t *k, int dt)
{
    static const int ins[] = {OAR_OPT_PARAM, OAR_ADADELTA_AVG_SQ_GRAD, OAR_ADADELTA_AVG_SQ_UPDATE};
    static const int outs[] = {OAR_OPT_PARAM_OUT, OAR_ADADELTA_AVG_SQ_GRAD_OUT, OAR_ADADELTA_AVG_SQ_UPDATE_OUT};
    const oar_opt_attrs_t *a = attrs(k);
    Opt o;
    OAR_TRY(states_in(k, dt, ins, 3, &o));
    Grad g;
    OAR_TRY(grad_in<T>(k, OAR_ADADELTA_GRAD, dt, o.numel, o.height, o.width, false, &g));
    OAR_TRY(states_out(k, outs, 3, false, &o));
    if (g.n == 0) return OAR_OK;
    adadelta_k<T><<<grid_for(g.n), kThreads>>>((const T *)o.in[0], (T *)o.out[0], (const T *)o.in[1], (T *)o.out[1],
                                               (const T *)o.in[2], (T *)o.out[2], (const T *)g.dense, g.n,
                                               (T)a->rho, (T)a->epsilon);
    OAR_CU_LAUNCH(k, "adadelta");
    return OAR_OK;
}

#define OPT_REG(OP)                                                                  \
    int OP##_f32(oar_kernel_ctx_t *k) { return OP##_run<float>(k, OAR_FP32); }       \
    int OP##_f64(oar_kernel_ctx_t *k) { return OP##_run<double>(k, OAR_FP64); }      \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CUDA, OAR_FP32, OP##_f32)                     \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CUDA, OAR_FP64, OP##_f64)
OPT_REG(adagrad)
OPT_REG(rmsprop)
OPT_REG(adamax)
OPT_REG(adadelta)

int sgd_f32(oar_kernel_ctx_t *k) { return sgd_run<float>(k, OAR_FP32); }
int sgd_f64(oar_kernel_ctx_t *k) { return sgd_run<double>(k, OAR_FP64); }
int momentum_f32(oar_kernel_ctx_t *k) { return momentum_run<float>(k, OAR_FP32); }
int momentum_f64(oar_kernel_ctx_t *k) { return momentum_run<double>(k, OAR_FP64); }
int adam_f32(oar_kernel_ctx_t *k) { return adam_run<float>(k, OAR_FP32); }
int adam_f64(oar_kernel_ctx_t *k) { return adam_run<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sgd", OAR_PLACE_CUDA, OAR_FP32, sgd_f32)
OAR_REGISTER_KERNEL("sgd", OAR_PLACE_CUDA, OAR_FP64, sgd_f64)
OAR_REGISTER_KERNEL("momentum", OAR_PLACE_CUDA, OAR_FP32, momentum_f32)
OAR_REGISTER_KERNEL("momentum", OAR_PLACE_CUDA, OAR_FP64, momentum_f64)
OAR_REGISTER_KERNEL("adam", OAR_PLACE_CUDA, OAR_FP32, adam_f32)
OAR_REGISTER_KERNEL("adam", OAR_PLACE_CUDA, OAR_FP64, adam_f64)

}  // namespace
