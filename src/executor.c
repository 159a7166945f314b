/* executor.c — prepare a block once (op definitions, kernels, a var table of
 * every name its ops use), then run it: bind the var table to scope
 * variables (one hash lookup per name per run, none per op), and for each op
 * run its run-time inference and its kernel. Temporaries live in a local
 * scope under the caller's scope, dropped when the run ends.
 *
 * Places: a CUDA executor runs each op's CUDA kernel, or its CPU kernel when
 * the op has none. Before a kernel runs, every input tensor not on the
 * kernel's place is moved there (Fluid's data transform), and outputs are
 * allocated there (oar_k_out_data). Ops without kernels (control flow, io,
 * print) read their inputs on the host, except the place-aware ones below.
 * Feeds go to the device before the run, fetches come back to the host. A
 * CPU executor takes the same path only once device memory was ever used in
 * the process (a tensor could then be on a device); otherwise it runs as
 * before, with no per-op placement work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "exec.h"
#include "bounded.h"
#include "desc_check.h"
#include "profiler.h"
#include "scope.h"
#include "strmap.h"

/* ops without kernels that handle tensors on any place: assign copies on
 * the source's place, shape reads dims only */
static const char *const k_place_aware[] = {"assign", "shape", NULL};

#define CACHE_SIZE 32

struct oar_executor {
    int place, device;
    oar_prepared_t *cache[CACHE_SIZE];
    uint64_t stamp[CACHE_SIZE], clock;
    int busy[CACHE_SIZE];     /* runs in progress (nested blocks) pin their entry */
    int cancel;               /* oar_executor_cancel: read and written with __atomic only */
    int depth;                /* nested block runs in progress */
};

/* ---- cancellation (async-signal-safe: one lock-free atomic store) ------- */
void oar_executor_cancel(oar_executor_t *e) {
    if (e) __atomic_store_n(&e->cancel, 1, __ATOMIC_RELAXED);
}

int oar_executor_check_cancel(oar_executor_t *e) {
    if (!e) return OAR_OK;
    if (__atomic_load_n(&e->cancel, __ATOMIC_RELAXED))
        return oar_error(OAR_ERR_CANCELLED, "the run was cancelled (oar_executor_cancel)");
    if (__atomic_load_n(&oar_interrupt_flag, __ATOMIC_RELAXED))
        return oar_error(OAR_ERR_CANCELLED, "the run was interrupted (SIGINT)");
    return OAR_OK;
}

int oar_executor_place(const oar_executor_t *e) { return e->place; }

int oar_executor_new(int place_kind, int device, oar_executor_t **out) {
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_executor_new: NULL out");
    if (place_kind != OAR_PLACE_CPU && place_kind != OAR_PLACE_CUDA)
        return oar_error(OAR_ERR_INVALID, "unknown place kind %d", place_kind);
    if (device < 0) return oar_error(OAR_ERR_INVALID, "device %d is negative", device);
    /* without CUDA, a driver, a GPU or that device: a clear error now */
    if (place_kind == OAR_PLACE_CUDA) OAR_TRY(oar_device_check(device));
    oar_executor_t *e = oar_xcalloc(1, sizeof *e);
    if (!e) return OAR_ERR_NOMEM;
    e->place = place_kind;
    e->device = device;
    *out = e;
    return OAR_OK;
}

static void prepared_free(oar_prepared_t *p) {
    if (!p) return;
    for (int i = 0; i < p->nops; i++) {
        oar_prep_op_t *op = &p->ops[i];
        for (int s = 0; s < op->nins; s++) free(op->ins[s].ids);
        for (int s = 0; s < op->nouts; s++) free(op->outs[s].ids);
        free(op->ins); free(op->outs); free(op->context);
    }
    free(p->ops);
    for (int i = 0; i < p->nnames; i++) free(p->names[i]);
    free(p->names); free(p->decl); free(p->persistable);
    free(p);
}

