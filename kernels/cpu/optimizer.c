/* optimizer.c — CPU kernels of sgd, momentum, adam, adagrad, rmsprop,
 * adamax, adadelta and decayed_adagrad.
 *
 * One driver serves them all: it reads every input (state tensors, the
 * one-element inputs such as LearningRate, the gradient) before asking for
 * any output, because ParamOut is normally the same variable as Param and
 * oar_k_out_data may hand back a fresh buffer when the old one is shared.
 * Each op supplies a span function that updates elements [lo, hi) given
 * the gradient of those elements, computing in the parameter's dtype.
 *
 * A SELECTED_ROWS gradient is first merged (rows sorted, duplicates summed).
 * Then either only its rows are updated (sgd, adagrad, adam with lazy_mode:
 * a zero gradient would leave the others unchanged anyway, or lazy mode says
 * to skip them), or every row steps and the absent rows see a zero gradient,
 * which is exactly the dense update of the densified gradient (momentum,
 * adam, rmsprop, adamax, adadelta, decayed_adagrad). */
#include "op.h"
#include "ops/optimizer_util.h"
#include "optimizer_args.h"

#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#define MAX_STATES 4
#define MAX_SCALARS 4

typedef struct {
    int64_t numel;
    const void *in[MAX_STATES];   /* state inputs; [0] is Param; NULL if absent */
    void *out[MAX_STATES];
    double s[MAX_SCALARS];        /* one-element inputs */
    double h[4];                  /* hyperparameters from attrs */
    bool flag;                    /* use_nesterov / centered */
} opt_t;

typedef void (*span_fn)(const opt_t *o, int64_t lo, int64_t hi, const void *g);

enum { SP_ROWS, SP_ALL };

/* Slots by the definitions' indices (src/ops/optimizer.ops); names are for
 * messages. Lists end with an entry whose name is NULL. */
typedef struct { int in, out; const char *in_name, *out_name; } state_slot_t;
typedef struct { int slot; const char *name; } scalar_slot_t;
typedef struct {
    const state_slot_t *states;   /* Param first */
    const scalar_slot_t *scalars;
    int grad;                     /* Grad's slot */
    int sparse;                   /* SP_ROWS or SP_ALL */
} opt_spec_t;

static const char *nm(const char *s) { return s ? s : "?"; }

/* ---- inputs and outputs -------------------------------------------------- */
/* input `slot` (`name` in messages) of the param dtype and, when numel >= 0,
 * Param's element count */
int oar_opt_state_in(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel,
                    const void **p)
{
    const oar_tensor_t *t = oar_k_input(k, slot, 0);
    *p = NULL;
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                               nm(oar_k_input_name(k, slot, 0)));
    if (t->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s like Param",
                           name, nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name(t->dtype)),
                           oar_dtype_name(dtype));
    if (numel >= 0 && oar_tensor_numel_of(t) != numel)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld elements, expected %lld like "
                           "Param '%s'", name, nm(oar_k_input_name(k, slot, 0)),
                           (long long)oar_tensor_numel_of(t), (long long)numel,
                           nm(oar_k_input_name(k, OAR_OPT_PARAM, 0)));
    *p = oar_tensor_data((oar_tensor_t *)t);
    if (!*p && oar_tensor_numel_of(t) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no data", name,
                           nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

int oar_opt_scalar_in(oar_kernel_ctx_t *k, int slot, const char *name, double *v)
{
    oar_tensor_t *t = oar_k_input(k, slot, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                               nm(oar_k_input_name(k, slot, 0)));
    const void *p = oar_tensor_data(t);
    if (oar_tensor_numel_of(t) != 1 || !p)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld elements, expected 1", name,
                           nm(oar_k_input_name(k, slot, 0)), (long long)oar_tensor_numel_of(t));
    if (t->dtype == OAR_FP32) *v = *(const float *)p;
    else if (t->dtype == OAR_FP64) *v = *(const double *)p;
    else return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected float32 or "
                            "float64", name, nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name(t->dtype)));
    return OAR_OK;
}

