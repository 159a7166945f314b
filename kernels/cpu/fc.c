/*
 * fc.c — CPU kernels of fc (src/ops/fc.c): Out = act(X W + Bias).
 *
 * float32 with oneDNN: a matmul primitive with the bias and the relu as
 * post-ops, its weights reordered once into the blocked layout the
 * primitive asks for. The reordered weights are attached to W's buffer
 * (oar_tensor_attach), so any write to W through the runtime drops them and
 * the next run reorders again; the primitive is kept in the prepared op's
 * state (oar_k_state), one per batch size seen (the last OAR_FC_PRIMS).
 * Batch-128 MLP inference: 629 us for the first two layers against 680 for
 * sgemm + separate bias and relu passes (docs/DECISIONS.md, "Inference").
 *
 * Everything else (float64, a build without oneDNN, a primitive oneDNN
 * refuses) is oar_gemm followed by the bias and the activation, row by row.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "gemm.h"
#include "ops/fc.h"
#ifdef OAR_WITH_DNNL
#include <pthread.h>
#include <oneapi/dnnl/dnnl.h>
#endif

typedef struct fc_args {
    int64_t M, K, N, ldw;
    const void *x, *w, *bias;   /* bias NULL when absent */
    oar_tensor_t *wt;
    void *out;
} fc_args_t;

static int fc_setup(oar_kernel_ctx_t *k, fc_args_t *a)
{
    const oar_fc_attrs_t *at = oar_k_attrs(k);
    oar_tensor_t *xt = oar_k_input(k, OAR_FC_INPUT, 0), *wt = oar_k_input(k, OAR_FC_W, 0);
    oar_tensor_t *bt = oar_k_input(k, OAR_FC_BIAS, 0);
    if (!xt || !wt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", xt ? "W" : "Input");
    const int pad = at->padding_weights ? 4 : 0;
    char bx[128], bw[128];
    const int dt = oar_k_dtype(k);
    if (xt->dtype != dt || wt->dtype != dt || (bt && bt->dtype != dt))
        return oar_k_error(k, OAR_ERR_DTYPE, "Input is %s, W %s%s%s: all must be %s", oar_dtype_name(xt->dtype),
                           oar_dtype_name(wt->dtype), bt ? ", Bias " : "", bt ? oar_dtype_name(bt->dtype) : "",
                           oar_dtype_name(dt));
    if (at->in_ncd < 1 || at->in_ncd >= xt->ndim || wt->ndim != 2 || wt->dims[0] <= pad || wt->dims[1] <= pad)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input shape %s (in_num_col_dims %d) and W shape %s do not make an fc",
                           oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx), at->in_ncd,
                           oar_shape_str(wt->dims, wt->ndim, bw, sizeof bw));
    a->M = 1; a->K = 1;
    for (int i = 0; i < xt->ndim; i++) *(i < at->in_ncd ? &a->M : &a->K) *= xt->dims[i];
    a->N = wt->dims[1] - pad;
    a->ldw = wt->dims[1];
    if (a->K != wt->dims[0] - pad)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input shape %s flattened at %d has %lld columns but W shape %s has %lld rows",
                           oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx), at->in_ncd, (long long)a->K,
                           oar_shape_str(wt->dims, wt->ndim, bw, sizeof bw), (long long)(wt->dims[0] - pad));
    if (a->M > INT_MAX || a->K > INT_MAX || a->ldw > INT_MAX)
        return oar_k_error(k, OAR_ERR_RANGE, "fc of [%lld x %lld] by [%lld x %lld] exceeds the BLAS int range",
                           (long long)a->M, (long long)a->K, (long long)a->K, (long long)a->N);
    a->bias = NULL;
    if (bt) {
        if (oar_tensor_numel_of(bt) != a->N)
            return oar_k_error(k, OAR_ERR_SHAPE, "Bias has shape %s, expected %lld elements",
                               oar_shape_str(bt->dims, bt->ndim, bx, sizeof bx), (long long)a->N);
        if (a->N > 0 && !(a->bias = oar_tensor_data(bt)))
            return oar_k_error(k, OAR_ERR_INVALID, "Bias holds no data");
    }
    a->x = oar_tensor_data(xt);
    a->w = oar_tensor_data(wt);
    a->wt = wt;
    if ((a->M * a->K > 0 && !a->x) || !a->w) return oar_k_error(k, OAR_ERR_INVALID, "Input or W holds no data");
    a->out = oar_k_output_data(k, OAR_FC_OUT, 0, dt);
    if (!a->out) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    return OAR_OK;
}

/* Out = act(X W + Bias) through oar_gemm, then one pass over each row */
#define FC_EPILOGUE(T, NAME)                                                               \
    static void NAME(T *out, const T *bias, int64_t M, int64_t N, bool relu) {             \
        for (int64_t i = 0; i < M; i++) {                                                  \
            T *r = out + i * N;                                                            \
            if (bias) for (int64_t j = 0; j < N; j++) r[j] += bias[j];                    \
            if (relu) for (int64_t j = 0; j < N; j++) r[j] = r[j] > 0 ? r[j] : 0;         \
        }                                                                                  \
    }
