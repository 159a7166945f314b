/*
 * infer_util.h — small helpers that the inference functions and grad
 * makers of several op families (src/ops/rearrange.c, rearrange2.c,
 * shape_ext.c, shape_ops.c, sequence_ext.c) share.
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
