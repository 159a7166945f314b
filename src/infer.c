/* infer.c — shape/dtype inference, one API over two backings: var descs at
 * compile time (block insertion) and tensors at run time (right before the
 * kernel). An op definition writes its `infer` once against this API. */
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "exec.h"

bool oar_ic_runtime(const oar_infer_ctx_t *c) { return c->runtime; }
const oar_op_desc_t *oar_ic_op(const oar_infer_ctx_t *c) { return c->op; }

const void *oar_ic_attrs(oar_infer_ctx_t *c) {
    if (c->runtime) return oar_k_attrs(c->k);
    if (c->attrs) return c->attrs;
    if (!c->def || !c->def->decode || !c->def->attrs_size) {
        oar_error(OAR_ERR_INVALID, "op '%s' declares no attribute struct", c->op->type);
        return NULL;
    }
    void *a = calloc(1, c->def->attrs_size);
    if (!a) { oar_error(OAR_ERR_NOMEM, "no memory to decode the attributes of op '%s'", c->op->type); return NULL; }
    if (oar_op_decode(c->def, c->op, a) != OAR_OK) { free(a); return NULL; }
    return c->attrs = a;
}

int oar_ic_error(oar_infer_ctx_t *c, int status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return oar_error(status, "%s: %s", c->op->type, msg);
}

/* ---- argument lookup ----------------------------------------------------- */
static const oar_op_slot_t *desc_slot(const oar_op_desc_t *op, const char *slot, bool input) {
    return input ? oar_op_find_input(op, slot) : oar_op_find_output(op, slot);
}

static int arg_count(const oar_infer_ctx_t *c, const char *slot, bool input) {
    const oar_op_slot_t *s = desc_slot(c->op, slot, input);
    return s ? s->nargs : 0;
}

int oar_ic_in_count(const oar_infer_ctx_t *c, const char *slot) { return arg_count(c, slot, true); }
int oar_ic_out_count(const oar_infer_ctx_t *c, const char *slot) { return arg_count(c, slot, false); }

static const char *arg_name(const oar_infer_ctx_t *c, const char *slot, int i, bool input) {
    const oar_op_slot_t *s = desc_slot(c->op, slot, input);
    if (!s || i < 0 || i >= s->nargs) return NULL;
    return s->args[i];
}

const char *oar_ic_in_name(const oar_infer_ctx_t *c, const char *slot, int i) { return arg_name(c, slot, i, true); }
const char *oar_ic_out_name(const oar_infer_ctx_t *c, const char *slot, int i) { return arg_name(c, slot, i, false); }

static bool arg_present(const oar_infer_ctx_t *c, const char *slot, bool input) {
    const char *n = arg_name(c, slot, 0, input);
    return n && strcmp(n, OAR_EMPTY_VAR) != 0;
}

bool oar_ic_in_present(const oar_infer_ctx_t *c, const char *slot) { return arg_present(c, slot, true); }
bool oar_ic_out_present(const oar_infer_ctx_t *c, const char *slot) { return arg_present(c, slot, false); }

/* compile time: the var desc behind an argument (NULL with an error) */
static oar_var_desc_t *arg_desc(oar_infer_ctx_t *c, const char *slot, int i, bool input) {
    const char *name = arg_name(c, slot, i, input);
    if (!name) {
        oar_ic_error(c, OAR_ERR_NOT_FOUND, "%s slot '%s' has no argument %d", input ? "input" : "output", slot, i);
        return NULL;
    }
    oar_var_desc_t *v = oar_block_find_var_recursive(c->block, name);
    if (!v) oar_ic_error(c, OAR_ERR_NOT_FOUND, "%s '%s' of slot '%s' is not declared", input ? "input" : "output", name, slot);
    return v;
}

/* run time: the variable behind an argument (NULL with an error) */
static oar_variable_t *arg_var(oar_infer_ctx_t *c, const char *slot, int i, bool input) {
    const oar_prep_op_t *op = c->k->op;
    const oar_pslot_t *s = input ? oar_pslot_find(op->ins, op->nins, slot) : oar_pslot_find(op->outs, op->nouts, slot);
    if (!s || i < 0 || i >= s->n || s->ids[i] < 0) {
        oar_ic_error(c, OAR_ERR_NOT_FOUND, "%s slot '%s' has no argument %d", input ? "input" : "output", slot, i);
        return NULL;
    }
    return c->k->vars[s->ids[i]];
}