int oar_opt_state_out(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel, void **p)
{
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    *p = NULL;
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", name);
    if (oar_tensor_numel_of(t) != numel)
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has %lld elements, expected %lld",
                           name, nm(oar_k_output_name(k, slot, 0)),
                           (long long)oar_tensor_numel_of(t), (long long)numel);
    *p = oar_k_output_data(k, slot, 0, dtype);
    return *p ? OAR_OK : OAR_ERR_NOMEM;
}

/* Writes a one-element output in its own dtype (beta powers). */
static int scalar_out(oar_kernel_ctx_t *k, int slot, const char *name, double v)
{
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", name);
    int dt = t->dtype == OAR_FP64 ? OAR_FP64 : OAR_FP32;
    void *p;
    OAR_TRY(oar_opt_state_out(k, slot, name, dt, 1, &p));
    if (dt == OAR_FP64) *(double *)p = v; else *(float *)p = (float)v;
    return OAR_OK;
}

/* ---- sparse gradients ---------------------------------------------------- */
typedef struct { int64_t row, idx; } row_ref_t;

static int cmp_row_ref(const void *a, const void *b)
{
    const row_ref_t *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;   /* stable: sums in input order */
}

typedef struct {
    int64_t n;          /* distinct rows */
    int64_t *rows;      /* sorted */
    void *vals;         /* [n, width] in the param dtype */
} merged_t;

static int merge_rows(oar_kernel_ctx_t *k, int grad_slot, const oar_selected_rows_t *sr, int dtype,
                      int64_t height, int64_t width, merged_t *m)
{
    memset(m, 0, sizeof *m);
    const char *gname = nm(oar_k_input_name(k, grad_slot, 0));
    const oar_tensor_t *v = sr->value;
    int64_t nr = sr->nrows, need;
    if (oar_mul_checked(nr, width, &need) != OAR_OK) return OAR_ERR_SHAPE;
    if (nr == 0) return OAR_OK;
    if (!v || !oar_tensor_has_data(v))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "sparse Grad '%s' has %lld rows but no value tensor",
                           gname, (long long)nr);
    if (v->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "sparse Grad '%s' has dtype %s, expected %s like Param",
                           gname, nm(oar_dtype_name(v->dtype)), oar_dtype_name(dtype));
    if (oar_tensor_numel_of(v) != need)
        return oar_k_error(k, OAR_ERR_SHAPE, "sparse Grad '%s' has %lld rows and %lld values; "
                           "Param '%s' rows have %lld elements, so %lld values were expected",
                           gname, (long long)nr, (long long)oar_tensor_numel_of(v),
                           nm(oar_k_input_name(k, OAR_OPT_PARAM, 0)), (long long)width, (long long)need);
    row_ref_t *refs = oar_xmalloc(sizeof *refs * (size_t)nr);
    if (!refs) return OAR_ERR_NOMEM;
    for (int64_t i = 0; i < nr; i++) {
        if (sr->rows[i] < 0 || sr->rows[i] >= height) {
            free(refs);
            return oar_k_error(k, OAR_ERR_RANGE, "sparse Grad '%s' names row %lld, but Param '%s' "
                               "has %lld rows", gname, (long long)sr->rows[i],
                               nm(oar_k_input_name(k, OAR_OPT_PARAM, 0)), (long long)height);
        }
        refs[i].row = sr->rows[i];
        refs[i].idx = i;
    }
    qsort(refs, (size_t)nr, sizeof *refs, cmp_row_ref);
    size_t es = oar_dtype_size(dtype);
    m->rows = oar_xmalloc(sizeof *m->rows * (size_t)nr);
    m->vals = m->rows ? oar_xcalloc((size_t)need, es) : NULL;
    if (!m->vals) {
        free(refs);
        free(m->rows);
        m->rows = NULL;
        return OAR_ERR_NOMEM;
    }
    const void *src = v->buf->data;
    for (int64_t i = 0; i < nr; i++) {
        if (m->n == 0 || m->rows[m->n - 1] != refs[i].row) m->rows[m->n++] = refs[i].row;
        int64_t d = (m->n - 1) * width, s = refs[i].idx * width;
        if (dtype == OAR_FP32) {
            float *dst = (float *)m->vals + d;
            const float *sv = (const float *)src + s;
            for (int64_t j = 0; j < width; j++) dst[j] += sv[j];
        } else {
            double *dst = (double *)m->vals + d;
            const double *sv = (const double *)src + s;
            for (int64_t j = 0; j < width; j++) dst[j] += sv[j];
        }
    }
    free(refs);
    return OAR_OK;
}

