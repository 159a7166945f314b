/*
 * tensor_create.c — inference of fill, fill_zeros_like2, one_hot_v2,
 * randint, randperm, seed, sampling_id, the two random *_batch_size_like
 * ops, shard_index, hash and random_crop (tensor_create.ops); kernels in
 * kernels/cpu/tensor_create.c. None has a gradient.
 */
#include "op.h"
#include "attr_tensor.h"
#include "ops/tensor_create.h"   /* generated from tensor_create.ops */
#include "ops/infer_util.h"

static bool dt_in(int dt, const int *ok, int n)
{
    for (int i = 0; i < n; i++)
        if (dt == ok[i]) return true;
    return false;
}

/* attr dtype is one of ok[]; `what` lists them for the message */
static int dtype_attr(oar_infer_ctx_t *c, int dt, const int *ok, int n, const char *what)
{
    if (dt_in(dt, ok, n)) return OAR_OK;
    const char *s = oar_dtype_name(dt);
    return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d (%s) must be %s", dt, s ? s : "unknown", what);
}

/* input `slot` is int32 or int64 */
static int int_ids(oar_infer_ctx_t *c, const char *slot)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_INT32 && dt != OAR_INT64) {
        const char *s = oar_dtype_name(dt);
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected int32 or int64", slot,
                            nm(oar_ic_in_name(c, slot, 0)), s ? s : "unknown");
    }
    return OAR_OK;
}

static int check_shape(oar_infer_ctx_t *c, const int64_t *d, int n, const char *what)
{
    if (n > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "%s has %d dims, at most %d", what, n, OAR_MAX_DIMS);
    for (int i = 0; i < n; i++)
        if (d[i] < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "%s[%d] = %lld must be >= 0", what, i, (long long)d[i]);
    int64_t numel;
    if (oar_shape_numel(d, n, &numel) != OAR_OK) return oar_ic_error(c, OAR_ERR_SHAPE, "%s: %s", what, oar_last_error());
    return OAR_OK;
}

static const int NUMERIC4[] = { OAR_FP32, OAR_FP64, OAR_INT32, OAR_INT64 };
static const int FLOATS[] = { OAR_FP32, OAR_FP64 };

/* ---- fill ---------------------------------------------------------------------- */
static int fill_infer(oar_infer_ctx_t *c)
{
    const oar_fill_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(dtype_attr(c, a->dtype, NUMERIC4, 4, "float32 (5), float64 (6), int32 (2) or int64 (3)"));
    int64_t d[OAR_MAX_DIMS];
    int n = a->shape.n;
    if (n > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape has %d dims, at most %d", n, OAR_MAX_DIMS);
    for (int i = 0; i < n; i++) d[i] = a->shape.v[i];
    OAR_TRY(check_shape(c, d, n, "attr shape"));
    int64_t numel = 1;
    for (int i = 0; i < n; i++) numel *= d[i];
    if (numel != a->value.n)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr value holds %d numbers but attr shape needs %lld", a->value.n,
                            (long long)numel);
    return oar_ic_set_out(c, "Out", 0, d, n, a->dtype);
}

/* ---- fill_zeros_like2 ------------------------------------------------------------ */
static int fzl2_infer(oar_infer_ctx_t *c)
{
    const oar_fzl2_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    static const int ok[] = { OAR_BOOL, OAR_INT32, OAR_INT64, OAR_FP32, OAR_FP64 };
    OAR_TRY(dtype_attr(c, a->dtype, ok, 5, "bool (0), int32 (2), int64 (3), float32 (5) or float64 (6)"));
    int n;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, d, n, a->dtype));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- one_hot_v2 ------------------------------------------------------------------- */