static oar_tensor_t *arg_tensor(oar_infer_ctx_t *c, const char *slot, int i, bool input) {
    oar_variable_t *v = arg_var(c, slot, i, input);
    if (!v) return NULL;
    if (v->type == OAR_VAR_SELECTED_ROWS) return v->u.rows->value;
    oar_tensor_t *t = oar_var_tensor(v);
    if (!t) oar_error_prefix("%s: %s '%s': ", c->op->type, input ? "input" : "output", v->name);
    return t;
}

/* ---- inputs ------------------------------------------------------------ */
const int64_t *oar_ic_in_dims(oar_infer_ctx_t *c, const char *slot, int i, int *ndim) {
    if (c->runtime) {
        oar_tensor_t *t = arg_tensor(c, slot, i, true);
        if (!t) return NULL;
        if (t->dtype < 0 && !t->buf) {
            oar_ic_error(c, OAR_ERR_NOT_FOUND, "input '%s' of slot '%s' has no value", oar_ic_in_name(c, slot, i), slot);
            return NULL;
        }
        *ndim = t->ndim;
        return t->dims;
    }
    oar_var_desc_t *v = arg_desc(c, slot, i, true);
    if (!v) return NULL;
    if (v->ndim < 0) {
        oar_ic_error(c, OAR_ERR_SHAPE, "input '%s' of slot '%s' has an unknown shape", v->name, slot);
        return NULL;
    }
    *ndim = v->ndim;
    return v->dims;
}

int oar_ic_in_dtype(oar_infer_ctx_t *c, const char *slot, int i) {
    if (c->runtime) {
        oar_tensor_t *t = arg_tensor(c, slot, i, true);
        return t ? t->dtype : -1;
    }
    oar_var_desc_t *v = arg_desc(c, slot, i, true);
    return v ? v->dtype : -1;
}

int oar_ic_in_var_type(oar_infer_ctx_t *c, const char *slot, int i) {
    if (c->runtime) {
        oar_variable_t *v = arg_var(c, slot, i, true);
        return v ? v->type : -1;
    }
    oar_var_desc_t *v = arg_desc(c, slot, i, true);
    return v ? v->type : -1;
}

int oar_ic_out_var_type(oar_infer_ctx_t *c, const char *slot, int i) {
    if (c->runtime) {
        oar_variable_t *v = arg_var(c, slot, i, false);
        return v ? v->type : -1;
    }
    oar_var_desc_t *v = arg_desc(c, slot, i, false);
    return v ? v->type : -1;
}

int oar_ic_in_lod_level(oar_infer_ctx_t *c, const char *slot, int i) {
    if (c->runtime) {
        oar_tensor_t *t = arg_tensor(c, slot, i, true);
        return t ? t->lod_levels : -1;
    }
    oar_var_desc_t *v = arg_desc(c, slot, i, true);
    return v ? v->lod_level : -1;
}

const oar_tensor_t *oar_ic_in_tensor(oar_infer_ctx_t *c, const char *slot, int i) {
    if (!c->runtime) return NULL;
    c->k->infer_read_values = true;   /* the result depends on values: never replayed */
    oar_tensor_t *t = arg_tensor(c, slot, i, true);
    /* inference reads values (a K, a shape tensor) on the host */
    if (t && t->buf && t->buf->place != OAR_PLACE_CPU && oar_tensor_to_place(t, OAR_PLACE_CPU, 0) != OAR_OK) {
        oar_error_prefix("%s: input %s: ", c->op->type, slot);
        return NULL;
    }
    return t;
}

const oar_tensor_t *oar_ic_in_lod_tensor(oar_infer_ctx_t *c, const char *slot, int i) {
    if (!c->runtime) return NULL;
    c->k->infer_read_values = true;   /* the result depends on the LoD: never replayed */
    return arg_tensor(c, slot, i, true);   /* dims and LoD live on the host: no move */
}

