/* prune.c — prune(targets) (Eval's minimal block, Fluid's prune.cc) and the
 * inference cleanup behind clone(for_test). */
#include "backward_pass.h"

#include <stdlib.h>
#include <string.h>

/* Names an op refers to: its args, what its sub-blocks use from outside, and
 * STRINGS attrs (recurrent names its states there). Over-counting only keeps
 * a var that could have gone. */
static int add_refs(oar_program_t *p, const oar_op_desc_t *op, oar_bw_names_t *refs)
{
    OAR_TRY(oar_bw_op_footprint(p, op, refs, refs));
    for (int i = 0; i < op->nattrs; i++)
        if (op->attrs[i].type == OAR_ATTR_STRINGS)
            for (int j = 0; j < op->attrs[i].n; j++) OAR_TRY(oar_bw_names_add(refs, ((char **)op->attrs[i].list)[j]));
    return OAR_OK;
}

/* removes block b's vars that are not in refs, keeping persistables and data
 * vars when `keep_io` (last first: the block reindexes what follows) */
static int drop_unreferenced_vars(oar_block_t *b, const oar_bw_names_t *refs, bool keep_io)
{
    for (int i = b->nvars - 1; i >= 0; i--) {
        const oar_var_desc_t *v = b->vars[i];
        if (oar_bw_names_has(refs, v->name)) continue;
        if (keep_io && (v->persistable || v->need_check_feed)) continue;
        OAR_TRY(oar_block_remove_var(b, v->name));
    }
    return OAR_OK;
}

static bool writes_any(const oar_bw_names_t *w, const oar_bw_names_t *set)
{
    for (int k = 0; k < w->n; k++)
        if (oar_bw_names_has(set, w->v[k])) return true;
    return false;
}

static int prune_block0(oar_program_t *q, const char *const *targets, int ntargets)
{
    oar_block_t *b = oar_program_block(q, 0);
    oar_bw_names_t tset = {0}, need = {0}, refs = {0};
    bool *keep = oar_xcalloc((size_t)(b->nops > 0 ? b->nops : 1), sizeof *keep);
    bool *marked = oar_xcalloc((size_t)ntargets, sizeof *marked);
    int rc = keep && marked ? OAR_OK : OAR_ERR_NOMEM;
    for (int i = 0; i < ntargets && rc == OAR_OK; i++) rc = oar_bw_names_add_copy(&tset, targets[i]);
    for (int i = 0; i < ntargets && rc == OAR_OK; i++) rc = oar_bw_names_add_copy(&need, targets[i]);
    for (int i = b->nops - 1; i >= 0 && rc == OAR_OK; i--) {
        oar_op_desc_t *op = b->ops[i];
        op->is_target = false;
        if (strcmp(op->type, "feed") == 0 || strcmp(op->type, "fetch") == 0) continue;
        oar_bw_names_t r = {0}, w = {0};
        rc = oar_bw_op_footprint(q, op, &r, &w);
        /* an optimize op reads and writes its param: only a target pulls it in */
        bool hit_target = rc == OAR_OK && writes_any(&w, &tset);
        bool hit = hit_target || (rc == OAR_OK && writes_any(&w, &need) &&
                                  !(oar_bw_op_role(op) & OAR_ROLE_OPTIMIZE));
        if (hit) {
            keep[i] = true;
            for (int k = 0; k < r.n && rc == OAR_OK; k++) rc = oar_bw_names_add(&need, r.v[k]);
            /* is_target goes on the last op that writes each target */
            for (int t = 0; t < ntargets && hit_target; t++)
                if (!marked[t] && oar_bw_names_has(&w, targets[t])) { marked[t] = true; op->is_target = true; }
        }
        oar_bw_names_free(&r);
        oar_bw_names_free(&w);
    }
    for (int i = 0; i < b->nops && rc == OAR_OK; i++)
        if (keep[i]) rc = add_refs(q, b->ops[i], &refs);
    for (int i = 0; i < ntargets && rc == OAR_OK; i++) rc = oar_bw_names_add_copy(&refs, targets[i]);
    /* sub-blocks stay whole (their indices must not move): what they use stays */
    for (int bi = 1; bi < oar_program_num_blocks(q) && rc == OAR_OK; bi++) {
        oar_block_t *sb = oar_program_block(q, bi);
        for (int i = 0; i < sb->nops && rc == OAR_OK; i++) rc = add_refs(q, sb->ops[i], &refs);
    }
    /* refs borrows names from ops: copy them before the ops go */
    oar_bw_names_t kept = {0};
    for (int i = 0; i < refs.n && rc == OAR_OK; i++) rc = oar_bw_names_add_copy(&kept, refs.v[i]);
    for (int i = b->nops - 1; i >= 0 && rc == OAR_OK; i--)
        if (!keep[i]) rc = oar_block_remove_op(b, i);
    if (rc == OAR_OK) rc = drop_unreferenced_vars(b, &kept, false);
    oar_bw_names_free(&kept);
    oar_bw_names_free(&refs);
    oar_bw_names_free(&need);
    oar_bw_names_free(&tset);
    free(keep);
    free(marked);
    return rc;
}

