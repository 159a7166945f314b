/*
 * attr_check.c — refuses attributes oar would silently ignore.
 *
 * Fluid stores every attribute an op's maker declares; oar declares the
 * same ones (src/ops/). An attribute no definition declares, or a declared
 * one whose value oar cannot honour (MUST_DEFAULT below, e.g. conv2d's
 * fuse_relu), is an error at insertion and at load, never dropped.
 */
#include <stdio.h>
#include <string.h>
#include "attr_check.h"

/* Per-attr policies, kept here rather than in oar_attr_def_t so the op
 * definitions stay as they are. op "*": every op. */
enum { ANY_INT_LIST = 1, MUST_DEFAULT = 2 };
static const struct policy { const char *op, *attr; int flags; } k_policy[] = {
    /* INTS or LONGS: the readers use oar_attr_int_list */
    {"fill_constant", "shape", ANY_INT_LIST},
    {"uniform_random", "shape", ANY_INT_LIST},
    {"gaussian_random", "shape", ANY_INT_LIST},
    {"truncated_gaussian_random", "shape", ANY_INT_LIST},
    {"reduce_all", "dim", ANY_INT_LIST},
    {"reduce_any", "dim", ANY_INT_LIST},
    /* quantized programs need fake-quant ops oar does not have */
    {"*", "with_quant_attr", MUST_DEFAULT},
    /* MKLDNN/TensorRT fusions: the fused op would lose its fused part */
    {"conv2d", "fuse_relu", MUST_DEFAULT},
    {"conv2d", "fuse_brelu", MUST_DEFAULT},
    {"conv2d", "fuse_residual_connection", MUST_DEFAULT},
    {"conv2d", "fuse_relu_before_depthwise_conv", MUST_DEFAULT},
    {"conv2d", "fuse_activation", MUST_DEFAULT},
    {"conv2d", "force_fp32_output", MUST_DEFAULT},
    {"conv2d", "exhaustive_search", 0},
    {"depthwise_conv2d", "fuse_relu", MUST_DEFAULT},
    {"depthwise_conv2d", "fuse_brelu", MUST_DEFAULT},
    {"depthwise_conv2d", "fuse_residual_connection", MUST_DEFAULT},
    {"depthwise_conv2d", "fuse_relu_before_depthwise_conv", MUST_DEFAULT},
    {"depthwise_conv2d", "fuse_activation", MUST_DEFAULT},
    {"depthwise_conv2d", "force_fp32_output", MUST_DEFAULT},
    {"matmul", "fused_reshape_X", MUST_DEFAULT},
    {"matmul", "fused_reshape_Y", MUST_DEFAULT},
    {"matmul", "fused_reshape_Out", MUST_DEFAULT},
    {"matmul", "fused_transpose_X", MUST_DEFAULT},
    {"matmul", "fused_transpose_Y", MUST_DEFAULT},
    {"matmul", "fused_transpose_Out", MUST_DEFAULT},
    {"matmul", "head_number", 0},
    {"matmul_v2", "fused_reshape_X", MUST_DEFAULT},
    {"matmul_v2", "fused_reshape_Y", MUST_DEFAULT},
    {"matmul_v2", "fused_reshape_Out", MUST_DEFAULT},
    {"matmul_v2", "fused_transpose_X", MUST_DEFAULT},
    {"matmul_v2", "fused_transpose_Y", MUST_DEFAULT},
    {"matmul_v2", "fused_transpose_Out", MUST_DEFAULT},
    {"mul", "fused_reshape_X", MUST_DEFAULT},
    {"elementwise_add", "fuse_activation", MUST_DEFAULT},
    {"conv2d", "use_addto", MUST_DEFAULT},
    {"depthwise_conv2d", "use_addto", MUST_DEFAULT},
    /* Paddle 2.x/3 attrs that change the result and that oar's kernels do
     * not implement (declared in src/ops/, see paddle_attrs.h) */
    {"adam", "amsgrad", MUST_DEFAULT},
    {"adam", "use_global_beta_pow", MUST_DEFAULT},
    {"momentum", "regularization_method", MUST_DEFAULT},
    {"momentum", "rescale_grad", MUST_DEFAULT},
    {"c_allreduce_sum", "use_model_parallel", MUST_DEFAULT},
    {"c_allreduce_max", "use_model_parallel", MUST_DEFAULT},
    {"c_allreduce_min", "use_model_parallel", MUST_DEFAULT},
    {"c_allreduce_prod", "use_model_parallel", MUST_DEFAULT},
    {"gather", "axis", MUST_DEFAULT},
    {"load", "seek", MUST_DEFAULT},
    {"load", "shape", MUST_DEFAULT},
    {"load", "model_from_memory", MUST_DEFAULT},
    {"load_combine", "model_from_memory", MUST_DEFAULT},
    {"save", "save_to_memory", MUST_DEFAULT},
    {"save_combine", "save_to_memory", MUST_DEFAULT},
    {"reduce_sum", "in_dtype", MUST_DEFAULT},
    {"reduce_sum", "out_dtype", MUST_DEFAULT},
    {"reduce_mean", "in_dtype", MUST_DEFAULT},
    {"reduce_mean", "out_dtype", MUST_DEFAULT},
    {"reduce_max", "in_dtype", MUST_DEFAULT},
    {"reduce_max", "out_dtype", MUST_DEFAULT},
    {"reduce_min", "in_dtype", MUST_DEFAULT},
    {"reduce_min", "out_dtype", MUST_DEFAULT},
    {"reduce_prod", "in_dtype", MUST_DEFAULT},
    {"reduce_prod", "out_dtype", MUST_DEFAULT},
    {"softmax_with_cross_entropy", "use_softmax", MUST_DEFAULT},
    {"uniform_random", "diag_num", MUST_DEFAULT},
    {"gaussian_random", "a", MUST_DEFAULT},
    {"gaussian_random", "b", MUST_DEFAULT},
    {"truncated_gaussian_random", "a", MUST_DEFAULT},
    {"truncated_gaussian_random", "b", MUST_DEFAULT},
    {"round", "decimals", MUST_DEFAULT},
    {"reduce_all", "in_dtype", MUST_DEFAULT},
    {"reduce_all", "out_dtype", MUST_DEFAULT},
    {"reduce_any", "in_dtype", MUST_DEFAULT},
    {"reduce_any", "out_dtype", MUST_DEFAULT},
    {"batch_norm", "fuse_with_relu", MUST_DEFAULT},
    {"conv2d_transpose", "fuse_relu", MUST_DEFAULT},
    {"conv2d_transpose", "fuse_activation", MUST_DEFAULT},
    {"conv2d_transpose", "force_fp32_output", MUST_DEFAULT},
    {"depthwise_conv2d_transpose", "fuse_relu", MUST_DEFAULT},
    {"depthwise_conv2d_transpose", "fuse_activation", MUST_DEFAULT},
    {"depthwise_conv2d_transpose", "force_fp32_output", MUST_DEFAULT},
    /* Paddle 2.6's additions to ops of Fluid 1.8 that change the result */
    {"conv3d", "fuse_activation", MUST_DEFAULT},
    {"conv3d", "use_addto", MUST_DEFAULT},
    {"pixel_shuffle", "data_format", MUST_DEFAULT},         /* NHWC: not implemented */
    {"data_norm", "enable_scale_and_shift", MUST_DEFAULT},  /* scale_w/bias inputs: not implemented */
    /* Paddle 3.3's additions */
    {"fc", "fuse_activation", MUST_DEFAULT},
    {"fc", "fused_output_scale", MUST_DEFAULT},
    {"fc", "fused_reshape2_shape", MUST_DEFAULT},
    {"kldiv_loss", "log_target", MUST_DEFAULT},
    {"max_pool2d_with_index", "ceil_mode", MUST_DEFAULT},
    {"max_pool3d_with_index", "ceil_mode", MUST_DEFAULT},
};

