/* batch.c — dynamic batching: requests whose inputs agree on everything but
 * the first (batch) dimension are stacked along it into one run, and every
 * output is split back by the rows each request brought. Only for inputs
 * without LoD, of a model that declares a free first dimension on every
 * input; the outputs must come back with the batch's rows first, or the
 * requests run one by one (docs/DECISIONS.md, "oar serve: workers,
 * dynamic batching, deadlines, binary data"). With batching on, a one-row
 * request that runs on its own runs as two rows (itself twice): oar's
 * kernels take another path for a single row (a GEMV; oneDNN primitives
 * for one row) whose rounding differs from the many-row path a batch takes,
 * and a request's answer must not depend on what else was queued. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve.h"

int64_t serve_batch_rows(const serve_model_t *m, const serve_request_t *req) {
    for (int j = 0; j < serve_model_num_inputs(m); j++) {
        const serve_spec_t *s = serve_model_input(m, j);
        if (s->ndim < 1 || s->dims[0] >= 0 || s->lod_level > 0) return -1;
    }
    int64_t rows = -1;
    for (int i = 0; i < req->ninputs; i++) {
        const serve_tensor_t *t = &req->inputs[i];
        if (t->lod_len > 0 || t->ndim < 1 || (rows >= 0 && t->dims[0] != rows)) return -1;
        rows = t->dims[0];
    }
    return rows > 0 ? rows : -1;
}

static const serve_tensor_t *input_named(const serve_request_t *r, const char *name) {
    for (int i = 0; i < r->ninputs; i++)
        if (strcmp(r->inputs[i].name, name) == 0) return &r->inputs[i];
    return NULL;
}

bool serve_batch_compatible(const serve_model_t *m, const serve_request_t *a, const serve_request_t *b) {
    (void)m;
    if (a->ninputs != b->ninputs) return false;
    for (int i = 0; i < a->ninputs; i++) {
        const serve_tensor_t *x = &a->inputs[i], *y = input_named(b, x->name);
        if (!y || x->dtype != y->dtype || x->ndim != y->ndim) return false;
        for (int d = 1; d < x->ndim; d++)
            if (x->dims[d] != y->dims[d]) return false;
    }
    return true;
}

/* one request on its own */
static void run_alone(serve_model_t *m, int w, const serve_request_t *req, int *status, serve_result_t *res,
                      char *err) {
    serve_tensor_t *all;
    memset(res, 0, sizeof *res);
    *status = serve_model_run(m, w, req->inputs, req->ninputs, &all, err, SERVE_ERRLEN);
    if (*status != 200) return;
    int64_t rows = req->ninputs > 0 && req->inputs[0].ndim > 0 ? req->inputs[0].dims[0] : 1;
    serve_metrics_batch(1, rows);
    if (serve_model_select(m, req, all, res) != 0) {
        *status = 500;
        snprintf(err, SERVE_ERRLEN, "out of memory");
    }
    for (int i = 0; i < serve_model_num_outputs(m); i++) serve_tensor_clear(&all[i]);
    free(all);
}

static void free_tensors(serve_tensor_t *t, int n) {
    for (int i = 0; t && i < n; i++) serve_tensor_clear(&t[i]);
    free(t);
}

/* rows [row0, row0 + rows) of t into a new tensor */
static int slice(const serve_tensor_t *t, int64_t row0, int64_t rows, serve_tensor_t *out) {
    memset(out, 0, sizeof *out);
    size_t row_bytes = oar_dtype_size(t->dtype);
    for (int d = 1; d < t->ndim; d++) row_bytes *= (size_t)t->dims[d];
    out->name = strdup(t->name);
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->dims[0] = rows;
    out->numel = t->dims[0] > 0 ? t->numel / t->dims[0] * rows : 0;
    size_t bytes = (size_t)rows * row_bytes;
    out->data = malloc(bytes ? bytes : 1);
    if (!out->name || !out->data) return -1;
    if (bytes) memcpy(out->data, (const char *)t->data + (size_t)row0 * row_bytes, bytes);
    return 0;
}

static void run_each(serve_model_t *m, int w, serve_request_t *const *reqs, int n, int *status, serve_result_t *res,
                     char (*err)[SERVE_ERRLEN]) {
    for (int i = 0; i < n; i++) run_alone(m, w, reqs[i], &status[i], &res[i], err[i]);
}

/* n >= 2 requests stacked into one run; `padded`: reqs[1] is reqs[0] again,
 * counted as one request in the metrics */