void oar_executor_free(oar_executor_t *e) {
    if (!e) return;
    for (int i = 0; i < CACHE_SIZE; i++) prepared_free(e->cache[i]);
    free(e);
}

/* ---- prepare ------------------------------------------------------------ */
typedef struct names_builder { oar_strmap_t map; oar_prepared_t *p; int cap; } names_builder_t;

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

static int prepare_slots(names_builder_t *nb, const oar_op_slot_t *src, int n, oar_pslot_t **out) {
    *out = oar_xcalloc((size_t)(n ? n : 1), sizeof **out);
    if (!*out) return OAR_ERR_NOMEM;
    for (int s = 0; s < n; s++) {
        oar_pslot_t *ps = &(*out)[s];
        ps->name = src[s].slot;
        ps->n = src[s].nargs;
        ps->ids = oar_xcalloc((size_t)(ps->n ? ps->n : 1), sizeof *ps->ids);
        if (!ps->ids) return OAR_ERR_NOMEM;
        for (int a = 0; a < ps->n; a++) OAR_TRY(name_id(nb, src[s].args[a], &ps->ids[a]));
    }
    return OAR_OK;
}

static int prepare_op(oar_executor_t *e, oar_block_t *b, names_builder_t *nb, int i, oar_prep_op_t *op) {
    const oar_op_desc_t *d = b->ops[i];
    char ctx[512];
    op->desc = d;
    op->context = oar_xstrdup(oar_op_context(d, ctx, sizeof ctx));
    if (!op->context) return OAR_ERR_NOMEM;
    op->def = oar_registry_op(d->type);
    if (!op->def) return oar_error(OAR_ERR_NOT_FOUND, "%s: unknown op type '%s'", op->context, d->type);
    /* an op that bypassed insertion and parsing (oar_block_insert_op_raw) is
     * checked here, once per prepare: its kernel trusts slots and ranges */
    if (oar_op_check_def_const(d, op->def) != OAR_OK) {
        oar_error_prefix("%s: ", op->context);
        return OAR_ERR_INVALID;
    }
    OAR_TRY(prepare_slots(nb, d->inputs, d->ninputs, &op->ins));
    op->nins = d->ninputs;
    OAR_TRY(prepare_slots(nb, d->outputs, d->noutputs, &op->outs));
    op->nouts = d->noutputs;
    bool any = false;
    for (int t = 0; t < OAR_NUM_DTYPES; t++) {
        op->kernels[t] = oar_registry_kernel(d->type, e->place, t);
        op->kplace[t] = (unsigned char)e->place;
        if (!op->kernels[t] && e->place != OAR_PLACE_CPU) {   /* fall back to the CPU kernel */
            op->kernels[t] = oar_registry_kernel(d->type, OAR_PLACE_CPU, t);
            op->kplace[t] = OAR_PLACE_CPU;
        }
        any = any || op->kernels[t];
    }
    if (!(op->def->flags & OAR_OP_NO_KERNEL) && !any)
        return oar_error(OAR_ERR_UNSUPPORTED, "%s: no %s kernel is registered", op->context,
                         e->place == OAR_PLACE_CPU ? "CPU" : "CUDA or CPU");
    op->host_inputs = (op->def->flags & OAR_OP_NO_KERNEL) != 0;
    for (int j = 0; op->host_inputs && k_place_aware[j]; j++)
        if (strcmp(d->type, k_place_aware[j]) == 0) op->host_inputs = false;
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
    return OAR_OK;
}

