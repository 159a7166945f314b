/* executor.c — runs prepared blocks (prepare.c builds them, cached here per
 * program version and block).
 *
 * A top-level run (oar_executor_run) binds the block's var table once: the
 * variables stay bound across runs, in a local scope kept under the caller's
 * scope, and are cleared (not re-created) when each run ends; the binding is
 * redone when the caller passes another scope or a variable was erased
 * anywhere (oar_scope_epoch). The per-op path then does no hashing, string
 * work or allocation of its own: run-time inference is replayed from its memo
 * while an op's input dims are unchanged, and the memory plan releases each
 * temporary after its last use.
 *
 * Places: a CUDA executor runs each op's CUDA kernel, or its CPU kernel when
 * the op has none. Before a kernel runs, every input tensor not on the
 * kernel's place is moved there (Fluid's data transform), and outputs are
 * allocated there (oar_k_out_data). A CPU fallback in a CUDA executor does
 * not move its device inputs: it reads host copies kept in a per-run cache
 * (the variable stays on the device), unless it also writes the variable. Ops without kernels (control flow, io,
 * print) read their inputs on the host unless their definition is
 * OAR_OP_PLACE_AWARE. Feeds go to the device before the run, fetches come
 * back to the host. A CPU executor takes the same path only once device
 * memory was ever used in the process (a tensor could then be on a device);
 * otherwise it runs with no per-op placement work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend_count.h"
#include "device.h"
#include "exec.h"
#include "bounded.h"
#include "desc_check.h"
#include "profiler.h"
#include "scope.h"
#include "strmap.h"

#define CACHE_SIZE 32

struct oar_executor {
    int place, device;
    oar_prepared_t *cache[CACHE_SIZE];
    uint64_t stamp[CACHE_SIZE], clock;
    int busy[CACHE_SIZE];     /* runs in progress (nested blocks) pin their entry */
    int cancel;               /* oar_executor_cancel: read and written with __atomic only */
    int depth;                /* nested block runs in progress */
    /* host copies of device buffers read by CPU fallbacks: key[i] is the
     * device buffer, host[i] a tensor holding its copy. Valid while no
     * device kernel or control-flow op ran (no device buffer could have
     * been written or made since), and dropped at each run's end. */
    const oar_buffer_t **hc_key;
    oar_tensor_t **hc_host;
    int hc_n, hc_cap;
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


