/* optimizer_ext.c — CPU kernels of lamb, lars_momentum, ftrl,
 * proximal_adagrad, proximal_gd and dpsgd (src/ops/optimizer_ext.ops), in
 * float32 and float64, computing in the parameter's dtype as Fluid does.
 *
 * Like kernels/cpu/optimizer.c, every kernel reads all its inputs before it
 * asks for any output: ParamOut is normally Param's variable and
 * oar_k_output_data may hand back a fresh buffer when the old one is shared.
 * lamb, lars_momentum and dpsgd need norms over the whole tensor, so the
 * kernels are written whole rather than as element spans.
 *
 * A SELECTED_ROWS Grad (lamb, ftrl) is merged into a dense buffer (rows
 * summed) with a mask of the rows it names: lamb steps every row (absent rows
 * with a zero gradient, Fluid's SparseLambMomentUpdateFunctor), ftrl only
 * the named rows (Fluid's SparseFTRLFunctor). */
#include "op.h"
#include "ops/optimizer_util.h"
#include "ops/optimizer_ext.h"
#include "optimizer_args.h"

#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

static const char *nm(const char *s) { return s ? s : "?"; }

typedef struct {
    int dt;
    int64_t numel, height, width;
    const void *g;      /* dense gradient: the input's data or gbuf */
    void *gbuf;         /* the densified sparse gradient (owned) */
    bool *row_in;       /* sparse only: rows the gradient names (owned) */
} gin_t;

/* Param's dtype, element count and row layout; then Grad, dense or (when
 * `sparse_ok`) SELECTED_ROWS densified. */
static int param_grad_in(oar_kernel_ctx_t *k, int grad_slot, bool sparse_ok, gin_t *gi, const void **p)
{
    memset(gi, 0, sizeof *gi);
    gi->dt = oar_k_dtype(k);
    OAR_TRY(oar_opt_state_in(k, OAR_OPT_PARAM, "Param", gi->dt, -1, p));
    const oar_tensor_t *pt = oar_k_input(k, OAR_OPT_PARAM, 0);
    gi->numel = oar_tensor_numel_of(pt);
    gi->height = pt->ndim > 0 ? pt->dims[0] : 1;
    gi->width = gi->height > 0 ? gi->numel / gi->height : 0;
    oar_variable_t *gv = oar_k_input_var(k, grad_slot, 0);
    const char *gname = nm(oar_k_input_name(k, grad_slot, 0));
    if (!gv || oar_variable_type(gv) != OAR_VAR_SELECTED_ROWS)
        return oar_opt_state_in(k, grad_slot, "Grad", gi->dt, gi->numel, &gi->g);
    if (!sparse_ok)
        return oar_k_error(k, OAR_ERR_INVALID, "Grad '%s' is SELECTED_ROWS; this op takes a dense "
                           "gradient, as in Fluid", gname);
    const oar_selected_rows_t *sr = gv->u.rows;
    const oar_tensor_t *v = sr->value;
    int64_t need;
    if (oar_mul_checked(sr->nrows, gi->width, &need) != OAR_OK) return OAR_ERR_SHAPE;
    if (sr->nrows > 0 && (!v || !oar_tensor_has_data(v)))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "sparse Grad '%s' has rows but no value tensor", gname);
    if (sr->nrows > 0 && v->dtype != gi->dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "sparse Grad '%s' has dtype %s, expected %s like Param",
                           gname, nm(oar_dtype_name(v->dtype)), nm(oar_dtype_name(gi->dt)));
    if (sr->nrows > 0 && oar_tensor_numel_of(v) != need)
        return oar_k_error(k, OAR_ERR_SHAPE, "sparse Grad '%s' has %lld rows and %lld values; Param "
                           "rows have %lld elements", gname, (long long)sr->nrows,
                           (long long)oar_tensor_numel_of(v), (long long)gi->width);
    size_t es = oar_dtype_size(gi->dt);
    gi->gbuf = oar_xcalloc((size_t)(gi->numel ? gi->numel : 1), es);
    gi->row_in = oar_xcalloc((size_t)(gi->height ? gi->height : 1), sizeof(bool));
    if (!gi->gbuf || !gi->row_in) return OAR_ERR_NOMEM;
    for (int64_t r = 0; r < sr->nrows; r++) {
        int64_t row = sr->rows[r];
        if (row < 0 || row >= gi->height)
            return oar_k_error(k, OAR_ERR_RANGE, "sparse Grad '%s' names row %lld, but Param has "
                               "%lld rows", gname, (long long)row, (long long)gi->height);
        gi->row_in[row] = true;
        /* duplicate rows sum, in input order (MergeAdd) */
        if (gi->dt == OAR_FP32) {
            float *d = (float *)gi->gbuf + row * gi->width;
            const float *s = (const float *)v->buf->data + r * gi->width;
            for (int64_t j = 0; j < gi->width; j++) d[j] += s[j];
        } else {
            double *d = (double *)gi->gbuf + row * gi->width;
            const double *s = (const double *)v->buf->data + r * gi->width;
            for (int64_t j = 0; j < gi->width; j++) d[j] += s[j];
        }
    }
    gi->g = gi->gbuf;
    return OAR_OK;
}

