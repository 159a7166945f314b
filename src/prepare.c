/* prepare.c — the prepared form of a block, built once per (program version,
 * block) and cached by the executor:
 *   - a var table of every name the block's ops use, so a run binds names to
 *     variables once and ops address variables by index;
 *   - per op: its definition, its slots in the definition's order (kernels
 *     address them by the definition's enum), its kernels per dtype, its
 *     attributes decoded into the definition's struct;
 *   - the memory plan: for each op, the temporaries whose last use it is
 *     (released right after it: Fluid's eager deletion; the buffers go back
 *     to the pool, where later temporaries of a fitting size pick them up),
 *     and an in-place pair where the definition allows it.
 *
 * Invariants of the plan (docs/DECISIONS.md, "memory plan"):
 *   - only variables declared in this block, not persistable, holding a
 *     LoD tensor or selected rows are released early;
 *   - a name that any sub-block uses (at any depth) or that appears in a
 *     string attribute (ops that look variables up by name) is never
 *     released early: the plan cannot see those reads;
 *   - a fetched variable is kept (marked per run in `keep`);
 *   - everything else the run created is cleared when the run ends. */
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "desc_check.h"
#include "exec.h"
#include "strmap.h"

void oar_prepared_free(oar_prepared_t *p) {
    if (!p) return;
    for (int i = 0; i < p->nops; i++) {
        oar_prep_op_t *op = &p->ops[i];
        for (int s = 0; s < op->nins; s++) free(op->ins[s].ids);
        for (int s = 0; s < op->nouts; s++) free(op->outs[s].ids);
        free(op->ins); free(op->outs); free(op->context); free(op->attrs);
        free(op->release); free(op->memo_in); free(op->memo_out);
        if (op->kstate && op->kstate_free) op->kstate_free(op->kstate);
    }
    free(p->ops);
    for (int i = 0; i < p->nnames; i++) free(p->names[i]);
    oar_strmap_free(&p->index);
    free(p->names); free(p->decl); free(p->persistable); free(p->planned); free(p->keep);
    free(p->bound_vars);
    if (p->bound_local) oar_scope_free(p->bound_local);
    if (p->bound_scope) oar_scope_free(p->bound_scope);
    free(p);
}

/* ---- the var table ----------------------------------------------------- */
typedef struct names_builder { oar_strmap_t map; oar_prepared_t *p; int cap; } names_builder_t;

int oar_prepared_find(const oar_prepared_t *p, const char *name) {
    return oar_strmap_get(&p->index, name);
}

static int name_id(names_builder_t *nb, const char *name, int *id) {
    if (strcmp(name, OAR_EMPTY_VAR) == 0) { *id = -1; return OAR_OK; }
    int got = oar_strmap_get(&nb->map, name);
    if (got >= 0) { *id = got; return OAR_OK; }
    oar_prepared_t *p = nb->p;
    OAR_TRY(oar_grow((void **)&p->names, &nb->cap, p->nnames + 1, sizeof *p->names));
    char *copy = oar_xstrdup(name);
    if (!copy) return OAR_ERR_NOMEM;
    p->names[p->nnames] = copy;
    if (oar_strmap_put(&nb->map, copy, p->nnames) != OAR_OK) return OAR_ERR_NOMEM;
    *id = p->nnames++;
    return OAR_OK;
}

static int count_defs(const oar_slot_def_t *s) {
    int n = 0;
    while (s && s[n].name) n++;
    return n;
}

static int fill_slot(names_builder_t *nb, oar_pslot_t *ps, const oar_op_slot_t *src) {
    ps->n = src ? src->nargs : 0;
    ps->ids = oar_xcalloc((size_t)(ps->n ? ps->n : 1), sizeof *ps->ids);
    if (!ps->ids) return OAR_ERR_NOMEM;
    for (int a = 0; a < ps->n; a++) OAR_TRY(name_id(nb, src->args[a], &ps->ids[a]));
    return OAR_OK;
}

/* the definition's slots in order, then the desc's undeclared ones */
static int prepare_slots(names_builder_t *nb, const oar_slot_def_t *defs, const oar_op_slot_t *src, int nsrc,
                         oar_pslot_t **out, int *nout) {
    int ndef = count_defs(defs), extra = 0;
    for (int s = 0; s < nsrc; s++) {
        bool declared = false;
        for (int j = 0; j < ndef && !declared; j++) declared = strcmp(defs[j].name, src[s].slot) == 0;
        extra += !declared;
    }
    int n = ndef + extra;
    *out = oar_xcalloc((size_t)(n ? n : 1), sizeof **out);
    if (!*out) return OAR_ERR_NOMEM;
    *nout = n;
    for (int j = 0; j < ndef; j++) {
        const oar_op_slot_t *found = NULL;
        for (int s = 0; s < nsrc && !found; s++)
            if (strcmp(defs[j].name, src[s].slot) == 0) found = &src[s];
        (*out)[j].name = defs[j].name;
        OAR_TRY(fill_slot(nb, &(*out)[j], found));
    }
    int k = ndef;
    for (int s = 0; s < nsrc; s++) {
        bool declared = false;
        for (int j = 0; j < ndef && !declared; j++) declared = strcmp(defs[j].name, src[s].slot) == 0;
        if (declared) continue;
        (*out)[k].name = src[s].slot;
        OAR_TRY(fill_slot(nb, &(*out)[k++], &src[s]));
    }
    return OAR_OK;
}

