/*
 * infer_util.h — small helpers that the inference functions and grad
 * makers of several op families (src/ops/rearrange.c, rearrange2.c,
 * shape_ext.c, shape_ops.c, sequence_ext.c, linalg.c, linalg2.c,
 * pool_index.c, vision.c) share.
 */
#ifndef OAR_OPS_INFER_UTIL_H
#define OAR_OPS_INFER_UTIL_H
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "op.h"

/* a variable name for a message: "?" when there is none */
static inline const char *nm(const char *s) { return s ? s : "?"; }

/* output `slot`[i] is named and not @EMPTY@ (someone wants it) */
static inline bool out_wanted(oar_infer_ctx_t *c, const char *slot, int i)
{
    const char *n = oar_ic_out_name(c, slot, i);
    return n && strcmp(n, OAR_EMPTY_VAR) != 0;
}

/* an error saying inputs `a` and `b` do not fit together: both names,
 * both shapes, and `what` the op needs */
static inline int shape_mismatch(oar_infer_ctx_t *c, const char *a, const char *b, const char *what)
{
    int na = 0, nb = 0;
    const int64_t *da = oar_ic_in_dims(c, a, 0, &na), *db = oar_ic_in_dims(c, b, 0, &nb);
    char ba[160], bb[160];
    return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s and %s '%s' has shape %s; %s", a,
                        nm(oar_ic_in_name(c, a, 0)), oar_shape_str(da, na, ba, sizeof ba), b,
                        nm(oar_ic_in_name(c, b, 0)), oar_shape_str(db, nb, bb, sizeof bb), what);
}

/* *x gets the dims of input X[0], checked float and 4-D [N, C, H, W]
 * (lrn, unpool, spp) */
static inline int float_x_nchw(oar_infer_ctx_t *c, const int64_t **x)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int xn;
    *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!*x) return OAR_ERR_SHAPE;
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 4-D [N, C, H, W], it has rank %d",
                            oar_ic_in_name(c, "X", 0), xn);
    return OAR_OK;
}

/* d (OAR_MAX_DIMS long) and *nd get the dims of input `slot`[0] */
static inline int copy_dims(oar_infer_ctx_t *c, const char *slot, int64_t *d, int *nd)
{
    const int64_t *p = oar_ic_in_dims(c, slot, 0, nd);
    if (!p) return OAR_ERR_SHAPE;
    memcpy(d, p, sizeof(int64_t) * (size_t)*nd);
    return OAR_OK;
}

/* The pass's name for the gradient of forward input (or output) `slot`[0],
 * asked on a scratch op so the pass records it; "@EMPTY@" when the input
 * needs none. */
static inline int grad_name(oar_grad_ctx_t *g, const char *slot, bool fwd_output, char *buf, size_t n)
{
    char gslot[128];
    snprintf(gslot, sizeof gslot, "%s%s", slot, OAR_GRAD_SUFFIX);
    oar_op_desc_t *tmp;
    OAR_TRY(oar_op_desc_new(oar_op_desc_type(oar_gc_fwd(g)), &tmp));
    int rc = fwd_output ? oar_gc_out_grad(g, tmp, slot) : oar_gc_in_grad(g, tmp, slot);
    const char *name = NULL;
    if (rc == OAR_OK) {
        name = fwd_output ? oar_op_desc_input_arg(tmp, gslot, 0) : oar_op_desc_output_arg(tmp, gslot, 0);
        if (!name) rc = oar_error(OAR_ERR_INVALID, "no gradient name for %s", slot);
    }
    if (rc == OAR_OK && strlen(name) >= n) rc = oar_error(OAR_ERR_INVALID, "gradient name '%s' is too long", name);
    if (rc == OAR_OK) memcpy(buf, name, strlen(name) + 1);
    oar_op_desc_free(tmp);
    return rc;
}

#endif
