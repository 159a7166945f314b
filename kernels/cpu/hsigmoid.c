/* hsigmoid.c — CPU kernels of hierarchical_sigmoid and its grad (declared
 * in src/ops/sampling.ops).
 *
 * A row's path through the tree, as Fluid 1.8's matrix_bit_code: the default
 * complete binary tree (c = label + num_classes; step j visits inner node
 * (c >> (j + 1)) - 1 and takes bit j of c; floor(log2 c) steps), or a custom
 * tree's PathTable / PathCode row (its steps end at the first negative node).
 * Sums run in double for both dtypes. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/sampling.h"
#include "sampler.h"
#include "scratch.h"

static const char *nm(const char *s) { return s ? s : "?"; }

typedef struct {
    const int64_t *pt, *pc; /* custom: this row's PathTable and PathCode */
    int64_t c, len;         /* default: label + num_classes; the path's steps */
} path_t;

static inline int64_t path_node(const path_t *p, int64_t j) { return p->pt ? p->pt[j] : (p->c >> (j + 1)) - 1; }
static inline int path_bit(const path_t *p, int64_t j) { return p->pt ? p->pc[j] != 0 : (int)((p->c >> j) & 1); }

typedef struct {
    const oar_tensor_t *x, *w, *label, *ptable, *pcode, *bias;
    int64_t n, d, nodes, width; /* rows, X's width, W's rows, PreOut's columns */
    int num_classes;
} hs_args_t;

static int bits(uint64_t v)
{
    int n = 0;
    while (v) { n++; v >>= 1; }
    return n;
}

/* the inputs both kernels read (the grad op declares them first, in the
 * forward's order) */
static int hs_args(oar_kernel_ctx_t *k, hs_args_t *a, int dt)
{
    const oar_hsig_attrs_t *at = oar_k_attrs(k);
    memset(a, 0, sizeof *a);
    a->x = oar_k_input(k, OAR_HSIG_X, 0);
    a->w = oar_k_input(k, OAR_HSIG_W, 0);
    a->label = oar_k_input(k, OAR_HSIG_LABEL, 0);
    a->ptable = oar_k_input(k, OAR_HSIG_PATHTABLE, 0);
    a->pcode = oar_k_input(k, OAR_HSIG_PATHCODE, 0);
    a->bias = oar_k_input(k, OAR_HSIG_BIAS, 0);
    a->num_classes = at->num_classes;
    if (!a->x || !a->w || !a->label) return oar_k_error(k, OAR_ERR_NOT_FOUND, "X, W and Label are required");
    if (a->x->ndim != 2 || a->w->ndim != 2 || a->x->dims[1] != a->w->dims[1] || a->x->dtype != dt ||
        a->w->dtype != dt)
        return oar_k_error(k, OAR_ERR_SHAPE, "X [N, D] and W [nodes, D] must agree in D and dtype");
    a->n = a->x->dims[0];
    a->d = a->x->dims[1];
    a->nodes = a->w->dims[0];
    if (a->label->dtype != OAR_INT64 || oar_tensor_numel_of(a->label) != a->n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Label '%s' must be int64 with %lld values",
                           nm(oar_k_input_name(k, OAR_HSIG_LABEL, 0)), (long long)a->n);
    if (a->bias && (oar_tensor_numel_of(a->bias) != a->nodes || a->bias->dtype != dt))
        return oar_k_error(k, OAR_ERR_SHAPE, "Bias '%s' must hold %lld values (W's rows) of X's dtype",
                           nm(oar_k_input_name(k, OAR_HSIG_BIAS, 0)), (long long)a->nodes);
    if (a->ptable) {
        if (!a->pcode || a->ptable->ndim != 2 || a->ptable->dims[0] != a->n || a->ptable->dtype != OAR_INT64 ||
            a->pcode->dtype != OAR_INT64 || oar_tensor_numel_of(a->pcode) != oar_tensor_numel_of(a->ptable))
            return oar_k_error(k, OAR_ERR_SHAPE, "PathTable and PathCode must be int64 [N, L] with N = %lld",
                               (long long)a->n);
        a->width = a->ptable->dims[1];
    } else {
        if (a->num_classes < 2) return oar_k_error(k, OAR_ERR_INVALID, "num_classes must be at least 2");
        a->width = bits((uint64_t)(a->num_classes - 1));
    }
    return OAR_OK;
}

