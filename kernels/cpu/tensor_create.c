/*
 * tensor_create.c — CPU kernels of fill, fill_zeros_like2, one_hot_v2,
 * randint, randperm, seed, sampling_id, gaussian/uniform_random_batch_size_like,
 * shard_index, hash and random_crop (tensor_create.ops).
 *
 * Outputs of an attr dtype are written for that dtype whatever dtype the
 * kernel was dispatched on, so one function serves every registered dtype.
 * Draws are sequential: a seed fixes the values independently of the
 * thread count. hash is XXH64 (Yann Collet's xxHash, 64-bit), written here
 * from its published description.
 */
#include "op.h"
#include "ops/tensor_create.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reg_num4.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* the generator: the global one, or an op-local one seeded with `seed` */
typedef struct { oar_rng_t local; bool use_local; } gen_t;
static void gen_init(gen_t *g, uint64_t seed)
{
    g->use_local = seed != 0;
    if (g->use_local) oar_rng_seed(&g->local, seed);
}
static uint64_t gen_next(gen_t *g) { return g->use_local ? oar_rng_next_r(&g->local) : oar_rng_next(); }
static double gen_uniform(gen_t *g) { return g->use_local ? oar_rng_uniform_r(&g->local) : oar_rng_uniform(); }
static double gen_normal(gen_t *g) { return g->use_local ? oar_rng_normal_r(&g->local) : oar_rng_normal(); }
/* uniform in [0, n), n >= 1 (the modulo bias is below 2^-40 for n < 2^24) */
static uint64_t gen_below(gen_t *g, uint64_t n) { return gen_next(g) % n; }

/* element i of out (dtype dt) = v */
static void put(void *out, int dt, int64_t i, double v)
{
    switch (dt) {
    case OAR_FP32: ((float *)out)[i] = (float)v; break;
    case OAR_FP64: ((double *)out)[i] = v; break;
    case OAR_INT32: ((int32_t *)out)[i] = (int32_t)v; break;
    case OAR_INT64: ((int64_t *)out)[i] = (int64_t)v; break;
    case OAR_BOOL: ((bool *)out)[i] = v != 0; break;
    default: break;
    }
}
static void put_i(void *out, int dt, int64_t i, int64_t v)
{
    if (dt == OAR_INT64) ((int64_t *)out)[i] = v;
    else if (dt == OAR_INT32) ((int32_t *)out)[i] = (int32_t)v;
    else put(out, dt, i, (double)v);
}

static int64_t int_at(const oar_tensor_t *t, int64_t i)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* the data of output `slot`, sized by inference, as attr dtype dt */
static int out_as(oar_kernel_ctx_t *k, int slot, const char *name, int dt, void **p, int64_t *n)
{
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s is missing", name);
    *n = oar_tensor_numel_of(t);
    *p = oar_k_output_data(k, slot, 0, dt);
    if (!*p && *n > 0) return OAR_ERR_NOMEM;
    return OAR_OK;
}

/* ---- fill ------------------------------------------------------------------------ */
static int fill_k(oar_kernel_ctx_t *k)
{
    const oar_fill_attrs_t *a = oar_k_attrs(k);
    void *o = NULL;
    int64_t n = 0;
    OAR_TRY(out_as(k, OAR_FILL_OUT, "Out", a->dtype, &o, &n));
    if (n != a->value.n)
        return oar_k_error(k, OAR_ERR_SHAPE, "output Out holds %lld elements, attr value %d", (long long)n, a->value.n);
    for (int64_t i = 0; i < n; i++) put(o, a->dtype, i, a->value.v[i]);
    return OAR_OK;
}
REG_NUM4("fill", fill_k)

/* ---- fill_zeros_like2 ------------------------------------------------------------- */
static int fzl2_k(oar_kernel_ctx_t *k)
{
    const oar_fzl2_attrs_t *a = oar_k_attrs(k);
    void *o = NULL;
    int64_t n = 0;
    OAR_TRY(out_as(k, OAR_FZL2_OUT, "Out", a->dtype, &o, &n));
    if (n > 0) memset(o, 0, oar_dtype_size(a->dtype) * (size_t)n);
    return OAR_OK;
}
REG_NUM4("fill_zeros_like2", fzl2_k)
REG1("fill_zeros_like2", fzl2_k, OAR_BOOL, b8)

