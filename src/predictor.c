/* predictor.c — the inference API: load a model written by
 * oar.io.save_inference_model or by PaddlePaddle (a ProgramDesc with feed/fetch
 * ops in `__model__` or `.pdmodel`, or Paddle 3's PIR JSON; parameters one file
 * per variable beside it, or all in one combined file: `__params__`,
 * `.pdiparams`), feed inputs of any dtype with one level of LoD, run, read the
 * outputs as float32 or in their own dtype. No Lua. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "desc.h"
#include "error.h"
#include "fuse.h"
#include "tensor.h"
#include "tensor_io.h"
#include "bounded.h"

#define MODEL_LIMIT ((size_t)1 << 30)
#define PARAMS_LIMIT ((size_t)1 << 36)

struct oar_predictor {
    oar_program_t *program;      /* feed/fetch ops removed */
    oar_scope_t *scope;          /* parameters */
    oar_executor_t *exe;
    char **feed_names; int nfeed;
    char **fetch_names; int nfetch;
    oar_tensor_t **inputs;       /* per feed column */
    oar_tensor_t **outputs;      /* per fetch column, float32 */
    oar_tensor_t **fetched;      /* per fetch column, as the model computed it */
};

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = oar_xmalloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static bool is_file_op(const char *type) {
    return strcmp(type, "save") == 0 || strcmp(type, "save_combine") == 0 || strcmp(type, "load") == 0 ||
           strcmp(type, "load_combine") == 0;
}

/* Takes the feed/fetch ops out of block 0, recording names by column. */
static int strip_feed_fetch(oar_predictor_t *p) {
    oar_block_t *b = oar_program_block(p->program, 0);
    int nops = oar_block_num_ops(b);
    int maxcol = -1;
    for (int pass = 0; pass < 2; pass++) {
        const char *type = pass == 0 ? "feed" : "fetch";
        int count = 0;
        for (int i = 0; i < nops; i++) count += strcmp(b->ops[i]->type, type) == 0;
        char **names = oar_xcalloc((size_t)(count ? count : 1), sizeof *names);
        if (!names) return OAR_ERR_NOMEM;
        if (pass == 0) { p->feed_names = names; p->nfeed = count; }
        else { p->fetch_names = names; p->nfetch = count; }
        for (int i = 0; i < nops; i++) {
            oar_op_desc_t *op = b->ops[i];
            if (strcmp(op->type, type) != 0) continue;
            int col = oar_attr_i(op, "col");
            const oar_op_slot_t *s = pass == 0 ? oar_op_find_output(op, "Out") : oar_op_find_input(op, "X");
            if (col < 0 || col >= count || !s || s->nargs != 1 || names[col])
                return oar_error(OAR_ERR_FORMAT, "%s op #%d has a bad column %d or slot", type, i, col);
            names[col] = oar_xstrdup(s->args[0]);
            if (!names[col]) return OAR_ERR_NOMEM;
            if (col > maxcol) maxcol = col;
        }
    }
    /* an inference model computes; it has no business reading or writing files */
    for (int bi = 0; bi < oar_program_num_blocks(p->program); bi++) {
        oar_block_t *sb = oar_program_block(p->program, bi);
        for (int i = 0; i < sb->nops; i++)
            if (is_file_op(sb->ops[i]->type))
                return oar_error(OAR_ERR_FORMAT, "block %d, op #%d is a '%s' op: an inference model may not read or "
                                 "write files", bi, i, sb->ops[i]->type);
    }
    if (p->nfeed == 0 || p->nfetch == 0)
        return oar_error(OAR_ERR_FORMAT, "the model has %d feed and %d fetch ops; it needs both (was it saved "
                         "with save_inference_model?)", p->nfeed, p->nfetch);
    for (int i = nops - 1; i >= 0; i--)
        if (strcmp(b->ops[i]->type, "feed") == 0 || strcmp(b->ops[i]->type, "fetch") == 0)
            OAR_TRY(oar_block_remove_op(b, i));
    return OAR_OK;
}

static bool is_param(const oar_var_desc_t *v) {
    return v->persistable && v->type != OAR_VAR_FEED_MINIBATCH && v->type != OAR_VAR_FETCH_LIST &&
           strcmp(v->name, "feed") != 0 && strcmp(v->name, "fetch") != 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp((*(const oar_var_desc_t *const *)a)->name, (*(const oar_var_desc_t *const *)b)->name);
}