FC_EPILOGUE(float, epilogue_f32)
FC_EPILOGUE(double, epilogue_f64)

static void fc_gemm(int dt, const fc_args_t *a, bool relu)
{
    oar_gemm(dt, oar_gemm_threads(a->M * a->N * a->K), false, false, a->M, a->N, a->K, 1.0, a->x, a->K, a->w, a->ldw,
             0.0, a->out, a->N);
    if (dt == OAR_FP32) epilogue_f32(a->out, a->bias, a->M, a->N, relu);
    else epilogue_f64(a->out, a->bias, a->M, a->N, relu);
}

#ifdef OAR_WITH_DNNL
/* ---- oneDNN ------------------------------------------------------------- */
#define OAR_FC_PRIMS 4

/* one engine for the process: reordered weights outlive any one op */
static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_runtime_error;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static void engine_init(void) { engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0); }

typedef struct fc_prim {
    int64_t M, K, N, ldw;
    bool bias;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t wmd;      /* the weights layout the primitive wants */
    dnnl_memory_t src, wts, bia, dst;   /* handles re-pointed every run */
} fc_prim_t;

typedef struct fc_state {
    dnnl_stream_t stream;
    fc_prim_t prims[OAR_FC_PRIMS];
    int n, next;                 /* filled entries; the next to replace */
} fc_state_t;

static void prim_clear(fc_prim_t *p)
{
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->src) dnnl_memory_destroy(p->src);
    if (p->wts) dnnl_memory_destroy(p->wts);
    if (p->bia) dnnl_memory_destroy(p->bia);
    if (p->dst) dnnl_memory_destroy(p->dst);
    memset(p, 0, sizeof *p);
}

static void state_free(void *v)
{
    fc_state_t *s = v;
    for (int i = 0; i < s->n; i++) prim_clear(&s->prims[i]);
    if (s->stream) dnnl_stream_destroy(s->stream);
    free(s);
}

/* the reordered weights, kept with W's buffer */
typedef struct fc_packed { dnnl_memory_desc_t md; dnnl_memory_t mem; } fc_packed_t;
static void packed_free(void *v)
{
    fc_packed_t *p = v;
    dnnl_memory_destroy(p->mem);
    free(p);
}
typedef struct fc_packed_key { char tag[8]; int64_t K, N, ldw; } fc_packed_key_t;

#define DN(call) do { if ((st = (call)) != dnnl_success) goto done; } while (0)