/* ---- ops --------------------------------------------------------------- */
static int count_args(const oar_pslot_t *s, int n) {
    int c = 0;
    for (int i = 0; i < n; i++) c += s[i].n;
    return c;
}

static int prepare_op(int place, oar_block_t *b, names_builder_t *nb, int i, oar_prep_op_t *op) {
    const oar_op_desc_t *d = b->ops[i];
    char ctx[512];
    op->desc = d;
    op->inplace_in = op->inplace_out = -1;
    op->grad_follows = -1;
    op->context = oar_xstrdup(oar_op_context(d, ctx, sizeof ctx));
    if (!op->context) return OAR_ERR_NOMEM;
    op->def = oar_registry_op(d->type);
    if (!op->def) return oar_error_in_op(OAR_ERR_NOT_FOUND, "%s: unknown op type '%s'", op->context, d->type);
    /* an op that bypassed insertion and parsing (oar_block_insert_op_raw) is
     * checked here, once per prepare: its kernel trusts slots and ranges */
    if (oar_op_check_def_const(d, op->def) != OAR_OK) {
        oar_error_prefix("%s: ", op->context);
        oar_error_mark_op_context();
        return OAR_ERR_INVALID;
    }
    OAR_TRY(prepare_slots(nb, op->def->inputs, d->inputs, d->ninputs, &op->ins, &op->nins));
    OAR_TRY(prepare_slots(nb, op->def->outputs, d->outputs, d->noutputs, &op->outs, &op->nouts));
    if (op->def->attrs_size) {
        op->attrs = oar_xcalloc(1, op->def->attrs_size);
        if (!op->attrs) return OAR_ERR_NOMEM;
    }
    int rc = oar_op_decode(op->def, d, op->attrs);
    if (rc != OAR_OK) {
        oar_error_prefix("%s: ", op->context);
        oar_error_mark_op_context();
        return rc;
    }
    bool any = false;
    for (int t = 0; t < OAR_NUM_DTYPES; t++) {
        op->kernels[t] = oar_registry_kernel(d->type, place, t);
        op->kplace[t] = (unsigned char)place;
        if (!op->kernels[t] && place != OAR_PLACE_CPU) {   /* fall back to the CPU kernel */
            op->kernels[t] = oar_registry_kernel(d->type, OAR_PLACE_CPU, t);
            op->kplace[t] = OAR_PLACE_CPU;
        }
        any = any || op->kernels[t];
    }
    if (!(op->def->flags & OAR_OP_NO_KERNEL) && !any)
        return oar_error_in_op(OAR_ERR_UNSUPPORTED, "%s: no %s kernel is registered", op->context,
                         place == OAR_PLACE_CPU ? "CPU" : "CUDA or CPU");
    op->host_inputs = (op->def->flags & OAR_OP_NO_KERNEL) && !(op->def->flags & OAR_OP_PLACE_AWARE);
    /* the dispatch input: the declared slot, else the first present input */
    op->dispatch_id = -1;
    const oar_pslot_t *ds = op->def->dtype_slot ? oar_pslot_find(op->ins, op->nins, op->def->dtype_slot) : NULL;
    if (ds && ds->n > 0) op->dispatch_id = ds->ids[0];
    for (int s = 0; s < op->nins && op->dispatch_id < 0; s++)
        for (int a = 0; a < op->ins[s].n && op->dispatch_id < 0; a++) op->dispatch_id = op->ins[s].ids[a];
    op->fallback_dtype = OAR_FP32;
    for (int s = 0; s < d->noutputs; s++)
        if (d->outputs[s].nargs > 0) {
            oar_var_desc_t *v = oar_block_find_var_recursive(b, d->outputs[s].args[0]);
            if (v && v->dtype >= 0) { op->fallback_dtype = v->dtype; break; }
        }
    /* the inference memo: only for ops whose inference run-time sizes outputs */
    op->memo_state = OAR_MEMO_NEVER;
    if (op->def->infer && !(op->def->flags & (OAR_OP_NO_INFER_RUNTIME | OAR_OP_NO_KERNEL))) {
        op->memo_nin = count_args(op->ins, op->nins);
        op->memo_nout = count_args(op->outs, op->nouts);
        op->memo_in = oar_xcalloc((size_t)(op->memo_nin ? op->memo_nin : 1), sizeof *op->memo_in);
        op->memo_out = oar_xcalloc((size_t)(op->memo_nout ? op->memo_nout : 1), sizeof *op->memo_out);
        if (!op->memo_in || !op->memo_out) return OAR_ERR_NOMEM;
        op->memo_state = OAR_MEMO_EMPTY;
    }
    return OAR_OK;
}