static int one_hot2_infer(oar_infer_ctx_t *c)
{
    const oar_one_hot2_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nx;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx);
    if (!x) return OAR_ERR_SHAPE;
    OAR_TRY(int_ids(c, "X"));
    OAR_TRY(dtype_attr(c, a->dtype, NUMERIC4, 4, "float32 (5), float64 (6), int32 (2) or int64 (3)"));
    if (nx >= OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank %d; one_hot_v2 adds a dim, at most %d",
                            nm(oar_ic_in_name(c, "X", 0)), nx, OAR_MAX_DIMS);
    int64_t depth = a->depth;
    if (oar_ic_in_present(c, "depth_tensor")) {
        double v;
        bool known;
        OAR_TRY(oar_ic_scalar(c, "depth_tensor", NULL, &v, &known));
        depth = known ? (int64_t)v : -1;
        if (known && depth < 1)
            return oar_ic_error(c, OAR_ERR_RANGE, "input depth_tensor '%s' holds %lld; depth must be >= 1",
                                nm(oar_ic_in_name(c, "depth_tensor", 0)), (long long)depth);
    } else if (depth < 1) {
        return oar_ic_error(c, OAR_ERR_RANGE, "attr depth = %lld must be >= 1 (or give depth_tensor)",
                            (long long)depth);
    }
    int64_t o[OAR_MAX_DIMS];
    memcpy(o, x, sizeof(int64_t) * (size_t)nx);
    o[nx] = depth;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, o, nx + 1, a->dtype));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- randint ------------------------------------------------------------------------ */
static int randint_infer(oar_infer_ctx_t *c)
{
    const oar_randint_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    static const int ok[] = { OAR_INT32, OAR_INT64 };
    OAR_TRY(dtype_attr(c, a->dtype, ok, 2, "int32 (2) or int64 (3)"));
    if (!(a->low < a->high))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr low = %d must be below attr high = %d", (int)a->low,
                            (int)a->high);
    if (a->seed < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr seed = %d must be >= 0", (int)a->seed);
    int64_t d[OAR_MAX_DIMS];
    int n;
    bool known = true;
    OAR_TRY(oar_ic_int_list(c, "ShapeTensor", "ShapeTensorList", "shape", d, OAR_MAX_DIMS, &n, &known));
    if (n < 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input ShapeTensor '%s' must be 1-D with a known length",
                            nm(oar_ic_in_name(c, "ShapeTensor", 0)));
    if (n == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "the shape (attr shape or ShapeTensor) must not be empty");
    if (known) OAR_TRY(check_shape(c, d, n, "shape"));
    return oar_ic_set_out(c, "Out", 0, d, n, a->dtype);
}

/* ---- randperm ----------------------------------------------------------------------- */
static int randperm_infer(oar_infer_ctx_t *c)
{
    const oar_randperm_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(dtype_attr(c, a->dtype, NUMERIC4, 4, "int32 (2), int64 (3), float32 (5) or float64 (6)"));
    if (a->n < 1) return oar_ic_error(c, OAR_ERR_RANGE, "attr n = %d must be >= 1", (int)a->n);
    if (a->seed < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr seed = %d must be >= 0", (int)a->seed);
    const int64_t d = a->n;
    return oar_ic_set_out(c, "Out", 0, &d, 1, a->dtype);
}

/* ---- seed ---------------------------------------------------------------------------- */
static int seed_infer(oar_infer_ctx_t *c)
{
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_INT32);
}

/* ---- sampling_id ---------------------------------------------------------------------- */
static int sampling_id_infer(oar_infer_ctx_t *c)
{
    const oar_sampling_id_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, -1, "[B, W]", &x));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    if (!(a->min <= a->max))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr min = %g must not exceed attr max = %g", a->min, a->max);
    if (a->seed < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr seed = %d must be >= 0", (int)a->seed);
    return oar_ic_set_out(c, "Out", 0, &x[0], 1, oar_ic_in_dtype(c, "X", 0));
}