/* ---- the driver ---------------------------------------------------------- */
static int opt_run(oar_kernel_ctx_t *k, const opt_spec_t *sp, opt_t *o, span_fn fn)
{
    int dt = oar_k_dtype(k);
    size_t es = oar_dtype_size(dt);
    const void *pv;
    OAR_TRY(oar_opt_state_in(k, OAR_OPT_PARAM, "Param", dt, -1, &pv));
    const oar_tensor_t *pt = oar_k_input(k, OAR_OPT_PARAM, 0);
    int64_t numel = oar_tensor_numel_of(pt);
    int64_t height = pt->ndim > 0 ? pt->dims[0] : 1;
    int64_t width = height > 0 ? numel / height : 0;
    o->numel = numel;
    int ns = 0;
    for (const state_slot_t *s = sp->states; s->in_name; s++, ns++) {
        o->in[ns] = NULL;
        if (oar_k_nin(k, s->in) == 0) continue;   /* dispensable state (MeanGrad) */
        OAR_TRY(oar_opt_state_in(k, s->in, s->in_name, dt, numel, &o->in[ns]));
    }
    int nsc = 0;
    for (const scalar_slot_t *s = sp->scalars; s->name; s++, nsc++)
        OAR_TRY(oar_opt_scalar_in(k, s->slot, s->name, &o->s[nsc]));

    oar_variable_t *gvar = oar_k_input_var(k, sp->grad, 0);
    bool sparse = gvar && oar_variable_type(gvar) == OAR_VAR_SELECTED_ROWS;
    const void *g = NULL;
    merged_t m = {0};
    if (sparse) OAR_TRY(merge_rows(k, sp->grad, gvar->u.rows, dt, height, width, &m));
    else OAR_TRY(oar_opt_state_in(k, sp->grad, "Grad", dt, numel, &g));

    int rc = OAR_OK;
    ns = 0;
    for (const state_slot_t *s = sp->states; s->in_name && rc == OAR_OK; s++, ns++) {
        o->out[ns] = NULL;
        /* an absent output is a dispensable one (MeanGradOut of plain rmsprop) */
        if (!o->in[ns] || oar_k_nout(k, s->out) == 0) continue;
        rc = oar_opt_state_out(k, s->out, s->out_name, dt, numel, &o->out[ns]);
    }
    if (rc != OAR_OK) goto done;

    if (!sparse) {
        fn(o, 0, numel, g);
    } else if (sp->sparse == SP_ROWS) {
        /* untouched rows keep their values, also when the output is a new buffer */
        for (int i = 0; i < ns; i++)
            if (o->in[i] && o->out[i] && o->out[i] != o->in[i] && numel > 0)
                memcpy(o->out[i], o->in[i], (size_t)numel * es);
        for (int64_t j = 0; j < m.n; j++)
            fn(o, m.rows[j] * width, (m.rows[j] + 1) * width, (const char *)m.vals + j * width * (int64_t)es);
    } else {
        void *zero = oar_xcalloc((size_t)(width ? width : 1), es);
        if (!zero) { rc = OAR_ERR_NOMEM; goto done; }
        int64_t j = 0;
        for (int64_t r = 0; r < height; r++) {
            const void *gr = zero;
            if (j < m.n && m.rows[j] == r) gr = (const char *)m.vals + j++ * width * (int64_t)es;
            fn(o, r * width, (r + 1) * width, gr);
        }
        free(zero);
    }
done:
    free(m.rows);
    free(m.vals);
    return rc;
}

/* Defines name##_float and name##_double spans from one body. The body sees
 * T, the states' typed pointers via IN(i)/OUT(i), g_ (this element's
 * gradient) and i. PRE declares per-call constants. */
#define SPAN(name, PRE, ...)                                                    \
    SPAN_T(name, float, PRE, __VA_ARGS__)                                       \
    SPAN_T(name, double, PRE, __VA_ARGS__)