/* one kernel serves both dtypes (it dispatches on Param's); registration
 * wants a distinct function per dtype */
#define REGISTER_BOTH(type, fn)                                                 \
    static int fn##_f32(oar_kernel_ctx_t *k) { return fn(k); }                  \
    static int fn##_f64(oar_kernel_ctx_t *k) { return fn(k); }                  \
    OAR_REGISTER_KERNEL(type, OAR_PLACE_CPU, OAR_FP32, fn##_f32)                \
    OAR_REGISTER_KERNEL(type, OAR_PLACE_CPU, OAR_FP64, fn##_f64)

static void gin_free(gin_t *gi)
{
    free(gi->gbuf);
    free(gi->row_in);
}

/* Defines name##_f32 / name##_f64 from one body that sees T and the locals
 * of ARGS; the body's helpers are the typed pointers it declares itself. */
#define TYPED(name, ARGS, ...)                                                  \
    static void name##_float ARGS { typedef float T; __VA_ARGS__ }              \
    static void name##_double ARGS { typedef double T; __VA_ARGS__ }

/* ---- lamb (Fluid 1.8 lamb_op.h) -------------------------------------------
 * m1 = b1 m1 + (1 - b1) g;  m2 = b2 m2 + (1 - b2) g^2
 * r = m1 / (sqrt(m2) + eps) + wd p;  p -= lr (|p| / |r|) r  (ratio 1 if a norm is 0) */
TYPED(lamb_math, (int64_t n, const void *pv, const void *gv, const void *m1v, const void *m2v,
                  void *pov, void *m1ov, void *m2ov, double lr_, double wd_, double b1_, double b2_,
                  double eps_),
    const T *p = pv, *g = gv, *m1 = m1v, *m2 = m2v;
    T *po = pov, *m1o = m1ov, *m2o = m2ov;
    T b1 = (T)b1_, b2 = (T)b2_, eps = (T)eps_, wd = (T)wd_;
    T *r = malloc(sizeof(T) * (size_t)(n ? n : 1));
    T pn = 0, rn = 0;
    /* r is needed twice (its norm, then the step): kept, or recomputed when no buffer */
    for (int64_t i = 0; i < n; i++) {
        T a = b1 * m1[i] + (1 - b1) * g[i];
        T b = b2 * m2[i] + (1 - b2) * g[i] * g[i];
        T ri = a / (sqrt(b) + eps) + wd * p[i];
        if (r) r[i] = ri;
        pn += p[i] * p[i];
        rn += ri * ri;
    }
    pn = sqrt(pn);
    rn = sqrt(rn);
    T lr = (T)lr_ * ((pn > 0 && rn > 0) ? pn / rn : (T)1);
    for (int64_t i = 0; i < n; i++) {
        T a = b1 * m1[i] + (1 - b1) * g[i];
        T b = b2 * m2[i] + (1 - b2) * g[i] * g[i];
        T ri = r ? r[i] : a / (sqrt(b) + eps) + wd * p[i];
        T pi = p[i];
        m1o[i] = a;
        m2o[i] = b;
        po[i] = pi - lr * ri;
    }
    free(r);
)

static int lamb_k(oar_kernel_ctx_t *k)
{
    const oar_optx_attrs_t *a = oar_k_attrs(k);
    gin_t gi;
    const void *p, *m1, *m2;
    double lr, b1p, b2p;
    int rc = param_grad_in(k, OAR_LAMB_GRAD, true, &gi, &p);
    if (rc == OAR_OK) rc = oar_opt_state_in(k, OAR_LAMB_MOMENT1, "Moment1", gi.dt, gi.numel, &m1);
    if (rc == OAR_OK) rc = oar_opt_state_in(k, OAR_LAMB_MOMENT2, "Moment2", gi.dt, gi.numel, &m2);
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, OAR_LAMB_LR, "LearningRate", &lr);
    /* read for their checks; Fluid 1.8's update does not use them */
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, OAR_LAMB_BETA1_POW, "Beta1Pow", &b1p);
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, OAR_LAMB_BETA2_POW, "Beta2Pow", &b2p);
    void *po = NULL, *m1o = NULL, *m2o = NULL;
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_OPT_PARAM_OUT, "ParamOut", gi.dt, gi.numel, &po);
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_LAMB_MOMENT1_OUT, "Moment1Out", gi.dt, gi.numel, &m1o);
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_LAMB_MOMENT2_OUT, "Moment2Out", gi.dt, gi.numel, &m2o);
    if (rc == OAR_OK)
        (gi.dt == OAR_FP32 ? lamb_math_float : lamb_math_double)(
            gi.numel, p, gi.g, m1, m2, po, m1o, m2o, lr, a->weight_decay, a->beta1, a->beta2, a->epsilon);
    gin_free(&gi);
    return rc;
}
REGISTER_BOTH("lamb", lamb_k)