/* ---- one_hot_v2 -------------------------------------------------------------------- */
static int one_hot2_k(oar_kernel_ctx_t *k)
{
    const oar_one_hot2_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *x = oar_k_input(k, OAR_ONE_HOT2_X, 0);
    oar_tensor_t *out = oar_k_output(k, OAR_ONE_HOT2_OUT, 0);
    if (!x || !out || out->ndim < 1) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X or output Out is missing");
    const int64_t n = oar_tensor_numel_of(x), depth = out->dims[out->ndim - 1];
    for (int64_t i = 0; i < n && !a->allow_out_of_range; i++) {
        int64_t v = int_at(x, i);
        if (v < 0 || v >= depth)
            return oar_k_error(k, OAR_ERR_RANGE, "input X '%s' holds %lld at position %lld, outside [0, %lld) "
                               "(depth); set allow_out_of_range to get a zero row",
                               nm(oar_k_input_name(k, OAR_ONE_HOT2_X, 0)), (long long)v, (long long)i,
                               (long long)depth);
    }
    void *o = NULL;
    int64_t on = 0;
    OAR_TRY(out_as(k, OAR_ONE_HOT2_OUT, "Out", a->dtype, &o, &on));
    if (on > 0) memset(o, 0, oar_dtype_size(a->dtype) * (size_t)on);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = int_at(x, i);
        if (v >= 0 && v < depth) put(o, a->dtype, i * depth + v, 1);
    }
    return OAR_OK;
}
REG1("one_hot_v2", one_hot2_k, OAR_INT32, i32)
REG1("one_hot_v2", one_hot2_k, OAR_INT64, i64)

/* ---- randint ----------------------------------------------------------------------- */
static int randint_k(oar_kernel_ctx_t *k)
{
    const oar_randint_attrs_t *a = oar_k_attrs(k);
    void *o = NULL;
    int64_t n = 0;
    OAR_TRY(out_as(k, OAR_RANDINT_OUT, "Out", a->dtype, &o, &n));
    gen_t g;
    gen_init(&g, (uint64_t)a->seed);
    const uint64_t range = (uint64_t)((int64_t)a->high - a->low);
    for (int64_t i = 0; i < n; i++) put_i(o, a->dtype, i, a->low + (int64_t)gen_below(&g, range));
    return OAR_OK;
}
REG_NUM4("randint", randint_k)