/* ---- outputs ----------------------------------------------------------- */
/* An output that is also an input of the op (written in place) keeps its
 * element count and dtype: its kernel reads the input through the same
 * tensor, so a new size or dtype would make it read past the old buffer
 * or misread its bytes. */
static int check_in_place(oar_infer_ctx_t *c, const oar_tensor_t *t, const char *slot, int i,
                          const int64_t *dims, int ndim, int dtype) {
    if (t->dtype < 0 || !t->buf) return OAR_OK;
    const oar_prep_op_t *op = c->k->op;
    bool aliased = false;
    for (int s = 0; s < op->nins && !aliased; s++)
        for (int a = 0; a < op->ins[s].n && !aliased; a++) {
            int id = op->ins[s].ids[a];
            aliased = id >= 0 && c->k->vars[id]->type == OAR_VAR_LOD_TENSOR && c->k->vars[id]->u.tensor == t;
        }
    if (!aliased) return OAR_OK;
    int64_t n_new = 1, n_old = oar_tensor_numel_of(t);
    for (int d = 0; d < ndim; d++) n_new = dims[d] == 0 || n_new == 0 ? 0 : (n_new > INT64_MAX / dims[d] ? -1 : n_new * dims[d]);
    if (n_new == n_old && (dtype < 0 || dtype == t->dtype)) return OAR_OK;
    char a[128], b[128];
    return oar_ic_error(c, OAR_ERR_SHAPE, "output '%s' is also an input of the op (written in place), but would change "
                        "from %s %s to %s %s; give the output a variable of its own", oar_ic_out_name(c, slot, i),
                        oar_dtype_name(t->dtype), oar_shape_str(t->dims, t->ndim, a, sizeof a),
                        oar_dtype_name(dtype >= 0 ? dtype : t->dtype), oar_shape_str(dims, ndim, b, sizeof b));
}

int oar_ic_set_out(oar_infer_ctx_t *c, const char *slot, int i, const int64_t *dims, int ndim, int dtype) {
    if (c->runtime) {
        oar_tensor_t *t = arg_tensor(c, slot, i, false);
        if (!t) return OAR_ERR_INVALID;
        if (ndim >= 0 && ndim <= OAR_MAX_DIMS) OAR_TRY(check_in_place(c, t, slot, i, dims, ndim, dtype));
        for (int d = 0; d < ndim; d++)
            if (dims[d] < 0) {
                char buf[128];
                return oar_ic_error(c, OAR_ERR_SHAPE, "output '%s' would get the shape %s at run time",
                                    oar_ic_out_name(c, slot, i), oar_shape_str(dims, ndim, buf, sizeof buf));
            }
        int rc = oar_tensor_resize(t, dims, ndim);
        if (rc != OAR_OK) {
            oar_error_prefix("%s: output '%s': ", c->op->type, oar_ic_out_name(c, slot, i));
            return rc;
        }
        /* a dtype change takes effect when the kernel asks for the data
         * (oar_tensor_mutable reallocates when the bytes no longer fit) */
        if (dtype >= 0) t->dtype = dtype;
        return OAR_OK;
    }
    oar_var_desc_t *v = arg_desc(c, slot, i, false);
    if (!v) return OAR_ERR_NOT_FOUND;
    OAR_TRY(oar_var_desc_set_shape(v, dims, ndim));
    if (dtype >= 0) OAR_TRY(oar_var_desc_set_dtype(v, dtype));
    return OAR_OK;
}

int oar_ic_set_out_lod_level(oar_infer_ctx_t *c, const char *slot, int i, int level) {
    if (c->runtime) return OAR_OK;
    oar_var_desc_t *v = arg_desc(c, slot, i, false);
    if (!v) return OAR_ERR_NOT_FOUND;
    return oar_var_desc_set_lod_level(v, level);
}

int oar_ic_set_out_var_type(oar_infer_ctx_t *c, const char *slot, int i, int var_type) {
    if (c->runtime) return OAR_OK; /* the kernel creates the payload of that kind */
    oar_var_desc_t *v = arg_desc(c, slot, i, false);
    if (!v) return OAR_ERR_NOT_FOUND;
    return oar_var_desc_set_type(v, var_type);
}

