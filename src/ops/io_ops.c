/* io_ops.c — save, load, save_combine, load_combine (Fluid's file ops) and
 * feed/fetch (the ops Fluid's inference models carry at their ends).
 * Saving builds the whole file in memory and replaces the target atomically;
 * loading parses and checks every record before any variable changes.
 * save_as_fp16 / load_as_fp16 convert float32/float64 to float16 (round to
 * nearest even) on the way out / in, like Fluid's attrs of the same names.
 * The ops are declared in io_ops.ops; this file holds their runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "exec.h"
#include "tensor_io.h"
#include "ops/io_ops.h"   /* generated from io_ops.ops: the attribute structs */
#include "half_bits.h"

#define LOAD_LIMIT ((size_t)1 << 36)

static int check_path(oar_kernel_ctx_t *k, const char *path, bool writing, bool overwrite) {
    if (!path || !*path) return oar_k_error(k, OAR_ERR_INVALID, "attr file_path is empty");
    if (writing && !overwrite && access(path, F_OK) == 0)
        return oar_k_error(k, OAR_ERR_IO, "'%s' exists and overwrite is false", path);
    return OAR_OK;
}

/* A float16 copy of a float32/float64 tensor (LoD kept); float16 is shared. */
static int as_half(oar_kernel_ctx_t *k, const char *name, oar_tensor_t *t, oar_tensor_t **out) {
    if (t->dtype == OAR_FP16) { *out = oar_tensor_retain(t); return OAR_OK; }
    if (t->dtype != OAR_FP32 && t->dtype != OAR_FP64)
        return oar_k_error(k, OAR_ERR_DTYPE, "'%s' is %s; only float32 and float64 tensors convert to float16", name,
                           oar_dtype_name(t->dtype));
    oar_tensor_t *h;
    OAR_TRY(oar_tensor_copy(t, &h));
    int64_t n = oar_tensor_numel_of(t);
    const void *src = oar_tensor_data(t);
    uint16_t *dst = oar_tensor_mutable(h, OAR_FP16);
    if (!dst) { oar_tensor_free(h); return OAR_ERR_NOMEM; }
    for (int64_t i = 0; i < n; i++)
        dst[i] = oar_half_from_double(t->dtype == OAR_FP32 ? (double)((const float *)src)[i] : ((const double *)src)[i]);
    *out = h;
    return OAR_OK;
}

static int append_input(oar_kernel_ctx_t *k, oar_bytes_t *b, int i) {
    oar_variable_t *v = oar_k_in_var(k, "X", i);
    const char *name = oar_k_in_name(k, "X", i);
    if (!v || v->type != OAR_VAR_LOD_TENSOR || !oar_tensor_has_data(v->u.tensor))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "variable '%s' has no tensor to save", name ? name : "?");
    oar_tensor_t *t = v->u.tensor, *half = NULL;
    if (((const oar_save_attrs_t *)oar_k_attrs(k))->save_as_fp16) {
        OAR_TRY(as_half(k, name, t, &half));
        t = half;
    }
    /* combined files are Paddle's bytes exactly; their checksum goes beside them */
    bool combined = strcmp(oar_k_op(k)->type, "save_combine") == 0;
    int rc = combined ? oar_tensor_write_record_plain(b, t) : oar_tensor_write_record(b, t);
    if (rc != OAR_OK) oar_error_prefix("%s: variable '%s': ", oar_k_op(k)->type, name);
    oar_tensor_free(half);
    return rc;
}

static int run_save(oar_kernel_ctx_t *k) {
    const oar_save_attrs_t *a = oar_k_attrs(k);
    const char *path = a->file_path;
    OAR_TRY(check_path(k, path, true, a->overwrite));
    oar_bytes_t b = {0};
    int n = oar_k_in_count(k, "X");
    int rc = OAR_OK;
    bool combined = strcmp(oar_k_op(k)->type, "save_combine") == 0;
    for (int i = 0; i < n && rc == OAR_OK; i++) rc = append_input(k, &b, i);
    if (rc == OAR_OK) rc = oar_crc_sidecar_remove(path);
    if (rc == OAR_OK) rc = oar_file_write_atomic(path, b.data, b.n);
    if (rc == OAR_OK && combined) rc = oar_crc_sidecar_write(path, b.data, b.n);
    oar_bytes_free(&b);
    return rc;
}

/* Checks a loaded tensor against the output's declared dtype and shape. */
static int check_declared(oar_kernel_ctx_t *k, const char *name, const oar_tensor_t *t, const char *path) {
    oar_block_t *b = oar_program_block(oar_k_program(k), k->prep->block_idx);
    const oar_var_desc_t *v = b ? oar_block_find_var_recursive(b, name) : NULL;
    if (!v) return OAR_OK;
    if (v->dtype >= 0 && v->dtype != t->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "'%s' in '%s' is %s, the program declares %s", name, path,
                           oar_dtype_name(t->dtype), oar_dtype_name(v->dtype));
    if (v->ndim >= 0) {
        bool ok = v->ndim == t->ndim;
        for (int i = 0; ok && i < v->ndim; i++) ok = v->dims[i] < 0 || v->dims[i] == t->dims[i];
        if (!ok) {
            char want[160], got[160];
            return oar_k_error(k, OAR_ERR_SHAPE, "'%s' in '%s' has shape %s, the program declares %s", name, path,
                               oar_shape_str(t->dims, t->ndim, got, sizeof got),
                               oar_shape_str(v->dims, v->ndim, want, sizeof want));
        }
    }
    return OAR_OK;
}