/* ---- lars_momentum (Fluid 1.8 lars_momentum_op.h) -------------------------
 * local_lr = lr coeff |p| / (|g| + wd |p|)  (lr if a norm is 0)
 * v = mu v + local_lr (g + wd p);  p -= v */
TYPED(lars_math, (int64_t n, const void *pv, const void *gv, const void *vv, void *pov, void *vov,
                  double lr_, double mu_, double coeff_, double wd_),
    const T *p = pv, *g = gv, *v = vv;
    T *po = pov, *vo = vov;
    T mu = (T)mu_, coeff = (T)coeff_, wd = (T)wd_;
    T pn = 0, gn = 0;
    for (int64_t i = 0; i < n; i++) {
        pn += p[i] * p[i];
        gn += g[i] * g[i];
    }
    pn = sqrt(pn);
    gn = sqrt(gn);
    T lr = (T)lr_;
    if (pn > 0 && gn > 0) lr = lr * coeff * pn / (gn + wd * pn);
    for (int64_t i = 0; i < n; i++) {
        T vi = v[i] * mu + lr * (g[i] + wd * p[i]);
        T pi = p[i];
        vo[i] = vi;
        po[i] = pi - vi;
    }
)

static int lars_momentum_k(oar_kernel_ctx_t *k)
{
    const oar_optx_attrs_t *a = oar_k_attrs(k);
    gin_t gi;
    const void *p, *v;
    double lr;
    int rc = param_grad_in(k, OAR_LARS_MOMENTUM_GRAD, false, &gi, &p);
    if (rc == OAR_OK) rc = oar_opt_state_in(k, OAR_LARS_MOMENTUM_VELOCITY, "Velocity", gi.dt, gi.numel, &v);
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, OAR_LARS_MOMENTUM_LR, "LearningRate", &lr);
    void *po = NULL, *vo = NULL;
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_OPT_PARAM_OUT, "ParamOut", gi.dt, gi.numel, &po);
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_LARS_MOMENTUM_VELOCITY_OUT, "VelocityOut", gi.dt, gi.numel, &vo);
    if (rc == OAR_OK)
        (gi.dt == OAR_FP32 ? lars_math_float : lars_math_double)(
            gi.numel, p, gi.g, v, po, vo, lr, a->mu, a->lars_coeff, a->lars_weight_decay);
    gin_free(&gi);
    return rc;
}
REGISTER_BOTH("lars_momentum", lars_momentum_k)

/* ---- ftrl (Fluid 1.8 ftrl_op.h) --------------------------------------------
 * l1, l2 += 1e-10;  new = sq + g^2
 * lin += g - (new^-pw - sq^-pw) / lr p
 * p = |lin| > l1 ? (l1 sign(lin) - lin) / (new^-pw / lr + 2 l2) : 0;  sq = new
 * (pw = -0.5 uses sqrt, as Fluid's special case does). Elements of rows a
 * sparse gradient does not name (row_in[r] false) keep their values. */