/* ---- randperm ---------------------------------------------------------------------- */
static int randperm_k(oar_kernel_ctx_t *k)
{
    const oar_randperm_attrs_t *a = oar_k_attrs(k);
    void *o = NULL;
    int64_t n = 0;
    OAR_TRY(out_as(k, OAR_RANDPERM_OUT, "Out", a->dtype, &o, &n));
    if (n != a->n) return oar_k_error(k, OAR_ERR_SHAPE, "output Out holds %lld elements, attr n = %d", (long long)n, a->n);
    int64_t *p = oar_xmalloc(sizeof(int64_t) * (size_t)n);
    if (!p) return OAR_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) p[i] = i;
    gen_t g;
    gen_init(&g, (uint64_t)a->seed);
    for (int64_t i = n - 1; i > 0; i--) {   /* Fisher-Yates */
        int64_t j = (int64_t)gen_below(&g, (uint64_t)i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    for (int64_t i = 0; i < n; i++) put_i(o, a->dtype, i, p[i]);
    free(p);
    return OAR_OK;
}
REG_NUM4("randperm", randperm_k)

/* ---- seed ------------------------------------------------------------------------------ */
static int seed_k(oar_kernel_ctx_t *k)
{
    const oar_seed_attrs_t *a = oar_k_attrs(k);
    void *o = NULL;
    OAR_TRY(oar_k_output_sized(k, OAR_SEED_OUT, "Out", OAR_INT32, 1, false, &o));
    int32_t s = a->seed;
    while (s == 0) s = (int32_t)(oar_rng_next() >> 33);   /* in [1, 2^31) */
    *(int32_t *)o = s;
    return OAR_OK;
}
REG_NUM4("seed", seed_k)

/* ---- sampling_id ------------------------------------------------------------------------- */
#define SAMPLING_ID(NAME, T, DT)                                                                       \
    static int NAME(oar_kernel_ctx_t *k)                                                               \
    {                                                                                                  \
        const oar_sampling_id_attrs_t *a = oar_k_attrs(k);                                             \
        oar_tensor_t *x = oar_k_input(k, OAR_SAMPLING_ID_X, 0);                                        \
        const int64_t B = x->dims[0], W = x->dims[1];                                                  \
        void *o;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_SAMPLING_ID_OUT, "Out", DT, B, false, &o));                  \
        const T *xv = oar_tensor_data(x);                                                              \
        gen_t g;                                                                                       \
        gen_init(&g, (uint64_t)a->seed);                                                               \
        for (int64_t i = 0; i < B; i++) {                                                              \
            T r = (T)(a->min + ((double)a->max - a->min) * gen_uniform(&g));                           \
            int64_t id = W - 1;                                                                        \
            for (int64_t j = 0; j < W; j++)                                                            \
                if ((r -= xv[i * W + j]) < 0) { id = j; break; }                                       \
            ((T *)o)[i] = (T)id;                                                                       \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("sampling_id", OAR_PLACE_CPU, DT, NAME)
SAMPLING_ID(sampling_id_f32, float, OAR_FP32)
SAMPLING_ID(sampling_id_f64, double, OAR_FP64)

/* ---- gaussian / uniform_random_batch_size_like ---------------------------------------------- */
static int rbsl_k(oar_kernel_ctx_t *k)
{
    const oar_rbsl_attrs_t *a = oar_k_attrs(k);
    void *o = NULL;
    int64_t n = 0;
    OAR_TRY(out_as(k, OAR_GRBSL_OUT, "Out", a->dtype, &o, &n));
    gen_t g;
    gen_init(&g, (uint64_t)a->seed);
    for (int64_t i = 0; i < n; i++)
        put(o, a->dtype, i, a->gaussian ? a->a + a->b * gen_normal(&g) : a->a + a->b * gen_uniform(&g));
    /* uniform's diagonal (Fluid's diag_num / diag_step / diag_val) */
    for (int64_t i = 0; !a->gaussian && i < a->diag_num; i++) {
        const int64_t pos = i * ((int64_t)a->diag_step + 1);
        if (pos >= n)
            return oar_k_error(k, OAR_ERR_RANGE, "diagonal element %lld (diag_num = %d, diag_step = %d) is past Out's "
                               "%lld elements", (long long)i, (int)a->diag_num, (int)a->diag_step, (long long)n);
        put(o, a->dtype, pos, a->diag_val);
    }
    return OAR_OK;
}
REG_NUM4("gaussian_random_batch_size_like", rbsl_k)
static int urbsl_k(oar_kernel_ctx_t *k) { return rbsl_k(k); }
REG_NUM4("uniform_random_batch_size_like", urbsl_k)

/* ---- shard_index ------------------------------------------------------------------------------ */
#define SHARD_INDEX(NAME, T, DT)                                                                        \
    static int NAME(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                   \
        const oar_shard_index_attrs_t *a = oar_k_attrs(k);                                              \
        oar_tensor_t *x = oar_k_input(k, OAR_SHARD_INDEX_X, 0);                                         \
        const int64_t n = oar_tensor_numel_of(x);                                                       \
        const T *xv = oar_tensor_data(x);                                                               \
        for (int64_t i = 0; i < n; i++)                                                                 \
            if (xv[i] < 0 || xv[i] >= a->index_num)                                                     \
                return oar_k_error(k, OAR_ERR_RANGE, "input X '%s' holds %lld at position %lld, outside " \
                                   "[0, index_num = %d)", nm(oar_k_input_name(k, OAR_SHARD_INDEX_X, 0)),  \
                                   (long long)xv[i], (long long)i, (int)a->index_num);                  \
        void *o;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_SHARD_INDEX_OUT, "Out", DT, n, false, &o));                   \
        const int64_t size = ((int64_t)a->index_num + a->nshards - 1) / a->nshards;                     \
        for (int64_t i = 0; i < n; i++)                                                                 \
            ((T *)o)[i] = (T)(xv[i] / size == a->shard_id ? xv[i] % size : a->ignore_value);            \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("shard_index", OAR_PLACE_CPU, DT, NAME)
SHARD_INDEX(shard_index_i32, int32_t, OAR_INT32)
SHARD_INDEX(shard_index_i64, int64_t, OAR_INT64)

/* ---- hash (XXH64) ------------------------------------------------------------------------------ */
static const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                      P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;
static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t rd64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t rd32(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}
static uint64_t xx_round(uint64_t acc, uint64_t in) { return rotl64(acc + in * P2, 31) * P1; }
static uint64_t xx_merge(uint64_t h, uint64_t v) { return (h ^ xx_round(0, v)) * P1 + P4; }