/* row i's path; checks the label and every node */
static int hs_path(oar_kernel_ctx_t *k, const hs_args_t *a, int64_t i, path_t *p)
{
    memset(p, 0, sizeof *p);
    if (a->ptable) {
        p->pt = (const int64_t *)oar_tensor_data((oar_tensor_t *)a->ptable) + i * a->width;
        p->pc = (const int64_t *)oar_tensor_data((oar_tensor_t *)a->pcode) + i * a->width;
        while (p->len < a->width && p->pt[p->len] >= 0) p->len++;
    } else {
        const int64_t y = ((const int64_t *)oar_tensor_data((oar_tensor_t *)a->label))[i];
        if (y < 0 || y >= a->num_classes)
            return oar_k_error(k, OAR_ERR_RANGE, "Label '%s' holds %lld at row %lld; classes are 0..%d",
                               nm(oar_k_input_name(k, OAR_HSIG_LABEL, 0)), (long long)y, (long long)i,
                               a->num_classes - 1);
        p->c = y + a->num_classes;
        p->len = bits((uint64_t)p->c) - 1;
    }
    for (int64_t j = 0; j < p->len; j++)
        if (path_node(p, j) >= a->nodes)
            return oar_k_error(k, OAR_ERR_RANGE, "row %lld's path visits node %lld but W '%s' has %lld rows",
                               (long long)i, (long long)path_node(p, j), nm(oar_k_input_name(k, OAR_HSIG_W, 0)),
                               (long long)a->nodes);
    return OAR_OK;
}

static double softplus(double z) { return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)); }

