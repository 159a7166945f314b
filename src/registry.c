/* registry.c — op definitions and the kernel table.
 * Definitions and kernels register themselves from constructors
 * (OAR_REGISTER_OP / OAR_REGISTER_KERNEL), in any order: a kernel may arrive
 * before its op's definition, so entries are created by whichever comes first. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "strmap.h"

#define MAX_OPS 1024
#define NUM_PLACES 2
#define NUM_DTYPES 22

typedef struct op_entry {
    char *type;
    const oar_op_def_t *def;
    oar_kernel_fn kernels[NUM_PLACES][NUM_DTYPES];
} op_entry_t;

static op_entry_t g_ops[MAX_OPS];
static int g_nops;
static oar_strmap_t g_index;

/* attrs every op accepts (Fluid adds them to all ops in framework.py) */
static const oar_attr_def_t g_common_attrs[] = {
    {.name = "op_role", .type = OAR_ATTR_INT},
    {.name = "op_role_var", .type = OAR_ATTR_STRINGS},
    {.name = "op_callstack", .type = OAR_ATTR_STRINGS},
    {.name = "op_namescope", .type = OAR_ATTR_STRING, .def_str = "/"},
    {.name = "op_device", .type = OAR_ATTR_STRING, .def_str = ""},   /* Paddle 2.x */
    {.name = "with_quant_attr", .type = OAR_ATTR_BOOLEAN},      /* quantization: refused (attr_check.c) */
    {.name = NULL},
};

static op_entry_t *entry_for(const char *type, bool create) {
    int i = oar_strmap_get(&g_index, type);
    if (i >= 0) return &g_ops[i];
    if (!create) return NULL;
    if (g_nops >= MAX_OPS) { oar_error(OAR_ERR_NOMEM, "op registry full (%d ops)", MAX_OPS); return NULL; }
    op_entry_t *e = &g_ops[g_nops];
    e->type = oar_xstrdup(type);
    if (!e->type) return NULL;
    if (oar_strmap_put(&g_index, e->type, g_nops) != OAR_OK) { free(e->type); return NULL; }
    g_nops++;
    return e;
}

int oar_registry_add_op(const oar_op_def_t *def) {
    if (!def || !def->type) return oar_error(OAR_ERR_INVALID, "op definition without a type");
    op_entry_t *e = entry_for(def->type, true);
    if (!e) return OAR_ERR_NOMEM;
    if (e->def && e->def != def) return oar_error(OAR_ERR_INVALID, "op '%s' defined twice", def->type);
    e->def = def;
    return OAR_OK;
}

int oar_registry_add_kernel(const char *type, int place, int dtype, oar_kernel_fn fn) {
    if (!type || !fn || place < 0 || place >= NUM_PLACES || dtype < 0 || dtype >= NUM_DTYPES)
        return oar_error(OAR_ERR_INVALID, "bad kernel registration for op '%s'", type ? type : "?");
    op_entry_t *e = entry_for(type, true);
    if (!e) return OAR_ERR_NOMEM;
    e->kernels[place][dtype] = fn;
    return OAR_OK;
}

const oar_op_def_t *oar_registry_op(const char *type) {
    if (!type) return NULL;
    op_entry_t *e = entry_for(type, false);
    return e ? e->def : NULL;
}

oar_kernel_fn oar_registry_kernel(const char *type, int place, int dtype) {
    if (!type || place < 0 || place >= NUM_PLACES || dtype < 0 || dtype >= NUM_DTYPES) return NULL;
    op_entry_t *e = entry_for(type, false);
    return e ? e->kernels[place][dtype] : NULL;
}

/* ---- public queries ----------------------------------------------------- */
bool oar_op_is_registered(const char *type) { return oar_registry_op(type) != NULL; }

int oar_op_num_registered(void) {
    int n = 0;
    for (int i = 0; i < g_nops; i++) n += g_ops[i].def != NULL;
    return n;
}

const char *oar_op_registered_at(int idx) {
    for (int i = 0, n = 0; i < g_nops; i++) {
        if (!g_ops[i].def) continue;
        if (n++ == idx) return g_ops[i].type;
    }
    return NULL;
}

bool oar_op_has_grad(const char *type) {
    const oar_op_def_t *d = oar_registry_op(type);
    return d && d->grad;
}

static const oar_attr_def_t *find_attr_def(const oar_attr_def_t *attrs, const char *name) {
    for (const oar_attr_def_t *a = attrs; a && a->name; a++)
        if (strcmp(a->name, name) == 0) return a;
    return NULL;
}

const oar_attr_def_t *oar_registry_attr_def(const oar_op_def_t *def, const char *name) {
    const oar_attr_def_t *a = def ? find_attr_def(def->attrs, name) : NULL;
    return a ? a : find_attr_def(g_common_attrs, name);
}

int oar_op_attr_type(const char *type, const char *name) {
    if (!type || !name) return -1;
    const oar_op_def_t *d = oar_registry_op(type);
    if (!d) return -1;
    const oar_attr_def_t *a = oar_registry_attr_def(d, name);
    return a ? a->type : -1;
}

static const oar_slot_def_t *find_slot(const oar_slot_def_t *slots, const char *name) {
    for (const oar_slot_def_t *s = slots; s && s->name; s++)
        if (strcmp(s->name, name) == 0) return s;
    return NULL;
}

static int count_slots(const oar_slot_def_t *slots) {
    int n = 0;
    for (const oar_slot_def_t *s = slots; s && s->name; s++) n++;
    return n;
}

int oar_op_input_flags(const char *type, const char *slot) {
    const oar_op_def_t *d = oar_registry_op(type);
    const oar_slot_def_t *s = (d && slot) ? find_slot(d->inputs, slot) : NULL;
    return s ? s->flags : -1;
}

int oar_op_output_flags(const char *type, const char *slot) {
    const oar_op_def_t *d = oar_registry_op(type);
    const oar_slot_def_t *s = (d && slot) ? find_slot(d->outputs, slot) : NULL;
    return s ? s->flags : -1;
}

int oar_op_num_input_slots(const char *type) {
    const oar_op_def_t *d = oar_registry_op(type);
    return d ? count_slots(d->inputs) : -1;
}

const char *oar_op_input_slot_at(const char *type, int i) {
    const oar_op_def_t *d = oar_registry_op(type);
    if (!d || i < 0 || i >= count_slots(d->inputs)) return NULL;
    return d->inputs[i].name;
}

int oar_op_num_output_slots(const char *type) {
    const oar_op_def_t *d = oar_registry_op(type);
    return d ? count_slots(d->outputs) : -1;
}

const char *oar_op_output_slot_at(const char *type, int i) {
    const oar_op_def_t *d = oar_registry_op(type);
    if (!d || i < 0 || i >= count_slots(d->outputs)) return NULL;
    return d->outputs[i].name;
}

const oar_slot_def_t *oar_registry_input_slot(const oar_op_def_t *def, const char *name) {
    return find_slot(def->inputs, name);
}
const oar_slot_def_t *oar_registry_output_slot(const oar_op_def_t *def, const char *name) {
    return find_slot(def->outputs, name);
}