static int prepare(oar_executor_t *e, oar_program_t *prog, int block_idx, oar_prepared_t **out) {
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
        rc = prepare_op(e, b, &nb, i, &p->ops[i]);
        p->nops = i + 1;
    }
    if (rc == OAR_OK) {
        p->decl = oar_xcalloc((size_t)(p->nnames ? p->nnames : 1), sizeof *p->decl);
        p->persistable = oar_xcalloc((size_t)(p->nnames ? p->nnames : 1), sizeof *p->persistable);
        if (!p->decl || !p->persistable) rc = OAR_ERR_NOMEM;
    }
    for (int i = 0; rc == OAR_OK && i < p->nnames; i++) {
        p->decl[i] = oar_block_find_var(b, p->names[i]);
        const oar_var_desc_t *v = oar_block_find_var_recursive(b, p->names[i]);
        p->persistable[i] = v && v->persistable;
    }
    oar_strmap_free(&nb.map);
    if (rc != OAR_OK) { prepared_free(p); return rc; }
    *out = p;
    return OAR_OK;
}

/* Finds or builds the prepared block; *slot is pinned until release_prepared. */
static int get_prepared(oar_executor_t *e, oar_program_t *prog, int block_idx, oar_prepared_t **out, int *slot) {
    int victim = -1;
    for (int i = 0; i < CACHE_SIZE; i++) {
        oar_prepared_t *c = e->cache[i];
        if (c && c->uid == prog->uid && c->block_idx == block_idx && c->program == prog) {
            if (c->version == prog->version) {
                e->stamp[i] = ++e->clock;
                e->busy[i]++;
                *out = c; *slot = i;
                return OAR_OK;
            }
            if (!e->busy[i]) { victim = i; break; }  /* stale: rebuild in place */
        }
    }
    if (victim < 0)
        for (int i = 0; i < CACHE_SIZE; i++) {
            if (e->busy[i]) continue;
            if (!e->cache[i]) { victim = i; break; }
            if (victim < 0 || e->stamp[i] < e->stamp[victim]) victim = i;
        }
    if (victim < 0) return oar_error(OAR_ERR_NOMEM, "more than %d blocks are running nested", CACHE_SIZE);
    oar_prepared_t *p = NULL;
    OAR_TRY(prepare(e, prog, block_idx, &p));
    prepared_free(e->cache[victim]);
    e->cache[victim] = p;
    e->stamp[victim] = ++e->clock;
    e->busy[victim] = 1;
    *out = p; *slot = victim;
    return OAR_OK;
}

static void release_prepared(oar_executor_t *e, int slot) { e->busy[slot]--; }

/* ---- binding ----------------------------------------------------------- */
/* persist: where persistable vars live (the caller's scope); run: where the
 * block's own vars are created. */
static int bind_vars(const oar_prepared_t *p, oar_scope_t *persist, oar_scope_t *run, oar_variable_t **vars) {
    for (int i = 0; i < p->nnames; i++) {
        const char *name = p->names[i];
        oar_variable_t *v = NULL;
        if (p->persistable[i] && persist) {
            v = oar_scope_find_var(persist, name);
            if (!v) OAR_TRY(oar_scope_var(persist, name, &v));
        } else if (p->decl[i]) {
            OAR_TRY(oar_scope_var(run, name, &v));
        } else {
            v = oar_scope_find_var(run, name);
            if (!v) OAR_TRY(oar_scope_var(run, name, &v));
        }
        vars[i] = v;
    }
    return OAR_OK;
}

/* ---- running ----------------------------------------------------------- */
static bool is_float(int dtype) { return dtype == OAR_FP32 || dtype == OAR_FP64; }

/* first non-finite value of a host float tensor: its index, or -1 */
static int64_t first_non_finite(const oar_tensor_t *t, double *val) {
    int64_t n = oar_tensor_numel_of(t);
    for (int64_t i = 0; i < n; i++) {
        double x = t->dtype == OAR_FP32 ? ((float *)t->buf->data)[i] : ((double *)t->buf->data)[i];
        if (!isfinite(x)) { *val = x; return i; }
    }
    return -1;
}

