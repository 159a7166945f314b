/*
 * pyramid_hash.c — CPU kernels of pyramid_hash and pyramid_hash_grad
 * (src/ops/pyramid_hash.ops), float32 and float64 W. The n-grams of each
 * sequence are walked in Fluid's order (length 2 first, then 3, ...; each
 * by its first token), hashed with XXH32 over their tokens' float32 bytes,
 * and the training dropout draws with POSIX rand_r as Fluid's kernel does.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/pyramid_hash.h"

/* ---- XXH32 (Yann Collet's xxHash, 32-bit variant) ------------------------------ */
#define P1 2654435761u
#define P2 2246822519u
#define P3 3266489917u
#define P4 668265263u
#define P5 374761393u
static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
/* little-endian hosts */
static inline uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint32_t round32(uint32_t acc, uint32_t in) { return rotl32(acc + in * P2, 13) * P1; }

static uint32_t xxh32(const void *data, size_t len, uint32_t seed)
{
    const unsigned char *p = data, *end = p + len;
    uint32_t h;
    if (len >= 16) {
        uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        for (; p + 16 <= end; p += 16) {
            v1 = round32(v1, rd32(p));
            v2 = round32(v2, rd32(p + 4));
            v3 = round32(v3, rd32(p + 8));
            v4 = round32(v4, rd32(p + 12));
        }
        h = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18);
    } else {
        h = seed + P5;
    }
    h += (uint32_t)len;
    for (; p + 4 <= end; p += 4) h = rotl32(h + rd32(p) * P3, 17) * P4;
    for (; p < end; p++) h = rotl32(h + (*p) * P5, 11) * P1;
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}

static int pyrh_fwd(oar_kernel_ctx_t *k)
{
    const oar_pyrh_attrs_t *a = oar_k_attrs(k);
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *wt;
    const void *xp, *wp;
    OAR_TRY(oar_sk_input(k, OAR_PYRH_X, "X", OAR_INT32, &xt, &xp));
    OAR_TRY(oar_sk_input(k, OAR_PYRH_W, "W", dt, &wt, &wp));
    if (xt->lod_levels < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "X '%s' has no LoD; its sequences are the token lists",
                           oar_k_input_name(k, OAR_PYRH_X, 0));
    const int64_t *offs = xt->lod[0], no = xt->lod_size[0], N = xt->dims[0];
    const int L = a->pyramid_layer, E = a->num_emb, RL = a->rand_len;
    void *tp, *dp;
    OAR_TRY(oar_k_output_sized(k, OAR_PYRH_X_TEMP, "X_Temp_Out", OAR_FP32, N, false, &tp));
    OAR_TRY(oar_k_output_sized(k, OAR_PYRH_DROP_POS, "DropPos", OAR_INT32, N * L, false, &dp));
    float *tok = tp;
    for (int64_t i = 0; i < N; i++) tok[i] = (float)((const int32_t *)xp)[i];
    int32_t *drop = dp;
    memset(drop, 0, sizeof(int32_t) * (size_t)(N * L));
    int64_t *dofs = oar_xmalloc(sizeof(int64_t) * (size_t)no), *tofs = oar_xmalloc(sizeof(int64_t) * (size_t)no);
    if (!dofs || !tofs) { free(dofs); free(tofs); return OAR_ERR_NOMEM; }
    unsigned int seed = (unsigned int)a->seed;
    int64_t it = 0;
    dofs[0] = tofs[0] = 0;
    for (int64_t s = 0; s + 1 < no; s++) {
        const int64_t w = offs[s + 1] - offs[s];
        int64_t kept = 0;
        for (int il = 1; il < L && il < w; il++)
            for (int64_t l = 0; l < w - il; l++) {
                int32_t keep = 1;
                if (a->is_training != 0) keep = (float)rand_r(&seed) / (float)RAND_MAX < a->drop_out_percent ? 0 : 1;
                drop[it++] = keep;
                kept += keep;
            }
        dofs[s + 1] = dofs[s] + kept;
        tofs[s + 1] = tofs[s] + (kept == 0 ? 1 : kept);
    }
    int64_t od[2] = {tofs[no - 1], E};
    char *out = oar_k_output_resized(k, OAR_PYRH_OUT, od, 2, dt);
    int rc = !out && od[0] * E > 0 ? OAR_ERR_NOMEM : OAR_OK;
    if (rc == OAR_OK) {
        const int64_t *lv[1] = {tofs};
        int64_t sz[1] = {no};
        rc = oar_tensor_set_lod(oar_k_output(k, OAR_PYRH_OUT, 0), 1, lv, sz);
        if (rc != OAR_OK) rc = oar_k_error(k, rc, "cannot set the outputs' LoD: %s", oar_last_error());
    }
    const size_t es = oar_dtype_size(dt);
    const double scale = a->is_training == 0 ? a->drop_out_percent : 1.0;
    it = 0;
    int64_t row = 0;
    for (int64_t s = 0; rc == OAR_OK && s + 1 < no; s++) {
        const int64_t w = offs[s + 1] - offs[s];
        if (dofs[s + 1] == dofs[s]) {
            memset(out + (size_t)(row++ * E) * es, 0, es * (size_t)E);
            for (int il = 1; il < L && il < w; il++) it += w - il;
            continue;
        }
        for (int il = 1; il < L && il < w; il++)
            for (int64_t l = 0; l < w - il; l++) {
                if (!drop[it++]) continue;
                char *dst = out + (size_t)(row++ * E) * es;
                for (int j = 0; j < E; j += RL) {
                    uint32_t pos = xxh32(tok + offs[s] + l, sizeof(float) * (size_t)(il + 1), (uint32_t)j) %
                                   (uint32_t)a->space_len;
                    for (int q = 0; q < RL; q++) {
                        double v = dt == OAR_FP32 ? ((const float *)wp)[pos + q] : ((const double *)wp)[pos + q];
                        if (dt == OAR_FP32) ((float *)dst)[j + q] = (float)(v * scale);
                        else ((double *)dst)[j + q] = v * scale;
                    }
                }
            }
    }
    free(dofs);
    free(tofs);
    return rc;
}

