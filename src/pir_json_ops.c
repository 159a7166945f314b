/* pir_json_ops.c — each PIR operation (pd_op.*, builtin.combine) as the Fluid
 * ops oar runs: pd_op.matmul -> matmul_v2, pd_op.add -> elementwise_add,
 * pd_op.reshape -> reshape2, ... Inputs that Fluid takes as attributes (a
 * reshape's shape, a pool's kernel size, a scale's factor) come from the
 * pd_op.full / full_int_array that made them. An op with no mapping is
 * refused with its name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "pir_json.h"

#define MAXV 64

typedef struct build {
    oar_op_desc_t *op;
    int rc;
} build_t;

static build_t start(const char *type) {
    build_t b = {NULL, OAR_OK};
    b.rc = oar_op_desc_new(type, &b.op);
    return b;
}

static void in(build_t *b, pir_ctx_t *c, const pir_op_t *op, const char *slot, int i) {
    if (b->rc != OAR_OK) return;
    const char *name;
    b->rc = pir_in_name(c, op, i, &name);
    if (b->rc == OAR_OK) b->rc = oar_op_desc_set_input(b->op, slot, &name, 1);
}

/* an optional input: left out when PIR has none */
static void in_opt(build_t *b, pir_ctx_t *c, const pir_op_t *op, const char *slot, int i) {
    if (pir_in(c, op, i)) in(b, c, op, slot, i);
}

static void in_list(build_t *b, pir_ctx_t *c, const pir_op_t *op, const char *slot, int i) {
    if (b->rc != OAR_OK) return;
    const char **names = NULL;
    int n = 0;
    b->rc = pir_in_names(c, op, i, &names, &n);
    if (b->rc == OAR_OK) b->rc = oar_op_desc_set_input(b->op, slot, names, n);
    free(names);
}

static void out(build_t *b, pir_ctx_t *c, const pir_op_t *op, const char *slot, int i, const char *alias) {
    if (b->rc != OAR_OK || i >= op->nout || op->out[i] == 0) return;
    const char *name;
    b->rc = pir_out_name(c, op, i, alias, &name);
    if (b->rc == OAR_OK) b->rc = oar_op_desc_set_output(b->op, slot, &name, 1);
}

/* XShape: Fluid's reshape2/transpose2/... need it, Paddle 3 no longer makes it */
static void out_xshape(build_t *b, pir_ctx_t *c, const pir_op_t *op, int i) {
    if (b->rc != OAR_OK) return;
    if (i < op->nout && op->out[i] != 0) { out(b, c, op, "XShape", i, NULL); return; }
    const char *main_out = NULL;
    b->rc = pir_out_name(c, op, 0, NULL, &main_out);
    char name[160];
    snprintf(name, sizeof name, "%s@xshape", main_out ? main_out : "?");
    oar_var_desc_t *v = oar_block_find_var(c->block, name);
    if (b->rc == OAR_OK && !v) {
        b->rc = oar_block_var_new(c->block, name, &v);
        if (b->rc == OAR_OK) b->rc = oar_var_desc_set_type(v, OAR_VAR_LOD_TENSOR);
    }
    const char *names[1] = {name};
    if (b->rc == OAR_OK) b->rc = oar_op_desc_set_output(b->op, "XShape", names, 1);
}

static void attr(build_t *b, const pir_op_t *op, const char *pir_name, const char *fluid_name) {
    if (b->rc == OAR_OK) b->rc = pir_copy_attr(op, b->op, pir_name, fluid_name);
}

static void num(build_t *b, const char *name, double v) {
    if (b->rc == OAR_OK) b->rc = pir_set_num(b->op, name, v);
}

/* a constant input as a list attribute */
static void const_list(build_t *b, pir_ctx_t *c, const pir_op_t *op, int i, const char *name) {
    if (b->rc != OAR_OK) return;
    double v[MAXV];
    int n = 0;
    b->rc = pir_in_const(c, op, i, v, MAXV, &n);
    if (b->rc == OAR_OK) b->rc = pir_set_nums(b->op, name, v, n);
}