static int check_finite(const oar_prep_op_t *op, oar_variable_t **vars) {
    for (int s = 0; s < op->nouts; s++)
        for (int a = 0; a < op->outs[s].n; a++) {
            int id = op->outs[s].ids[a];
            if (id < 0 || vars[id]->type != OAR_VAR_LOD_TENSOR) continue;
            oar_tensor_t *t = vars[id]->u.tensor;
            if (!t || !oar_tensor_has_data(t) || !is_float(t->dtype)) continue;
            double x = 0;
            int64_t at;
            if (t->buf->place == OAR_PLACE_CPU) {
                at = first_non_finite(t, &x);
            } else {   /* a host copy of a device output */
                oar_tensor_t *h;
                OAR_TRY(oar_tensor_new_empty(&h));
                int rc = oar_tensor_share(h, t);
                if (rc == OAR_OK) rc = oar_tensor_to_place(h, OAR_PLACE_CPU, 0);
                at = rc == OAR_OK ? first_non_finite(h, &x) : -1;
                oar_tensor_free(h);
                OAR_TRY(rc);
            }
            if (at >= 0)
                return oar_error(OAR_ERR_NUMERIC, "%s: output %s ('%s') contains %s at flat index %lld",
                                 op->context, op->outs[s].name, vars[id]->name, isnan(x) ? "NaN" : "Inf", (long long)at);
        }
    return OAR_OK;
}

static int check_inputs_set(const oar_prep_op_t *op, oar_variable_t **vars) {
    for (int s = 0; s < op->nins; s++)
        for (int a = 0; a < op->ins[s].n; a++) {
            int id = op->ins[s].ids[a];
            if (id >= 0 && vars[id]->type == 0)
                return oar_error(OAR_ERR_NOT_FOUND, "%s: input %s ('%s') has no value (not fed, not computed "
                                 "by an earlier op, and not initialized: did you run the startup program?)",
                                 op->context, op->ins[s].name, vars[id]->name);
        }
    return OAR_OK;
}

static int run_op(oar_kernel_ctx_t *k) {
    const oar_prep_op_t *op = k->op;
    if (op->def->flags & OAR_OP_NO_KERNEL) return op->def->run(k);
    OAR_TRY(check_inputs_set(op, k->vars));
    OAR_TRY(oar_infer_runtime(k));
    int dtype = op->fallback_dtype;
    if (op->dispatch_id >= 0) {
        oar_variable_t *v = k->vars[op->dispatch_id];
        const oar_tensor_t *t = v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor
                              : v->type == OAR_VAR_SELECTED_ROWS ? v->u.rows->value : NULL;
        if (t && t->dtype >= 0) dtype = t->dtype;
    }
    oar_kernel_fn fn = (dtype >= 0 && dtype < OAR_NUM_DTYPES) ? op->kernels[dtype] : NULL;
    if (!fn) {
        const char *dn = oar_dtype_name(dtype);
        return oar_error(OAR_ERR_UNSUPPORTED, "%s: no %s kernel for dtype %s", op->context,
                         k->exe->place == OAR_PLACE_CPU ? "CPU" : "CUDA", dn ? dn : "unknown");
    }
    k->dtype = dtype;
    return fn(k);
}

/* Moves every input tensor of the op to place/device. */
static int move_inputs(oar_kernel_ctx_t *k, int place, int device) {
    const oar_prep_op_t *op = k->op;
    for (int s = 0; s < op->nins; s++)
        for (int a = 0; a < op->ins[s].n; a++) {
            int id = op->ins[s].ids[a];
            if (id < 0) continue;
            oar_variable_t *v = k->vars[id];
            oar_tensor_t *t = v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor
                            : v->type == OAR_VAR_SELECTED_ROWS ? v->u.rows->value : NULL;
            if (!t || !oar_tensor_has_data(t)) continue;
            if (t->buf->place == place && (place == OAR_PLACE_CPU || t->buf->device == device)) continue;
            int rc = oar_tensor_to_place(t, place, device);
            if (rc != OAR_OK) {
                oar_error_prefix("input %s ('%s') to %s: ", op->ins[s].name, v->name,
                                 place == OAR_PLACE_CPU ? "the host" : "the CUDA device");
                return rc;
            }
        }
    return OAR_OK;
}