static dnnl_status_t prim_make(fc_prim_t *p, const fc_args_t *a, bool relu)
{
    dnnl_status_t st;
    dnnl_memory_desc_t smd, wany, bmd, dmd;
    dnnl_dims_t sd = {a->M, a->K}, wd = {a->K, a->N}, bd = {1, a->N}, dd = {a->M, a->N};
    dnnl_matmul_desc_t md;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    memset(p, 0, sizeof *p);
    DN(dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&dmd, 2, dd, dnnl_f32, dnnl_ab));
    DN(dnnl_matmul_desc_init(&md, &smd, &wany, a->bias ? &bmd : NULL, &dmd));
    DN(dnnl_primitive_attr_create(&attr));
    if (relu) {
        DN(dnnl_post_ops_create(&po));
        DN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
        DN(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    DN(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
    p->wmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    DN(dnnl_primitive_create(&p->prim, pd));
    DN(dnnl_memory_create(&p->src, &smd, engine, DNNL_MEMORY_NONE));
    DN(dnnl_memory_create(&p->wts, &p->wmd, engine, DNNL_MEMORY_NONE));
    if (a->bias) DN(dnnl_memory_create(&p->bia, &bmd, engine, DNNL_MEMORY_NONE));
    DN(dnnl_memory_create(&p->dst, &dmd, engine, DNNL_MEMORY_NONE));
    p->M = a->M; p->K = a->K; p->N = a->N; p->ldw = a->ldw; p->bias = a->bias != NULL;
done:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    if (st != dnnl_success) prim_clear(p);
    return st;
}

/* W reordered into p's layout: the one attached to W's buffer when it is
 * still there and in that layout, else a new one attached */
static dnnl_status_t packed_weights(const fc_args_t *a, const fc_prim_t *p, dnnl_stream_t stream, dnnl_memory_t *out)
{
    fc_packed_key_t key;
    memset(&key, 0, sizeof key);
    memcpy(key.tag, "fc-dnnl", 8);
    key.K = a->K; key.N = a->N; key.ldw = a->ldw;
    fc_packed_t *pk = oar_tensor_attached(a->wt, &key, sizeof key);
    if (pk && dnnl_memory_desc_equal(&pk->md, &p->wmd)) { *out = pk->mem; return dnnl_success; }
    dnnl_status_t st;
    dnnl_memory_desc_t umd;
    dnnl_dims_t wd = {a->K, a->N}, ws = {a->ldw, 1};
    dnnl_memory_t user = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    pk = oar_xcalloc(1, sizeof *pk);
    if (!pk) return dnnl_out_of_memory;
    pk->md = p->wmd;
    DN(dnnl_memory_desc_init_by_strides(&umd, 2, wd, dnnl_f32, ws));
    DN(dnnl_memory_create(&user, &umd, engine, (void *)a->w));
    DN(dnnl_memory_create(&pk->mem, &pk->md, engine, DNNL_MEMORY_ALLOCATE));
    DN(dnnl_reorder_primitive_desc_create(&rpd, &umd, engine, &pk->md, engine, NULL));
    DN(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, pk->mem}};
    DN(dnnl_primitive_execute(r, stream, 2, args));
    DN(dnnl_stream_wait(stream));
    if (oar_tensor_attach(a->wt, &key, sizeof key, pk, packed_free) != OAR_OK) st = dnnl_out_of_memory;
    else { *out = pk->mem; pk = NULL; }
done:
    if (r) dnnl_primitive_destroy(r);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (user) dnnl_memory_destroy(user);
    if (pk) { if (pk->mem) dnnl_memory_destroy(pk->mem); free(pk); }
    return st;
}

/* dnnl_success when oneDNN computed Out; anything else leaves it to oar_gemm */
static dnnl_status_t fc_dnnl(oar_kernel_ctx_t *k, const fc_args_t *a, bool relu)
{
    pthread_once(&engine_once, engine_init);
    if (engine_status != dnnl_success) return engine_status;
    fc_state_t *s = oar_k_state(k);
    dnnl_status_t st;
    if (!s) {
        if (!(s = oar_xcalloc(1, sizeof *s))) return dnnl_out_of_memory;
        if ((st = dnnl_stream_create(&s->stream, engine, dnnl_stream_default_flags)) != dnnl_success) {
            free(s);
            return st;
        }
        oar_k_set_state(k, s, state_free);
    }
    fc_prim_t *p = NULL;
    for (int i = 0; i < s->n && !p; i++) {
        fc_prim_t *c = &s->prims[i];
        if (c->M == a->M && c->K == a->K && c->N == a->N && c->ldw == a->ldw && c->bias == (a->bias != NULL)) p = c;
    }
    if (!p) {
        p = &s->prims[s->n < OAR_FC_PRIMS ? s->n : s->next];
        if (s->n == OAR_FC_PRIMS) { prim_clear(p); s->next = (s->next + 1) % OAR_FC_PRIMS; }
        else s->n++;
        if ((st = prim_make(p, a, relu)) != dnnl_success) {
            /* leave the slot empty: move the last entry into it */
            fc_prim_t *last = &s->prims[--s->n];
            if (last != p) { *p = *last; memset(last, 0, sizeof *last); }
            if (s->next >= s->n) s->next = 0;
            return st;
        }
    }
    dnnl_memory_t wts;
    if ((st = packed_weights(a, p, s->stream, &wts)) != dnnl_success) return st;
    if ((st = dnnl_memory_set_data_handle(p->src, (void *)a->x)) != dnnl_success) return st;
    if ((st = dnnl_memory_set_data_handle(p->dst, a->out)) != dnnl_success) return st;
    if (p->bia && (st = dnnl_memory_set_data_handle(p->bia, (void *)a->bias)) != dnnl_success) return st;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, p->dst},
                               {DNNL_ARG_BIAS, p->bia}};
    if ((st = dnnl_primitive_execute(p->prim, s->stream, p->bia ? 4 : 3, args)) != dnnl_success) return st;
    return dnnl_stream_wait(s->stream);
}
#endif

/* float32 tries oneDNN first; float64 (and float32 where oneDNN declines) is oar_gemm */
static int fc_run(oar_kernel_ctx_t *k)
{
    fc_args_t a;
    OAR_TRY(fc_setup(k, &a));
    const int dt = oar_k_dtype(k);
    const bool relu = ((const oar_fc_attrs_t *)oar_k_attrs(k))->act == OAR_FC_ACT_RELU;
    if (a.M == 0 || a.N == 0) return OAR_OK;
#ifdef OAR_WITH_DNNL
    if (dt == OAR_FP32 && a.K > 0 && fc_dnnl(k, &a, relu) == dnnl_success) return OAR_OK;
#endif
    fc_gemm(dt, &a, relu);
    return OAR_OK;
}
static int fc_f32(oar_kernel_ctx_t *k) { return fc_run(k); }
static int fc_f64(oar_kernel_ctx_t *k) { return fc_run(k); }

OAR_REGISTER_KERNEL("fc", OAR_PLACE_CPU, OAR_FP32, fc_f32)
OAR_REGISTER_KERNEL("fc", OAR_PLACE_CPU, OAR_FP64, fc_f64)