/* a constant input as a scalar attribute */
static void const_num(build_t *b, pir_ctx_t *c, const pir_op_t *op, int i, const char *name) {
    if (b->rc != OAR_OK) return;
    double v[MAXV];
    int n = 0;
    b->rc = pir_in_const(c, op, i, v, MAXV, &n);
    if (b->rc == OAR_OK && n != 1)
        b->rc = oar_error(OAR_ERR_FORMAT, "input %d must hold one value for '%s', it holds %d", i, name, n);
    if (b->rc == OAR_OK) b->rc = pir_set_num(b->op, name, v[0]);
}

static int finish(build_t *b, pir_ctx_t *c) {
    if (b->rc != OAR_OK) { oar_op_desc_free(b->op); return b->rc; }
    return pir_emit(c, b->op);
}

/* ---- constants and plumbing ---------------------------------------------------- */
static int t_full(pir_ctx_t *c, const pir_op_t *op) {
    pir_value_t *v = pir_value(c, op->nout ? op->out[0] : 0);
    if (!v) return oar_error(OAR_ERR_FORMAT, "no result");
    double x;
    if (!pir_attr_num(op, "value", &x)) return oar_error(OAR_ERR_FORMAT, "attr 'value' is missing");
    int64_t numel = 1;
    for (int i = 0; i < v->ndim && numel >= 0 && numel <= PIR_MAX_CONST; i++)
        numel = v->dims[i] < 0 || v->dims[i] > PIR_MAX_CONST ? -1 : numel * v->dims[i];
    if (v->ndim < 0 || numel < 0 || numel > PIR_MAX_CONST) {
        /* a large or dynamic fill: a real fill_constant now */
        build_t b = start("fill_constant");
        double shape[OAR_MAX_DIMS];
        int n = 0;
        if (!pir_attr_nums(op, "shape", shape, OAR_MAX_DIMS, &n)) return oar_error(OAR_ERR_FORMAT, "attr 'shape' is missing");
        if (b.rc == OAR_OK) b.rc = pir_set_nums(b.op, "shape", shape, n);
        num(&b, "value", x);
        num(&b, "dtype", v->dtype);
        out(&b, c, op, "Out", 0, NULL);
        return finish(&b, c);
    }
    v->is_const = true;
    v->nconst = (int)numel;
    for (int i = 0; i < v->nconst; i++) v->cvals[i] = x;
    return OAR_OK;
}

static int t_full_int_array(pir_ctx_t *c, const pir_op_t *op) {
    pir_value_t *v = pir_value(c, op->nout ? op->out[0] : 0);
    if (!v) return oar_error(OAR_ERR_FORMAT, "no result");
    int n = 0;
    if (!pir_attr_nums(op, "value", v->cvals, PIR_MAX_CONST, &n))
        return oar_error(OAR_ERR_FORMAT, "attr 'value' is missing or longer than %d", PIR_MAX_CONST);
    v->is_const = true;
    v->nconst = n;
    return OAR_OK;
}

static int t_combine(pir_ctx_t *c, const pir_op_t *op) {
    pir_value_t *v = pir_value(c, op->nout ? op->out[0] : 0);
    if (!v) return oar_error(OAR_ERR_FORMAT, "no result");
    v->members = oar_xcalloc((size_t)(op->nin ? op->nin : 1), sizeof *v->members);
    if (!v->members) return OAR_ERR_NOMEM;
    memcpy(v->members, op->in, (size_t)op->nin * sizeof *op->in);
    v->nmembers = op->nin;
    return OAR_OK;
}

static int t_data(pir_ctx_t *c, const pir_op_t *op) {
    const char *name = pir_attr_str(op, "name");
    if (!name || !*name) return oar_error(OAR_ERR_FORMAT, "attr 'name' is missing");
    build_t b = start("feed");
    const char *feed = "feed";
    if (b.rc == OAR_OK) b.rc = oar_op_desc_set_input(b.op, "X", &feed, 1);
    out(&b, c, op, "Out", 0, name);
    num(&b, "col", c->nfeed++);
    return finish(&b, c);
}

