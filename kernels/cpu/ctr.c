/*
 * ctr.c — CPU kernels of cvm and cvm_grad (src/ops/ctr.ops), float32 and
 * float64.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/ctr.h"

#define CVM_KERNELS(SFX, T, DT)                                                                            \
    static int cvm_fwd_##SFX(oar_kernel_ctx_t *k)                                                          \
    {                                                                                                      \
        const oar_cvm_attrs_t *a = oar_k_attrs(k);                                                         \
        const oar_tensor_t *x;                                                                             \
        const void *xp;                                                                                    \
        OAR_TRY(oar_sk_input(k, OAR_CVM_X, "X", DT, &x, &xp));                                             \
        const int64_t n = x->dims[0], D = x->dims[1], W = a->use_cvm ? D : D - 2;                          \
        void *yp;                                                                                          \
        OAR_TRY(oar_k_output_sized(k, OAR_CVM_Y, "Y", DT, n * W, false, &yp));                             \
        const T *xv = xp;                                                                                  \
        T *y = yp;                                                                                         \
        for (int64_t r = 0; r < n; r++) {                                                                  \
            const T *xr = xv + r * D;                                                                      \
            T *yr = y + r * W;                                                                             \
            if (a->use_cvm) {                                                                              \
                memcpy(yr, xr, sizeof(T) * (size_t)D);                                                     \
                yr[0] = (T)log(xr[0] + 1);                                                                 \
                yr[1] = (T)log(xr[1] + 1) - yr[0];                                                         \
            } else {                                                                                       \
                memcpy(yr, xr + 2, sizeof(T) * (size_t)W);                                                 \
            }                                                                                              \
        }                                                                                                  \
        return OAR_OK;                                                                                     \
    }                                                                                                      \
    static int cvm_bwd_##SFX(oar_kernel_ctx_t *k)                                                          \
    {                                                                                                      \
        const oar_cvm_attrs_t *a = oar_k_attrs(k);                                                         \
        const oar_tensor_t *x, *cvm, *dy;                                                                  \
        const void *xp, *cp, *gp;                                                                          \
        OAR_TRY(oar_sk_input(k, OAR_CVMG_X, "X", DT, &x, &xp));                                            \
        OAR_TRY(oar_sk_input(k, OAR_CVMG_CVM, "CVM", DT, &cvm, &cp));                                      \
        OAR_TRY(oar_sk_input(k, OAR_CVMG_DY, "Y@GRAD", DT, &dy, &gp));                                     \
        const int64_t n = x->dims[0], D = x->dims[1], W = a->use_cvm ? D : D - 2;                          \
        if (oar_tensor_numel_of(dy) != n * W)                                                              \
            return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD has %lld values; %lld expected",                  \
                               (long long)oar_tensor_numel_of(dy), (long long)(n * W));                    \
        /* one CVM row per row of X, or per sequence of its LoD (Fluid's cvm_grad) */                      \
        const int64_t *offs = x->lod_levels > 0 ? x->lod[0] : NULL;                                        \
        const int64_t groups = offs ? x->lod_size[0] - 1 : n;                                              \
        if (offs && offs[groups] != n)                                                                     \
            return oar_k_error(k, OAR_ERR_SHAPE, "X's first LoD level ends at %lld, not at its %lld rows", \
                               (long long)offs[groups], (long long)n);                                     \
        if (cvm->dims[0] != groups)                                                                        \
            return oar_k_error(k, OAR_ERR_SHAPE, "CVM has %lld rows; one per %s of X (%lld) expected",     \
                               (long long)cvm->dims[0], offs ? "sequence" : "row", (long long)groups);     \
        void *dxp;                                                                                         \
        OAR_TRY(oar_k_output_sized(k, OAR_CVMG_DX, "X@GRAD", DT, n * D, true, &dxp));                      \
        if (!dxp) return OAR_OK;                                                                           \
        const T *g = gp, *cv = cp;                                                                         \
        T *dx = dxp;                                                                                       \
        for (int64_t s = 0; s < groups; s++) {                                                             \
            const int64_t r0 = offs ? offs[s] : s, r1 = offs ? offs[s + 1] : s + 1;                        \
            for (int64_t r = r0; r < r1; r++) {                                                            \
                T *dr = dx + r * D;                                                                        \
                const T *gr = g + r * W;                                                                   \
                if (a->use_cvm) memcpy(dr + 2, gr + 2, sizeof(T) * (size_t)(D - 2));                       \
                else memcpy(dr + 2, gr, sizeof(T) * (size_t)(D - 2));                                      \
                dr[0] = cv[s * 2];                                                                         \
                dr[1] = cv[s * 2 + 1];                                                                     \
            }                                                                                              \
        }                                                                                                  \
        return OAR_OK;                                                                                     \
    }                                                                                                      \
    OAR_REGISTER_KERNEL("cvm", OAR_PLACE_CPU, DT, cvm_fwd_##SFX)                                           \
    OAR_REGISTER_KERNEL("cvm_grad", OAR_PLACE_CPU, DT, cvm_bwd_##SFX)

CVM_KERNELS(f32, float, OAR_FP32)
CVM_KERNELS(f64, double, OAR_FP64)

/* ---- filter_by_instag --------------------------------------------------------- */
static const char *nm(const char *s) { return s ? s : "?"; }

static int instag_set_lod(oar_kernel_ctx_t *k, int slot, const int64_t *offs, int64_t n)
{
    oar_tensor_t *o = oar_k_output(k, slot, 0);
    if (!o) return OAR_OK;
    const int64_t *lv[1] = {offs};
    int64_t sz[1] = {n};
    int rc = oar_tensor_set_lod(o, 1, lv, sz);
    return rc == OAR_OK ? OAR_OK : oar_k_error(k, rc, "cannot set an output's LoD: %s", oar_last_error());
}

static int instag_fwd(oar_kernel_ctx_t *k)
{
    const oar_instag_attrs_t *a = oar_k_attrs(k);
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *ins, *it, *ft;
    const void *xp, *tp, *fp;
    OAR_TRY(oar_sk_input(k, OAR_INSTAG_INS, "Ins", dt, &ins, &xp));
    OAR_TRY(oar_sk_input(k, OAR_INSTAG_INS_TAG, "Ins_tag", OAR_INT64, &it, &tp));
    OAR_TRY(oar_sk_input(k, OAR_INSTAG_FILTER_TAG, "Filter_tag", OAR_INT64, &ft, &fp));
    if (it->lod_levels < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "Ins_tag '%s' has no LoD; each instance's tags are one sequence",
                           nm(oar_k_input_name(k, OAR_INSTAG_INS_TAG, 0)));
    const int64_t *toffs = it->lod[0], ninst = it->lod_size[0] - 1, N = ins->dims[0], D = ins->dims[1];
    const int64_t *iofs = NULL;
    if (a->is_lod) {
        if (ins->lod_levels < 1 || ins->lod_size[0] - 1 != ninst || ins->lod[0][ins->lod_size[0] - 1] != N)
            return oar_k_error(k, OAR_ERR_SHAPE, "Ins '%s' (is_lod) must have one sequence per instance of Ins_tag "
                               "(%lld) ending at its %lld rows", nm(oar_k_input_name(k, OAR_INSTAG_INS, 0)),
                               (long long)ninst, (long long)N);
        iofs = ins->lod[0];
    } else if (ninst != N) {
        return oar_k_error(k, OAR_ERR_SHAPE, "Ins '%s' has %lld rows but Ins_tag '%s' has %lld instances",
                           nm(oar_k_input_name(k, OAR_INSTAG_INS, 0)), (long long)N,
                           nm(oar_k_input_name(k, OAR_INSTAG_INS_TAG, 0)), (long long)ninst);
    }
    const int64_t *tags = tp, *filt = fp, nf = oar_tensor_numel_of(ft);
    int64_t *outl = oar_xmalloc(sizeof(int64_t) * (size_t)(ninst + 2));
    int64_t *src = oar_xmalloc(sizeof(int64_t) * (size_t)(ninst + 1));
    if (!outl || !src) { free(outl); free(src); return OAR_ERR_NOMEM; }
    int64_t kept = 0;
    outl[0] = 0;
    for (int64_t i = 0; i < ninst; i++) {
        bool pass = false;
        for (int64_t j = toffs[i]; j < toffs[i + 1] && !pass; j++)
            for (int64_t f = 0; f < nf && !pass; f++) pass = tags[j] == filt[f];
        if (!pass) continue;
        const int64_t r0 = iofs ? iofs[i] : i, r1 = iofs ? iofs[i + 1] : i + 1;
        src[kept] = r0;
        outl[kept + 1] = outl[kept] + (r1 - r0);
        kept++;
    }
    const size_t es = oar_dtype_size(dt), rb = es * (size_t)D;
    const bool empty = kept == 0;
    int64_t od[2] = {empty ? 1 : outl[kept], D}, wd[2] = {empty ? 1 : kept, 1}, md[2] = {empty ? 1 : kept, 3};
    int rc = OAR_OK;
    char *out = oar_k_output_resized(k, OAR_INSTAG_OUT, od, 2, dt);
    float *lw = oar_k_output_resized(k, OAR_INSTAG_LOSS_WEIGHT, wd, 2, OAR_FP32);
    int64_t *map = oar_k_output_resized(k, OAR_INSTAG_INDEX_MAP, md, 2, OAR_INT64);
    if ((!out && od[0] * D > 0) || !lw || !map) rc = OAR_ERR_NOMEM;
    int64_t mapl[2] = {0, 1}, *ml = NULL;
    if (rc == OAR_OK && empty) {
        outl[1] = 1;
        for (int64_t j = 0; j < D; j++) {
            switch (dt) {
            case OAR_FP32: ((float *)out)[j] = (float)a->out_val_if_empty; break;
            case OAR_FP64: ((double *)out)[j] = (double)a->out_val_if_empty; break;
            case OAR_INT32: ((int32_t *)out)[j] = (int32_t)a->out_val_if_empty; break;
            default: ((int64_t *)out)[j] = a->out_val_if_empty; break;
            }
        }
        map[0] = 0, map[1] = 1, map[2] = 1;
        lw[0] = 0;
        ml = mapl;
    } else if (rc == OAR_OK) {
        ml = oar_xmalloc(sizeof(int64_t) * (size_t)(kept + 1));
        if (!ml) rc = OAR_ERR_NOMEM;
        for (int64_t q = 0; rc == OAR_OK && q < kept; q++) {
            const int64_t len = outl[q + 1] - outl[q];
            memcpy(out + (size_t)outl[q] * rb, (const char *)xp + (size_t)src[q] * rb, rb * (size_t)len);
            map[q * 3] = outl[q], map[q * 3 + 1] = src[q], map[q * 3 + 2] = len;
            lw[q] = 1;
            ml[q] = q;
        }
        if (ml) ml[kept] = kept;
    }
    if (rc == OAR_OK) rc = instag_set_lod(k, OAR_INSTAG_OUT, outl, (empty ? 1 : kept) + 1);
    if (rc == OAR_OK) rc = instag_set_lod(k, OAR_INSTAG_LOSS_WEIGHT, ml, (empty ? 1 : kept) + 1);
    if (rc == OAR_OK) rc = instag_set_lod(k, OAR_INSTAG_INDEX_MAP, ml, (empty ? 1 : kept) + 1);
    if (ml != mapl) free(ml);
    free(outl);
    free(src);
    return rc;
}

static int instag_bwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *ins = oar_k_input(k, OAR_INSTAGG_INS, 0), *lwt, *mt, *gt;
    const void *lp, *mp, *gp;
    if (!ins) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Ins has no value");
    OAR_TRY(oar_sk_input(k, OAR_INSTAGG_LOSS_WEIGHT, "LossWeight", OAR_FP32, &lwt, &lp));
    OAR_TRY(oar_sk_input(k, OAR_INSTAGG_INDEX_MAP, "IndexMap", OAR_INT64, &mt, &mp));
    OAR_TRY(oar_sk_input(k, OAR_INSTAGG_DOUT, "Out@GRAD", dt, &gt, &gp));
    const int64_t N = ins->dims[0], D = ins->ndim > 1 ? ins->dims[1] : 1, G = gt->ndim > 0 ? gt->dims[0] : 0;
    void *dxp;
    OAR_TRY(oar_k_output_sized(k, OAR_INSTAGG_DINS, "Ins@GRAD", dt, N * D, true, &dxp));
    if (!dxp) return OAR_OK;
    const size_t rb = oar_dtype_size(dt) * (size_t)D;
    memset(dxp, 0, rb * (size_t)N);
    const float *lw = lp;
    if (oar_tensor_numel_of(lwt) == 1 && lw[0] == 0) return OAR_OK;   /* nothing was kept */
    const int64_t *map = mp, nm_ = oar_tensor_numel_of(mt) / 3;
    for (int64_t q = 0; q < nm_; q++) {
        const int64_t so = map[q * 3], si = map[q * 3 + 1], len = map[q * 3 + 2];
        if (so < 0 || si < 0 || len < 0 || so + len > G || si + len > N)
            return oar_k_error(k, OAR_ERR_RANGE, "IndexMap row %lld [%lld, %lld, %lld] is outside Out@GRAD (%lld rows) "
                               "or Ins (%lld rows)", (long long)q, (long long)so, (long long)si, (long long)len,
                               (long long)G, (long long)N);
        memcpy((char *)dxp + (size_t)si * rb, (const char *)gp + (size_t)so * rb, rb * (size_t)len);
    }
    return OAR_OK;
}

#define INSTAG_REG(SFX, DT)                                                      \
    static int instag_fwd_##SFX(oar_kernel_ctx_t *k) { return instag_fwd(k); }   \
    static int instag_bwd_##SFX(oar_kernel_ctx_t *k) { return instag_bwd(k); }   \
    OAR_REGISTER_KERNEL("filter_by_instag", OAR_PLACE_CPU, DT, instag_fwd_##SFX) \
    OAR_REGISTER_KERNEL("filter_by_instag_grad", OAR_PLACE_CPU, DT, instag_bwd_##SFX)
INSTAG_REG(f32, OAR_FP32)
INSTAG_REG(f64, OAR_FP64)
INSTAG_REG(i32, OAR_INT32)
INSTAG_REG(i64, OAR_INT64)

/* ---- shuffle_batch -------------------------------------------------------------- */
static int shuffle_fwd(oar_kernel_ctx_t *k)
{
    const oar_shuf_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_SHUF_X, 0), *st = oar_k_input(k, OAR_SHUF_SEED, 0);
    if (!x || !oar_tensor_has_data(x)) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X has no value");
    uint64_t seed;
    if (st && oar_tensor_has_data(st)) {
        if (st->dtype != OAR_INT64 || oar_tensor_numel_of(st) != 1)
            return oar_k_error(k, OAR_ERR_SHAPE, "Seed '%s' must hold one int64",
                               nm(oar_k_input_name(k, OAR_SHUF_SEED, 0)));
        seed = (uint64_t)*(const int64_t *)oar_tensor_data(st);
    } else {
        seed = a->startup_seed != 0 ? (uint64_t)a->startup_seed : oar_rng_next();
    }
    const int64_t n = oar_tensor_numel_of(x), D = x->ndim > 0 ? x->dims[x->ndim - 1] : 1, rows = D > 0 ? n / D : 0;
    const size_t rb = oar_dtype_size(x->dtype) * (size_t)D;
    void *op, *ip, *sp;
    OAR_TRY(oar_k_output_sized(k, OAR_SHUF_OUT, "Out", x->dtype, n, false, &op));
    OAR_TRY(oar_k_output_sized(k, OAR_SHUF_SHUFFLE_IDX, "ShuffleIdx", OAR_INT64, rows, false, &ip));
    OAR_TRY(oar_k_output_sized(k, OAR_SHUF_SEED_OUT, "SeedOut", OAR_INT64, 1, false, &sp));
    oar_rng_t r;
    oar_rng_seed(&r, seed);
    int64_t *idx = ip;
    for (int64_t i = 0; i < rows; i++) idx[i] = i;
    for (int64_t i = rows - 1; i > 0; i--) {   /* Fisher-Yates */
        int64_t j = (int64_t)(oar_rng_next_r(&r) % (uint64_t)(i + 1)), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    for (int64_t i = 0; i < rows; i++)
        memcpy((char *)op + (size_t)i * rb, (const char *)oar_tensor_data(x) + (size_t)idx[i] * rb, rb);
    *(int64_t *)sp = (int64_t)(oar_rng_next_r(&r) >> 1);
    return OAR_OK;
}

static int shuffle_bwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x = oar_k_input(k, OAR_SHUFG_X, 0), *it, *gt;
    const void *ip, *gp;
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X has no value");
    OAR_TRY(oar_sk_input(k, OAR_SHUFG_SHUFFLE_IDX, "ShuffleIdx", OAR_INT64, &it, &ip));
    OAR_TRY(oar_sk_input(k, OAR_SHUFG_DOUT, "Out@GRAD", dt, &gt, &gp));
    const int64_t n = oar_tensor_numel_of(x), D = x->ndim > 0 ? x->dims[x->ndim - 1] : 1, rows = D > 0 ? n / D : 0;
    if (oar_tensor_numel_of(it) != rows || oar_tensor_numel_of(gt) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "ShuffleIdx or Out@GRAD does not fit X's %lld rows", (long long)rows);
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SHUFG_DX, "X@GRAD", dt, n, true, &dx));
    if (!dx) return OAR_OK;
    const size_t rb = oar_dtype_size(dt) * (size_t)D;
    const int64_t *idx = ip;
    for (int64_t i = 0; i < rows; i++) {
        if (idx[i] < 0 || idx[i] >= rows)
            return oar_k_error(k, OAR_ERR_RANGE, "ShuffleIdx holds %lld; rows are 0..%lld", (long long)idx[i],
                               (long long)(rows - 1));
        memcpy((char *)dx + (size_t)idx[i] * rb, (const char *)gp + (size_t)i * rb, rb);
    }
    return OAR_OK;
}

