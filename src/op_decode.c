/* op_decode.c — turning an op desc's attributes into its definition's typed
 * struct, once, when a block is prepared (see "decoding attributes" in op.h).
 *
 * Every read names an attribute the definition (or the registry's common
 * list) declares, with the declared type: a decode step that misspells a name
 * or reads the wrong kind fails the prepare instead of reading 0 forever. An
 * attribute missing from the desc reads as its declared default. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "op.h"

struct oar_decode_ctx {
    const oar_op_def_t *def;
    const oar_op_desc_t *op;
    int status;
};

const oar_op_desc_t *oar_dec_op(const oar_decode_ctx_t *d) { return d->op; }
int oar_dec_status(const oar_decode_ctx_t *d) { return d->status; }

int oar_dec_error(oar_decode_ctx_t *d, int status, const char *fmt, ...) {
    if (d->status != OAR_OK) return d->status;   /* keep the first failure */
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->status = oar_error(status, "%s", msg);
    return d->status;
}

static const char *type_name(int t) {
    static const char *const n[] = {"INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS",
                                    "BOOLEAN", "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS"};
    return t >= 0 && t <= OAR_ATTR_LONGS ? n[t] : "unknown";
}

/* The declaration of `name`, checked against the kinds the reader accepts
 * (`want` and, when >= 0, `alt`); NULL after recording an error. */
static const oar_attr_def_t *declared(oar_decode_ctx_t *d, const char *name, int want, int alt) {
    const oar_attr_def_t *ad = oar_registry_attr_def(d->def, name);
    if (!ad) {
        oar_dec_error(d, OAR_ERR_INVALID, "the kernels of op '%s' read attribute '%s', which its "
                      "definition does not declare", d->def->type, name);
        return NULL;
    }
    if (ad->type != want && ad->type != alt) {
        oar_dec_error(d, OAR_ERR_DTYPE, "attribute '%s' of op '%s' is declared %s but read as %s",
                      name, d->def->type, type_name(ad->type), type_name(want));
        return NULL;
    }
    return ad;
}

/* the desc's value of a declared scalar attribute, or NULL (default applies) */
static const oar_attr_t *present(oar_decode_ctx_t *d, const char *name) {
    return oar_op_find_attr(d->op, name);
}

bool oar_dec_has(oar_decode_ctx_t *d, const char *name) { return present(d, name) != NULL; }

int32_t oar_dec_i(oar_decode_ctx_t *d, const char *name) {
    const oar_attr_def_t *ad = declared(d, name, OAR_ATTR_INT, -1);
    if (!ad) return 0;
    return present(d, name) ? oar_attr_i(d->op, name) : (int32_t)ad->def;
}

int64_t oar_dec_l(oar_decode_ctx_t *d, const char *name) {
    const oar_attr_def_t *ad = declared(d, name, OAR_ATTR_LONG, OAR_ATTR_INT);
    if (!ad) return 0;
    return present(d, name) ? oar_attr_l(d->op, name) : (int64_t)ad->def;
}

float oar_dec_f(oar_decode_ctx_t *d, const char *name) {
    const oar_attr_def_t *ad = declared(d, name, OAR_ATTR_FLOAT, -1);
    if (!ad) return 0;
    return present(d, name) ? oar_attr_f(d->op, name) : (float)ad->def;
}

bool oar_dec_b(oar_decode_ctx_t *d, const char *name) {
    const oar_attr_def_t *ad = declared(d, name, OAR_ATTR_BOOLEAN, -1);
    if (!ad) return false;
    return present(d, name) ? oar_attr_b(d->op, name) : ad->def != 0;
}

const char *oar_dec_s(oar_decode_ctx_t *d, const char *name) {
    const oar_attr_def_t *ad = declared(d, name, OAR_ATTR_STRING, -1);
    if (!ad) return "";
    if (present(d, name)) return oar_attr_s(d->op, name);
    return ad->def_str ? ad->def_str : "";
}

/* index of `value` in "a|b|c", or -1 */
int oar_attr_choice_index(const char *choices, const char *value) {
    if (!choices || !value) return -1;
    size_t vl = strlen(value);
    int idx = 0;
    for (const char *p = choices;; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vl && strncmp(p, value, len) == 0) return idx;
        if (!bar) return -1;
        p = bar + 1;
    }
}

int oar_dec_choice(oar_decode_ctx_t *d, const char *name) {
    const oar_attr_def_t *ad = declared(d, name, OAR_ATTR_STRING, -1);
    if (!ad) return 0;
    if (!ad->choices) {
        oar_dec_error(d, OAR_ERR_INVALID, "attribute '%s' of op '%s' is decoded as a choice but "
                      "declares no choices", name, d->def->type);
        return 0;
    }
    const char *v = present(d, name) ? oar_attr_s(d->op, name) : (ad->def_str ? ad->def_str : "");
    int i = oar_attr_choice_index(ad->choices, v);
    if (i < 0)
        oar_dec_error(d, OAR_ERR_INVALID, "attribute %s = \"%s\" of op '%s' must be one of %s",
                      name, v, d->def->type, ad->choices);
    return i < 0 ? 0 : i;
}

oar_ints_t oar_dec_ints(oar_decode_ctx_t *d, const char *name) {
    oar_ints_t r = {NULL, 0};
    if (declared(d, name, OAR_ATTR_INTS, -1)) r.v = oar_attr_ints(d->op, name, &r.n);
    return r;
}

oar_longs_t oar_dec_longs(oar_decode_ctx_t *d, const char *name) {
    oar_longs_t r = {NULL, 0};
    if (declared(d, name, OAR_ATTR_LONGS, -1)) r.v = oar_attr_longs(d->op, name, &r.n);
    return r;
}

oar_floats_t oar_dec_floats(oar_decode_ctx_t *d, const char *name) {
    oar_floats_t r = {NULL, 0};
    if (declared(d, name, OAR_ATTR_FLOATS, -1)) r.v = oar_attr_floats(d->op, name, &r.n);
    return r;
}

int oar_op_decode(const oar_op_def_t *def, const oar_op_desc_t *op, void *attrs) {
    if (!def->decode) return OAR_OK;
    if (!attrs) return oar_error(OAR_ERR_INVALID, "op '%s': no storage for its decoded attributes", def->type);
    oar_decode_ctx_t d = {.def = def, .op = op, .status = OAR_OK};
    int rc = def->decode(&d, attrs);
    return rc != OAR_OK ? rc : d.status;
}