/* The output keeps the name Paddle 3 gives it ("fetch_name_0", what its
 * predictor reports): an assign copies the value into a variable so named. */
static int t_fetch(pir_ctx_t *c, const pir_op_t *op) {
    double col;
    if (!pir_attr_num(op, "col", &col)) return oar_error(OAR_ERR_FORMAT, "attr 'col' is missing");
    const char *fname = pir_attr_str(op, "name");
    build_t b;
    if (fname && *fname && op->nout > 0 && op->out[0] != 0 && !oar_block_find_var(c->block, fname)) {
        b = start("assign");
        in(&b, c, op, "X", 0);
        out(&b, c, op, "Out", 0, fname);
        int rc = finish(&b, c);
        if (rc != OAR_OK) return rc;
        b = start("fetch");
        if (b.rc == OAR_OK) b.rc = oar_op_desc_set_input(b.op, "X", &fname, 1);
    } else {
        b = start("fetch");
        in(&b, c, op, "X", 0);
    }
    const char *fetch = "fetch";
    if (b.rc == OAR_OK) b.rc = oar_op_desc_set_output(b.op, "Out", &fetch, 1);
    num(&b, "col", col);
    return finish(&b, c);
}

/* ---- generic shapes ------------------------------------------------------------- */
/* X -> Out, attributes copied by the same name */
static int unary(pir_ctx_t *c, const pir_op_t *op, const char *type, const char *const *attrs) {
    build_t b = start(type);
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    for (int i = 0; attrs && attrs[i]; i += 2) attr(&b, op, attrs[i], attrs[i + 1]);
    return finish(&b, c);
}

static int binary(pir_ctx_t *c, const pir_op_t *op, const char *type) {
    build_t b = start(type);
    in(&b, c, op, "X", 0);
    in(&b, c, op, "Y", 1);
    out(&b, c, op, "Out", 0, NULL);
    num(&b, "axis", -1);   /* numpy broadcasting, as Paddle 2.x writes it */
    return finish(&b, c);
}

/* ---- ops with their own mapping ----------------------------------------------------- */
static int t_matmul(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("matmul_v2");
    in(&b, c, op, "X", 0);
    in(&b, c, op, "Y", 1);
    out(&b, c, op, "Out", 0, NULL);
    attr(&b, op, "transpose_x", "trans_x");
    attr(&b, op, "transpose_y", "trans_y");
    return finish(&b, c);
}

static int t_conv2d(pir_ctx_t *c, const pir_op_t *op, const char *type) {
    build_t b = start(type);
    in(&b, c, op, "Input", 0);
    in(&b, c, op, "Filter", 1);
    out(&b, c, op, "Output", 0, NULL);
    attr(&b, op, "strides", "strides");
    attr(&b, op, "paddings", "paddings");
    attr(&b, op, "padding_algorithm", "padding_algorithm");
    attr(&b, op, "dilations", "dilations");
    attr(&b, op, "groups", "groups");
    attr(&b, op, "data_format", "data_format");
    return finish(&b, c);
}

/* inputs x, mean, variance, scale, bias; outputs out, mean_out, variance_out,
 * saved_mean, saved_variance, reserve_space */
static int t_batch_norm(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("batch_norm");
    const char *mean = NULL, *var = NULL;
    if (b.rc == OAR_OK) b.rc = pir_in_name(c, op, 1, &mean);
    if (b.rc == OAR_OK) b.rc = pir_in_name(c, op, 2, &var);
    in(&b, c, op, "X", 0);
    in(&b, c, op, "Mean", 1);
    in(&b, c, op, "Variance", 2);
    in_opt(&b, c, op, "Scale", 3);
    in_opt(&b, c, op, "Bias", 4);
    out(&b, c, op, "Y", 0, NULL);
    out(&b, c, op, "MeanOut", 1, mean);      /* in place, as in Fluid */
    out(&b, c, op, "VarianceOut", 2, var);
    out(&b, c, op, "SavedMean", 3, NULL);
    out(&b, c, op, "SavedVariance", 4, NULL);
    attr(&b, op, "is_test", "is_test");
    attr(&b, op, "momentum", "momentum");
    attr(&b, op, "epsilon", "epsilon");
    attr(&b, op, "data_format", "data_layout");
    attr(&b, op, "use_global_stats", "use_global_stats");
    attr(&b, op, "trainable_statistics", "trainable_statistics");
    return finish(&b, c);
}