static int run_load(oar_kernel_ctx_t *k) {
    const oar_load_attrs_t *a = oar_k_attrs(k);
    const char *path = a->file_path;
    OAR_TRY(check_path(k, path, false, false));
    int n = oar_k_out_count(k, "Out");
    bool as_fp16 = a->load_as_fp16;
    uint8_t *data = NULL;
    size_t size = 0;
    /* the declared shapes bound the file: a huge file is refused before it is read */
    size_t limit = 0;
    oar_block_t *blk = oar_program_block(oar_k_program(k), k->prep->block_idx);
    for (int i = 0; i < n && limit < LOAD_LIMIT; i++) {
        const oar_var_desc_t *v = blk ? oar_block_find_var_recursive(blk, oar_k_out_name(k, "Out", i)) : NULL;
        size_t one = v ? oar_record_max_bytes(v->dims, v->ndim) : SIZE_MAX;
        limit = one >= LOAD_LIMIT - limit ? LOAD_LIMIT : limit + one;
    }
    OAR_TRY(oar_file_read_all(path, limit, &data, &size));
    int crc_rc = oar_crc_sidecar_check(path, data, size);
    if (crc_rc != OAR_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        free(data);
        return oar_k_error(k, crc_rc, "%s", msg);
    }
    oar_tensor_t **loaded = oar_xcalloc((size_t)(n ? n : 1), sizeof *loaded);
    int rc = loaded ? OAR_OK : OAR_ERR_NOMEM;
    size_t at = 0;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        size_t used = 0;
        rc = oar_tensor_read_record(data + at, size - at, &used, path, &loaded[i]);
        if (rc == OAR_OK) at += used;
        if (rc == OAR_OK && as_fp16) {
            oar_tensor_t *half = NULL;
            rc = as_half(k, oar_k_out_name(k, "Out", i), loaded[i], &half);
            oar_tensor_free(loaded[i]);
            loaded[i] = half;
        }
        if (rc == OAR_OK) rc = check_declared(k, oar_k_out_name(k, "Out", i), loaded[i], path);
    }
    if (rc == OAR_OK && at != size)
        rc = oar_k_error(k, OAR_ERR_FORMAT, "'%s' has %zu bytes after the %d tensor(s) expected", path, size - at, n);
    /* only now, with every record valid, do the variables change */
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        oar_variable_t *v = oar_k_out_var(k, "Out", i);
        if (!v) rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "output %d has no variable", i);
        else rc = oar_variable_set_tensor(v, loaded[i]);
    }
    for (int i = 0; loaded && i < n; i++) oar_tensor_free(loaded[i]);
    free(loaded);
    free(data);
    return rc;
}

/* ---- feed / fetch ---------------------------------------------------------
 * feed copies column `col` of the FEED_MINIBATCH list into Out; fetch
 * copies X into column `col` of the FETCH_LIST. Both lists are tensor arrays. */
static int run_feed(oar_kernel_ctx_t *k) {
    int col = ((const oar_col_attrs_t *)oar_k_attrs(k))->col;
    oar_variable_t *list = oar_k_in_var(k, "X", 0);
    oar_tensor_array_t *a = list ? oar_var_array(list) : NULL;
    if (!a) return oar_k_error(k, OAR_ERR_DTYPE, "input X must be the feed list");
    if (col < 0 || col >= a->n || !a->items[col])
        return oar_k_error(k, OAR_ERR_RANGE, "feed column %d was not fed (%d columns)", col, a->n);
    oar_variable_t *out = oar_k_out_var(k, "Out", 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    return oar_variable_set_tensor(out, a->items[col]);
}

static int run_fetch(oar_kernel_ctx_t *k) {
    int col = ((const oar_col_attrs_t *)oar_k_attrs(k))->col;
    oar_tensor_t *x = oar_k_in(k, "X", 0);
    if (!x || !oar_tensor_has_data(x)) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X ('%s') has no value", oar_k_in_name(k, "X", 0));
    oar_variable_t *list = oar_k_out_var(k, "Out", 0);
    oar_tensor_array_t *a = list ? oar_var_array(list) : NULL;
    if (!a) return oar_k_error(k, OAR_ERR_DTYPE, "output Out must be the fetch list");
    if (col < 0 || col > 4096) return oar_k_error(k, OAR_ERR_RANGE, "fetch column %d out of range", col);
    if (col >= a->n) OAR_TRY(oar_array_resize(a, col + 1));
    oar_tensor_t *copy;
    OAR_TRY(oar_tensor_copy(x, &copy));
    oar_tensor_free(a->items[col]);
    a->items[col] = copy;
    return OAR_OK;
}

static int feed_infer(oar_infer_ctx_t *c) {
    if (oar_ic_runtime(c)) return OAR_OK;
    return oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_LOD_TENSOR);
}

#define OAR_OPS_DEFINE
#include "ops/io_ops.h"   /* the tables, the decoders and the registrations */