static void host_cache_clear(oar_executor_t *e) {
    for (int i = 0; i < e->hc_n; i++) oar_tensor_free(e->hc_host[i]);
    e->hc_n = 0;
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

void oar_executor_free(oar_executor_t *e) {
    if (!e) return;
    for (int i = 0; i < CACHE_SIZE; i++) oar_prepared_free(e->cache[i]);
    host_cache_clear(e);
    free(e->hc_key);
    free(e->hc_host);
    free(e);
}

/* Finds or builds the prepared block; *slot is pinned until release_prepared. */
static int get_prepared(oar_executor_t *e, oar_program_t *prog, int block_idx, bool plan,
                        oar_prepared_t **out, int *slot) {
    int victim = -1;
    for (int i = 0; i < CACHE_SIZE; i++) {
        oar_prepared_t *c = e->cache[i];
        if (c && c->uid == prog->uid && c->block_idx == block_idx && c->program == prog && c->plan == plan) {
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
    OAR_TRY(oar_prepare_block(e->place, prog, block_idx, plan, &p));
    p->plan = plan;
    oar_prepared_free(e->cache[victim]);
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
                return oar_error_in_op(OAR_ERR_NUMERIC, "%s: output %s ('%s') contains %s at flat index %lld",
                                 op->context, op->outs[s].name, vars[id]->name, isnan(x) ? "NaN" : "Inf", (long long)at);
        }
    return OAR_OK;
}

static int check_inputs_set(const oar_prep_op_t *op, oar_variable_t **vars) {
    for (int s = 0; s < op->nins; s++)
        for (int a = 0; a < op->ins[s].n; a++) {
            int id = op->ins[s].ids[a];
            if (id >= 0 && vars[id]->type == 0)
                return oar_error_in_op(OAR_ERR_NOT_FOUND, "%s: input %s ('%s') has no value (not fed, not computed "
                                 "by an earlier op, and not initialized: did you run the startup program?)",
                                 op->context, op->ins[s].name, vars[id]->name);
        }
    return OAR_OK;
}

/* the kernel for the op's dispatch dtype, or an error */
static oar_kernel_fn pick_kernel(oar_kernel_ctx_t *k, int *dtype_out) {
    const oar_prep_op_t *op = k->op;
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
        oar_error_in_op(OAR_ERR_UNSUPPORTED, "%s: no %s kernel for dtype %s", op->context,
                  k->exe->place == OAR_PLACE_CPU ? "CPU" : "CUDA or CPU", dn ? dn : "unknown");
    }
    *dtype_out = dtype;
    return fn;
}

/* The memory plan's in-place pair: the output takes the dying input's
 * buffer when nothing else holds it and it is large enough. */
static void arm_inplace(oar_kernel_ctx_t *k, const unsigned char *keep) {
    const oar_prep_op_t *op = k->op;
    k->inplace_buf = NULL;
    if (op->inplace_in < 0 || keep[op->inplace_in] || keep[op->inplace_out]) return;
    oar_variable_t *vi = k->vars[op->inplace_in], *vo = k->vars[op->inplace_out];
    if (vi->type != OAR_VAR_LOD_TENSOR || vo->type != OAR_VAR_LOD_TENSOR) return;
    oar_tensor_t *x = vi->u.tensor, *out = vo->u.tensor;
    if (!oar_tensor_has_data(x) || out->buf || x->buf->place != k->place || x->buf->refcount != 1) return;
    if (oar_tensor_adopt_buffer(out, x) == OAR_OK) k->inplace_buf = x->buf;
}

/* the memory plan: temporaries whose last use was this op */
static void release_dead(const oar_prep_op_t *op, oar_variable_t **vars, const unsigned char *keep) {
    for (int r = 0; r < op->nrelease; r++) {
        int id = op->release[r];
        if (!keep[id]) oar_variable_recycle(vars[id]);
    }
}

static int run_op(oar_kernel_ctx_t *k, const unsigned char *keep) {
    const oar_prep_op_t *op = k->op;
    if (op->def->flags & OAR_OP_NO_KERNEL) return op->def->run(k);
    OAR_TRY(check_inputs_set(op, k->vars));
    OAR_TRY(oar_infer_runtime_memo(k));
    int dtype;
    oar_kernel_fn fn = pick_kernel(k, &dtype);
    if (!fn) return OAR_ERR_UNSUPPORTED;
    k->dtype = dtype;
    if (keep) arm_inplace(k, keep);
    if (oar_flag_count_kernels) oar_kernel_count(op->desc->type, k->place);
    int rc = fn(k);
    k->inplace_buf = NULL;
    return rc;
}

/* ---- CPU fallbacks in a CUDA executor ---------------------------------------
 * The op's device inputs are swapped for host copies while its CPU kernel
 * runs, then swapped back: the variables stay on the device. */
typedef struct { oar_tensor_t *t, *dev; } borrowed_t;

/* a host tensor with the contents of device tensor t, from the cache */
static int host_copy(oar_executor_t *e, oar_tensor_t *t, oar_tensor_t **out) {
    for (int i = 0; i < e->hc_n; i++)
        if (e->hc_key[i] == t->buf) { *out = e->hc_host[i]; return OAR_OK; }
    if (e->hc_n == e->hc_cap) {
        int cap = e->hc_cap ? e->hc_cap * 2 : 16;
        const oar_buffer_t **keys = realloc(e->hc_key, sizeof *keys * (size_t)cap);
        if (keys) e->hc_key = keys;
        oar_tensor_t **hosts = realloc(e->hc_host, sizeof *hosts * (size_t)cap);
        if (hosts) e->hc_host = hosts;
        if (!keys || !hosts) return oar_error(OAR_ERR_NOMEM, "out of memory caching host copies");
        e->hc_cap = cap;
    }
    oar_tensor_t *h;
    OAR_TRY(oar_tensor_new_empty(&h));
    int rc = oar_tensor_share(h, t);
    if (rc == OAR_OK) rc = oar_tensor_to_place(h, OAR_PLACE_CPU, 0);
    if (rc != OAR_OK) { oar_tensor_free(h); return rc; }
    e->hc_key[e->hc_n] = t->buf;
    e->hc_host[e->hc_n++] = h;
    *out = h;
    return OAR_OK;
}

static bool writes_var(const oar_prep_op_t *op, int id) {
    for (int s = 0; s < op->nouts; s++)
        for (int a = 0; a < op->outs[s].n; a++)
            if (op->outs[s].ids[a] == id) return true;
    return false;
}

/* puts back the device buffers of the first n borrowed inputs */
static void give_back(borrowed_t *b, int n) {
    for (int i = 0; i < n; i++) {
        if (b[i].dev) oar_tensor_adopt_buffer(b[i].t, b[i].dev);
        oar_tensor_free(b[i].dev);
    }
}

/* The op's device inputs as host copies (the op does not write them), or
 * moved to the host (it does). *nb: entries of b filled (at most max). */
static int borrow_inputs(oar_kernel_ctx_t *k, borrowed_t *b, int max, int *nb) {
    const oar_prep_op_t *op = k->op;
    *nb = 0;
    for (int s = 0; s < op->nins; s++)
        for (int a = 0; a < op->ins[s].n; a++) {
            int id = op->ins[s].ids[a];
            if (id < 0) continue;
            oar_variable_t *v = k->vars[id];
            oar_tensor_t *t = v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor
                            : v->type == OAR_VAR_SELECTED_ROWS ? v->u.rows->value : NULL;
            if (!t || !oar_tensor_has_data(t) || t->buf->place == OAR_PLACE_CPU) continue;
            int rc;
            if (writes_var(op, id) || *nb == max) {
                rc = oar_tensor_to_place(t, OAR_PLACE_CPU, 0);
            } else {
                oar_tensor_t *h = NULL, *dev = NULL;
                rc = host_copy(k->exe, t, &h);
                if (rc == OAR_OK) rc = oar_tensor_new_empty(&dev);
                if (rc == OAR_OK) rc = oar_tensor_share(dev, t);
                if (rc == OAR_OK) rc = oar_tensor_adopt_buffer(t, h);
                if (rc == OAR_OK) b[(*nb)++] = (borrowed_t){t, dev};
                else oar_tensor_free(dev);
            }
            if (rc != OAR_OK) {
                oar_error_prefix("input %s ('%s') to the host: ", op->ins[s].name, v->name);
                return rc;
            }
        }
    return OAR_OK;
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
static int run_op_placed(oar_kernel_ctx_t *k, const unsigned char *keep) {
    const oar_prep_op_t *op = k->op;
    k->place = OAR_PLACE_CPU;
    k->device = 0;
    if (op->def->flags & OAR_OP_NO_KERNEL) {
        host_cache_clear(k->exe);   /* it may run device kernels */
        if (op->host_inputs) OAR_TRY(move_inputs(k, OAR_PLACE_CPU, 0));
        return op->def->run(k);
    }
    OAR_TRY(check_inputs_set(op, k->vars));
    int dtype;
    oar_kernel_fn fn = pick_kernel(k, &dtype);
    if (!fn) return OAR_ERR_UNSUPPORTED;
    if (op->kplace[dtype] != OAR_PLACE_CPU) {
        k->place = op->kplace[dtype];
        k->device = k->exe->device;
        host_cache_clear(k->exe);             /* the kernel may write device buffers */
        OAR_TRY(oar_device_use(k->device));   /* the kernel launches on the current device */
    }
    borrowed_t borrowed[16];
    int nb = 0;
    if (k->place == OAR_PLACE_CPU && k->exe->place != OAR_PLACE_CPU)
        OAR_TRY(borrow_inputs(k, borrowed, 16, &nb));
    else
        OAR_TRY(move_inputs(k, k->place, k->device));
    int rc = oar_infer_runtime_memo(k);
    if (rc == OAR_OK) {
        k->dtype = dtype;
        if (keep) arm_inplace(k, keep);
        if (oar_flag_count_kernels) oar_kernel_count(op->desc->type, k->place);
        rc = fn(k);
        k->inplace_buf = NULL;
    }
    give_back(borrowed, nb);
    if (rc == OAR_OK && oar_flag_cuda_sync_each_op && k->place != OAR_PLACE_CPU) rc = oar_device_sync(k->device);
    return rc;
}

/* keep: the run's fetch marks when the prepared block has a memory plan */
static int run_ops(oar_executor_t *e, const oar_prepared_t *p, oar_variable_t **vars, oar_scope_t *scope,
                   const unsigned char *keep) {
    oar_kernel_ctx_t k = {.exe = e, .prep = p, .vars = vars, .scope = scope,
                          .place = OAR_PLACE_CPU, .device = 0};
    const bool placed = e->place != OAR_PLACE_CPU || oar_device_ever_used;
    for (int i = 0; i < p->nops; i++) {
        k.op = &p->ops[i];
        int crc = oar_executor_check_cancel(e);
        if (crc != OAR_OK) {
            oar_error_prefix("%s: ", k.op->context);
            oar_error_mark_op_context();
            return crc;
        }
        double t0 = oar_flag_profile ? oar_profile_now() : 0;
        int rc = placed ? run_op_placed(&k, keep) : run_op(&k, keep);
        if (oar_flag_profile) oar_profile_add(k.op->desc->type, oar_profile_now() - t0);
        if (rc != OAR_OK) {
            /* add the op's context unless the message names an op already
             * (its own check, or an op of a nested run) */
            if (!oar_error_has_op_context()) oar_error_prefix("%s: ", k.op->context);
            oar_error_mark_op_context();
            return rc;
        }
        if (oar_flag_check_nan_inf) OAR_TRY(check_finite(k.op, vars));
        if (keep && k.op->nrelease) release_dead(k.op, vars, keep);
    }
    return OAR_OK;
}

int oar_executor_run_prepared_op(oar_executor_t *e, const oar_prepared_t *p, int i, oar_variable_t **vars,
                                 oar_scope_t *scope) {
    oar_kernel_ctx_t k = {.exe = e, .prep = p, .op = &p->ops[i], .vars = vars, .scope = scope,
                          .place = OAR_PLACE_CPU, .device = 0};
    const bool placed = e->place != OAR_PLACE_CPU || oar_device_ever_used;
    int rc = placed ? run_op_placed(&k, NULL) : run_op(&k, NULL);
    if (rc != OAR_OK) {
        if (!oar_error_has_op_context()) oar_error_prefix("%s: ", k.op->context);
        oar_error_mark_op_context();
    }
    if (placed) host_cache_clear(e);
    return rc;
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
    /* no memory plan: a sub-block's variables live on in step scopes for backward */
    OAR_TRY(get_prepared(e, prog, block_idx, false, &p, &slot));
    oar_variable_t *small[64];
    oar_variable_t **vars = p->nnames <= 64 ? small : oar_xcalloc((size_t)p->nnames, sizeof *vars);
    e->depth++;
    int rc = vars ? bind_vars(p, NULL, scope, vars) : OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = run_ops(e, p, vars, scope, NULL);
    if (vars != small) free(vars);
    release_prepared(e, slot);
    e->depth--;
    return rc;
}

/* ---- feeds and fetches --------------------------------------------------- */
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

/* The bound local scope and var table of p for `scope`: reused while the
 * scope and oar_scope_epoch are unchanged, rebuilt otherwise. */
static int bind_once(oar_prepared_t *p, oar_scope_t *scope) {
    if (p->bound_local && p->bound_scope == scope && p->bound_epoch == oar_scope_epoch) return OAR_OK;
    free(p->bound_vars);
    p->bound_vars = NULL;
    if (p->bound_local) oar_scope_free(p->bound_local);
    if (p->bound_scope) oar_scope_free(p->bound_scope);
    p->bound_local = p->bound_scope = NULL;
    oar_scope_t *local;
    OAR_TRY(oar_scope_new_detached_kid(scope, &local));
    oar_variable_t **vars = oar_xcalloc((size_t)(p->nnames ? p->nnames : 1), sizeof *vars);
    int rc = vars ? bind_vars(p, scope, local, vars) : OAR_ERR_NOMEM;
    if (rc != OAR_OK) {
        free(vars);
        oar_scope_free(local);
        return rc;
    }
    p->bound_vars = vars;
    p->bound_local = local;
    p->bound_scope = oar_scope_retain(scope);
    p->bound_epoch = oar_scope_epoch;
    return OAR_OK;
}

/* What a finished run leaves behind: every variable of the local scope is
 * cleared (its payload dropped, the variable kept for the next run) and the
 * scopes control flow kept for backward are dropped. */
static void clear_local(oar_scope_t *local) {
    for (int i = 0; i < local->nvars; i++) oar_variable_recycle(local->vars[i]);
    oar_scope_drop_kids(local);
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
    OAR_TRY(get_prepared(e, prog, block_idx, oar_flag_memory_plan != 0, &p, &slot));
    /* a re-entrant run of a block already running binds privately */
    const bool shared = e->busy[slot] == 1;
    oar_scope_t *local = NULL;
    oar_variable_t **vars = NULL;
    int rc;
    if (shared) {
        rc = bind_once(p, scope);
        local = p->bound_local;
        vars = p->bound_vars;
    } else {
        rc = oar_scope_new_detached_kid(scope, &local);
        if (rc == OAR_OK) {
            vars = oar_xcalloc((size_t)(p->nnames ? p->nnames : 1), sizeof *vars);
            rc = vars ? bind_vars(p, scope, local, vars) : OAR_ERR_NOMEM;
        } else {
            local = NULL;
        }
    }
    for (int i = 0; rc == OAR_OK && i < nfeed; i++) {
        int id = oar_prepared_find(p, feed_names[i]);
        oar_variable_t *v = id >= 0 ? vars[id] : NULL;
        if (!v) rc = oar_scope_var(local, feed_names[i], &v);
        if (rc == OAR_OK) rc = oar_variable_set_tensor(v, feeds[i]);
        /* a CUDA executor works on device copies of the feeds */
        if (rc == OAR_OK && e->place != OAR_PLACE_CPU) {
            rc = oar_tensor_to_place(v->u.tensor, e->place, e->device);
            if (rc != OAR_OK) oar_error_prefix("feed '%s': ", feed_names[i]);
        }
    }
    /* fetched variables survive the memory plan */
    unsigned char *keep = (p->plan && shared) ? p->keep : NULL;
    for (int i = 0; keep && i < nfetch; i++) {
        int id = oar_prepared_find(p, fetch_names[i]);
        if (id >= 0) keep[id] = 1;
    }
    int64_t live0 = 0;
    if (oar_flag_profile) {
        oar_mem_peak_reset();
        live0 = oar_mem_live_bytes();
    }
    if (rc == OAR_OK) rc = run_ops(e, p, vars, local, keep);
    if (oar_flag_profile) oar_profile_run_peak(oar_mem_peak_bytes() - live0);
    /* kernel failures and range checks that surface only when the device
     * finishes belong to this run */
    if (e->place != OAR_PLACE_CPU && e->busy[slot] == 1) {
        host_cache_clear(e);
        int end = oar_device_run_end(e->device);
        if (rc == OAR_OK) rc = end;
    }
    for (int i = 0; rc == OAR_OK && i < nfetch; i++) {
        int id = oar_prepared_find(p, fetch_names[i]);
        rc = fetch_one(local, fetch_names[i], id >= 0 && p->persistable[id], &fetched[i]);
        /* a variable the program declares 0-D (Paddle 2.5+ scalars) keeps its rank */
        if (rc == OAR_OK && fetched[i]->ndim == 1 && fetched[i]->dims[0] == 1) {
            const oar_var_desc_t *vd = oar_block_find_var_recursive(oar_program_block(prog, block_idx), fetch_names[i]);
            if (vd && vd->ndim == 0) fetched[i]->ndim = 0;
        }
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
    for (int i = 0; keep && i < nfetch; i++) {
        int id = oar_prepared_find(p, fetch_names[i]);
        if (id >= 0) keep[id] = 0;
    }
    if (shared) {
        if (local) clear_local(local);
    } else {
        free(vars);
        if (local) oar_scope_free(local);
    }
    release_prepared(e, slot);
    return rc;
}