/* ---- gaussian / uniform_random_batch_size_like ------------------------------------------ */
static int rbsl_infer(oar_infer_ctx_t *c)
{
    const oar_rbsl_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(dtype_attr(c, a->dtype, FLOATS, 2, "float32 (5) or float64 (6)"));
    if (a->gaussian && !(a->b >= 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr std = %g must be >= 0", a->b);
    if (!a->gaussian && !(a->min <= a->max))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr min = %g must not exceed attr max = %g", a->min, a->max);
    if (a->seed < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr seed = %d must be >= 0", (int)a->seed);
    int nd = a->shape.n, ind;
    if (nd < 1 || nd > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape has %d dims; 1 to %d expected", nd, OAR_MAX_DIMS);
    int64_t d[OAR_MAX_DIMS];
    for (int i = 0; i < nd; i++) d[i] = a->shape.v[i];
    const int64_t *in = oar_ic_in_dims(c, "Input", 0, &ind);
    if (!in) return OAR_ERR_SHAPE;
    int ii = a->input_dim_idx, oi = a->output_dim_idx;
    if (ii < 0 || ii >= ind)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr input_dim_idx = %d is out of range for Input '%s' of rank %d",
                            ii, nm(oar_ic_in_name(c, "Input", 0)), ind);
    if (oi < 0 || oi >= nd)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr output_dim_idx = %d is out of range for attr shape of rank %d",
                            oi, nd);
    d[oi] = in[ii];
    for (int i = 0; i < nd; i++)
        if (d[i] < 0 && (i != oi || oar_ic_runtime(c)))
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape[%d] = %lld must be >= 0", i, (long long)d[i]);
    if (!a->gaussian && (a->diag_num < 0 || a->diag_step < 0))
        return oar_ic_error(c, OAR_ERR_RANGE, "attrs diag_num = %d and diag_step = %d must be >= 0", (int)a->diag_num,
                            (int)a->diag_step);
    return oar_ic_set_out(c, "Out", 0, d, nd, a->dtype);
}

/* ---- shard_index ---------------------------------------------------------------------- */
static int shard_index_infer(oar_infer_ctx_t *c)
{
    const oar_shard_index_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    OAR_TRY(int_ids(c, "X"));
    char b[160];
    if (n < 2 || !oar_dim_eq(x[n - 1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; shard_index needs [..., 1] of rank >= 2",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, n, b, sizeof b));
    if (a->index_num <= 0) return oar_ic_error(c, OAR_ERR_RANGE, "attr index_num = %d must be > 0", (int)a->index_num);
    if (a->nshards <= 0) return oar_ic_error(c, OAR_ERR_RANGE, "attr nshards = %d must be > 0", (int)a->nshards);
    if (a->shard_id < 0 || a->shard_id >= a->nshards)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr shard_id = %d must be in [0, nshards = %d)", (int)a->shard_id,
                            (int)a->nshards);
    return oar_infer_same_as(c, "X", "Out");
}

/* ---- hash -------------------------------------------------------------------------------- */
static int hash_infer(oar_infer_ctx_t *c)
{
    const oar_hash_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    OAR_TRY(int_ids(c, "X"));
    char b[160];
    if (n < 2 || n + 1 > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; hash needs rank 2 to %d",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, n, b, sizeof b), OAR_MAX_DIMS - 1);
    if (a->num_hash < 1) return oar_ic_error(c, OAR_ERR_RANGE, "attr num_hash = %d must be >= 1", (int)a->num_hash);
    if (a->mod_by < 1)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr mod_by = %lld must be >= 1", (long long)a->mod_by);
    int64_t o[OAR_MAX_DIMS];
    memcpy(o, x, sizeof(int64_t) * (size_t)(n - 1));
    o[n - 1] = a->num_hash;
    o[n] = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, o, n + 1, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- random_crop ---------------------------------------------------------------------------- */
static int random_crop_infer(oar_infer_ctx_t *c)
{
    const oar_random_crop_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    const int k = a->shape.n;
    char b[160];
    if (k < 1 || k > n)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape has %d dims; input X '%s' of shape %s needs 1 to %d", k,
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, n, b, sizeof b), n);
    int64_t o[OAR_MAX_DIMS];
    memcpy(o, x, sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < k; i++) {
        int64_t s = a->shape.v[i], xd = x[n - k + i];
        if (s < 1 || (xd >= 0 && s > xd))
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape[%d] = %lld must be in [1, %lld] (input X '%s' has shape %s)",
                                i, (long long)s, (long long)xd, nm(oar_ic_in_name(c, "X", 0)),
                                oar_shape_str(x, n, b, sizeof b));
        o[n - k + i] = s;
    }
    if (oar_ic_in_present(c, "Seed")) {
        int sd = oar_ic_in_dtype(c, "Seed", 0);
        if (sd >= 0 && sd != OAR_INT64)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input Seed '%s' has dtype %s, expected int64",
                                nm(oar_ic_in_name(c, "Seed", 0)), nm(oar_dtype_name(sd)));
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, o, n, oar_ic_in_dtype(c, "X", 0)));
    if (oar_ic_out_present(c, "SeedOut")) {
        const int64_t one = 1;
        OAR_TRY(oar_ic_set_out(c, "SeedOut", 0, &one, 1, OAR_INT64));
    }
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/tensor_create.h"