static int check_param(const oar_var_desc_t *v, const oar_tensor_t *t, const char *file) {
    bool ok = v->dtype < 0 || v->dtype == t->dtype;
    if (ok && v->ndim >= 0) {
        ok = v->ndim == t->ndim;
        for (int i = 0; ok && i < v->ndim; i++) ok = v->dims[i] < 0 || v->dims[i] == t->dims[i];
    }
    if (!ok) {
        char a[160], b[160];
        return oar_error(OAR_ERR_SHAPE, "parameter '%s' in '%s' is %s %s, the model declares %s %s", v->name, file,
                         oar_dtype_name(t->dtype), oar_shape_str(t->dims, t->ndim, a, sizeof a),
                         oar_dtype_name(v->dtype), oar_shape_str(v->dims, v->ndim < 0 ? 0 : v->ndim, b, sizeof b));
    }
    return OAR_OK;
}

static int install(oar_scope_t *scope, const char *name, oar_tensor_t *t) {
    oar_variable_t *var;
    OAR_TRY(oar_scope_var(scope, name, &var));
    return oar_variable_set_tensor(var, t);
}

/* Parameters from the combined file `combined` (records in name order, as
 * Fluid and Paddle write them), or one file per parameter in `dir`. */
static int load_params(oar_predictor_t *p, const char *dir, const char *combined) {
    oar_block_t *b = oar_program_block(p->program, 0);
    int n = 0;
    for (int i = 0; i < b->nvars; i++) n += is_param(b->vars[i]);
    const oar_var_desc_t **params = oar_xcalloc((size_t)(n ? n : 1), sizeof *params);
    if (!params) return OAR_ERR_NOMEM;
    n = 0;
    for (int i = 0; i < b->nvars; i++)
        if (is_param(b->vars[i])) params[n++] = b->vars[i];
    qsort(params, (size_t)n, sizeof *params, cmp_names);
    int rc = OAR_OK;
    if (combined) {
        uint8_t *data = NULL;
        size_t size = 0, at = 0;
        size_t limit = 0;   /* the declared shapes bound the file */
        for (int i = 0; i < n && limit < PARAMS_LIMIT; i++) {
            size_t one = oar_record_max_bytes(params[i]->dims, params[i]->ndim);
            limit = one >= PARAMS_LIMIT - limit ? PARAMS_LIMIT : limit + one;
        }
        rc = oar_file_read_all(combined, limit, &data, &size);
        if (rc == OAR_OK) rc = oar_crc_sidecar_check(combined, data, size);
        for (int i = 0; i < n && rc == OAR_OK; i++) {
            size_t used = 0;
            oar_tensor_t *t = NULL;
            rc = oar_tensor_read_record(data + at, size - at, &used, combined, &t);
            if (rc == OAR_OK) rc = check_param(params[i], t, combined);
            if (rc == OAR_OK) rc = install(p->scope, params[i]->name, t);
            oar_tensor_free(t);
            at += used;
        }
        if (rc == OAR_OK && at != size)
            rc = oar_error(OAR_ERR_FORMAT, "'%s' has %zu bytes after the %d parameters", combined, size - at, n);
        free(data);
    } else {
        for (int i = 0; i < n && rc == OAR_OK; i++) {
            const char *name = params[i]->name;
            if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
                rc = oar_error(OAR_ERR_FORMAT, "parameter '%s' cannot name a file in '%s' (the model would need "
                               "__params__)", name, dir);
                break;
            }
            char *file = join(dir, name);
            uint8_t *data = NULL;
            size_t size = 0, used = 0;
            oar_tensor_t *t = NULL;
            size_t limit = oar_record_max_bytes(params[i]->dims, params[i]->ndim);
            rc = file ? oar_file_read_all(file, limit < PARAMS_LIMIT ? limit : PARAMS_LIMIT, &data, &size)
                      : OAR_ERR_NOMEM;
            if (rc == OAR_OK) rc = oar_tensor_read_record(data, size, &used, file, &t);
            if (rc == OAR_OK && used != size) rc = oar_error(OAR_ERR_FORMAT, "'%s' has trailing bytes", file);
            if (rc == OAR_OK) rc = check_param(params[i], t, file);
            if (rc == OAR_OK) rc = install(p->scope, params[i]->name, t);
            oar_tensor_free(t);
            free(data);
            free(file);
        }
    }
    free(params);
    return rc;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return oar_xstrdup(".");
    if (slash == path) return oar_xstrdup("/");
    char *d = oar_xmalloc((size_t)(slash - path) + 1);
    if (d) { memcpy(d, path, (size_t)(slash - path)); d[slash - path] = 0; }
    return d;
}

