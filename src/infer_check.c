/* infer_check.c — input and attr checks that several op definitions' infer
 * functions make (the recurrent cells, the sequence ops). Each error names
 * the slot and the variable, what it is and what was expected. */
#include <string.h>
#include "op.h"

static const char *nm(const char *s) { return s ? s : "?"; }

int oar_ic_check_2d(oar_infer_ctx_t *c, const char *slot, int64_t rows, int64_t cols, const char *what,
                    const int64_t **dims)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (nd != 2 || (rows >= 0 && !oar_dim_eq(d[0], rows)) || (cols >= 0 && !oar_dim_eq(d[1], cols))) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected %s", slot,
                            nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, nd, b, sizeof b), what);
    }
    if (dims) *dims = d;
    return OAR_OK;
}

int oar_ic_check_float(oar_infer_ctx_t *c, const char *slot, int like)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt < 0) return OAR_OK;
    if (like < 0 && dt != OAR_FP32 && dt != OAR_FP64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s; expected float32 or float64", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)));
    if (like >= 0 && dt != like)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s; expected %s like the others", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)), nm(oar_dtype_name(like)));
    return OAR_OK;
}

int oar_ic_seq_count(oar_infer_ctx_t *c, const char *slot, int64_t *nseq)
{
    const oar_tensor_t *t = oar_ic_in_lod_tensor(c, slot, 0);
    if (!t) return OAR_ERR_NOT_FOUND;
    if (t->lod_levels < 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor of sequences is required",
                            slot, nm(oar_ic_in_name(c, slot, 0)));
    int l = t->lod_levels - 1;
    int64_t rows = t->ndim > 0 ? t->dims[0] : 0;
    if (t->lod[l][t->lod_size[l] - 1] != rows)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s': LoD ends at %lld but the tensor has %lld rows", slot,
                            nm(oar_ic_in_name(c, slot, 0)), (long long)t->lod[l][t->lod_size[l] - 1], (long long)rows);
    *nseq = t->lod_size[l] - 1;
    return OAR_OK;
}

int oar_ic_check_same_dims(oar_infer_ctx_t *c, const char *slot, const char *like)
{
    int n, ln;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &n);
    const int64_t *l = d ? oar_ic_in_dims(c, like, 0, &ln) : NULL;
    if (!l) return OAR_ERR_SHAPE;
    bool same = n == ln;
    for (int i = 0; same && i < n; i++) same = oar_dim_eq(d[i], l[i]);
    if (!same) {
        char a[128], b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' has shape %s but %s '%s' has %s", slot,
                            oar_ic_in_name(c, slot, 0), oar_shape_str(d, n, a, sizeof a), like,
                            oar_ic_in_name(c, like, 0), oar_shape_str(l, ln, b, sizeof b));
    }
    return OAR_OK;
}

int oar_ic_check_act_attr(oar_infer_ctx_t *c, const char *attr)
{
    static const char *const names[] = {"identity", "sigmoid", "tanh", "relu"};
    const char *v = oar_attr_s(oar_ic_op(c), attr);
    for (int i = 0; i < 4; i++)
        if (v && strcmp(v, names[i]) == 0) return OAR_OK;
    return oar_ic_error(c, OAR_ERR_INVALID, "attr %s is '%s'; expected identity, sigmoid, tanh or relu", attr, nm(v));
}
