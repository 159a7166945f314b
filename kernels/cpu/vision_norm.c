/* vision_norm.c — CPU kernels of spectral_norm, data_norm and their grads
 * (float32, float64). spectral_norm computes in double whatever the dtype.
 * One thread; every sum runs in one fixed order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/vision_norm.h"

/* Weight read as the matrix [h, w] (its dim `dim` first): row[f] and col[f]
 * of each flat element f; and the power iteration's u, v and sigma */
typedef struct {
    int64_t h, w, n;
    int64_t *row, *col;
    double *u, *v, sigma;
} sn_t;

static void sn_free(sn_t *s) {
    free(s->row); free(s->col); free(s->u); free(s->v);
}

static int sn_plan(oar_kernel_ctx_t *k, const oar_tensor_t *wt, const oar_tensor_t *ut, const oar_tensor_t *vt,
                   sn_t *s) {
    const oar_sn_attrs_t *a = oar_k_attrs(k);
    memset(s, 0, sizeof *s);
    const int nd = wt->ndim, dim = a->dim;
    if (nd < 2 || dim >= nd) return oar_k_error(k, OAR_ERR_SHAPE, "Weight must have rank 2 to 5 and more than dim");
    s->n = oar_tensor_numel(wt);
    s->h = wt->dims[dim];
    s->w = s->h ? s->n / s->h : 0;
    if (oar_tensor_numel(ut) != s->h || oar_tensor_numel(vt) != s->w)
        return oar_k_error(k, OAR_ERR_SHAPE, "U ('%s') must hold %lld values and V ('%s') %lld",
                           oar_k_input_name(k, 1, 0), (long long)s->h, oar_k_input_name(k, 2, 0), (long long)s->w);
    s->row = malloc(sizeof(int64_t) * (size_t)(s->n + 1));
    s->col = malloc(sizeof(int64_t) * (size_t)(s->n + 1));
    s->u = malloc(sizeof(double) * (size_t)(s->h + 1));
    s->v = malloc(sizeof(double) * (size_t)(s->w + 1));
    if (!s->row || !s->col || !s->u || !s->v) {
        sn_free(s);
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate spectral_norm's buffers");
    }
    int64_t c[8] = {0};
    for (int64_t f = 0; f < s->n; f++) {
        int64_t r = 0;
        for (int j = 0; j < nd; j++)
            if (j != dim) r = r * wt->dims[j] + c[j];
        s->row[f] = c[dim];
        s->col[f] = r;
        for (int j = nd - 1; j >= 0; j--) {
            if (++c[j] < wt->dims[j]) break;
            c[j] = 0;
        }
    }
    return OAR_OK;
}

/* the power iteration from U and V, then sigma = u^T W v; W given as doubles */
static void sn_iterate(const oar_sn_attrs_t *a, sn_t *s, const double *W) {
    double *tmp_u = s->u, *tmp_v = s->v;
    for (int it = 0; it < a->power_iters; it++) {
        for (int64_t r = 0; r < s->w; r++) tmp_v[r] = 0;
        for (int64_t f = 0; f < s->n; f++) tmp_v[s->col[f]] += W[f] * tmp_u[s->row[f]];
        double nv = 0;
        for (int64_t r = 0; r < s->w; r++) nv += tmp_v[r] * tmp_v[r];
        nv = sqrt(nv) + a->eps;
        for (int64_t r = 0; r < s->w; r++) tmp_v[r] /= nv;
        for (int64_t i = 0; i < s->h; i++) tmp_u[i] = 0;
        for (int64_t f = 0; f < s->n; f++) tmp_u[s->row[f]] += W[f] * tmp_v[s->col[f]];
        double nu = 0;
        for (int64_t i = 0; i < s->h; i++) nu += tmp_u[i] * tmp_u[i];
        nu = sqrt(nu) + a->eps;
        for (int64_t i = 0; i < s->h; i++) tmp_u[i] /= nu;
    }
    double sg = 0;
    for (int64_t f = 0; f < s->n; f++) sg += s->u[s->row[f]] * W[f] * s->v[s->col[f]];
    s->sigma = sg;
}

/* data_norm's slot mode: a show value within 1e-7 of 0 hides its slot */
static inline bool dn_no_show(double v) { return v > -1e-7 && v < 1e-7; }