TYPED(ftrl_math, (int64_t n, int64_t width, const bool *row_in, const void *pv, const void *gv,
                  const void *sqv, const void *linv, void *pov, void *sqov, void *linov,
                  double lr_, double l1_, double l2_, double pw_),
    const T *p = pv, *g = gv, *sq = sqv, *lin = linv;
    T *po = pov, *sqo = sqov, *lino = linov;
    T lr = (T)lr_, l1 = (T)l1_ + (T)1e-10, l2 = (T)l2_ + (T)1e-10, pw = (T)pw_;
    bool half = pw == (T)-0.5;
    for (int64_t i = 0; i < n; i++) {
        T pi = p[i], s = sq[i], li = lin[i];
        if (row_in && !row_in[i / width]) {
            po[i] = pi;
            sqo[i] = s;
            lino[i] = li;
            continue;
        }
        T gi = g[i];
        T na = s + gi * gi;
        T pn = half ? sqrt(na) : pow(na, -pw);
        T ps = half ? sqrt(s) : pow(s, -pw);
        li = li + gi - (pn - ps) / lr * pi;
        T x = (li >= 0 ? l1 : -l1) - li;
        T y = pn / lr + 2 * l2;
        po[i] = fabs(li) > l1 ? x / y : (T)0;
        lino[i] = li;
        sqo[i] = na;
    }
)

static int ftrl_k(oar_kernel_ctx_t *k)
{
    const oar_optx_attrs_t *a = oar_k_attrs(k);
    gin_t gi;
    const void *p, *sq, *lin;
    double lr;
    int rc = param_grad_in(k, OAR_FTRL_GRAD, true, &gi, &p);
    if (rc == OAR_OK) rc = oar_opt_state_in(k, OAR_FTRL_SQ_ACC, "SquaredAccumulator", gi.dt, gi.numel, &sq);
    if (rc == OAR_OK) rc = oar_opt_state_in(k, OAR_FTRL_LIN_ACC, "LinearAccumulator", gi.dt, gi.numel, &lin);
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, OAR_FTRL_LR, "LearningRate", &lr);
    void *po = NULL, *sqo = NULL, *lino = NULL;
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_OPT_PARAM_OUT, "ParamOut", gi.dt, gi.numel, &po);
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_FTRL_SQ_ACC_OUT, "SquaredAccumOut", gi.dt, gi.numel, &sqo);
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_FTRL_LIN_ACC_OUT, "LinearAccumOut", gi.dt, gi.numel, &lino);
    if (rc == OAR_OK)
        (gi.dt == OAR_FP32 ? ftrl_math_float : ftrl_math_double)(
            gi.numel, gi.width ? gi.width : 1, gi.row_in, p, gi.g, sq, lin, po, sqo, lino, lr, a->l1,
            a->l2, a->lr_power);
    gin_free(&gi);
    return rc;
}
REGISTER_BOTH("ftrl", ftrl_k)

/* ---- proximal_adagrad / proximal_gd (Fluid 1.8) ----------------------------
 * (adagrad: m += g^2, step = lr g / sqrt(m); gd: step = lr g)
 * prox = p - step
 * p = l1 > 0 ? sign(prox) max(|prox| - lr l1, 0) / (1 + lr l2) : prox / (1 + lr l2) */
TYPED(prox_math, (int64_t n, const void *pv, const void *gv, const void *mv, void *pov, void *mov,
                  double lr_, double l1_, double l2_),
    const T *p = pv, *g = gv, *m = mv;
    T *po = pov, *mo = mov;
    T lr = (T)lr_, l1 = (T)l1_, l2 = (T)l2_;
    for (int64_t i = 0; i < n; i++) {
        T gi = g[i];
        T step = lr * gi;
        if (m) {
            T mi = m[i] + gi * gi;
            mo[i] = mi;
            step = lr * gi / sqrt(mi);
        }
        T prox = p[i] - step;
        if (l1 > 0) {
            T sh = fabs(prox) - lr * l1;
            if (sh < 0) sh = 0;
            T sg = (T)((prox > 0) - (prox < 0));
            po[i] = sg * sh / (1 + lr * l2);
        } else {
            po[i] = prox / (1 + lr * l2);
        }
    }
)