#define HS_KERNELS(SUF, T, DT)                                                                                       \
    static int hs_fwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                \
        hs_args_t a;                                                                                                 \
        OAR_TRY(hs_args(k, &a, DT));                                                                                 \
        void *po, *pp;                                                                                               \
        OAR_TRY(oar_k_output_sized(k, OAR_HSIG_OUT, "Out", DT, a.n, false, &po));                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_HSIG_PREOUT, "PreOut", DT, a.n * a.width, false, &pp));                    \
        const T *x = oar_tensor_data((oar_tensor_t *)a.x), *w = oar_tensor_data((oar_tensor_t *)a.w);                \
        const T *b = a.bias ? oar_tensor_data((oar_tensor_t *)a.bias) : NULL;                                        \
        T *out = po, *pre = pp;                                                                                      \
        for (int64_t i = 0; i < a.n; i++) {                                                                          \
            path_t p;                                                                                                \
            OAR_TRY(hs_path(k, &a, i, &p));                                                                          \
            double cost = 0;                                                                                         \
            for (int64_t j = 0; j < a.width; j++) {                                                                  \
                double z = 0;                                                                                        \
                if (j < p.len) {                                                                                     \
                    const int64_t node = path_node(&p, j);                                                           \
                    z = b ? (double)b[node] : 0;                                                                     \
                    for (int64_t e = 0; e < a.d; e++) z += (double)w[node * a.d + e] * (double)x[i * a.d + e];       \
                    z = z < -40 ? -40 : z > 40 ? 40 : z;                                                             \
                    if (path_bit(&p, j)) cost -= z;                                                                  \
                }                                                                                                    \
                const double sp = softplus(z);                                                                       \
                cost += sp; /* past the path too (log 2 each), as Fluid's */                                        \
                pre[i * a.width + j] = (T)sp;                                                                        \
            }                                                                                                        \
            out[i] = (T)cost;                                                                                        \
        }                                                                                                            \
        oar_tensor_t *wo = oar_k_output(k, OAR_HSIG_W_OUT, 0);                                                       \
        const char *won = oar_k_output_name(k, OAR_HSIG_W_OUT, 0), *wn = oar_k_input_name(k, OAR_HSIG_W, 0);         \
        if (wo && won && wn && strcmp(won, wn) != 0) {                                                               \
            void *pw;                                                                                                \
            OAR_TRY(oar_k_output_sized(k, OAR_HSIG_W_OUT, "W_Out", DT, a.nodes * a.d, false, &pw));                  \
            memcpy(pw, w, sizeof(T) * (size_t)(a.nodes * a.d));                                                      \
        }                                                                                                            \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    static int hs_bwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                \
        const oar_hsig_attrs_t *at = oar_k_attrs(k);                                                                 \
        hs_args_t a;                                                                                                 \
        OAR_TRY(hs_args(k, &a, DT));                                                                                 \
        const oar_tensor_t *tp = oar_k_input(k, OAR_HSIG_G_PREOUT, 0), *tg = oar_k_input(k, OAR_HSIG_G_DOUT, 0);     \
        if (!tp || !tg || tp->dtype != DT || tg->dtype != DT || oar_tensor_numel_of(tp) != a.n * a.width ||          \
            oar_tensor_numel_of(tg) != a.n)                                                                          \
            return oar_k_error(k, OAR_ERR_SHAPE, "PreOut [%lld, %lld] and Out@GRAD [%lld, 1] must come from the "    \
                               "forward", (long long)a.n, (long long)a.width, (long long)a.n);                       \
        const T *x = oar_tensor_data((oar_tensor_t *)a.x), *w = oar_tensor_data((oar_tensor_t *)a.w);                \
        const T *pre = oar_tensor_data((oar_tensor_t *)tp), *g = oar_tensor_data((oar_tensor_t *)tg);                \
        void *pdx, *pdb;                                                                                             \
        OAR_TRY(oar_k_output_sized(k, OAR_HSIG_G_DX, "X@GRAD", DT, a.n * a.d, true, &pdx));                          \
        OAR_TRY(oar_k_output_sized(k, OAR_HSIG_G_DBIAS, "Bias@GRAD", DT, a.nodes, true, &pdb));                      \
        T *dx = pdx, *db = pdb, *dw = NULL;                                                                          \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)(a.n * a.d));                                                      \
        if (db) memset(db, 0, sizeof(T) * (size_t)a.nodes);                                                          \
        int64_t *rows = NULL, nrows = 0;                                                                             \
        if (oar_k_output_var(k, OAR_HSIG_G_DW, 0)) {                                                                 \
            void *pv;                                                                                                \
            if (at->is_sparse) {                                                                                     \
                rows = oar_scratch_alloc(sizeof(int64_t) * (size_t)(a.n * a.width) + 1);                             \
                if (!rows) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the visited nodes");                  \
                for (int64_t i = 0; i < a.n; i++) {                                                                  \
                    path_t p;                                                                                        \
                    int rc = hs_path(k, &a, i, &p);                                                                  \
                    if (rc != OAR_OK) { oar_scratch_free(rows); return rc; }                                         \
                    for (int64_t j = 0; j < p.len; j++) rows[nrows++] = path_node(&p, j);                            \
                }                                                                                                    \
                nrows = smp_unique(rows, nrows);                                                                     \
                int rc = smp_sparse_out(k, OAR_HSIG_G_DW, "W@GRAD", rows, nrows, a.nodes, a.d, DT, &pv);             \
                if (rc != OAR_OK) { oar_scratch_free(rows); return rc; }                                             \
            } else {                                                                                                 \
                OAR_TRY(oar_k_output_sized(k, OAR_HSIG_G_DW, "W@GRAD", DT, a.nodes * a.d, true, &pv));               \
                if (pv) memset(pv, 0, sizeof(T) * (size_t)(a.nodes * a.d));                                          \
            }                                                                                                        \
            dw = pv;                                                                                                 \
        }                                                                                                            \
        for (int64_t i = 0; i < a.n; i++) {                                                                          \
            path_t p;                                                                                                \
            int rc = hs_path(k, &a, i, &p);                                                                          \
            if (rc != OAR_OK) { oar_scratch_free(rows); return rc; }                                                 \
            for (int64_t j = 0; j < p.len; j++) {                                                                    \
                const int64_t node = path_node(&p, j);                                                               \
                /* d softplus(z) = sigmoid(z) = 1 - exp(-softplus(z)) */                                             \
                const double gz = (1 - exp(-(double)pre[i * a.width + j]) - path_bit(&p, j)) * (double)g[i];         \
                if (db) db[node] += (T)gz;                                                                           \
                if (dx)                                                                                              \
                    for (int64_t e = 0; e < a.d; e++) dx[i * a.d + e] += (T)(gz * (double)w[node * a.d + e]);        \
                if (dw) {                                                                                            \
                    const int64_t r = rows ? smp_row_index(rows, nrows, node) : node;                                \
                    for (int64_t e = 0; e < a.d; e++) dw[r * a.d + e] += (T)(gz * (double)x[i * a.d + e]);           \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
        oar_scratch_free(rows);                                                                                      \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    OAR_REGISTER_KERNEL("hierarchical_sigmoid", OAR_PLACE_CPU, DT, hs_fwd_##SUF)                                     \
    OAR_REGISTER_KERNEL("hierarchical_sigmoid_grad", OAR_PLACE_CPU, DT, hs_bwd_##SUF)

HS_KERNELS(f32, float, OAR_FP32)
HS_KERNELS(f64, double, OAR_FP64)