/* the policy flags of attr `name` on op type `type` (or of its forward op) */
static int policy_of(const char *type, const char *name)
{
    int f = 0;
    size_t tl = strlen(type);
    for (size_t i = 0; i < sizeof k_policy / sizeof *k_policy; i++) {
        const struct policy *p = &k_policy[i];
        if (strcmp(p->attr, name) != 0) continue;
        size_t pl = strlen(p->op);
        bool hit = strcmp(p->op, "*") == 0 || strcmp(p->op, type) == 0 ||
                   (tl > pl && strncmp(type, p->op, pl) == 0 && strncmp(type + pl, "_grad", 5) == 0);
        if (hit) f |= p->flags;
    }
    return f;
}

/* the definition that declares `name` for op type `type`: its own, the
 * common list, or that of the forward ops it is the gradient of */
static const oar_attr_def_t *find_decl(const char *type, const char *name)
{
    char t[128];
    snprintf(t, sizeof t, "%s", type);
    for (;;) {
        const oar_op_def_t *def = oar_registry_op(t);
        const oar_attr_def_t *a = def ? oar_registry_attr_def(def, name) : NULL;
        if (a) return a;
        size_t n = strlen(t);
        if (n <= 5 || strcmp(t + n - 5, "_grad") != 0) return NULL;
        t[n - 5] = '\0';
    }
}