int oar_predictor_load_files(const char *model_path, const char *params_path, oar_predictor_t **out) {
    OAR_TRY(oar_registry_check());
    if (!model_path || !*model_path || !out)
        return oar_error(OAR_ERR_INVALID, "oar_predictor_load_files: empty model path or NULL out");
    if (params_path && !*params_path)
        return oar_error(OAR_ERR_INVALID, "oar_predictor_load_files: empty params path (NULL: one file per parameter)");
    *out = NULL;
    oar_predictor_t *p = oar_xcalloc(1, sizeof *p);
    if (!p) return OAR_ERR_NOMEM;
    uint8_t *bytes = NULL;
    size_t n = 0;
    /* no load while a save of the directory is half done */
    char *model_dir = dir_of(model_path);
    oar_ckpt_t *lock = NULL;
    int rc = model_dir ? oar_ckpt_begin_load(model_dir, &lock) : OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = oar_file_read_all(model_path, MODEL_LIMIT, &bytes, &n);
    if (rc == OAR_OK) rc = oar_program_parse_model(bytes, n, &p->program);
    if (rc != OAR_OK && model_dir) oar_error_prefix("%s: ", model_path);
    free(bytes);
    /* a loaded model may not loop forever */
    if (rc == OAR_OK)
        rc = oar_program_set_max_while_iterations(p->program, oar_flag_inference_max_while_iterations);
    if (rc == OAR_OK) rc = strip_feed_fetch(p);
    if (rc == OAR_OK) rc = oar_scope_new(&p->scope);
    if (rc == OAR_OK) rc = load_params(p, model_dir, params_path);
    /* Paddle Inference's fc_fuse_pass: mul + bias (+ relu) -> fc */
    if (rc == OAR_OK) rc = oar_fuse_fc(p->program, 0, (const char *const *)p->fetch_names, p->nfetch, NULL);
    if (lock) oar_ckpt_end(lock);
    free(model_dir);
    if (rc == OAR_OK) rc = oar_executor_new(OAR_PLACE_CPU, 0, &p->exe);
    if (rc == OAR_OK) {
        p->inputs = oar_xcalloc((size_t)p->nfeed, sizeof *p->inputs);
        p->outputs = oar_xcalloc((size_t)p->nfetch, sizeof *p->outputs);
        p->fetched = oar_xcalloc((size_t)p->nfetch, sizeof *p->fetched);
        if (!p->inputs || !p->outputs || !p->fetched) rc = OAR_ERR_NOMEM;
    }
    if (rc != OAR_OK) { oar_predictor_free(p); return rc; }
    *out = p;
    return OAR_OK;
}

int oar_predictor_load(const char *model_dir, oar_predictor_t **out) {
    if (!model_dir || !*model_dir || !out) return oar_error(OAR_ERR_INVALID, "oar_predictor_load: empty directory or NULL out");
    char *model = join(model_dir, "__model__");
    char *combined = join(model_dir, "__params__");
    int rc = model && combined ? OAR_OK : OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = oar_predictor_load_files(model, access(combined, F_OK) == 0 ? combined : NULL, out);
    free(model);
    free(combined);
    return rc;
}

static int feed_column(oar_predictor_t *p, const char *name) {
    for (int i = 0; i < p->nfeed; i++)
        if (strcmp(p->feed_names[i], name) == 0) return i;
    char known[512] = "";
    for (int i = 0; i < p->nfeed; i++) {
        strncat(known, p->feed_names[i], sizeof known - strlen(known) - 3);
        if (i + 1 < p->nfeed) strncat(known, ", ", sizeof known - strlen(known) - 1);
    }
    return oar_error(OAR_ERR_NOT_FOUND, "'%s' is not an input of the model (inputs: %s)", name, known);
}