static uint64_t xxh64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        for (; p + 32 <= end; p += 32) {
            v1 = xx_round(v1, rd64(p));
            v2 = xx_round(v2, rd64(p + 8));
            v3 = xx_round(v3, rd64(p + 16));
            v4 = xx_round(v4, rd64(p + 24));
        }
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xx_merge(h, v1);
        h = xx_merge(h, v2);
        h = xx_merge(h, v3);
        h = xx_merge(h, v4);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)len;
    for (; p + 8 <= end; p += 8) h = rotl64(h ^ xx_round(0, rd64(p)), 27) * P1 + P4;
    if (p + 4 <= end) {
        h = rotl64(h ^ rd32(p) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) h = rotl64(h ^ *p * P5, 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

#define HASH_K(NAME, T, DT)                                                                             \
    static int NAME(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                   \
        const oar_hash_attrs_t *a = oar_k_attrs(k);                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_HASH_X, 0);                                                \
        const int64_t L = x->dims[x->ndim - 1], rows = L ? oar_tensor_numel_of(x) / L : 0;              \
        void *o;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_HASH_OUT, "Out", DT, rows * a->num_hash, false, &o));         \
        const T *xv = oar_tensor_data(x);                                                               \
        for (int64_t r = 0; r < rows; r++)                                                              \
            for (int h = 0; h < a->num_hash; h++)                                                       \
                ((T *)o)[r * a->num_hash + h] =                                                         \
                    (T)(xxh64(xv + r * L, sizeof(T) * (size_t)L, (uint64_t)h) % (uint64_t)a->mod_by);   \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("hash", OAR_PLACE_CPU, DT, NAME)
HASH_K(hash_i32, int32_t, OAR_INT32)
HASH_K(hash_i64, int64_t, OAR_INT64)

/* ---- random_crop ---------------------------------------------------------------------------------- */
static int random_crop_k(oar_kernel_ctx_t *k)
{
    const oar_random_crop_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_RANDOM_CROP_X, 0), *s = oar_k_input(k, OAR_RANDOM_CROP_SEED, 0);
    oar_tensor_t *out = oar_k_output(k, OAR_RANDOM_CROP_OUT, 0);
    if (!x || !out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X or output Out is missing");
    int64_t seed = a->startup_seed;
    if (s) {
        if (s->dtype != OAR_INT64 || oar_tensor_numel_of(s) != 1)
            return oar_k_error(k, OAR_ERR_DTYPE, "input Seed '%s' must be one int64 value",
                               nm(oar_k_input_name(k, OAR_RANDOM_CROP_SEED, 0)));
        seed = *(const int64_t *)oar_tensor_data(s);
    }
    const int nd = x->ndim, kd = a->shape.n, bd = nd - kd;
    const size_t es = oar_dtype_size(x->dtype);
    void *o = oar_k_output_data(k, OAR_RANDOM_CROP_OUT, 0, x->dtype);
    const int64_t on = oar_tensor_numel_of(out);
    if (!o && on > 0) return OAR_ERR_NOMEM;
    int64_t inst = 1, win = 1, xin = 1;
    for (int i = 0; i < bd; i++) inst *= x->dims[i];
    for (int i = bd; i < nd; i++) { win *= out->dims[i]; xin *= x->dims[i]; }
    /* the strides of X's cropped dims */
    int64_t xs[OAR_MAX_DIMS];
    xs[nd - 1] = 1;
    for (int i = nd - 2; i >= bd; i--) xs[i] = xs[i + 1] * x->dims[i + 1];
    gen_t g;
    gen_init(&g, (uint64_t)seed);
    const unsigned char *xv = oar_tensor_data(x);
    unsigned char *ov = o;
    for (int64_t t = 0; t < inst; t++) {
        int64_t base = 0, idx[OAR_MAX_DIMS] = { 0 };
        for (int i = bd; i < nd; i++) base += (int64_t)gen_below(&g, (uint64_t)(x->dims[i] - out->dims[i] + 1)) * xs[i];
        for (int64_t e = 0; e < win; e++) {
            int64_t off = base;
            for (int i = bd; i < nd; i++) off += idx[i] * xs[i];
            memcpy(ov + (size_t)(t * win + e) * es, xv + (size_t)(t * xin + off) * es, es);
            for (int i = nd - 1; i >= bd; i--) {
                if (++idx[i] < out->dims[i]) break;
                idx[i] = 0;
            }
        }
    }
    void *so;
    OAR_TRY(oar_k_output_sized(k, OAR_RANDOM_CROP_SEED_OUT, "SeedOut", OAR_INT64, 1, true, &so));
    if (so) {
        int64_t next = 0;
        while (next == 0) next = (int64_t)(gen_next(&g) >> 33);
        *(int64_t *)so = next;
    }
    return OAR_OK;
}
REG_NUM4("random_crop", random_crop_k)
REG1("random_crop", random_crop_k, OAR_UINT8, u8)
REG1("random_crop", random_crop_k, OAR_INT8, i8)
REG1("random_crop", random_crop_k, OAR_BOOL, b8)