#define SHUF_REG(SFX, DT)                                                        \
    static int shuffle_fwd_##SFX(oar_kernel_ctx_t *k) { return shuffle_fwd(k); } \
    static int shuffle_bwd_##SFX(oar_kernel_ctx_t *k) { return shuffle_bwd(k); } \
    OAR_REGISTER_KERNEL("shuffle_batch", OAR_PLACE_CPU, DT, shuffle_fwd_##SFX)   \
    OAR_REGISTER_KERNEL("shuffle_batch_grad", OAR_PLACE_CPU, DT, shuffle_bwd_##SFX)
SHUF_REG(f32, OAR_FP32)
SHUF_REG(f64, OAR_FP64)
SHUF_REG(i32, OAR_INT32)
SHUF_REG(i64, OAR_INT64)

/* ---- rank_attention ---------------------------------------------------------------- */
/* checks RankOffset row i against N and MaxRank */
static int rank_row(oar_kernel_ctx_t *k, const int32_t *ro, int64_t i, int mr, int64_t N)
{
    const int32_t *r = ro + i * (2 * mr + 1);
    if (r[0] > mr)
        return oar_k_error(k, OAR_ERR_RANGE, "RankOffset[%lld, 0] is %d; ranks are <= MaxRank %d", (long long)i, r[0],
                           mr);
    for (int q = 0; q < mr && r[0] > 0; q++) {
        if (r[2 * q + 1] <= 0) continue;
        if (r[2 * q + 1] > mr || r[2 * q + 2] < 0 || r[2 * q + 2] >= N)
            return oar_k_error(k, OAR_ERR_RANGE, "RankOffset[%lld] pairs rank %d with instance %d; ranks are <= %d and "
                               "instances < %lld", (long long)i, r[2 * q + 1], r[2 * q + 2], mr, (long long)N);
    }
    return OAR_OK;
}

#define RANK_ATT_KERNELS(SFX, T, DT)                                                                                  \
    static int rank_att_fwd_##SFX(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                                 \
        const oar_rankatt_attrs_t *a = oar_k_attrs(k);                                                                \
        const oar_tensor_t *x, *rt, *pt;                                                                              \
        const void *xp, *rp, *pp;                                                                                     \
        OAR_TRY(oar_sk_input(k, OAR_RANKATT_X, "X", DT, &x, &xp));                                                    \
        OAR_TRY(oar_sk_input(k, OAR_RANKATT_RANK_OFFSET, "RankOffset", OAR_INT32, &rt, &rp));                         \
        OAR_TRY(oar_sk_input(k, OAR_RANKATT_RANK_PARAM, "RankParam", DT, &pt, &pp));                                  \
        const int mr = a->MaxRank;                                                                                    \
        const int64_t N = x->dims[0], xf = x->dims[1], yf = pt->dims[1];                                              \
        void *hp, *op, *ip;                                                                                           \
        OAR_TRY(oar_k_output_sized(k, OAR_RANKATT_INPUT_HELP, "InputHelp", DT, N * mr * xf, true, &hp));              \
        OAR_TRY(oar_k_output_sized(k, OAR_RANKATT_OUT, "Out", DT, N * yf, false, &op));                               \
        OAR_TRY(oar_k_output_sized(k, OAR_RANKATT_INS_RANK, "InsRank", DT, N, true, &ip));                            \
        const T *xv = xp, *pv = pp;                                                                                   \
        const int32_t *ro = rp;                                                                                       \
        T *help = hp, *out = op, *rank = ip;                                                                          \
        if (help) memset(help, 0, sizeof(T) * (size_t)(N * mr * xf));                                                 \
        memset(out, 0, sizeof(T) * (size_t)(N * yf));                                                                 \
        for (int64_t i = 0; i < N; i++) {                                                                             \
            OAR_TRY(rank_row(k, ro, i, mr, N));                                                                       \
            const int32_t *r = ro + i * (2 * mr + 1);                                                                 \
            if (rank) rank[i] = (T)r[0];                                                                              \
            if (r[0] <= 0) continue;                                                                                  \
            for (int q = 0; q < mr; q++) {                                                                            \
                const int f = r[2 * q + 1] - 1;                                                                       \
                if (f < 0) continue;                                                                                  \
                const T *xr = xv + (int64_t)r[2 * q + 2] * xf;                                                        \
                const T *blk = pv + ((int64_t)(r[0] - 1) * mr + f) * xf * yf;                                         \
                if (help) memcpy(help + (i * mr + q) * xf, xr, sizeof(T) * (size_t)xf);                               \
                for (int64_t c = 0; c < xf; c++)                                                                      \
                    for (int64_t j = 0; j < yf; j++) out[i * yf + j] += xr[c] * blk[c * yf + j];                      \
            }                                                                                                         \
        }                                                                                                             \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int rank_att_bwd_##SFX(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                                 \
        const oar_rankatt_attrs_t *a = oar_k_attrs(k);                                                                \
        const oar_tensor_t *xt, *rt, *pt, *gt;                                                                        \
        const void *xp, *rp, *pp, *gp;                                                                                \
        OAR_TRY(oar_sk_input(k, OAR_RANKATTG_X, "X", DT, &xt, &xp));                                                  \
        OAR_TRY(oar_sk_input(k, OAR_RANKATTG_RANK_OFFSET, "RankOffset", OAR_INT32, &rt, &rp));                        \
        OAR_TRY(oar_sk_input(k, OAR_RANKATTG_RANK_PARAM, "RankParam", DT, &pt, &pp));                                 \
        OAR_TRY(oar_sk_input(k, OAR_RANKATTG_DOUT, "Out@GRAD", DT, &gt, &gp));                                        \
        const int mr = a->MaxRank;                                                                                    \
        const int64_t N = rt->dims[0], yf = pt->dims[1], xf = pt->dims[0] / ((int64_t)mr * mr);                       \
        if (xt->ndim != 2 || xt->dims[0] != N || xt->dims[1] != xf || oar_tensor_numel_of(gt) != N * yf)              \
            return oar_k_error(k, OAR_ERR_SHAPE, "X or Out@GRAD does not fit RankOffset and RankParam");              \
        void *dp;                                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_RANKATTG_DPARAM, "RankParam@GRAD", DT, oar_tensor_numel_of(pt), true, &dp)); \
        if (!dp) return OAR_OK;                                                                                       \
        const int32_t *ro = rp;                                                                                       \
        const T *xv = xp, *g = gp;                                                                                    \
        T *dparam = dp;                                                                                               \
        memset(dparam, 0, sizeof(T) * (size_t)oar_tensor_numel_of(pt));                                               \
        for (int64_t i = 0; i < N; i++) {                                                                             \
            OAR_TRY(rank_row(k, ro, i, mr, N));                                                                       \
            const int32_t *r = ro + i * (2 * mr + 1);                                                                 \
            if (r[0] <= 0) continue;                                                                                  \
            for (int q = 0; q < mr; q++) {                                                                            \
                const int f = r[2 * q + 1] - 1;                                                                       \
                if (f < 0) continue;                                                                                  \
                const T *hr = xv + (int64_t)r[2 * q + 2] * xf;                                                        \
                T *blk = dparam + ((int64_t)(r[0] - 1) * mr + f) * xf * yf;                                           \
                for (int64_t c = 0; c < xf; c++)                                                                      \
                    for (int64_t j = 0; j < yf; j++) blk[c * yf + j] += hr[c] * g[i * yf + j];                        \
            }                                                                                                         \
        }                                                                                                             \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    OAR_REGISTER_KERNEL("rank_attention", OAR_PLACE_CPU, DT, rank_att_fwd_##SFX)                                      \
    OAR_REGISTER_KERNEL("rank_attention_grad", OAR_PLACE_CPU, DT, rank_att_bwd_##SFX)

RANK_ATT_KERNELS(f32, float, OAR_FP32)
RANK_ATT_KERNELS(f64, double, OAR_FP64)