static int t_pool2d(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("pool2d");
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    const_list(&b, c, op, 1, "ksize");
    attr(&b, op, "strides", "strides");
    attr(&b, op, "paddings", "paddings");
    attr(&b, op, "ceil_mode", "ceil_mode");
    attr(&b, op, "exclusive", "exclusive");
    attr(&b, op, "data_format", "data_format");
    attr(&b, op, "pooling_type", "pooling_type");
    attr(&b, op, "global_pooling", "global_pooling");
    attr(&b, op, "adaptive", "adaptive");
    attr(&b, op, "padding_algorithm", "padding_algorithm");
    return finish(&b, c);
}

/* Out plus XShape, the way Paddle 2.x writes reshape2/transpose2/flatten */
static int t_reshape(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("reshape2");
    in(&b, c, op, "X", 0);
    pir_value_t *shape = pir_in(c, op, 1);
    if (shape && shape->members) in_list(&b, c, op, "ShapeTensor", 1);
    else if (shape && !shape->is_const) in(&b, c, op, "Shape", 1);
    else const_list(&b, c, op, 1, "shape");
    out(&b, c, op, "Out", 0, NULL);
    out_xshape(&b, c, op, 1);
    return finish(&b, c);
}

static int t_transpose(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("transpose2");
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    out_xshape(&b, c, op, 1);
    attr(&b, op, "perm", "axis");
    return finish(&b, c);
}

static int t_flatten(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("flatten_contiguous_range");
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    out_xshape(&b, c, op, 1);
    attr(&b, op, "start_axis", "start_axis");
    attr(&b, op, "stop_axis", "stop_axis");
    return finish(&b, c);
}

