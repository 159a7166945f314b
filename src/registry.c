/* registry.c — op definitions and the kernel table.
 * Definitions and kernels register themselves from constructors
 * (OAR_REGISTER_OP / OAR_REGISTER_KERNEL), in any order: a kernel may arrive
 * before its op's definition, so entries are created by whichever comes first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "strmap.h"

#define MAX_OPS 1024
#define NUM_DTYPES 22
#define MAX_LOAD_PROBLEMS 16

/* the places kernels register for: one row of the kernel table each */
static const char *const k_places[] = {[OAR_PLACE_CPU] = "CPU", [OAR_PLACE_CUDA] = "CUDA"};
#define NUM_PLACES ((int)(sizeof k_places / sizeof *k_places))

typedef struct op_entry {
    char *type;
    const oar_op_def_t *def;
    oar_kernel_fn kernels[NUM_PLACES][NUM_DTYPES];
    const char *knames[NUM_PLACES][NUM_DTYPES];   /* the registered functions' names */
} op_entry_t;

/* Registrations run from constructors, where nobody can see a status: a
 * failed one is kept here and reported by oar_registry_check, which the
 * Lua binding, the C predictor and the backend loader call before anything
 * runs. */
static char *g_problems[MAX_LOAD_PROBLEMS];
static int g_nproblems, g_nlost;

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
    if (e->def && e->def != def) return oar_error(OAR_ERR_INVALID, "op '%s' is declared twice", def->type);
    e->def = def;
    return OAR_OK;
}

const char *oar_registry_place_name(int place) {
    return place >= 0 && place < NUM_PLACES && k_places[place] ? k_places[place] : "unknown place";
}

int oar_registry_add_kernel_named(const char *type, int place, int dtype, oar_kernel_fn fn, const char *name) {
    if (!type || !fn || place < 0 || place >= NUM_PLACES || dtype < 0 || dtype >= NUM_DTYPES)
        return oar_error(OAR_ERR_INVALID, "bad kernel registration for op '%s'", type ? type : "?");
    op_entry_t *e = entry_for(type, true);
    if (!e) return OAR_ERR_NOMEM;
    if (e->kernels[place][dtype] && e->kernels[place][dtype] != fn)
        return oar_error(OAR_ERR_INVALID, "op '%s' has two %s %s kernels: %s and %s", type,
                         oar_registry_place_name(place), oar_dtype_name(dtype),
                         e->knames[place][dtype] ? e->knames[place][dtype] : "(unnamed)", name ? name : "(unnamed)");
    e->kernels[place][dtype] = fn;
    e->knames[place][dtype] = name;
    return OAR_OK;
}

int oar_registry_add_kernel(const char *type, int place, int dtype, oar_kernel_fn fn) {
    return oar_registry_add_kernel_named(type, place, dtype, fn, NULL);
}

static void keep_problem(void) {
    if (g_nproblems == MAX_LOAD_PROBLEMS) { g_nlost++; return; }
    g_problems[g_nproblems] = oar_xstrdup(oar_last_error());
    if (g_problems[g_nproblems]) g_nproblems++;
    else g_nlost++;
}

void oar_registry_load_op(const oar_op_def_t *def) {
    if (oar_registry_add_op(def) != OAR_OK) keep_problem();
}

void oar_registry_load_kernel(const char *type, int place, int dtype, oar_kernel_fn fn, const char *name) {
    if (oar_registry_add_kernel_named(type, place, dtype, fn, name) != OAR_OK) keep_problem();
}

int oar_registry_check(void) {
    char msg[2048];
    size_t len = 0;
    int n = 0;
    msg[0] = 0;
#define ADD(...) do { if (len < sizeof msg) len += (size_t)snprintf(msg + len, sizeof msg - len, __VA_ARGS__); } while (0)
    for (int i = 0; i < g_nproblems; i++, n++) ADD("%s%s", n ? "; " : "", g_problems[i]);
    if (g_nlost) ADD("%s%d more", n++ ? "; " : "", g_nlost);
    /* a kernel whose op no definition declares: a misspelled type, or a
     * definition that was left out of the build */
    for (int i = 0; i < g_nops; i++) {
        if (g_ops[i].def) continue;
        for (int p = 0; p < NUM_PLACES; p++)
            for (int d = 0; d < NUM_DTYPES; d++)
                if (g_ops[i].kernels[p][d]) {
                    ADD("%skernel %s (%s %s) is registered for op '%s', which no definition declares", n++ ? "; " : "",
                        g_ops[i].knames[p][d] ? g_ops[i].knames[p][d] : "(unnamed)", oar_registry_place_name(p),
                        oar_dtype_name(d), g_ops[i].type);
                    p = NUM_PLACES;
                    break;
                }
    }
#undef ADD
    if (n == 0) return OAR_OK;
    return oar_error(OAR_ERR_INVALID, "the op registry is inconsistent: %s", msg);
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

/* ---- declarations, for the Lua side and the reference ------------------- */
int oar_op_num_attrs(const char *type) {
    const oar_op_def_t *d = oar_registry_op(type);
    if (!d) return -1;
    int n = 0;
    for (const oar_attr_def_t *a = d->attrs; a && a->name; a++) n++;
    return n;
}

int oar_op_attr_info(const char *type, int i, oar_attr_info_t *out) {
    const int n = oar_op_num_attrs(type);
    if (n < 0) return oar_error(OAR_ERR_NOT_FOUND, "no op '%s' is registered", type ? type : "(null)");
    if (!out || i < 0 || i >= n) return oar_error(OAR_ERR_RANGE, "op '%s' has %d attributes, asked for %d", type, n, i);
    const oar_attr_def_t *a = &oar_registry_op(type)->attrs[i];
    *out = (oar_attr_info_t){.name = a->name, .type = a->type, .def = a->def, .def_str = a->def_str,
                             .required = a->required, .min = a->min, .max = a->max, .choices = a->choices,
                             .doc = a->doc};
    return OAR_OK;
}

const char *oar_op_doc(const char *type) {
    const oar_op_def_t *d = oar_registry_op(type);
    return d ? (d->doc ? d->doc : "") : NULL;
}