static int prox_run(oar_kernel_ctx_t *k, int grad, int lr_slot, int moment, int moment_out)
{
    const oar_optx_attrs_t *a = oar_k_attrs(k);
    gin_t gi;
    const void *p, *m = NULL;
    double lr;
    int rc = param_grad_in(k, grad, false, &gi, &p);
    if (rc == OAR_OK && moment >= 0) rc = oar_opt_state_in(k, moment, "Moment", gi.dt, gi.numel, &m);
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, lr_slot, "LearningRate", &lr);
    void *po = NULL, *mo = NULL;
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_OPT_PARAM_OUT, "ParamOut", gi.dt, gi.numel, &po);
    if (rc == OAR_OK && moment >= 0) rc = oar_opt_state_out(k, moment_out, "MomentOut", gi.dt, gi.numel, &mo);
    if (rc == OAR_OK)
        (gi.dt == OAR_FP32 ? prox_math_float : prox_math_double)(gi.numel, p, gi.g, m, po, mo, lr,
                                                                 a->l1, a->l2);
    gin_free(&gi);
    return rc;
}
static int proximal_adagrad_k(oar_kernel_ctx_t *k)
{
    return prox_run(k, OAR_PROXIMAL_ADAGRAD_GRAD, OAR_PROXIMAL_ADAGRAD_LR, OAR_PROXIMAL_ADAGRAD_MOMENT,
                    OAR_PROXIMAL_ADAGRAD_MOMENT_OUT);
}
static int proximal_gd_k(oar_kernel_ctx_t *k)
{
    return prox_run(k, OAR_PROXIMAL_GD_GRAD, OAR_PROXIMAL_GD_LR, -1, -1);
}
REGISTER_BOTH("proximal_adagrad", proximal_adagrad_k)
REGISTER_BOTH("proximal_gd", proximal_gd_k)

/* ---- dpsgd (Fluid 1.8 dpsgd_op.h) -------------------------------------------
 * scale = |g| > clip ? |g| / clip : 1;  n = sigma z, one z ~ N(0, 1) per run
 * p -= lr (g / scale + n / batch_size)
 * Fluid computes the norm, the scale and the noise in float; so does this.
 * z comes from oar's generator (seed 0: the global one; else an op-local one
 * seeded on every run, like the random ops) instead of rand_r(time). */
TYPED(dpsgd_math, (int64_t n, const void *pv, const void *gv, void *pov, double lr_, double clip_,
                   double bs_, double noise_),
    const T *p = pv, *g = gv;
    T *po = pov;
    float norm = 0;
    for (int64_t i = 0; i < n; i++) norm += (float)(g[i] * g[i]);
    norm = sqrtf(norm);
    float scale = norm > (float)clip_ ? norm / (float)clip_ : 1.0f;
    T lr = (T)lr_, noise = (T)(float)noise_, bs = (T)(float)bs_;
    for (int64_t i = 0; i < n; i++) po[i] = p[i] - lr * (g[i] / (T)scale + noise / bs);
)

static int dpsgd_k(oar_kernel_ctx_t *k)
{
    const oar_optx_attrs_t *a = oar_k_attrs(k);
    gin_t gi;
    const void *p;
    double lr;
    int rc = param_grad_in(k, OAR_DPSGD_GRAD, false, &gi, &p);
    if (rc == OAR_OK) rc = oar_opt_scalar_in(k, OAR_DPSGD_LR, "LearningRate", &lr);
    void *po = NULL;
    if (rc == OAR_OK) rc = oar_opt_state_out(k, OAR_OPT_PARAM_OUT, "ParamOut", gi.dt, gi.numel, &po);
    if (rc == OAR_OK) {
        double z;
        if (a->seed != 0) {
            oar_rng_t r;
            oar_rng_seed(&r, (uint64_t)a->seed);
            z = oar_rng_normal_r(&r);
        } else {
            z = oar_rng_normal();
        }
        (gi.dt == OAR_FP32 ? dpsgd_math_float : dpsgd_math_double)(
            gi.numel, p, gi.g, po, lr, a->clip, a->batch_size, (float)a->sigma * (float)z);
    }
    gin_free(&gi);
    return rc;
}
REGISTER_BOTH("dpsgd", dpsgd_k)