/* An op whose '<type>_grad' comes later in the block, reading the same
 * variable in the forward's first input slot (conv2d's Input), may leave
 * work for it. Asked once per op by the kernels that care
 * (oar_k_grad_follows), not worked out for every op of every block. */
bool oar_prep_grad_follows(const oar_prepared_t *p, int i) {
    const oar_prep_op_t *f = &p->ops[i];
    if (f->nins < 1 || f->ins[0].n < 1 || f->ins[0].ids[0] < 0) return false;
    const char *type = f->desc->type, *slot = f->ins[0].name;
    const size_t tl = strlen(type);
    for (int j = i + 1; j < p->nops; j++) {
        const char *gt = p->ops[j].desc->type;
        if (strncmp(gt, type, tl) != 0 || strcmp(gt + tl, "_grad") != 0) continue;
        const oar_pslot_t *s = oar_pslot_find(p->ops[j].ins, p->ops[j].nins, slot);
        if (s && s->n > 0 && s->ids[0] == f->ins[0].ids[0]) return true;
    }
    return false;
}

/* ---- the memory plan ----------------------------------------------------- */
static void unplan_name(names_builder_t *nb, const char *name) {
    int id = oar_strmap_get(&nb->map, name);
    if (id >= 0) nb->p->planned[id] = false;
}

/* names a plan cannot track: string attrs, and everything sub-blocks use */
static void unplan_op_names(oar_program_t *prog, names_builder_t *nb, const oar_op_desc_t *d,
                            bool in_sub, unsigned char *seen);

static void unplan_block(oar_program_t *prog, names_builder_t *nb, int idx, unsigned char *seen) {
    oar_block_t *sb = oar_program_block(prog, idx);
    if (!sb || seen[idx]) return;
    seen[idx] = 1;
    for (int i = 0; i < sb->nops; i++) unplan_op_names(prog, nb, sb->ops[i], true, seen);
}

static void unplan_op_names(oar_program_t *prog, names_builder_t *nb, const oar_op_desc_t *d,
                            bool in_sub, unsigned char *seen) {
    if (in_sub) {
        for (int s = 0; s < d->ninputs; s++)
            for (int a = 0; a < d->inputs[s].nargs; a++) unplan_name(nb, d->inputs[s].args[a]);
        for (int s = 0; s < d->noutputs; s++)
            for (int a = 0; a < d->outputs[s].nargs; a++) unplan_name(nb, d->outputs[s].args[a]);
    }
    for (int j = 0; j < d->nattrs; j++) {
        const oar_attr_t *at = &d->attrs[j];
        if (strcmp(at->name, "op_callstack") == 0 || strcmp(at->name, "op_role_var") == 0) continue;
        if (at->type == OAR_ATTR_STRING && at->v.s) unplan_name(nb, at->v.s);
        if (at->type == OAR_ATTR_STRINGS)
            for (int k = 0; k < at->n; k++) unplan_name(nb, ((char **)at->list)[k]);
        if (at->type == OAR_ATTR_BLOCK) unplan_block(prog, nb, at->v.block, seen);
        if (at->type == OAR_ATTR_BLOCKS)
            for (int k = 0; k < at->n; k++) unplan_block(prog, nb, ((int32_t *)at->list)[k], seen);
    }
}