static int pyrh_bwd(oar_kernel_ctx_t *k)
{
    const oar_pyrh_attrs_t *a = oar_k_attrs(k);
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_PYRHG_X, 0), *wt, *dpt, *tt, *gt;
    const void *wp, *dpp, *tp, *gp;
    if (!xt || xt->lod_levels < 1) return oar_k_error(k, OAR_ERR_INVALID, "X must be a LoD tensor");
    OAR_TRY(oar_sk_input(k, OAR_PYRHG_W, "W", dt, &wt, &wp));
    OAR_TRY(oar_sk_input(k, OAR_PYRHG_DROP_POS, "DropPos", OAR_INT32, &dpt, &dpp));
    OAR_TRY(oar_sk_input(k, OAR_PYRHG_X_TEMP, "X_Temp_Out", OAR_FP32, &tt, &tp));
    OAR_TRY(oar_sk_input(k, OAR_PYRHG_DOUT, "Out@GRAD", dt, &gt, &gp));
    const int64_t *offs = xt->lod[0], no = xt->lod_size[0], N = xt->dims[0];
    const int L = a->pyramid_layer, E = a->num_emb, RL = a->rand_len;
    if (oar_tensor_numel_of(tt) != N || oar_tensor_numel_of(dpt) != N * L)
        return oar_k_error(k, OAR_ERR_SHAPE, "X_Temp_Out or DropPos does not fit X's %lld tokens", (long long)N);
    void *dwp;
    OAR_TRY(oar_k_output_sized(k, OAR_PYRHG_DW, "W@GRAD", dt, oar_tensor_numel_of(wt), true, &dwp));
    if (!dwp) return OAR_OK;
    memset(dwp, 0, oar_dtype_size(dt) * (size_t)oar_tensor_numel_of(wt));
    const float *tok = tp;
    const int32_t *drop = dpp;
    const int64_t G = gt->ndim > 0 ? gt->dims[0] : 0;
    const double scale = a->is_training == 0 ? a->drop_out_percent : 1.0;
    int64_t it = 0, row = 0;
    for (int64_t s = 0; s + 1 < no; s++) {
        const int64_t w = offs[s + 1] - offs[s];
        int64_t first = it, any = 0;
        for (int il = 1; il < L && il < w; il++) for (int64_t l = 0; l < w - il; l++) any += drop[first++];
        if (!any) {   /* the sequence's one zero row reads nothing */
            row++;
            it = first;
            continue;
        }
        for (int il = 1; il < L && il < w; il++)
            for (int64_t l = 0; l < w - il; l++) {
                if (!drop[it++]) continue;
                if (row >= G) return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld rows; more n-grams were kept",
                                                 (long long)G);
                for (int j = 0; j < E; j += RL) {
                    uint32_t pos = xxh32(tok + offs[s] + l, sizeof(float) * (size_t)(il + 1), (uint32_t)j) %
                                   (uint32_t)a->space_len;
                    for (int q = 0; q < RL; q++) {
                        if (dt == OAR_FP32)
                            ((float *)dwp)[pos + q] += (float)(((const float *)gp)[row * E + j + q] * scale);
                        else
                            ((double *)dwp)[pos + q] += ((const double *)gp)[row * E + j + q] * scale;
                    }
                }
                row++;
            }
    }
    return OAR_OK;
}

static int pyrh_fwd_f64(oar_kernel_ctx_t *k) { return pyrh_fwd(k); }
static int pyrh_bwd_f64(oar_kernel_ctx_t *k) { return pyrh_bwd(k); }
OAR_REGISTER_KERNEL("pyramid_hash", OAR_PLACE_CPU, OAR_FP32, pyrh_fwd)
OAR_REGISTER_KERNEL("pyramid_hash", OAR_PLACE_CPU, OAR_FP64, pyrh_fwd_f64)
OAR_REGISTER_KERNEL("pyramid_hash_grad", OAR_PLACE_CPU, OAR_FP32, pyrh_bwd)
OAR_REGISTER_KERNEL("pyramid_hash_grad", OAR_PLACE_CPU, OAR_FP64, pyrh_bwd_f64)