static int t_concat(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("concat");
    in_list(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    const_num(&b, c, op, 1, "axis");
    return finish(&b, c);
}

static int t_scale(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("scale");
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    pir_value_t *s = pir_in(c, op, 1);
    if (s && !s->is_const) in(&b, c, op, "ScaleTensor", 1);
    else const_num(&b, c, op, 1, "scale");
    attr(&b, op, "bias", "bias");
    attr(&b, op, "bias_after_scale", "bias_after_scale");
    return finish(&b, c);
}

/* inputs x, seed_tensor (optional), p; outputs out, mask */
static int t_dropout(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("dropout");
    in(&b, c, op, "X", 0);
    in_opt(&b, c, op, "Seed", 1);
    out(&b, c, op, "Out", 0, NULL);
    out(&b, c, op, "Mask", 1, NULL);
    const_num(&b, c, op, 2, "dropout_prob");
    attr(&b, op, "is_test", "is_test");
    attr(&b, op, "mode", "dropout_implementation");
    attr(&b, op, "seed", "seed");
    attr(&b, op, "fix_seed", "fix_seed");
    return finish(&b, c);
}

/* pd_op.sum/mean/max/min (x, axis) -> reduce_*: an empty axis reduces all */
static int t_reduce(pir_ctx_t *c, const pir_op_t *op, const char *type) {
    build_t b = start(type);
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    double axes[MAXV];
    int n = 0;
    if (b.rc == OAR_OK) b.rc = pir_in_const(c, op, 1, axes, MAXV, &n);
    if (b.rc == OAR_OK && n > 0) b.rc = pir_set_nums(b.op, "dim", axes, n);
    num(&b, "reduce_all", n == 0);
    attr(&b, op, "keepdim", "keep_dim");
    return finish(&b, c);
}

static int t_embedding(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("lookup_table_v2");
    in(&b, c, op, "Ids", 0);
    in(&b, c, op, "W", 1);
    out(&b, c, op, "Out", 0, NULL);
    attr(&b, op, "padding_idx", "padding_idx");
    return finish(&b, c);
}

static int t_cast(pir_ctx_t *c, const pir_op_t *op) {
    pir_value_t *x = pir_in(c, op, 0);
    int to = pir_dtype_from_name(pir_attr_str(op, "dtype"));
    if (!x || to < 0) return oar_error(OAR_ERR_FORMAT, "cast: unknown input or target dtype");
    build_t b = start("cast");
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    num(&b, "in_dtype", x->dtype);
    num(&b, "out_dtype", to);
    return finish(&b, c);
}

static int t_layer_norm(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("layer_norm");
    in(&b, c, op, "X", 0);
    in_opt(&b, c, op, "Scale", 1);
    in_opt(&b, c, op, "Bias", 2);
    out(&b, c, op, "Y", 0, NULL);
    out(&b, c, op, "Mean", 1, NULL);
    out(&b, c, op, "Variance", 2, NULL);
    attr(&b, op, "epsilon", "epsilon");
    attr(&b, op, "begin_norm_axis", "begin_norm_axis");
    return finish(&b, c);
}

static int t_squeeze(pir_ctx_t *c, const pir_op_t *op, const char *type) {
    build_t b = start(type);
    in(&b, c, op, "X", 0);
    out(&b, c, op, "Out", 0, NULL);
    out_xshape(&b, c, op, 1);
    const_list(&b, c, op, 1, "axes");
    return finish(&b, c);
}

static int t_slice(pir_ctx_t *c, const pir_op_t *op) {
    build_t b = start("slice");
    in(&b, c, op, "Input", 0);
    out(&b, c, op, "Out", 0, NULL);
    attr(&b, op, "axes", "axes");
    const_list(&b, c, op, 1, "starts");
    const_list(&b, c, op, 2, "ends");
    attr(&b, op, "infer_flags", "infer_flags");
    attr(&b, op, "decrease_axis", "decrease_axis");
    return finish(&b, c);
}

static int t_softmax(pir_ctx_t *c, const pir_op_t *op, const char *type) {
    static const char *const a[] = {"axis", "axis", NULL};
    return unary(c, op, type, a);
}

/* ---- the table ------------------------------------------------------------------------ */
typedef struct entry {
    const char *pir;
    const char *fluid;                                   /* for unary/binary */
    int (*fn)(pir_ctx_t *, const pir_op_t *);
    int (*typed)(pir_ctx_t *, const pir_op_t *, const char *);
    const char *const *attrs;                            /* unary: pir, fluid pairs */
} entry_t;

static const char *const gelu_attrs[] = {"approximate", "approximate", NULL};
static const char *const leaky_attrs[] = {"negative_slope", "alpha", NULL};
static const char *const elu_attrs[] = {"alpha", "alpha", NULL};
static const char *const hsig_attrs[] = {"slope", "slope", "offset", "offset", NULL};

static const entry_t table[] = {
    {"builtin.combine", NULL, t_combine, NULL, NULL},
    {"pd_op.full", NULL, t_full, NULL, NULL},
    {"pd_op.full_int_array", NULL, t_full_int_array, NULL, NULL},
    {"pd_op.data", NULL, t_data, NULL, NULL},
    {"pd_op.fetch", NULL, t_fetch, NULL, NULL},
    {"pd_op.matmul", NULL, t_matmul, NULL, NULL},
    {"pd_op.conv2d", "conv2d", NULL, t_conv2d, NULL},
    {"pd_op.depthwise_conv2d", "depthwise_conv2d", NULL, t_conv2d, NULL},
    {"pd_op.batch_norm", NULL, t_batch_norm, NULL, NULL},
    {"pd_op.batch_norm_", NULL, t_batch_norm, NULL, NULL},
    {"pd_op.pool2d", NULL, t_pool2d, NULL, NULL},
    {"pd_op.reshape", NULL, t_reshape, NULL, NULL},
    {"pd_op.transpose", NULL, t_transpose, NULL, NULL},
    {"pd_op.flatten", NULL, t_flatten, NULL, NULL},
    {"pd_op.concat", NULL, t_concat, NULL, NULL},
    {"pd_op.scale", NULL, t_scale, NULL, NULL},
    {"pd_op.dropout", NULL, t_dropout, NULL, NULL},
    {"pd_op.embedding", NULL, t_embedding, NULL, NULL},
    {"pd_op.cast", NULL, t_cast, NULL, NULL},
    {"pd_op.layer_norm", NULL, t_layer_norm, NULL, NULL},
    {"pd_op.slice", NULL, t_slice, NULL, NULL},
    {"pd_op.squeeze", "squeeze2", NULL, t_squeeze, NULL},
    {"pd_op.unsqueeze", "unsqueeze2", NULL, t_squeeze, NULL},
    {"pd_op.sum", "reduce_sum", NULL, t_reduce, NULL},
    {"pd_op.mean", "reduce_mean", NULL, t_reduce, NULL},
    {"pd_op.max", "reduce_max", NULL, t_reduce, NULL},
    {"pd_op.min", "reduce_min", NULL, t_reduce, NULL},
    {"pd_op.softmax", "softmax", NULL, t_softmax, NULL},
    {"pd_op.log_softmax", "log_softmax", NULL, t_softmax, NULL},
    {"pd_op.add", "elementwise_add", NULL, NULL, NULL},
    {"pd_op.subtract", "elementwise_sub", NULL, NULL, NULL},
    {"pd_op.multiply", "elementwise_mul", NULL, NULL, NULL},
    {"pd_op.divide", "elementwise_div", NULL, NULL, NULL},
    {"pd_op.maximum", "elementwise_max", NULL, NULL, NULL},
    {"pd_op.minimum", "elementwise_min", NULL, NULL, NULL},
    {"pd_op.elementwise_pow", "elementwise_pow", NULL, NULL, NULL},
    {"pd_op.relu", "relu", NULL, NULL, NULL},
    {"pd_op.sigmoid", "sigmoid", NULL, NULL, NULL},
    {"pd_op.tanh", "tanh", NULL, NULL, NULL},
    {"pd_op.exp", "exp", NULL, NULL, NULL},
    {"pd_op.log", "log", NULL, NULL, NULL},
    {"pd_op.sqrt", "sqrt", NULL, NULL, NULL},
    {"pd_op.rsqrt", "rsqrt", NULL, NULL, NULL},
    {"pd_op.abs", "abs", NULL, NULL, NULL},
    {"pd_op.square", "square", NULL, NULL, NULL},
    {"pd_op.relu6", "relu6", NULL, NULL, NULL},
    {"pd_op.silu", "silu", NULL, NULL, NULL},
    {"pd_op.swish", "swish", NULL, NULL, NULL},
    {"pd_op.hardswish", "hard_swish", NULL, NULL, NULL},
    {"pd_op.assign", "assign", NULL, NULL, NULL},
    {"pd_op.gelu", "gelu", NULL, NULL, gelu_attrs},
    {"pd_op.leaky_relu", "leaky_relu", NULL, NULL, leaky_attrs},
    {"pd_op.elu", "elu", NULL, NULL, elu_attrs},
    {"pd_op.hardsigmoid", "hard_sigmoid", NULL, NULL, hsig_attrs},
};

static bool is_binary(const entry_t *e) { return strncmp(e->fluid, "elementwise_", 12) == 0; }

int pir_translate_op(pir_ctx_t *c, const pir_op_t *op) {
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const entry_t *e = &table[i];
        if (strcmp(e->pir, op->name) != 0) continue;
        if (e->fn) return e->fn(c, op);
        if (e->typed) return e->typed(c, op, e->fluid);
        if (is_binary(e)) return binary(c, op, e->fluid);
        return unary(c, op, e->fluid, e->attrs);
    }
    return oar_error(OAR_ERR_UNSUPPORTED, "no Fluid op is known for this PIR op; oar cannot run the model");
}
