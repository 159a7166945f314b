/* seq_lod.c — the place-neutral LoD work of the sequence ops' kernels (see
 * seq_lod.h); moved here from the CPU kernels so that every place checks and
 * builds LoDs the same way, with the same messages. */
#include <stdlib.h>
#include "op.h"
#include "seq_lod.h"
#include "ops/sequence_util.h"   /* generated slots and oar_seqexpand_attrs_t */

static const char *nm(const char *s) { return s ? s : "?"; }

int oar_seq_lod_last(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t *t, const int64_t **offs,
                     int64_t *noffs)
{
    if (t->lod_levels < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor (level >= 1) is required",
                           name, nm(oar_k_input_name(k, slot, 0)));
    int l = t->lod_levels - 1;
    *offs = t->lod[l];
    *noffs = t->lod_size[l];
    int64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (*noffs < 1 || (*offs)[*noffs - 1] != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s': LoD level %d ends at %lld but the tensor has %lld rows",
                           name, nm(oar_k_input_name(k, slot, 0)), l,
                           (long long)(*noffs > 0 ? (*offs)[*noffs - 1] : 0), (long long)rows);
    return OAR_OK;
}

int oar_seq_set_upper_lod(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *x)
{
    oar_tensor_t *o = oar_k_output(k, slot, 0);
    if (!o) return OAR_OK;
    if (x->lod_levels <= 1) { oar_tensor_clear_lod(o); return OAR_OK; }
    int rc = oar_tensor_set_lod(o, x->lod_levels - 1, (const int64_t *const *)x->lod, x->lod_size);
    if (rc != OAR_OK) return oar_k_error(k, rc, "cannot set Out's LoD: %s", oar_last_error());
    return OAR_OK;
}

int oar_seq_expand_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, oar_seq_expand_t *p)
{
    const oar_tensor_t *y = oar_k_input(k, OAR_SEQEXP_Y, 0);
    if (!y) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Y '%s' has no value",
                               nm(oar_k_input_name(k, OAR_SEQEXP_Y, 0)));
    int ref = ((const oar_seqexpand_attrs_t *)oar_k_attrs(k))->ref_level;
    if (y->lod_levels < 1 || ref < -1 || ref >= y->lod_levels)
        return oar_k_error(k, OAR_ERR_INVALID, "Y '%s' has %d LoD levels; ref_level %d does not name one",
                           nm(oar_k_input_name(k, OAR_SEQEXP_Y, 0)), y->lod_levels, ref);
    if (ref == -1) ref = y->lod_levels - 1;
    p->ref = y->lod[ref];
    p->nref = y->lod_size[ref];
    p->xo = x->lod_levels == 1 ? x->lod[0] : NULL;
    p->xrows = x->ndim > 0 ? x->dims[0] : 1;
    if (p->nref > 1 && (p->xo ? x->lod_size[0] != p->nref : p->xrows != p->nref - 1))
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' has %lld sequences but Y '%s' has %lld at ref_level %d",
                           nm(oar_k_input_name(k, OAR_SEQ_X, 0)), (long long)(p->xo ? x->lod_size[0] - 1 : p->xrows),
                           nm(oar_k_input_name(k, OAR_SEQEXP_Y, 0)), (long long)(p->nref - 1), ref);
    return OAR_OK;
}

int64_t oar_seq_expand_rows(const oar_seq_expand_t *p)
{
    if (p->nref <= 1) return p->xrows;
    int64_t r = 0;
    for (int64_t i = 0; i + 1 < p->nref; i++) r += oar_seq_expand_reps(p, i) * oar_seq_expand_len(p, i);
    return r;
}

int oar_seq_expand_set_lod(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_seq_expand_t *p, int64_t orows)
{
    oar_tensor_t *ot = oar_k_output(k, OAR_SEQEXP_OUT, 0);
    if (!ot) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    if (p->nref <= 1) {   /* nothing to repeat by: Out is X */
        if (orows != p->xrows)
            return oar_k_error(k, OAR_ERR_SHAPE, "Out has %lld rows, X %lld", (long long)orows, (long long)p->xrows);
        if (x->lod_levels > 0) {
            int rc = oar_tensor_copy_lod(ot, x);
            if (rc != OAR_OK) return oar_k_error(k, rc, "cannot set Out's LoD");
        } else {
            oar_tensor_clear_lod(ot);
        }
        return OAR_OK;
    }
    const int64_t rows = oar_seq_expand_rows(p);
    if (rows > orows)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out has %lld rows; the expansion needs more", (long long)orows);
    if (rows != orows)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out has %lld rows; the expansion gives %lld", (long long)orows,
                           (long long)rows);
    if (!p->xo) { oar_tensor_clear_lod(ot); return OAR_OK; }
    /* one sequence per copy */
    int64_t ncopies = 0;
    for (int64_t i = 0; i + 1 < p->nref; i++) ncopies += oar_seq_expand_reps(p, i);
    int64_t *olod = oar_xmalloc(sizeof(int64_t) * (size_t)(ncopies + 1));
    if (!olod) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out's LoD");
    int64_t r = 0, c = 0;
    olod[0] = 0;
    for (int64_t i = 0; i + 1 < p->nref; i++)
        for (int64_t j = 0, len = oar_seq_expand_len(p, i); j < oar_seq_expand_reps(p, i); j++) olod[++c] = (r += len);
    const int64_t *lv[1] = {olod};
    int64_t sz[1] = {ncopies + 1};
    int rc = oar_tensor_set_lod(ot, 1, lv, sz);
    free(olod);
    if (rc != OAR_OK) return oar_k_error(k, rc, "cannot set Out's LoD: %s", oar_last_error());
    return OAR_OK;
}
