/*
 * fuse_fc.c — the inference pass that rewrites mul + elementwise_add
 * (+ relu) into one fc op, as Paddle Inference's fc_fuse_pass does.
 *
 * Why: fc's CPU kernel runs the product with the bias and the relu fused
 * into it and the weights reordered once (kernels/cpu/fc.c), where the
 * unfused ops make three passes over the output and a GEMM that repacks
 * the weights on every run.
 *
 * A chain is fused only when nothing else can tell: the weight is a
 * persistable 2-D variable used with y_num_col_dims 1, the bias a
 * persistable [N] (or [1, N]) added along the product's last axis, the
 * intermediates are read by nothing else in the program (no other op in
 * any block, no fetch) and written by nothing else, and no op between the
 * chain's first and last writes an input of the chain.
 */
#include <stdlib.h>
#include <string.h>
#include "desc.h"
#include "error.h"
#include "fuse.h"

static const char *arg(const oar_op_desc_t *op, const char *slot, bool out) {
    const oar_op_slot_t *s = out ? oar_op_find_output(op, slot) : oar_op_find_input(op, slot);
    return s && s->nargs == 1 ? s->args[0] : NULL;
}

/* how many ops of the program read (or write) `name` */
static int uses(oar_program_t *prog, const char *name, bool out) {
    int n = 0;
    for (int bi = 0; bi < oar_program_num_blocks(prog); bi++) {
        oar_block_t *b = oar_program_block(prog, bi);
        for (int i = 0; i < b->nops; i++) {
            const oar_op_desc_t *op = b->ops[i];
            const oar_op_slot_t *slots = out ? op->outputs : op->inputs;
            const int ns = out ? op->noutputs : op->ninputs;
            for (int s = 0; s < ns; s++)
                for (int a = 0; a < slots[s].nargs; a++) n += strcmp(slots[s].args[a], name) == 0;
        }
    }
    return n;
}

static bool kept(const char *name, const char *const *keep, int nkeep) {
    for (int i = 0; i < nkeep; i++)
        if (strcmp(keep[i], name) == 0) return true;
    return false;
}

/* an intermediate the fusion may drop: one writer, one reader, not kept */
static bool private_tmp(oar_program_t *prog, const char *name, const char *const *keep, int nkeep) {
    return name && !kept(name, keep, nkeep) && uses(prog, name, false) == 1 && uses(prog, name, true) == 1;
}

/* the first op after `from` that reads `name`, -1 if none */
static int reader_after(oar_block_t *b, int from, const char *name) {
    for (int i = from + 1; i < b->nops; i++) {
        const oar_op_desc_t *op = b->ops[i];
        for (int s = 0; s < op->ninputs; s++)
            for (int a = 0; a < op->inputs[s].nargs; a++)
                if (strcmp(op->inputs[s].args[a], name) == 0) return i;
    }
    return -1;
}

/* an op in (lo, hi) writes one of names */
static bool written_between(oar_block_t *b, int lo, int hi, const char *const *names, int n) {
    for (int i = lo + 1; i < hi; i++) {
        const oar_op_desc_t *op = b->ops[i];
        for (int s = 0; s < op->noutputs; s++)
            for (int a = 0; a < op->outputs[s].nargs; a++)
                for (int k = 0; k < n; k++)
                    if (names[k] && strcmp(op->outputs[s].args[a], names[k]) == 0) return true;
    }
    return false;
}

static int attr_int(const oar_op_desc_t *op, const char *name, int def) {
    int32_t v;
    return oar_op_desc_get_attr_int(op, name, &v) == OAR_OK ? v : def;
}

static const oar_var_desc_t *param(oar_block_t *b, const char *name) {
    const oar_var_desc_t *v = name ? oar_block_find_var_recursive(b, name) : NULL;
    return v && v->persistable ? v : NULL;
}

/* the fc replacing ops[i] (mul), ops[j] (add) and, when k >= 0, ops[k]
 * (relu): built detached, inserted after the chain's last op */