int oar_program_prune(const oar_program_t *p, const char *const *targets, int ntargets,
                      oar_program_t **out)
{
    if (!p || !out) return oar_error(OAR_ERR_INVALID, "prune: NULL %s", p ? "out pointer" : "program");
    *out = NULL;
    if (ntargets <= 0 || !targets) return oar_error(OAR_ERR_INVALID, "prune: no targets");
    const oar_block_t *b0 = p->nblocks > 0 ? p->blocks[0] : NULL;
    if (!b0) return oar_error(OAR_ERR_INVALID, "prune: program has no block 0");
    for (int i = 0; i < ntargets; i++) {
        if (!targets[i]) return oar_error(OAR_ERR_INVALID, "prune: targets[%d] is NULL", i);
        if (oar_strmap_get(&b0->var_index, targets[i]) < 0)
            return oar_error(OAR_ERR_NOT_FOUND, "prune: target '%s' is not a variable of block 0", targets[i]);
    }
    oar_program_t *q;
    OAR_TRY(oar_program_clone(p, &q));
    int rc = prune_block0(q, targets, ntargets);
    if (rc != OAR_OK) { oar_program_free(q); return rc; }
    *out = q;
    return OAR_OK;
}

int oar_program_inference_optimize(oar_program_t *p)
{
    if (!p) return oar_error(OAR_ERR_INVALID, "inference_optimize: NULL program");
    const int drop = OAR_ROLE_BACKWARD | OAR_ROLE_OPTIMIZE | OAR_ROLE_LRSCHED;
    int nb = oar_program_num_blocks(p);
    for (int bi = 0; bi < nb; bi++) {
        oar_block_t *b = oar_program_block(p, bi);
        for (int i = b->nops - 1; i >= 0; i--)
            if (oar_bw_op_role(b->ops[i]) & drop) OAR_TRY(oar_block_remove_op(b, i));
        for (int i = 0; i < b->nops; i++)
            if (oar_op_attr_type(b->ops[i]->type, "is_test") == OAR_ATTR_BOOLEAN)
                OAR_TRY(oar_op_desc_set_attr_bool(b->ops[i], "is_test", true));
    }
    oar_bw_names_t refs = {0};
    int rc = OAR_OK;
    for (int bi = 0; bi < nb && rc == OAR_OK; bi++) {
        oar_block_t *b = oar_program_block(p, bi);
        for (int i = 0; i < b->nops && rc == OAR_OK; i++) rc = add_refs(p, b->ops[i], &refs);
    }
    for (int bi = 0; bi < nb && rc == OAR_OK; bi++)
        rc = drop_unreferenced_vars(oar_program_block(p, bi), &refs, true);
    oar_bw_names_free(&refs);
    return rc;
}