#define VN_KERNELS(T, SUF, DT)                                                                          \
    /* grad = false: Out = W / sigma; grad = true: Weight@GRAD */                                       \
    static int sn_run_##SUF(oar_kernel_ctx_t *k, bool grad)                                             \
    {                                                                                                   \
        oar_tensor_t *wt = oar_k_input(k, 0, 0), *ut = oar_k_input(k, 1, 0), *vt = oar_k_input(k, 2, 0);\
        sn_t s;                                                                                         \
        OAR_TRY(sn_plan(k, wt, ut, vt, &s));                                                            \
        double *W = malloc(sizeof(double) * (size_t)(s.n + 1));                                         \
        if (!W) { sn_free(&s); return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate spectral_norm's buffers"); } \
        const T *w = oar_tensor_data(wt), *u = oar_tensor_data(ut), *v = oar_tensor_data(vt);           \
        for (int64_t f = 0; f < s.n; f++) W[f] = (double)w[f];                                          \
        for (int64_t i = 0; i < s.h; i++) s.u[i] = (double)u[i];                                        \
        for (int64_t r = 0; r < s.w; r++) s.v[r] = (double)v[r];                                        \
        sn_iterate(oar_k_attrs(k), &s, W);                                                              \
        int rc = OAR_OK;                                                                                \
        void *pv = NULL;                                                                                \
        if (s.sigma == 0) {                                                                             \
            rc = oar_k_error(k, OAR_ERR_NUMERIC, "sigma = u^T W v is 0 for Weight ('%s'): cannot normalize", \
                             oar_k_input_name(k, 0, 0));                                                \
        } else if (!grad) {                                                                             \
            rc = oar_k_output_sized(k, OAR_SN_OUT, "Out", DT, s.n, false, &pv);                         \
            if (rc == OAR_OK)                                                                           \
                for (int64_t f = 0; f < s.n; f++) ((T *)pv)[f] = (T)(W[f] / s.sigma);                   \
        } else {                                                                                        \
            const void *dv;                                                                             \
            rc = oar_k_input_sized(k, OAR_SNG_DOUT, "Out@GRAD", DT, s.n, &dv);                          \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_SNG_DW, "Weight@GRAD", DT, s.n, true, &pv); \
            if (rc == OAR_OK && pv) {                                                                   \
                const T *d = dv;                                                                        \
                double dot = 0;                                                                         \
                for (int64_t f = 0; f < s.n; f++) dot += (double)d[f] * W[f] / s.sigma;                 \
                for (int64_t f = 0; f < s.n; f++)                                                       \
                    ((T *)pv)[f] = (T)(((double)d[f] - s.u[s.row[f]] * s.v[s.col[f]] * dot) / s.sigma); \
            }                                                                                           \
        }                                                                                               \
        free(W);                                                                                        \
        sn_free(&s);                                                                                    \
        return rc;                                                                                      \
    }                                                                                                   \
    static int sn_fwd_##SUF(oar_kernel_ctx_t *k) { return sn_run_##SUF(k, false); }                     \
    static int sn_bwd_##SUF(oar_kernel_ctx_t *k) { return sn_run_##SUF(k, true); }                      \
    OAR_REGISTER_KERNEL("spectral_norm", OAR_PLACE_CPU, DT, sn_fwd_##SUF)                               \
    OAR_REGISTER_KERNEL("spectral_norm_grad", OAR_PLACE_CPU, DT, sn_bwd_##SUF)                          \
                                                                                                        \
    static int dn_fwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_DN_X, 0);                                                 \
        if (xt->ndim != 2) return oar_k_error(k, OAR_ERR_SHAPE, "X must be 2-D [N, C]");                \
        const int64_t N = xt->dims[0], C = xt->dims[1];                                                 \
        const void *bs, *bsum, *bsq;                                                                    \
        OAR_TRY(oar_k_input_sized(k, OAR_DN_BATCHSIZE, "BatchSize", DT, C, &bs));                       \
        OAR_TRY(oar_k_input_sized(k, OAR_DN_BATCHSUM, "BatchSum", DT, C, &bsum));                       \
        OAR_TRY(oar_k_input_sized(k, OAR_DN_BATCHSQUARESUM, "BatchSquareSum", DT, C, &bsq));            \
        void *yv, *mv, *sv;                                                                             \
        OAR_TRY(oar_k_output_sized(k, OAR_DN_Y, "Y", DT, N * C, false, &yv));                           \
        OAR_TRY(oar_k_output_sized(k, OAR_DN_MEANS, "Means", DT, C, false, &mv));                       \
        OAR_TRY(oar_k_output_sized(k, OAR_DN_SCALES, "Scales", DT, C, false, &sv));                     \
        const T *x = oar_tensor_data(xt), *size = bs, *sum = bsum, *sq = bsq;                           \
        T *y = yv, *m = mv, *sc = sv;                                                                   \
        for (int64_t c = 0; c < C; c++) {                                                               \
            m[c] = sum[c] / size[c];                                                                    \
            sc[c] = (T)sqrt((double)(size[c] / sq[c]));                                                 \
        }                                                                                               \
        const int64_t sd = ((const oar_dn_attrs_t *)oar_k_attrs(k))->slot_dim;                          \
        for (int64_t n = 0; n < N; n++)                                                                 \
            for (int64_t c = 0; c < C; c++) {                                                           \
                /* slot mode: a slot whose show (its first value) is 0 gives 0 */                       \
                const bool hidden = sd > 0 && dn_no_show(x[n * C + c - c % sd]);                        \
                y[n * C + c] = hidden ? (T)0 : (x[n * C + c] - m[c]) * sc[c];                           \
            }                                                                                           \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int dn_bwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        const oar_dn_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *xt = oar_k_input(k, OAR_DNG_X, 0);                                                \
        if (xt->ndim != 2) return oar_k_error(k, OAR_ERR_SHAPE, "X must be 2-D [N, C]");                \
        const int64_t N = xt->dims[0], C = xt->dims[1];                                                 \
        const void *mv, *sv, *dv;                                                                       \
        OAR_TRY(oar_k_input_sized(k, OAR_DNG_MEANS, "Means", DT, C, &mv));                              \
        OAR_TRY(oar_k_input_sized(k, OAR_DNG_SCALES, "Scales", DT, C, &sv));                            \
        OAR_TRY(oar_k_input_sized(k, OAR_DNG_DY, "Y@GRAD", DT, N * C, &dv));                            \
        void *dxv, *dsize, *dsum, *dsq;                                                                 \
        OAR_TRY(oar_k_output_sized(k, OAR_DNG_DX, "X@GRAD", DT, N * C, true, &dxv));                    \
        OAR_TRY(oar_k_output_sized(k, OAR_DNG_DSIZE, "BatchSize@GRAD", DT, C, true, &dsize));           \
        OAR_TRY(oar_k_output_sized(k, OAR_DNG_DSUM, "BatchSum@GRAD", DT, C, true, &dsum));              \
        OAR_TRY(oar_k_output_sized(k, OAR_DNG_DSQ, "BatchSquareSum@GRAD", DT, C, true, &dsq));          \
        const T *x = oar_tensor_data(xt), *m = mv, *sc = sv, *dy = dv;                                  \
        if (dxv)                                                                                        \
            for (int64_t n = 0; n < N; n++)                                                             \
                for (int64_t c = 0; c < C; c++) ((T *)dxv)[n * C + c] = dy[n * C + c] * sc[c];          \
        const int64_t sd = a->slot_dim;                                                                 \
        for (int64_t c = 0; c < C; c++) {                                                               \
            T s = 0, q = 0, cnt = 0;                                                                    \
            for (int64_t n = 0; n < N; n++) {                                                           \
                if (sd > 0 && dn_no_show(x[n * C + c - c % sd])) continue;                              \
                const T d = x[n * C + c] - m[c];                                                        \
                s += x[n * C + c];                                                                      \
                q += d * d;                                                                             \
                cnt += 1;                                                                               \
            }                                                                                           \
            T osize = (T)N, osum = s, osq = q + (T)N * (T)a->epsilon;                                   \
            if (sd > 0) {                                                                               \
                /* Fluid's slot rule: means over the showing samples, size 1; 0 when none shows */      \
                osize = cnt >= 1 ? (T)1 : (T)0;                                                         \
                osum = cnt >= 1 ? s / cnt : (T)0;                                                       \
                osq = cnt >= 1 ? q / cnt + cnt * (T)a->epsilon : (T)0;                                  \
            }                                                                                           \
            if (dsize) ((T *)dsize)[c] = osize;                                                         \
            if (dsum) ((T *)dsum)[c] = osum;                                                            \
            if (dsq) ((T *)dsq)[c] = osq;                                                               \
        }                                                                                               \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("data_norm", OAR_PLACE_CPU, DT, dn_fwd_##SUF)                                   \
    OAR_REGISTER_KERNEL("data_norm_grad", OAR_PLACE_CPU, DT, dn_bwd_##SUF)

VN_KERNELS(float, f32, OAR_FP32)
VN_KERNELS(double, f64, OAR_FP64)