/* run_op with placement: the kernel's place is picked with the kernel, its
 * inputs go there before run-time inference (which may read them), and its
 * outputs are allocated there. */
static int run_op_placed(oar_kernel_ctx_t *k) {
    const oar_prep_op_t *op = k->op;
    k->place = OAR_PLACE_CPU;
    k->device = 0;
    if (op->def->flags & OAR_OP_NO_KERNEL) {
        if (op->host_inputs) OAR_TRY(move_inputs(k, OAR_PLACE_CPU, 0));
        return op->def->run(k);
    }
    OAR_TRY(check_inputs_set(op, k->vars));
    int dtype = op->fallback_dtype;
    if (op->dispatch_id >= 0) {
        oar_variable_t *v = k->vars[op->dispatch_id];
        const oar_tensor_t *t = v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor
                              : v->type == OAR_VAR_SELECTED_ROWS ? v->u.rows->value : NULL;
        if (t && t->dtype >= 0) dtype = t->dtype;
    }
    oar_kernel_fn fn = (dtype >= 0 && dtype < OAR_NUM_DTYPES) ? op->kernels[dtype] : NULL;
    if (!fn) {
        const char *dn = oar_dtype_name(dtype);
        return oar_error(OAR_ERR_UNSUPPORTED, "%s: no %s kernel for dtype %s", op->context,
                         k->exe->place == OAR_PLACE_CPU ? "CPU" : "CUDA or CPU", dn ? dn : "unknown");
    }
    if (op->kplace[dtype] != OAR_PLACE_CPU) {
        k->place = op->kplace[dtype];
        k->device = k->exe->device;
        OAR_TRY(oar_device_use(k->device));   /* the kernel launches on the current device */
    }
    OAR_TRY(move_inputs(k, k->place, k->device));
    OAR_TRY(oar_infer_runtime(k));
    k->dtype = dtype;
    return fn(k);
}

static int run_ops(oar_executor_t *e, const oar_prepared_t *p, oar_variable_t **vars, oar_scope_t *scope) {
    oar_kernel_ctx_t k = {.exe = e, .prep = p, .vars = vars, .scope = scope,
                          .place = OAR_PLACE_CPU, .device = 0};
    const bool placed = e->place != OAR_PLACE_CPU || oar_device_ever_used;
    for (int i = 0; i < p->nops; i++) {
        k.op = &p->ops[i];
        int crc = oar_executor_check_cancel(e);
        if (crc != OAR_OK) {
            oar_error_prefix("%s: ", k.op->context);
            return crc;
        }
        double t0 = oar_flag_profile ? oar_profile_now() : 0;
        int rc = placed ? run_op_placed(&k) : run_op(&k);
        if (oar_flag_profile) oar_profile_add(k.op->desc->type, oar_profile_now() - t0);
        if (rc != OAR_OK) {
            /* add the op's context unless a nested run already named an op */
            const char *msg = oar_last_error();
            if (strncmp(msg, "op '", 4) != 0) oar_error_prefix("%s: ", k.op->context);
            return rc;
        }
        if (oar_flag_check_nan_inf) OAR_TRY(check_finite(k.op, vars));
    }
    return OAR_OK;
}

