/* model.c — the served model: one predictor per worker (a predictor is not
 * thread-safe: worker w alone runs predictor w, sched.c); checks a request
 * against what the model declares before it runs; one run, its outputs
 * copied out (they live in the predictor only until its next run). */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "serve.h"

struct serve_model {
    serve_spec_t *inputs; int ninputs;
    serve_spec_t *outputs; int noutputs;
    oar_predictor_t **pool; int npool;
};

static int fail(char *err, size_t errlen, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return status;
}

static bool is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }
static bool is_file(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISREG(st.st_mode); }
static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

char *serve_default_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;   /* "dir/" names "dir" */
    size_t start = n;
    while (start > 0 && path[start - 1] != '/') start--;
    char *name = strndup(path + start, n - start);
    if (!name) return NULL;
    if (!is_dir(path)) {
        char *dot = strrchr(name, '.');
        if (dot && dot != name) *dot = '\0';
    }
    return name;
}

/* The model and parameter files of `path`: a model file (X.pdmodel or
 * X.json with X.pdiparams, or __model__ with __params__, beside it), or a
 * directory holding __model__ or exactly one .pdmodel/.json model. */
static int resolve(const char *path, char **model, char **params, char *err, size_t errlen) {
    char buf[4096];
    *model = *params = NULL;
    if (is_dir(path)) {
        snprintf(buf, sizeof buf, "%s/__model__", path);
        if (is_file(buf)) {
            *model = strdup(buf);
        } else {
            DIR *d = opendir(path);
            struct dirent *e;
            int found = 0;
            while (d && (e = readdir(d))) {
                if (!ends_with(e->d_name, ".pdmodel") && !ends_with(e->d_name, ".json")) continue;
                found++;
                snprintf(buf, sizeof buf, "%s/%s", path, e->d_name);
                free(*model);
                *model = strdup(buf);
            }
            if (d) closedir(d);
            if (found != 1) {
                free(*model);
                *model = NULL;
                snprintf(err, errlen, "%s: %s", path, found ? "more than one .pdmodel/.json model; name the file"
                         : "no __model__, .pdmodel or .json model in the directory");
                return -1;
            }
        }
    } else if (is_file(path)) {
        *model = strdup(path);
    } else {
        snprintf(err, errlen, "%s: no such file or directory", path);
        return -1;
    }
    if (!*model) { snprintf(err, errlen, "out of memory"); return -1; }
    /* the parameters beside the model file */
    snprintf(buf, sizeof buf, "%s", *model);
    char *dot = strrchr(buf, '.'), *slash = strrchr(buf, '/');
    if (dot && (!slash || dot > slash) && (ends_with(buf, ".pdmodel") || ends_with(buf, ".json"))) {
        snprintf(dot, sizeof buf - (size_t)(dot - buf), ".pdiparams");
    } else {
        size_t dirlen = slash ? (size_t)(slash - buf) : 0;
        snprintf(buf + dirlen, sizeof buf - dirlen, "%s__params__", slash ? "/" : "");
    }
    if (is_file(buf)) *params = strdup(buf);
    return 0;
}

static void describe(oar_predictor_t *p, const char *name, serve_spec_t *s) {
    const int64_t *dims = NULL;
    s->name = strdup(name);
    s->dtype = s->ndim = -1;
    s->lod_level = 0;
    if (oar_predictor_var_info(p, name, &s->dtype, &dims, &s->ndim, &s->lod_level) != OAR_OK) {
        s->dtype = s->ndim = -1;
        return;
    }
    if (s->ndim > SERVE_MAX_DIMS) s->ndim = -1;
    for (int i = 0; i < s->ndim; i++) s->dims[i] = dims[i];
}