static int run_stacked(serve_model_t *m, int w, serve_request_t *const *reqs, int n, bool padded, int *status,
                       serve_result_t *res, char (*err)[SERVE_ERRLEN]) {
    const serve_request_t *r0 = reqs[0];
    int ni = r0->ninputs, no = serve_model_num_outputs(m);
    int64_t *rows = calloc((size_t)n, sizeof *rows), total = 0;
    serve_tensor_t *stacked = calloc((size_t)ni + 1, sizeof *stacked), *all = NULL;
    int rc = rows && stacked ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) { rows[i] = reqs[i]->inputs[0].dims[0]; total += rows[i]; }
    /* the inputs stacked, each in r0's order */
    for (int j = 0; rc == 0 && j < ni; j++) {
        const serve_tensor_t *x = &r0->inputs[j];
        serve_tensor_t *s = &stacked[j];
        s->name = strdup(x->name);
        s->dtype = x->dtype;
        s->ndim = x->ndim;
        memcpy(s->dims, x->dims, sizeof s->dims);
        s->dims[0] = total;
        s->numel = x->numel / x->dims[0] * total;
        size_t row_bytes = (size_t)(x->numel / x->dims[0]) * oar_dtype_size(x->dtype), k = 0;
        s->data = malloc(s->numel > 0 ? (size_t)s->numel * oar_dtype_size(x->dtype) : 1);
        if (!s->name || !s->data) { rc = -1; break; }
        for (int i = 0; i < n; i++) {
            const serve_tensor_t *y = input_named(reqs[i], x->name);
            memcpy((char *)s->data + k, y->data, (size_t)rows[i] * row_bytes);
            k += (size_t)rows[i] * row_bytes;
        }
    }
    char batch_err[SERVE_ERRLEN];
    int st = rc == 0 ? serve_model_run(m, w, stacked, ni, &all, batch_err, sizeof batch_err) : 500;
    free_tensors(stacked, ni);
    int split = st == 200 ? 1 : 0;
    for (int o = 0; split && o < no; o++) split = all[o].ndim >= 1 && all[o].dims[0] == total && all[o].lod_len == 0;
    if (st == 504) {
        /* cancelled: every request in it was past its deadline */
        for (int i = 0; i < n; i++) { status[i] = 504; memset(&res[i], 0, sizeof res[i]); snprintf(err[i], SERVE_ERRLEN, "%s", batch_err); }
    } else if (!split) {
        /* a request's bad values (its error is its own), or outputs that do not split: one by one */
        run_each(m, w, reqs, n, status, res, err);
    } else {
        if (padded) serve_metrics_batch(1, total / 2);
        else serve_metrics_batch(n, total);
        int64_t row0 = 0;
        for (int i = 0; i < n; i++) {
            serve_tensor_t *mine = calloc((size_t)no + 1, sizeof *mine);
            int bad = mine ? 0 : -1;
            for (int o = 0; bad == 0 && o < no; o++) bad = slice(&all[o], row0, rows[i], &mine[o]);
            memset(&res[i], 0, sizeof res[i]);
            status[i] = bad == 0 && serve_model_select(m, reqs[i], mine, &res[i]) == 0 ? 200 : 500;
            if (status[i] != 200) snprintf(err[i], SERVE_ERRLEN, "out of memory");
            free_tensors(mine, no);
            row0 += rows[i];
        }
    }
    int fell_back = st == 200 && !split;
    free_tensors(all, all ? no : 0);
    free(rows);
    return fell_back;
}

int serve_batch_run(serve_model_t *m, int w, serve_request_t *const *reqs, int n, bool pad, int *status,
                    serve_result_t *res, char (*err)[SERVE_ERRLEN]) {
    if (n > 1) return run_stacked(m, w, reqs, n, false, status, res, err);
    if (!pad || serve_batch_rows(m, reqs[0]) != 1) { run_alone(m, w, reqs[0], &status[0], &res[0], err[0]); return 0; }
    /* one row on its own: run as two (the row twice), so that it takes the
     * kernels' many-row path as it would in any batch (docs/DECISIONS.md) */
    serve_request_t *two[2] = { reqs[0], reqs[0] };
    int st[2];
    serve_result_t r[2];
    char e[2][SERVE_ERRLEN];
    int fell_back = run_stacked(m, w, two, 2, true, st, r, e);
    status[0] = st[0];
    res[0] = r[0];
    memcpy(err[0], e[0], SERVE_ERRLEN);
    if (st[1] == 200) serve_result_free(&r[1]);
    return fell_back;
}