int oar_executor_run_block(oar_executor_t *e, oar_program_t *prog, int block_idx, oar_scope_t *scope) {
    if (!e || !prog || !scope) return oar_error(OAR_ERR_INVALID, "run_block: NULL argument");
    /* validated programs nest at most 64 blocks deep; a deeper run is a block
     * that runs itself, which would otherwise end in a stack overflow */
    if (e->depth >= 128)
        return oar_error(OAR_ERR_RANGE, "block %d: sub-blocks are running %d deep (a block that runs itself?)",
                         block_idx, e->depth);
    oar_prepared_t *p = NULL;
    int slot;
    OAR_TRY(get_prepared(e, prog, block_idx, &p, &slot));
    e->depth++;
    oar_variable_t **vars = oar_xcalloc((size_t)(p->nnames ? p->nnames : 1), sizeof *vars);
    int rc = vars ? bind_vars(p, NULL, scope, vars) : OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = run_ops(e, p, vars, scope);
    free(vars);
    release_prepared(e, slot);
    e->depth--;
    return rc;
}

/* ---- feeds and fetches --------------------------------------------------- */
static int find_name(const oar_prepared_t *p, const char *name) {
    for (int i = 0; i < p->nnames; i++)
        if (strcmp(p->names[i], name) == 0) return i;
    return -1;
}

static int check_feed(oar_program_t *prog, int block_idx, const char *name, const oar_tensor_t *t) {
    oar_var_desc_t *v = oar_block_find_var_recursive(oar_program_block(prog, block_idx), name);
    if (!v) return oar_error(OAR_ERR_NOT_FOUND, "feed '%s' is not a variable of the program", name);
    if (t->dtype < 0) return oar_error(OAR_ERR_INVALID, "feed '%s': the tensor has no data", name);
    char want[160], got[160];
    oar_shape_str(v->dims, v->ndim < 0 ? 0 : v->ndim, want, sizeof want);
    oar_shape_str(t->dims, t->ndim, got, sizeof got);
    if (v->dtype >= 0 && v->dtype != t->dtype)
        return oar_error(OAR_ERR_DTYPE, "feed '%s': expected dtype %s, got %s (shape %s)", name,
                         oar_dtype_name(v->dtype), oar_dtype_name(t->dtype), got);
    if (v->ndim >= 0) {
        bool ok = v->ndim == t->ndim;
        for (int i = 0; ok && i < v->ndim; i++) ok = v->dims[i] < 0 || v->dims[i] == t->dims[i];
        if (!ok) return oar_error(OAR_ERR_SHAPE, "feed '%s': expected shape %s, got %s", name, want, got);
    }
    if (v->lod_level > 0 && t->lod_levels != v->lod_level && t->lod_levels != 0)
        return oar_error(OAR_ERR_SHAPE, "feed '%s': expected %d LoD levels, got %d", name, v->lod_level, t->lod_levels);
    return OAR_OK;
}

static int fetch_one(oar_scope_t *local, const char *name, bool persistable, oar_tensor_t **out) {
    oar_variable_t *v = oar_scope_find_var(local, name);
    if (!v || v->type == 0)
        return oar_error(OAR_ERR_NOT_FOUND, "fetch '%s': the variable has no value after the run", name);
    if (v->type != OAR_VAR_LOD_TENSOR)
        return oar_error(OAR_ERR_DTYPE, "fetch '%s': only LoD tensors can be fetched (the variable is of type %d)", name, v->type);
    if (!oar_tensor_has_data(v->u.tensor))
        return oar_error(OAR_ERR_NOT_FOUND, "fetch '%s': the variable has no data", name);
    if (v->u.tensor->buf->place != OAR_PLACE_CPU) {
        /* a host copy, sharing nothing with the device tensor */
        OAR_TRY(oar_tensor_new_empty(out));
        int rc = oar_tensor_share(*out, v->u.tensor);
        if (rc == OAR_OK) rc = oar_tensor_to_place(*out, OAR_PLACE_CPU, 0);
        if (rc != OAR_OK) {
            oar_tensor_free(*out);
            *out = NULL;
            oar_error_prefix("fetch '%s': ", name);
        }
        return rc;
    }
    /* a persistable lives on and will be updated in place: hand out a copy */
    if (persistable) return oar_tensor_copy(v->u.tensor, out);
    return oar_variable_get_tensor(v, out);
}