static int build_fc(oar_block_t *b, int i, const char *out, bool relu, int last, const char *bias) {
    const oar_op_desc_t *mul = b->ops[i];
    const char *x = arg(mul, "X", false), *w = arg(mul, "Y", false);
    oar_op_desc_t *fc;
    OAR_TRY(oar_op_desc_new("fc", &fc));
    int rc = oar_op_desc_set_input(fc, "Input", &x, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_input(fc, "W", &w, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_input(fc, "Bias", &bias, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_output(fc, "Out", &out, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_attr_int(fc, "in_num_col_dims", attr_int(mul, "x_num_col_dims", 1));
    if (rc == OAR_OK) rc = oar_op_desc_set_attr_string(fc, "activation_type", relu ? "relu" : "");
    /* errors in fc name the Lua line that built the mul */
    const oar_attr_t *cs = oar_op_find_attr(mul, "op_callstack");
    if (rc == OAR_OK && cs) {
        const void *data;
        int n;
        if (oar_op_desc_get_attr_list(mul, "op_callstack", &data, &n) == OAR_OK)
            rc = oar_op_desc_set_attr_strings(fc, "op_callstack", (const char *const *)data, n);
    }
    if (rc == OAR_OK) rc = oar_block_insert_op(b, last + 1, fc);
    if (rc != OAR_OK) oar_op_desc_free(fc);
    return rc;
}

/* fuses the chain starting at mul ops[i]; *fused says whether it did */
static int fuse_at(oar_program_t *prog, oar_block_t *b, int i, const char *const *keep, int nkeep, bool *fused) {
    *fused = false;
    const oar_op_desc_t *mul = b->ops[i];
    const char *x = arg(mul, "X", false), *w = arg(mul, "Y", false), *t = arg(mul, "Out", true);
    const oar_var_desc_t *wv = param(b, w);
    if (!x || !wv || wv->ndim != 2 || attr_int(mul, "y_num_col_dims", 1) != 1) return OAR_OK;
    if (!private_tmp(prog, t, keep, nkeep)) return OAR_OK;
    const int j = reader_after(b, i, t);
    if (j < 0) return OAR_OK;
    const oar_op_desc_t *add = b->ops[j];
    const char *bias = arg(add, "Y", false), *a = arg(add, "Out", true);
    if (strcmp(add->type, "elementwise_add") != 0 || !arg(add, "X", false) || strcmp(arg(add, "X", false), t) != 0)
        return OAR_OK;
    const oar_var_desc_t *bv = param(b, bias), *tv = oar_block_find_var_recursive(b, t);
    if (!bv || !a || !tv || tv->ndim < 2) return OAR_OK;
    const int axis = attr_int(add, "axis", -1);
    const bool bias_shape = (bv->ndim == 1 && bv->dims[0] == wv->dims[1]) ||
                            (bv->ndim == 2 && bv->dims[0] == 1 && bv->dims[1] == wv->dims[1]);
    /* the bias runs along the product's last axis */
    if (!bias_shape || wv->dims[1] < 0 || (axis != -1 && axis != tv->ndim - (bv->ndim == 1 ? 1 : 2))) return OAR_OK;
    if (bv->ndim == 2 && axis != -1) return OAR_OK;
    /* an optional relu on the sum */
    int last = j;
    const char *out = a;
    bool relu = false;
    if (private_tmp(prog, a, keep, nkeep)) {
        const int k = reader_after(b, j, a);
        const oar_op_desc_t *r = k >= 0 ? b->ops[k] : NULL;
        if (r && strcmp(r->type, "relu") == 0 && arg(r, "X", false) && strcmp(arg(r, "X", false), a) == 0 &&
            arg(r, "Out", true)) {
            relu = true;
            last = k;
            out = arg(r, "Out", true);
        }
    }
    const char *inputs[3] = {x, w, bias};
    if (written_between(b, i, last, inputs, 3)) return OAR_OK;
    /* names outlive the ops being removed */
    char *tname = oar_xstrdup(t), *aname = oar_xstrdup(a), *oname = oar_xstrdup(out), *bname = oar_xstrdup(bias);
    int rc = tname && aname && oname && bname ? OAR_OK : OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = build_fc(b, i, oname, relu, last, bname);
    if (rc == OAR_OK) {
        if (relu) rc = oar_block_remove_op(b, last);
        if (rc == OAR_OK) rc = oar_block_remove_op(b, j);
        if (rc == OAR_OK) rc = oar_block_remove_op(b, i);
        if (rc == OAR_OK && oar_block_find_var(b, tname)) rc = oar_block_remove_var(b, tname);
        if (rc == OAR_OK && relu && oar_block_find_var(b, aname)) rc = oar_block_remove_var(b, aname);
        *fused = rc == OAR_OK;
    }
    free(tname); free(aname); free(oname); free(bname);
    return rc;
}

int oar_fuse_fc(oar_program_t *prog, int block_idx, const char *const *keep, int nkeep, int *nfused) {
    oar_block_t *b = oar_program_block(prog, block_idx);
    if (!b) return oar_error(OAR_ERR_RANGE, "oar_fuse_fc: no block %d", block_idx);
    int n = 0;
    for (int i = 0; i < b->nops; i++) {
        if (strcmp(b->ops[i]->type, "mul") != 0) continue;
        bool fused;
        OAR_TRY(fuse_at(prog, b, i, keep, nkeep, &fused));
        if (fused) { n++; i--; }   /* the fc now sits where a later chain may start: look again */
    }
    if (nfused) *nfused = n;
    return OAR_OK;
}