/* The state pointers are copied into locals so the compiler can keep them in
 * registers; `ivdep` because in-place updates (ParamOut is Param) alias only
 * at the same index, which never creates a loop-carried dependence. */
#define SPAN_T(name, TY, PRE, ...)                                              \
    static void name##_##TY(const opt_t *o, int64_t lo, int64_t hi, const void *gv) \
    {                                                                           \
        typedef TY T;                                                           \
        const T *g = (const T *)gv - lo;                                        \
        const T *in0 = o->in[0], *in1 = o->in[1], *in2 = o->in[2], *in3 = o->in[3]; \
        T *out0 = o->out[0], *out1 = o->out[1], *out2 = o->out[2], *out3 = o->out[3]; \
        (void)in0; (void)in1; (void)in2; (void)in3;                             \
        (void)out0; (void)out1; (void)out2; (void)out3;                         \
        PRE;                                                                    \
        /* a false omp `if` still enters the runtime: keep row-sized spans \
         * (sparse updates call once per row) off it entirely */           \
        if (hi - lo > 262144) {                                                 \
            _Pragma("omp parallel for simd")                                    \
            for (int64_t i = lo; i < hi; i++) {                                 \
                T g_ = g[i];                                                    \
                __VA_ARGS__;                                                    \
            }                                                                   \
        } else {                                                                \
            _Pragma("GCC ivdep")                                                \
            for (int64_t i = lo; i < hi; i++) {                                 \
                T g_ = g[i];                                                    \
                __VA_ARGS__;                                                    \
            }                                                                   \
        }                                                                       \
    }
#define IN(i) in##i
#define OUT(i) out##i