int oar_predictor_set_input_ex(oar_predictor_t *p, const char *name, int dtype, const void *data,
                               const int64_t *dims, int ndims, const uint64_t *lod, int lod_len) {
    if (!p || !name || (!dims && ndims > 0) || ndims < 0 || ndims > OAR_MAX_DIMS)
        return oar_error(OAR_ERR_INVALID, "oar_predictor_set_input: NULL argument or bad ndims %d", ndims);
    if (oar_dtype_size(dtype) == 0)
        return oar_error(OAR_ERR_DTYPE, "input '%s': unknown dtype code %d (Fluid's VarType: 5 float32, 6 float64, "
                         "2 int32, 3 int64, ...)", name, dtype);
    if (lod_len < 0 || (lod_len > 0 && !lod))
        return oar_error(OAR_ERR_INVALID, "input '%s': LoD of %d offsets at %p", name, lod_len, (const void *)lod);
    int col = feed_column(p, name);
    if (col < 0) return col;
    int64_t numel;
    OAR_TRY(oar_shape_numel(dims, ndims, &numel));
    if (numel > 0 && !data) return oar_error(OAR_ERR_INVALID, "input '%s': NULL data for %lld elements", name, (long long)numel);
    oar_tensor_t *t;
    OAR_TRY(oar_tensor_from_data(dtype, dims, ndims, data, &t));
    if (lod_len > 0) {
        int64_t *offs = oar_xmalloc((size_t)lod_len * sizeof *offs);
        int rc = offs ? OAR_OK : OAR_ERR_NOMEM;
        for (int i = 0; rc == OAR_OK && i < lod_len; i++) {
            if (lod[i] > (uint64_t)INT64_MAX) rc = oar_error(OAR_ERR_RANGE, "LoD offset %d is out of range", i);
            else offs[i] = (int64_t)lod[i];
        }
        int64_t size = lod_len;
        if (rc == OAR_OK) rc = oar_tensor_set_lod(t, 1, (const int64_t *const *)&offs, &size);
        free(offs);
        if (rc != OAR_OK) {
            oar_error_prefix("input '%s': ", name);
            oar_tensor_free(t);
            return rc;
        }
    }
    oar_tensor_free(p->inputs[col]);
    p->inputs[col] = t;
    return OAR_OK;
}

int oar_predictor_set_input(oar_predictor_t *p, const char *name, const float *data,
                            const int64_t *dims, int ndims) {
    return oar_predictor_set_input_ex(p, name, OAR_FP32, data, dims, ndims, NULL, 0);
}

int oar_predictor_num_inputs(const oar_predictor_t *p) { return p ? p->nfeed : 0; }
int oar_predictor_num_outputs(const oar_predictor_t *p) { return p ? p->nfetch : 0; }
const char *oar_predictor_input_name(const oar_predictor_t *p, int index) {
    return p && index >= 0 && index < p->nfeed ? p->feed_names[index] : NULL;
}
const char *oar_predictor_output_name(const oar_predictor_t *p, int index) {
    return p && index >= 0 && index < p->nfetch ? p->fetch_names[index] : NULL;
}

int oar_predictor_var_info(const oar_predictor_t *p, const char *name, int *dtype,
                           const int64_t **dims, int *ndims, int *lod_level) {
    if (!p || !name) return oar_error(OAR_ERR_INVALID, "oar_predictor_var_info: NULL argument");
    const oar_var_desc_t *v = oar_block_find_var(oar_program_block(p->program, 0), name);
    if (!v) return oar_error(OAR_ERR_NOT_FOUND, "the model declares no variable '%s'", name);
    if (dtype) *dtype = v->dtype;
    if (dims) *dims = v->dims;
    if (ndims) *ndims = v->ndim;
    if (lod_level) *lod_level = v->lod_level;
    return OAR_OK;
}

/* float32 view of a fetched tensor (a converted copy for other dtypes) */
static int to_float(oar_tensor_t *t, oar_tensor_t **out) {
    if (t->dtype == OAR_FP32) { *out = oar_tensor_retain(t); return OAR_OK; }
    oar_tensor_t *f;
    OAR_TRY(oar_tensor_new(OAR_FP32, t->dims, t->ndim, &f));
    float *dst = oar_tensor_data(f);
    int64_t n = oar_tensor_numel(t);
    const void *src = oar_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case OAR_FP64: dst[i] = (float)((const double *)src)[i]; break;
        case OAR_INT32: dst[i] = (float)((const int32_t *)src)[i]; break;
        case OAR_INT64: dst[i] = (float)((const int64_t *)src)[i]; break;
        case OAR_BOOL: case OAR_UINT8: dst[i] = (float)((const uint8_t *)src)[i]; break;
        default:
            oar_tensor_free(f);
            return oar_error(OAR_ERR_DTYPE, "output of dtype %s cannot be returned as float32", oar_dtype_name(t->dtype));
        }
    }
    *out = f;
    return OAR_OK;
}