bool oar_attr_kind_accepted(const char *op_type, const char *name, int have)
{
    const oar_attr_def_t *a = find_decl(op_type, name);
    if (!a) return false;
    if (a->type == have) return true;
    return (policy_of(op_type, name) & ANY_INT_LIST) && (have == OAR_ATTR_INTS || have == OAR_ATTR_LONGS) &&
           (a->type == OAR_ATTR_INTS || a->type == OAR_ATTR_LONGS);
}

/* a short rendering of an attr value for messages */
static void value_str(const oar_attr_t *a, char *b, size_t n)
{
    switch (a->type) {
    case OAR_ATTR_INT: snprintf(b, n, "%d", (int)a->v.i); return;
    case OAR_ATTR_LONG: snprintf(b, n, "%lld", (long long)a->v.l); return;
    case OAR_ATTR_FLOAT: snprintf(b, n, "%g", (double)a->v.f); return;
    case OAR_ATTR_BOOLEAN: snprintf(b, n, "%s", a->v.b ? "true" : "false"); return;
    case OAR_ATTR_STRING: snprintf(b, n, "\"%s\"", a->v.s ? a->v.s : ""); return;
    case OAR_ATTR_BLOCK: snprintf(b, n, "block %d", (int)a->v.block); return;
    default: break;
    }
    size_t len = (size_t)snprintf(b, n, "[");
    for (int i = 0; i < a->n && len + 24 < n; i++) {
        const char *sep = i ? ", " : "";
        switch (a->type) {
        case OAR_ATTR_INTS: case OAR_ATTR_BLOCKS:
            len += (size_t)snprintf(b + len, n - len, "%s%d", sep, (int)((const int32_t *)a->list)[i]); break;
        case OAR_ATTR_LONGS:
            len += (size_t)snprintf(b + len, n - len, "%s%lld", sep, (long long)((const int64_t *)a->list)[i]); break;
        case OAR_ATTR_FLOATS:
            len += (size_t)snprintf(b + len, n - len, "%s%g", sep, (double)((const float *)a->list)[i]); break;
        case OAR_ATTR_BOOLEANS:
            len += (size_t)snprintf(b + len, n - len, "%s%s", sep, ((const bool *)a->list)[i] ? "true" : "false"); break;
        case OAR_ATTR_STRINGS:
            len += (size_t)snprintf(b + len, n - len, "%s\"%.40s\"", sep, ((char *const *)a->list)[i]); break;
        default: break;
        }
    }
    if (len + 5 < n) snprintf(b + len, n - len, "%s]", len + 24 >= n ? "..." : "");
}

static bool is_default(const oar_attr_t *a, const oar_attr_def_t *d)
{
    switch (a->type) {
    case OAR_ATTR_INT: return a->v.i == (int32_t)d->def;
    case OAR_ATTR_LONG: return a->v.l == (int64_t)d->def;
    case OAR_ATTR_FLOAT: return a->v.f == (float)d->def;
    case OAR_ATTR_BOOLEAN: return a->v.b == (d->def != 0);
    case OAR_ATTR_STRING: return strcmp(a->v.s ? a->v.s : "", d->def_str ? d->def_str : "") == 0;
    case OAR_ATTR_BLOCK: return a->v.block == -1;
    default: return a->n == 0;
    }
}

int oar_op_check_attrs(const oar_op_desc_t *op)
{
    if (!op || !op->type) return oar_error(OAR_ERR_INVALID, "oar_op_check_attrs: NULL op");
    for (int i = 0; i < op->nattrs; i++) {
        const oar_attr_t *a = &op->attrs[i];
        const oar_attr_def_t *d = find_decl(op->type, a->name);
        char v[256];
        if (!d) {
            value_str(a, v, sizeof v);
            return oar_error(OAR_ERR_UNSUPPORTED, "op '%s': attr '%s' = %s is not an attribute oar knows for "
                             "this op, so oar cannot honour it", op->type, a->name, v);
        }
        /* a grad op's copy of a forward attr is judged by the forward definition */
        if ((policy_of(op->type, a->name) & MUST_DEFAULT) && !is_default(a, d)) {
            value_str(a, v, sizeof v);
            return oar_error(OAR_ERR_UNSUPPORTED, "op '%s': attr '%s' = %s is not supported by oar (only its "
                             "default is honoured)", op->type, a->name, v);
        }
    }
    return OAR_OK;
}