/* SETUP sees the decoded attributes as `a` */
#define KERNELS(op, spec, SETUP)                                                \
    static int op##_run(oar_kernel_ctx_t *k, span_fn fn)                        \
    {                                                                           \
        const oar_opt_attrs_t *a = oar_k_attrs(k);                              \
        opt_t o = {0};                                                          \
        (void)a;                                                                \
        SETUP;                                                                  \
        return opt_run(k, &spec, &o, fn);                                       \
    }                                                                           \
    static int op##_f32(oar_kernel_ctx_t *k) { return op##_run(k, op##_span_float); } \
    static int op##_f64(oar_kernel_ctx_t *k) { return op##_run(k, op##_span_double); } \
    OAR_REGISTER_KERNEL(#op, OAR_PLACE_CPU, OAR_FP32, op##_f32)                 \
    OAR_REGISTER_KERNEL(#op, OAR_PLACE_CPU, OAR_FP64, op##_f64)

#define STATE(in, out, in_name, out_name) {in, out, in_name, out_name}
#define PARAM_STATE STATE(OAR_OPT_PARAM, OAR_OPT_PARAM_OUT, "Param", "ParamOut")
#define STATES_END {0, 0, NULL, NULL}
#define SCALARS_END {0, NULL}
static const scalar_slot_t no_scalars[] = {SCALARS_END};

/* ---- sgd: p -= lr g ------------------------------------------------------ */
static const state_slot_t sgd_states[] = {PARAM_STATE, STATES_END};
static const scalar_slot_t sgd_scalars[] = {{OAR_SGD_LR, "LearningRate"}, SCALARS_END};
static const opt_spec_t sgd_spec = {sgd_states, sgd_scalars, OAR_SGD_GRAD, SP_ROWS};
SPAN(sgd_span, T lr = (T)o->s[0], OUT(0)[i] = IN(0)[i] - lr * g_)
KERNELS(sgd, sgd_spec, )

/* ---- momentum: v = mu v + g; p -= lr v  (nesterov: p -= lr (g + mu v)) ---- */
static const state_slot_t momentum_states[] = {
    PARAM_STATE, STATE(OAR_MOMENTUM_VELOCITY, OAR_MOMENTUM_VELOCITY_OUT, "Velocity", "VelocityOut"),
    STATES_END};
static const scalar_slot_t momentum_scalars[] = {{OAR_MOMENTUM_LR, "LearningRate"}, SCALARS_END};
static const opt_spec_t momentum_spec = {momentum_states, momentum_scalars, OAR_MOMENTUM_GRAD, SP_ALL};
SPAN(momentum_span, T lr = (T)o->s[0]; T mu = (T)o->h[0]; bool nest = o->flag, {
    T v = mu * IN(1)[i] + g_;
    T p = IN(0)[i];
    OUT(1)[i] = v;
    OUT(0)[i] = nest ? p - (g_ + mu * v) * lr : p - lr * v;
})
KERNELS(momentum, momentum_spec, {
    o.h[0] = a->mu;
    o.flag = a->use_nesterov;
})

/* ---- adam (Fluid 1.8) ----------------------------------------------------
 * lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t)
 * m1 = beta1 m1 + (1 - beta1) g;  m2 = beta2 m2 + (1 - beta2) g^2
 * p -= lr_t m1 / (sqrt(m2) + eps sqrt(1 - beta2^t)) */
static const state_slot_t adam_states[] = {
    PARAM_STATE, STATE(OAR_ADAM_MOMENT1, OAR_ADAM_MOMENT1_OUT, "Moment1", "Moment1Out"),
    STATE(OAR_ADAM_MOMENT2, OAR_ADAM_MOMENT2_OUT, "Moment2", "Moment2Out"), STATES_END};
static const scalar_slot_t adam_scalars[] = {
    {OAR_ADAM_LR, "LearningRate"}, {OAR_ADAM_BETA1_POW, "Beta1Pow"}, {OAR_ADAM_BETA2_POW, "Beta2Pow"},
    SCALARS_END};
SPAN(adam_span,
     T b1 = (T)o->h[0]; T b2 = (T)o->h[1];
     T lr_t = (T)(o->s[0] * sqrt(1.0 - o->s[2]) / (1.0 - o->s[1]));
     T eps_t = (T)(o->h[2] * sqrt(1.0 - o->s[2])), {
    T m1 = b1 * IN(1)[i] + (1 - b1) * g_;
    T m2 = b2 * IN(2)[i] + (1 - b2) * g_ * g_;
    T p = IN(0)[i];
    OUT(1)[i] = m1;
    OUT(2)[i] = m2;
    OUT(0)[i] = p - lr_t * m1 / (sqrt(m2) + eps_t);
})
static int adam_run(oar_kernel_ctx_t *k, span_fn fn)
{
    const oar_opt_attrs_t *a = oar_k_attrs(k);
    opt_t o = {0};
    o.h[0] = a->beta1;
    o.h[1] = a->beta2;
    o.h[2] = a->epsilon;
    /* Beta1Tensor/Beta2Tensor override the attrs (schedules of beta) */
    if (oar_k_nin(k, OAR_ADAM_BETA1_TENSOR) > 0)
        OAR_TRY(oar_opt_scalar_in(k, OAR_ADAM_BETA1_TENSOR, "Beta1Tensor", &o.h[0]));
    if (oar_k_nin(k, OAR_ADAM_BETA2_TENSOR) > 0)
        OAR_TRY(oar_opt_scalar_in(k, OAR_ADAM_BETA2_TENSOR, "Beta2Tensor", &o.h[1]));
    opt_spec_t spec = {adam_states, adam_scalars, OAR_ADAM_GRAD, a->lazy_mode ? SP_ROWS : SP_ALL};
    OAR_TRY(opt_run(k, &spec, &o, fn));
    /* o.s[1], o.s[2] were read before any output: safe when BetaPowOut is BetaPow */
    if (oar_k_nout(k, OAR_ADAM_BETA1_POW_OUT) > 0)
        OAR_TRY(scalar_out(k, OAR_ADAM_BETA1_POW_OUT, "Beta1PowOut", o.s[1] * o.h[0]));
    if (oar_k_nout(k, OAR_ADAM_BETA2_POW_OUT) > 0)
        OAR_TRY(scalar_out(k, OAR_ADAM_BETA2_POW_OUT, "Beta2PowOut", o.s[2] * o.h[1]));
    return OAR_OK;
}
static int adam_f32(oar_kernel_ctx_t *k) { return adam_run(k, adam_span_float); }
static int adam_f64(oar_kernel_ctx_t *k) { return adam_run(k, adam_span_double); }
OAR_REGISTER_KERNEL("adam", OAR_PLACE_CPU, OAR_FP32, adam_f32)
OAR_REGISTER_KERNEL("adam", OAR_PLACE_CPU, OAR_FP64, adam_f64)

/* ---- adagrad: m += g^2; p -= lr g / (sqrt(m) + eps) ------------------------ */
static const state_slot_t adagrad_states[] = {
    PARAM_STATE, STATE(OAR_ADAGRAD_MOMENT, OAR_ADAGRAD_MOMENT_OUT, "Moment", "MomentOut"), STATES_END};
static const scalar_slot_t adagrad_scalars[] = {{OAR_ADAGRAD_LR, "LearningRate"}, SCALARS_END};
static const opt_spec_t adagrad_spec = {adagrad_states, adagrad_scalars, OAR_ADAGRAD_GRAD, SP_ROWS};
SPAN(adagrad_span, T lr = (T)o->s[0]; T eps = (T)o->h[0], {
    T m = IN(1)[i] + g_ * g_;
    T p = IN(0)[i];
    OUT(1)[i] = m;
    OUT(0)[i] = p - lr * g_ / (sqrt(m) + eps);
})
KERNELS(adagrad, adagrad_spec, o.h[0] = a->epsilon)

/* ---- decayed_adagrad: m = decay m + (1 - decay) g^2; p -= lr g / (sqrt(m) + eps) */
static const opt_spec_t decayed_adagrad_spec = {adagrad_states, adagrad_scalars, OAR_ADAGRAD_GRAD, SP_ALL};
SPAN(decayed_adagrad_span, T lr = (T)o->s[0]; T dec = (T)o->h[0]; T eps = (T)o->h[1], {
    T m = dec * IN(1)[i] + (1 - dec) * g_ * g_;
    T p = IN(0)[i];
    OUT(1)[i] = m;
    OUT(0)[i] = p - lr * g_ / (sqrt(m) + eps);
})
KERNELS(decayed_adagrad, decayed_adagrad_spec, {
    o.h[0] = a->decay;
    o.h[1] = a->epsilon;
})

/* ---- rmsprop --------------------------------------------------------------
 * ms = rho ms + (1 - rho) g^2
 * centered: mg = rho mg + (1 - rho) g;  mom = momentum mom + lr g / sqrt(ms - mg^2 + eps)
 * else:                                  mom = momentum mom + lr g / sqrt(ms + eps)
 * p -= mom */
static const state_slot_t rmsprop_states[] = {
    PARAM_STATE, STATE(OAR_RMSPROP_MEAN_SQUARE, OAR_RMSPROP_MEAN_SQUARE_OUT, "MeanSquare", "MeanSquareOut"),
    STATE(OAR_RMSPROP_MOMENT, OAR_RMSPROP_MOMENT_OUT, "Moment", "MomentOut"),
    STATE(OAR_RMSPROP_MEAN_GRAD, OAR_RMSPROP_MEAN_GRAD_OUT, "MeanGrad", "MeanGradOut"), STATES_END};
static const scalar_slot_t rmsprop_scalars[] = {{OAR_RMSPROP_LR, "LearningRate"}, SCALARS_END};
static const opt_spec_t rmsprop_spec = {rmsprop_states, rmsprop_scalars, OAR_RMSPROP_GRAD, SP_ALL};
SPAN(rmsprop_span,
     T lr = (T)o->s[0]; T rho = (T)o->h[0]; T mom_c = (T)o->h[1]; T eps = (T)o->h[2];
     bool centered = o->flag, {
    T ms = rho * IN(1)[i] + (1 - rho) * g_ * g_;
    T denom = ms + eps;
    if (centered) {
        T mg = rho * IN(3)[i] + (1 - rho) * g_;
        OUT(3)[i] = mg;
        denom -= mg * mg;
    }
    T mom = mom_c * IN(2)[i] + lr * g_ / sqrt(denom);
    T p = IN(0)[i];
    OUT(1)[i] = ms;
    OUT(2)[i] = mom;
    OUT(0)[i] = p - mom;
    /* a MeanGrad that is given but unused (not centered) is carried over */
    if (!centered && OUT(3)) OUT(3)[i] = IN(3)[i];
})
static int rmsprop_check(oar_kernel_ctx_t *k)
{
    if (((const oar_opt_attrs_t *)oar_k_attrs(k))->centered && oar_k_nin(k, OAR_RMSPROP_MEAN_GRAD) == 0)
        return oar_k_error(k, OAR_ERR_INVALID, "centered rmsprop needs input MeanGrad");
    return OAR_OK;
}
KERNELS(rmsprop, rmsprop_spec, {
    OAR_TRY(rmsprop_check(k));
    o.h[0] = a->decay;
    o.h[1] = a->momentum;
    o.h[2] = a->epsilon;
    o.flag = a->centered;
})

/* ---- adamax ---------------------------------------------------------------
 * m = beta1 m + (1 - beta1) g;  u = max(beta2 u + eps, |g|)
 * p -= lr / (1 - beta1^t) m / u   (Beta1Pow is advanced by the caller) */
static const state_slot_t adamax_states[] = {
    PARAM_STATE, STATE(OAR_ADAMAX_MOMENT, OAR_ADAMAX_MOMENT_OUT, "Moment", "MomentOut"),
    STATE(OAR_ADAMAX_INF_NORM, OAR_ADAMAX_INF_NORM_OUT, "InfNorm", "InfNormOut"), STATES_END};
static const scalar_slot_t adamax_scalars[] = {
    {OAR_ADAMAX_LR, "LearningRate"}, {OAR_ADAMAX_BETA1_POW, "Beta1Pow"}, SCALARS_END};
static const opt_spec_t adamax_spec = {adamax_states, adamax_scalars, OAR_ADAMAX_GRAD, SP_ALL};
SPAN(adamax_span,
     T b1 = (T)o->h[0]; T b2 = (T)o->h[1]; T eps = (T)o->h[2];
     T lr_t = (T)(o->s[0] / (1.0 - o->s[1])), {
    T m = b1 * IN(1)[i] + (1 - b1) * g_;
    T u = b2 * IN(2)[i] + eps;
    T ag = fabs(g_);
    if (ag > u) u = ag;
    T p = IN(0)[i];
    OUT(1)[i] = m;
    OUT(2)[i] = u;
    OUT(0)[i] = p - lr_t * m / u;
})
KERNELS(adamax, adamax_spec, {
    o.h[0] = a->beta1;
    o.h[1] = a->beta2;
    o.h[2] = a->epsilon;
})

/* ---- adadelta -------------------------------------------------------------
 * Eg2 = rho Eg2 + (1 - rho) g^2;  dx = -sqrt((Edx2 + eps) / (Eg2 + eps)) g
 * Edx2 = rho Edx2 + (1 - rho) dx^2;  p += dx */
static const state_slot_t adadelta_states[] = {
    PARAM_STATE,
    STATE(OAR_ADADELTA_AVG_SQ_GRAD, OAR_ADADELTA_AVG_SQ_GRAD_OUT, "AvgSquaredGrad", "AvgSquaredGradOut"),
    STATE(OAR_ADADELTA_AVG_SQ_UPDATE, OAR_ADADELTA_AVG_SQ_UPDATE_OUT, "AvgSquaredUpdate",
          "AvgSquaredUpdateOut"),
    STATES_END};
static const opt_spec_t adadelta_spec = {adadelta_states, no_scalars, OAR_ADADELTA_GRAD, SP_ALL};
SPAN(adadelta_span, T rho = (T)o->h[0]; T eps = (T)o->h[1], {
    T eg2 = rho * IN(1)[i] + (1 - rho) * g_ * g_;
    T dx = -sqrt((IN(2)[i] + eps) / (eg2 + eps)) * g_;
    T edx2 = rho * IN(2)[i] + (1 - rho) * dx * dx;
    T p = IN(0)[i];
    OUT(1)[i] = eg2;
    OUT(2)[i] = edx2;
    OUT(0)[i] = p + dx;
})
KERNELS(adadelta, adadelta_spec, {
    o.h[0] = a->rho;
    o.h[1] = a->epsilon;
})