int oar_predictor_run(oar_predictor_t *p) {
    if (!p) return oar_error(OAR_ERR_INVALID, "oar_predictor_run: NULL predictor");
    for (int i = 0; i < p->nfeed; i++)
        if (!p->inputs[i]) return oar_error(OAR_ERR_NOT_FOUND, "input '%s' was not set", p->feed_names[i]);
    oar_tensor_t **fetched = oar_xcalloc((size_t)p->nfetch, sizeof *fetched);
    if (!fetched) return OAR_ERR_NOMEM;
    int rc = oar_executor_run(p->exe, p->program, 0, p->scope, p->nfeed, (const char *const *)p->feed_names,
                              p->inputs, p->nfetch, (const char *const *)p->fetch_names, fetched);
    oar_block_t *b = oar_program_block(p->program, 0);
    for (int i = 0; i < p->nfetch && rc == OAR_OK; i++) {
        /* a 0-D result (Paddle 2.5+ declares it) keeps its rank, where the
         * runtime, following Fluid 1.8, made it [1] */
        const oar_var_desc_t *vd = oar_block_find_var(b, p->fetch_names[i]);
        if (vd && vd->ndim == 0 && fetched[i]->ndim == 1 && fetched[i]->dims[0] == 1)
            rc = oar_tensor_resize(fetched[i], NULL, 0);
        if (rc != OAR_OK) break;
        oar_tensor_free(p->outputs[i]);
        p->outputs[i] = NULL;
        oar_tensor_free(p->fetched[i]);
        p->fetched[i] = oar_tensor_retain(fetched[i]);
        /* float16 and other types have no float32 view; get_output_ex reads them */
        oar_tensor_t *f = NULL;
        if (to_float(fetched[i], &f) == OAR_OK) p->outputs[i] = f;
    }
    for (int i = 0; i < p->nfetch; i++) oar_tensor_free(fetched[i]);
    free(fetched);
    return rc;
}

int oar_predictor_get_output(oar_predictor_t *p, int index, const float **data, const int64_t **dims, int *ndims) {
    if (!p || !data || !dims || !ndims) return oar_error(OAR_ERR_INVALID, "oar_predictor_get_output: NULL argument");
    if (index < 0 || index >= p->nfetch)
        return oar_error(OAR_ERR_RANGE, "output index %d outside [0, %d)", index, p->nfetch);
    if (!p->fetched[index]) return oar_error(OAR_ERR_NOT_FOUND, "output %d: the model has not been run", index);
    oar_tensor_t *t = p->outputs[index];
    if (!t)
        return oar_error(OAR_ERR_DTYPE, "output %d ('%s') is %s and has no float32 view; read it with "
                         "oar_predictor_get_output_ex", index, p->fetch_names[index],
                         oar_dtype_name(p->fetched[index]->dtype));
    *data = oar_tensor_data(t);
    *dims = t->dims;
    *ndims = t->ndim;
    return OAR_OK;
}

int oar_predictor_get_output_ex(oar_predictor_t *p, int index, int *dtype, const void **data,
                                const int64_t **dims, int *ndims, const uint64_t **lod, int *lod_len) {
    if (!p || !dtype || !data || !dims || !ndims)
        return oar_error(OAR_ERR_INVALID, "oar_predictor_get_output_ex: NULL argument");
    if (index < 0 || index >= p->nfetch)
        return oar_error(OAR_ERR_RANGE, "output index %d outside [0, %d)", index, p->nfetch);
    oar_tensor_t *t = p->fetched[index];
    if (!t) return oar_error(OAR_ERR_NOT_FOUND, "output %d: the model has not been run", index);
    *dtype = t->dtype;
    *data = oar_tensor_data(t);
    *dims = t->dims;
    *ndims = t->ndim;
    /* the last LoD level: the sequences of the output rows */
    if (lod) *lod = t->lod_levels > 0 ? (const uint64_t *)t->lod[t->lod_levels - 1] : NULL;
    if (lod_len) *lod_len = t->lod_levels > 0 ? (int)t->lod_size[t->lod_levels - 1] : 0;
    return OAR_OK;
}

void oar_predictor_cancel(oar_predictor_t *p) {
    if (p) oar_executor_cancel(p->exe);
}

void oar_predictor_free(oar_predictor_t *p) {
    if (!p) return;
    for (int i = 0; p->inputs && i < p->nfeed; i++) oar_tensor_free(p->inputs[i]);
    for (int i = 0; p->outputs && i < p->nfetch; i++) oar_tensor_free(p->outputs[i]);
    for (int i = 0; p->fetched && i < p->nfetch; i++) oar_tensor_free(p->fetched[i]);
    for (int i = 0; p->feed_names && i < p->nfeed; i++) free(p->feed_names[i]);
    for (int i = 0; p->fetch_names && i < p->nfetch; i++) free(p->fetch_names[i]);
    free(p->inputs); free(p->outputs); free(p->fetched); free(p->feed_names); free(p->fetch_names);
    oar_executor_free(p->exe);
    oar_scope_free(p->scope);
    oar_program_free(p->program);
    free(p);
}