int oar_ic_share_lod(oar_infer_ctx_t *c, const char *in_slot, int i, const char *out_slot, int j) {
    if (c->runtime) {
        oar_tensor_t *in = arg_tensor(c, in_slot, i, true);
        oar_tensor_t *out = arg_tensor(c, out_slot, j, false);
        if (!in || !out) return OAR_ERR_NOT_FOUND;
        if (in == out) return OAR_OK;
        return oar_tensor_copy_lod(out, in);
    }
    oar_var_desc_t *in = arg_desc(c, in_slot, i, true);
    oar_var_desc_t *out = arg_desc(c, out_slot, j, false);
    if (!in || !out) return OAR_ERR_NOT_FOUND;
    return oar_var_desc_set_lod_level(out, in->lod_level);
}

/* ---- common shapes ----------------------------------------------------- */
int oar_infer_same_as(oar_infer_ctx_t *c, const char *in, const char *out) {
    int nd;
    const int64_t *d = oar_ic_in_dims(c, in, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    OAR_TRY(oar_ic_set_out(c, out, 0, dims, nd, oar_ic_in_dtype(c, in, 0)));
    return oar_ic_share_lod(c, in, 0, out, 0);
}

int oar_infer_grad_like_inputs(oar_infer_ctx_t *c) {
    const oar_op_desc_t *op = c->op;
    size_t suffix = strlen(OAR_GRAD_SUFFIX);
    for (int s = 0; s < op->noutputs; s++) {
        const oar_op_slot_t *slot = &op->outputs[s];
        size_t len = strlen(slot->slot);
        if (len <= suffix || strcmp(slot->slot + len - suffix, OAR_GRAD_SUFFIX) != 0) continue;
        char fwd[128];
        if (len - suffix >= sizeof fwd) continue;
        memcpy(fwd, slot->slot, len - suffix);
        fwd[len - suffix] = '\0';
        for (int i = 0; i < slot->nargs; i++) {
            if (strcmp(slot->args[i], OAR_EMPTY_VAR) == 0) continue;
            if (i >= oar_ic_in_count(c, fwd))
                return oar_ic_error(c, OAR_ERR_INVALID, "grad output '%s' has no matching input in slot '%s'", slot->args[i], fwd);
            int nd;
            const int64_t *d = oar_ic_in_dims(c, fwd, i, &nd);
            if (!d) return OAR_ERR_SHAPE;
            int64_t dims[OAR_MAX_DIMS];
            memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
            OAR_TRY(oar_ic_set_out(c, slot->slot, i, dims, nd, oar_ic_in_dtype(c, fwd, i)));
            OAR_TRY(oar_ic_share_lod(c, fwd, i, slot->slot, i));
        }
    }
    return OAR_OK;
}

/* X@GRAD (when wanted) takes Out's dims, dtype and LoD; Out@GRAD must match Out */
int oar_infer_grad_like_out(oar_infer_ctx_t *c) {
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int nd, gnd;
    const int64_t *d = oar_ic_in_dims(c, "Out", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gnd);
    if (!gd) return OAR_ERR_SHAPE;
    bool ok = gnd == nd;
    for (int i = 0; ok && i < nd; i++) ok = oar_dim_eq(gd[i], dims[i]);
    if (!ok) {
        char b1[128], b2[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD shape %s differs from Out shape %s",
                            oar_shape_str(gd, gnd, b1, sizeof b1), oar_shape_str(dims, nd, b2, sizeof b2));
    }
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, dims, nd, oar_ic_in_dtype(c, "Out", 0)));
    return oar_ic_share_lod(c, "Out", 0, "X@GRAD", 0);
}

/* ---- run time entry ---------------------------------------------------- */
int oar_infer_runtime(oar_kernel_ctx_t *k) {
    const oar_op_def_t *def = k->op->def;
    if (!def->infer || (def->flags & OAR_OP_NO_INFER_RUNTIME)) return OAR_OK;
    oar_infer_ctx_t c = {.runtime = true, .op = k->op->desc, .block = NULL, .k = k};
    return def->infer(&c);
}