int oar_executor_run(oar_executor_t *e, oar_program_t *prog, int block_idx, oar_scope_t *scope,
                     int nfeed, const char *const *feed_names, oar_tensor_t *const *feeds,
                     int nfetch, const char *const *fetch_names, oar_tensor_t **fetched) {
    if (!e || !prog || !scope) return oar_error(OAR_ERR_INVALID, "executor run: NULL %s", !e ? "executor" : !prog ? "program" : "scope");
    if (nfeed < 0 || nfetch < 0 || (nfeed && (!feed_names || !feeds)) || (nfetch && (!fetch_names || !fetched)))
        return oar_error(OAR_ERR_INVALID, "executor run: bad feed/fetch arrays");
    for (int i = 0; i < nfetch; i++) fetched[i] = NULL;
    /* a request to stop applies to the run in progress, not to later ones */
    if (e->depth == 0) {
        __atomic_store_n(&e->cancel, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&oar_interrupt_flag, 0, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < nfeed; i++) {
        if (!feed_names[i] || !feeds[i]) return oar_error(OAR_ERR_INVALID, "feed %d: NULL name or tensor", i);
        OAR_TRY(check_feed(prog, block_idx, feed_names[i], feeds[i]));
        OAR_TRY(oar_tensor_normalize_bool(feeds[i]));
    }
    for (int i = 0; i < nfetch; i++)
        if (!fetch_names[i]) return oar_error(OAR_ERR_INVALID, "fetch %d: NULL name", i);
    oar_prepared_t *p = NULL;
    int slot;
    OAR_TRY(get_prepared(e, prog, block_idx, &p, &slot));
    oar_scope_t *local;
    int lrc = oar_scope_new_detached_kid(scope, &local);
    if (lrc != OAR_OK) { release_prepared(e, slot); return lrc; }
    oar_variable_t **vars = oar_xcalloc((size_t)(p->nnames ? p->nnames : 1), sizeof *vars);
    int rc = vars ? bind_vars(p, scope, local, vars) : OAR_ERR_NOMEM;
    for (int i = 0; rc == OAR_OK && i < nfeed; i++) {
        int id = find_name(p, feed_names[i]);
        oar_variable_t *v = id >= 0 ? vars[id] : NULL;
        if (!v) rc = oar_scope_var(local, feed_names[i], &v);
        if (rc == OAR_OK) rc = oar_variable_set_tensor(v, feeds[i]);
        /* a CUDA executor works on device copies of the feeds */
        if (rc == OAR_OK && e->place != OAR_PLACE_CPU) {
            rc = oar_tensor_to_place(v->u.tensor, e->place, e->device);
            if (rc != OAR_OK) oar_error_prefix("feed '%s': ", feed_names[i]);
        }
    }
    if (rc == OAR_OK) rc = run_ops(e, p, vars, local);
    /* kernel failures that surface only when the device finishes belong to this run */
    if (rc == OAR_OK && e->place != OAR_PLACE_CPU) rc = oar_device_sync(e->device);
    for (int i = 0; rc == OAR_OK && i < nfetch; i++) {
        int id = find_name(p, fetch_names[i]);
        rc = fetch_one(local, fetch_names[i], id >= 0 && p->persistable[id], &fetched[i]);
        /* a fetch never aliases a feed: writing into the result must not change the input */
        for (int j = 0; rc == OAR_OK && j < nfeed; j++)
            if (fetched[i]->buf && fetched[i]->buf == feeds[j]->buf) {
                oar_tensor_t *c = NULL;
                rc = oar_tensor_copy(fetched[i], &c);
                oar_tensor_free(fetched[i]);
                fetched[i] = c;
                break;
            }
    }
    if (rc != OAR_OK)
        for (int i = 0; i < nfetch; i++) { oar_tensor_free(fetched[i]); fetched[i] = NULL; }
    free(vars);
    oar_scope_free(local);
    release_prepared(e, slot);
    return rc;
}