static int plan_memory(oar_program_t *prog, oar_block_t *b, names_builder_t *nb) {
    oar_prepared_t *p = nb->p;
    for (int i = 0; i < p->nnames; i++) {
        const oar_var_desc_t *v = p->decl[i];
        p->planned[i] = v && !p->persistable[i] &&
                        (v->type == OAR_VAR_LOD_TENSOR || v->type == OAR_VAR_SELECTED_ROWS);
    }
    unsigned char *seen = oar_xcalloc((size_t)oar_program_num_blocks(prog) + 1, 1);
    if (!seen) return OAR_ERR_NOMEM;
    seen[b->idx] = 1;
    for (int i = 0; i < b->nops; i++) unplan_op_names(prog, nb, b->ops[i], false, seen);
    free(seen);

    int *last = malloc(sizeof(int) * (size_t)(p->nnames ? p->nnames : 1));
    int *first = malloc(sizeof(int) * (size_t)(p->nnames ? p->nnames : 1));
    if (!last || !first) { free(last); free(first); return OAR_ERR_NOMEM; }
    for (int i = 0; i < p->nnames; i++) last[i] = first[i] = -1;
    for (int o = 0; o < p->nops; o++) {
        const oar_prep_op_t *op = &p->ops[o];
        for (int s = 0; s < op->nins; s++)
            for (int a = 0; a < op->ins[s].n; a++)
                if (op->ins[s].ids[a] >= 0) {
                    int id = op->ins[s].ids[a];
                    last[id] = o;
                    if (first[id] < 0) first[id] = o;
                }
        for (int s = 0; s < op->nouts; s++)
            for (int a = 0; a < op->outs[s].n; a++)
                if (op->outs[s].ids[a] >= 0) {
                    int id = op->outs[s].ids[a];
                    last[id] = o;
                    if (first[id] < 0) first[id] = o;
                }
    }
    /* bucket the planned variables by the op of their last use */
    int *count = oar_xcalloc((size_t)(p->nops ? p->nops : 1), sizeof *count);
    int rc = count ? OAR_OK : OAR_ERR_NOMEM;
    for (int i = 0; rc == OAR_OK && i < p->nnames; i++)
        if (p->planned[i] && last[i] >= 0) count[last[i]]++;
    for (int o = 0; rc == OAR_OK && o < p->nops; o++)
        if (count[o]) {
            p->ops[o].release = malloc(sizeof(int) * (size_t)count[o]);
            if (!p->ops[o].release) rc = OAR_ERR_NOMEM;
        }
    for (int i = 0; rc == OAR_OK && i < p->nnames; i++)
        if (p->planned[i] && last[i] >= 0) {
            oar_prep_op_t *op = &p->ops[last[i]];
            op->release[op->nrelease++] = i;
        }
    free(count);
    for (int o = 0; o < p->nops && rc == OAR_OK; o++) {
        oar_prep_op_t *op = &p->ops[o];
        /* in place: the input dies here, the output is born here, both temporaries */
        if ((op->def->flags & OAR_OP_INPLACE) && op->nins > 0 && op->nouts > 0 &&
            op->ins[0].n == 1 && op->outs[0].n == 1) {
            int in = op->ins[0].ids[0], out = op->outs[0].ids[0];
            if (in >= 0 && out >= 0 && in != out && p->planned[in] && p->planned[out] &&
                last[in] == o && first[out] == o && p->decl[in]->type == OAR_VAR_LOD_TENSOR) {
                op->inplace_in = in;
                op->inplace_out = out;
            }
        }
    }
    free(last); free(first);
    return rc;
}

/* ---- the block ----------------------------------------------------------- */
int oar_prepare_block(int place, oar_program_t *prog, int block_idx, bool plan, oar_prepared_t **out) {
    oar_block_t *b = oar_program_block(prog, block_idx);
    if (!b) return oar_error(OAR_ERR_RANGE, "block %d is not in the program (it has %d blocks)",
                             block_idx, oar_program_num_blocks(prog));
    oar_prepared_t *p = oar_xcalloc(1, sizeof *p);
    if (!p) return OAR_ERR_NOMEM;
    p->uid = prog->uid; p->version = prog->version; p->block_idx = block_idx; p->program = prog;
    names_builder_t nb = {.p = p};
    int rc = OAR_OK;
    int id;
    for (int i = 0; i < b->nvars && rc == OAR_OK; i++) rc = name_id(&nb, b->vars[i]->name, &id);
    if (rc == OAR_OK) {
        p->ops = oar_xcalloc((size_t)(b->nops ? b->nops : 1), sizeof *p->ops);
        if (!p->ops) rc = OAR_ERR_NOMEM;
    }
    for (int i = 0; i < b->nops && rc == OAR_OK; i++) {
        rc = prepare_op(place, b, &nb, i, &p->ops[i]);
        p->nops = i + 1;
    }
    if (rc == OAR_OK) {
        size_t n = (size_t)(p->nnames ? p->nnames : 1);
        p->decl = oar_xcalloc(n, sizeof *p->decl);
        p->persistable = oar_xcalloc(n, sizeof *p->persistable);
        p->planned = oar_xcalloc(n, sizeof *p->planned);
        p->keep = oar_xcalloc(n, sizeof *p->keep);
        if (!p->decl || !p->persistable || !p->planned || !p->keep) rc = OAR_ERR_NOMEM;
    }
    for (int i = 0; rc == OAR_OK && i < p->nnames; i++) {
        p->decl[i] = oar_block_find_var(b, p->names[i]);
        const oar_var_desc_t *v = oar_block_find_var_recursive(b, p->names[i]);
        p->persistable[i] = v && v->persistable;
    }
    if (rc == OAR_OK && plan) rc = plan_memory(prog, b, &nb);
    p->index = nb.map;   /* the builder's map is the prepared block's index */
    if (rc != OAR_OK) { oar_prepared_free(p); return rc; }
    *out = p;
    return OAR_OK;
}