int serve_model_open(const char *path, int workers, serve_model_t **out, char *err, size_t errlen) {
    char *model = NULL, *params = NULL;
    *out = NULL;
    if (resolve(path, &model, &params, err, errlen) != 0) return -1;
    serve_model_t *m = calloc(1, sizeof *m);
    int rc = m ? 0 : -1;
    if (m) {
        m->pool = calloc((size_t)workers, sizeof *m->pool);
        if (!m->pool) rc = -1;
    }
    if (rc) snprintf(err, errlen, "out of memory");
    for (int i = 0; rc == 0 && i < workers; i++) {
        if (oar_predictor_load_files(model, params, &m->pool[i]) != OAR_OK) {
            snprintf(err, errlen, "cannot load %s: %s", path, oar_last_error());
            rc = -1;
        }
        m->npool = i + 1;
    }
    if (rc == 0) {
        oar_predictor_t *p = m->pool[0];
        m->ninputs = oar_predictor_num_inputs(p);
        m->noutputs = oar_predictor_num_outputs(p);
        m->inputs = calloc((size_t)m->ninputs + 1, sizeof *m->inputs);
        m->outputs = calloc((size_t)m->noutputs + 1, sizeof *m->outputs);
        if (!m->inputs || !m->outputs) { snprintf(err, errlen, "out of memory"); rc = -1; }
        for (int i = 0; rc == 0 && i < m->ninputs; i++) describe(p, oar_predictor_input_name(p, i), &m->inputs[i]);
        for (int i = 0; rc == 0 && i < m->noutputs; i++) describe(p, oar_predictor_output_name(p, i), &m->outputs[i]);
    }
    free(model);
    free(params);
    if (rc) { serve_model_free(m); return -1; }
    *out = m;
    return 0;
}

void serve_model_free(serve_model_t *m) {
    if (!m) return;
    for (int i = 0; i < m->npool; i++) oar_predictor_free(m->pool[i]);
    for (int i = 0; m->inputs && i < m->ninputs; i++) free(m->inputs[i].name);
    for (int i = 0; m->outputs && i < m->noutputs; i++) free(m->outputs[i].name);
    free(m->inputs); free(m->outputs); free(m->pool);
    free(m);
}

int serve_model_num_inputs(const serve_model_t *m) { return m->ninputs; }
int serve_model_num_outputs(const serve_model_t *m) { return m->noutputs; }
const serve_spec_t *serve_model_input(const serve_model_t *m, int i) { return &m->inputs[i]; }
const serve_spec_t *serve_model_output(const serve_model_t *m, int i) { return &m->outputs[i]; }

static void shape_text(const int64_t *dims, int ndim, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* a request input against the model's declaration: 400 naming the mismatch */
static int check_input(const serve_spec_t *s, const serve_tensor_t *t, char *err, size_t errlen) {
    if (s->dtype >= 0 && s->dtype != t->dtype)
        return fail(err, errlen, 400, "input '%s': datatype %s, but the model takes %s", t->name,
                    serve_dtype_to_v2(t->dtype), serve_dtype_to_v2(s->dtype) ? serve_dtype_to_v2(s->dtype)
                    : oar_dtype_name(s->dtype));
    if (s->ndim < 0) return 0;
    bool ok = s->ndim == t->ndim;
    for (int i = 0; ok && i < s->ndim; i++) ok = s->dims[i] < 0 || s->dims[i] == t->dims[i];
    if (!ok) {
        char want[256], got[256];
        shape_text(s->dims, s->ndim, want, sizeof want);
        shape_text(t->dims, t->ndim, got, sizeof got);
        return fail(err, errlen, 400, "input '%s': shape %s does not fit the model's %s (-1: any size)", t->name, got, want);
    }
    return 0;
}

static int find_output(const serve_model_t *m, const char *name) {
    for (int i = 0; i < m->noutputs; i++)
        if (strcmp(m->outputs[i].name, name) == 0) return i;
    return -1;
}

int serve_model_check(const serve_model_t *m, const serve_request_t *req, char *err, size_t errlen) {
    for (int i = 0; i < req->ninputs; i++) {
        int k = -1;
        for (int j = 0; j < m->ninputs && k < 0; j++)
            if (strcmp(m->inputs[j].name, req->inputs[i].name) == 0) k = j;
        if (k < 0) return fail(err, errlen, 400, "'%s' is not an input of the model", req->inputs[i].name);
        int rc = check_input(&m->inputs[k], &req->inputs[i], err, errlen);
        if (rc) return rc;
    }
    for (int j = 0; j < m->ninputs; j++) {
        bool given = false;
        for (int i = 0; i < req->ninputs && !given; i++) given = strcmp(m->inputs[j].name, req->inputs[i].name) == 0;
        if (!given) return fail(err, errlen, 400, "missing input '%s'", m->inputs[j].name);
    }
    for (int i = 0; i < req->noutputs; i++)
        if (find_output(m, req->outputs[i].name) < 0)
            return fail(err, errlen, 400, "'%s' is not an output of the model", req->outputs[i].name);
    return 0;
}

/* a copy of fetched column `col` (a dtype with no v2 name here, float16,
 * int8, ..., as FP32) */
static int copy_output(oar_predictor_t *p, int col, const char *name, serve_tensor_t *t, char *err, size_t errlen) {
    const void *data;
    const int64_t *dims;
    const uint64_t *lod;
    int dtype, ndim, lod_len;
    if (oar_predictor_get_output_ex(p, col, &dtype, &data, &dims, &ndim, &lod, &lod_len) != OAR_OK)
        return fail(err, errlen, 500, "output '%s': %s", name, oar_last_error());
    if (!serve_dtype_to_v2(dtype)) {
        const float *f;
        if (oar_predictor_get_output(p, col, &f, &dims, &ndim) != OAR_OK)
            return fail(err, errlen, 500, "output '%s': %s", name, oar_last_error());
        dtype = OAR_FP32;
        data = f;
    }
    if (ndim > SERVE_MAX_DIMS) return fail(err, errlen, 500, "output '%s': %d dims (at most %d)", name, ndim, SERVE_MAX_DIMS);
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) { t->dims[i] = dims[i]; t->numel *= dims[i]; }
    size_t bytes = (size_t)t->numel * oar_dtype_size(dtype);
    t->name = strdup(name);
    t->data = malloc(bytes ? bytes : 1);
    if (lod && lod_len > 0) {
        t->lod = malloc((size_t)lod_len * sizeof *t->lod);
        if (t->lod) { memcpy(t->lod, lod, (size_t)lod_len * sizeof *t->lod); t->lod_len = lod_len; }
    }
    if (!t->name || !t->data || (lod_len > 0 && !t->lod)) return fail(err, errlen, 500, "output '%s': out of memory", name);
    if (bytes) memcpy(t->data, data, bytes);
    return 0;
}

int serve_model_run(serve_model_t *m, int w, const serve_tensor_t *inputs, int ninputs, serve_tensor_t **outs,
                    char *err, size_t errlen) {
    oar_predictor_t *p = m->pool[w];
    *outs = NULL;
    for (int i = 0; i < ninputs; i++) {
        const serve_tensor_t *t = &inputs[i];
        if (oar_predictor_set_input_ex(p, t->name, t->dtype, t->data, t->dims, t->ndim, t->lod, t->lod_len) != OAR_OK)
            return fail(err, errlen, 400, "input '%s': %s", t->name, oar_last_error());
    }
    int rc = oar_predictor_run(p);
    if (rc != OAR_OK) {
        /* shapes and values the declaration could not rule out fail here:
         * the request's fault; a cancelled run passed its deadline; anything
         * else is the server's */
        int status = rc == OAR_ERR_SHAPE || rc == OAR_ERR_DTYPE || rc == OAR_ERR_INVALID || rc == OAR_ERR_RANGE ? 400
                     : rc == OAR_ERR_CANCELLED ? 504 : 500;
        return fail(err, errlen, status, "the model failed on this input: %s", oar_last_error());
    }
    serve_tensor_t *o = calloc((size_t)m->noutputs + 1, sizeof *o);
    if (!o) return fail(err, errlen, 500, "out of memory");
    int status = 0;
    for (int i = 0; i < m->noutputs && !status; i++) status = copy_output(p, i, m->outputs[i].name, &o[i], err, errlen);
    if (status) {
        for (int i = 0; i < m->noutputs; i++) serve_tensor_clear(&o[i]);
        free(o);
        return status;
    }
    *outs = o;
    return 200;
}

void serve_model_cancel(serve_model_t *m, int w) { oar_predictor_cancel(m->pool[w]); }

int serve_model_select(const serve_model_t *m, const serve_request_t *req, serve_tensor_t *all, serve_result_t *res) {
    int n = req->noutputs ? req->noutputs : m->noutputs;
    res->outputs = calloc((size_t)n + 1, sizeof *res->outputs);
    if (!res->outputs) return -1;
    res->noutputs = n;
    for (int i = 0; i < n; i++) {
        int col = req->noutputs ? find_output(m, req->outputs[i].name) : i;
        res->outputs[i] = all[col];   /* moved: `all` keeps an empty entry */
        memset(&all[col], 0, sizeof all[col]);
    }
    return 0;
}
