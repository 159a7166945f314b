/*
 * fc.c — CPU kernels of fc (src/ops/fc.c): Out = act(X W + Bias).
 *
 * float32 with oneDNN: a matmul primitive with the bias and the relu as
 * post-ops, its weights reordered once into the blocked layout the
 * primitive asks for. The reordered weights are attached to W's buffer
 * (oar_tensor_attach), so any write to W through the runtime drops them and
 * the next run reorders again; the primitives are kept in the prepared op's
 * state (oar_k_state), for each batch size seen (the last OAR_FC_PLANS).
 * Out is computed in fixed column blocks whatever the thread count, so the
 * bits never depend on it (the oneDNN section below says how).
 * Batch-128 MLP inference: 629 us for the first two layers against 680 for
 * sgemm + separate bias and relu passes (docs/DECISIONS.md, "Inference: mul +
 * bias (+ relu) become Paddle's fc").
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
/* ---- oneDNN -------------------------------------------------------------
 * Same bits on any thread count, by construction: Out is cut into fixed
 * column blocks (one block below 2 x FC_NB columns, else FC_NB wide, the
 * last narrower), decided by the shape alone. Every block is one matmul
 * primitive created and run as if OpenMP had one thread, so oneDNN sees the
 * same problems with 1 thread or 2; threads take whole blocks. */
#define OAR_FC_PLANS 4
#define FC_NB OAR_GEMM_BLOCK_N

/* one engine for the process: reordered weights outlive any one op */
static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_runtime_error;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static void engine_init(void) { engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0); }

static int64_t fc_width(int64_t N) { return N < 2 * FC_NB ? N : FC_NB; }

/* what one batch size needs: two primitives (full blocks, the last block)
 * and, per block, the memory handles re-pointed every run and a stream */
typedef struct fc_plan {
    int64_t M, K, N, ldw;
    bool bias;
    int nb;
    dnnl_primitive_t prim[2];
    dnnl_memory_desc_t wmd[2];      /* the weights layouts the primitives want */
    dnnl_memory_t *src, *dst, *bia; /* nb each */
    dnnl_stream_t *stream;          /* nb: blocks may run at once */
} fc_plan_t;

typedef struct fc_state {
    fc_plan_t plans[OAR_FC_PLANS];
    int n, next;                 /* filled entries; the next to replace */
} fc_state_t;

static void plan_clear(fc_plan_t *p)
{
    for (int i = 0; i < 2; i++)
        if (p->prim[i]) dnnl_primitive_destroy(p->prim[i]);
    for (int b = 0; b < p->nb; b++) {
        if (p->src && p->src[b]) dnnl_memory_destroy(p->src[b]);
        if (p->dst && p->dst[b]) dnnl_memory_destroy(p->dst[b]);
        if (p->bia && p->bia[b]) dnnl_memory_destroy(p->bia[b]);
        if (p->stream && p->stream[b]) dnnl_stream_destroy(p->stream[b]);
    }
    free(p->src); free(p->dst); free(p->bia); free(p->stream);
    memset(p, 0, sizeof *p);
}

static void state_free(void *v)
{
    fc_state_t *s = v;
    for (int i = 0; i < s->n; i++) plan_clear(&s->plans[i]);
    free(s);
}

/* W reordered block by block into the primitives' layouts, kept with W's buffer */
typedef struct fc_packed { dnnl_memory_desc_t md[2]; int nb; dnnl_memory_t *mem; } fc_packed_t;
static void packed_free(void *v)
{
    fc_packed_t *p = v;
    for (int b = 0; b < p->nb; b++)
        if (p->mem[b]) dnnl_memory_destroy(p->mem[b]);
    free(p->mem);
    free(p);
}
typedef struct fc_packed_key { char tag[8]; int64_t K, N, ldw, w; } fc_packed_key_t;

#define DN(call) do { if ((st = (call)) != dnnl_success) goto done; } while (0)

/* the primitive for one block of width w: [M, K] x [K, w] (+ bias) into
 * columns of the [M, N] Out */
static dnnl_status_t prim_make(const fc_args_t *a, int64_t w, bool relu, dnnl_primitive_t *prim,
                               dnnl_memory_desc_t *wmd)
{
    dnnl_status_t st;
    dnnl_memory_desc_t smd, wany, bmd, dmd;
    dnnl_dims_t sd = {a->M, a->K}, wd = {a->K, w}, bd = {1, w}, dd = {a->M, w}, ds = {a->N, 1};
    dnnl_matmul_desc_t md;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    DN(dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_strides(&dmd, 2, dd, dnnl_f32, ds));
    DN(dnnl_matmul_desc_init(&md, &smd, &wany, a->bias ? &bmd : NULL, &dmd));
    DN(dnnl_primitive_attr_create(&attr));
    if (relu) {
        DN(dnnl_post_ops_create(&po));
        DN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
        DN(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    DN(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
    *wmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    DN(dnnl_primitive_create(prim, pd));
done:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    return st;
}

typedef struct { fc_plan_t *p; const fc_args_t *a; bool relu; dnnl_status_t st; } plan_job_t;

static void plan_make_job(void *v)
{
    plan_job_t *j = v;
    fc_plan_t *p = j->p;
    const fc_args_t *a = j->a;
    dnnl_status_t st;
    const int64_t w = fc_width(a->N), last = a->N - (int64_t)(p->nb - 1) * w;
    dnnl_memory_desc_t smd, bmd, dmd;
    dnnl_dims_t sd = {a->M, a->K}, bd = {1, w}, dd = {a->M, w}, ds = {a->N, 1};
    DN(prim_make(a, w, j->relu, &p->prim[0], &p->wmd[0]));
    if (last != w) DN(prim_make(a, last, j->relu, &p->prim[1], &p->wmd[1]));
    DN(dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_f32, dnnl_ab));
    for (int b = 0; b < p->nb; b++) {
        const int64_t wb = b == p->nb - 1 ? last : w;
        bd[1] = wb; dd[1] = wb;
        DN(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
        DN(dnnl_memory_desc_init_by_strides(&dmd, 2, dd, dnnl_f32, ds));
        DN(dnnl_memory_create(&p->src[b], &smd, engine, DNNL_MEMORY_NONE));
        DN(dnnl_memory_create(&p->dst[b], &dmd, engine, DNNL_MEMORY_NONE));
        if (a->bias) DN(dnnl_memory_create(&p->bia[b], &bmd, engine, DNNL_MEMORY_NONE));
        DN(dnnl_stream_create(&p->stream[b], engine, dnnl_stream_default_flags));
    }
done:
    j->st = st;
}

static dnnl_status_t plan_make(fc_plan_t *p, const fc_args_t *a, bool relu)
{
    p->M = a->M; p->K = a->K; p->N = a->N; p->ldw = a->ldw; p->bias = a->bias != NULL;
    const int64_t w = fc_width(a->N);
    p->nb = (int)((a->N + w - 1) / w);
    p->src = calloc((size_t)p->nb, sizeof *p->src);
    p->dst = calloc((size_t)p->nb, sizeof *p->dst);
    p->bia = calloc((size_t)p->nb, sizeof *p->bia);
    p->stream = calloc((size_t)p->nb, sizeof *p->stream);
    if (!p->src || !p->dst || !p->bia || !p->stream) { plan_clear(p); return dnnl_out_of_memory; }
    /* created as if OpenMP had one thread: oneDNN sizes its blocking by the
     * thread count it sees */
    plan_job_t j = {p, a, relu, dnnl_success};
    oar_gemm_one_thread(plan_make_job, &j);
    if (j.st != dnnl_success) plan_clear(p);
    return j.st;
}

static dnnl_memory_desc_t *block_md(fc_plan_t *p, int b) { return &p->wmd[b == p->nb - 1 && p->prim[1] ? 1 : 0]; }

/* W's blocks reordered into p's layouts: those attached to W's buffer when
 * they are still there and in those layouts, else new ones attached */
static dnnl_status_t packed_weights(const fc_args_t *a, fc_plan_t *p, dnnl_memory_t **out)
{
    const int64_t w = fc_width(a->N);
    fc_packed_key_t key;
    memset(&key, 0, sizeof key);
    memcpy(key.tag, "fc-dnnl", 8);
    key.K = a->K; key.N = a->N; key.ldw = a->ldw; key.w = w;
    fc_packed_t *pk = oar_tensor_attached(a->wt, &key, sizeof key);
    if (pk && pk->nb == p->nb && dnnl_memory_desc_equal(&pk->md[0], block_md(p, 0)) &&
        dnnl_memory_desc_equal(&pk->md[1], block_md(p, p->nb - 1))) {
        *out = pk->mem;
        return dnnl_success;
    }
    dnnl_status_t st = dnnl_success;
    dnnl_stream_t stream = p->stream[0];
    pk = oar_xcalloc(1, sizeof *pk);
    if (!pk) return dnnl_out_of_memory;
    pk->md[0] = *block_md(p, 0);
    pk->md[1] = *block_md(p, p->nb - 1);
    pk->nb = p->nb;
    if (!(pk->mem = calloc((size_t)p->nb, sizeof *pk->mem))) { free(pk); return dnnl_out_of_memory; }
    for (int b = 0; b < p->nb; b++) {
        const int64_t wb = b == p->nb - 1 ? a->N - (int64_t)b * w : w;
        dnnl_memory_desc_t umd;
        dnnl_dims_t wd = {a->K, wb}, ws = {a->ldw, 1};
        dnnl_memory_t user = NULL;
        dnnl_primitive_desc_t rpd = NULL;
        dnnl_primitive_t r = NULL;
        DN(dnnl_memory_desc_init_by_strides(&umd, 2, wd, dnnl_f32, ws));
        DN(dnnl_memory_create(&user, &umd, engine, (void *)((const float *)a->w + b * w)));
        DN(dnnl_memory_create(&pk->mem[b], block_md(p, b), engine, DNNL_MEMORY_ALLOCATE));
        DN(dnnl_reorder_primitive_desc_create(&rpd, &umd, engine, block_md(p, b), engine, NULL));
        DN(dnnl_primitive_create(&r, rpd));
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, pk->mem[b]}};
        DN(dnnl_primitive_execute(r, stream, 2, args));
        DN(dnnl_stream_wait(stream));
    done:
        if (r) dnnl_primitive_destroy(r);
        if (rpd) dnnl_primitive_desc_destroy(rpd);
        if (user) dnnl_memory_destroy(user);
        if (st != dnnl_success) break;
    }
    if (st == dnnl_success && oar_tensor_attach(a->wt, &key, sizeof key, pk, packed_free) != OAR_OK)
        st = dnnl_out_of_memory;
    if (st == dnnl_success) { *out = pk->mem; return st; }
    packed_free(pk);
    return st;
}

typedef struct { fc_plan_t *p; dnnl_memory_t *wts; int b; dnnl_status_t st; } block_job_t;

static void block_run(void *v)
{
    block_job_t *j = v;
    fc_plan_t *p = j->p;
    const int b = j->b;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->src[b]}, {DNNL_ARG_WEIGHTS, j->wts[b]}, {DNNL_ARG_DST, p->dst[b]},
                               {DNNL_ARG_BIAS, p->bia[b]}};
    dnnl_primitive_t prim = b == p->nb - 1 && p->prim[1] ? p->prim[1] : p->prim[0];
    j->st = dnnl_primitive_execute(prim, p->stream[b], p->bias ? 4 : 3, args);
    if (j->st == dnnl_success) j->st = dnnl_stream_wait(p->stream[b]);
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
        oar_k_set_state(k, s, state_free);
    }
    fc_plan_t *p = NULL;
    for (int i = 0; i < s->n && !p; i++) {
        fc_plan_t *c = &s->plans[i];
        if (c->M == a->M && c->K == a->K && c->N == a->N && c->ldw == a->ldw && c->bias == (a->bias != NULL)) p = c;
    }
    if (!p) {
        p = &s->plans[s->n < OAR_FC_PLANS ? s->n : s->next];
        if (s->n == OAR_FC_PLANS) { plan_clear(p); s->next = (s->next + 1) % OAR_FC_PLANS; }
        else s->n++;
        if ((st = plan_make(p, a, relu)) != dnnl_success) {
            /* leave the slot empty: move the last entry into it */
            fc_plan_t *last = &s->plans[--s->n];
            if (last != p) { *p = *last; memset(last, 0, sizeof *last); }
            if (s->next >= s->n) s->next = 0;
            return st;
        }
    }
    dnnl_memory_t *wts;
    if ((st = packed_weights(a, p, &wts)) != dnnl_success) return st;
    const int64_t w = fc_width(a->N);
    for (int b = 0; b < p->nb; b++) {
        if ((st = dnnl_memory_set_data_handle(p->src[b], (void *)a->x)) != dnnl_success) return st;
        if ((st = dnnl_memory_set_data_handle(p->dst[b], (float *)a->out + b * w)) != dnnl_success) return st;
        if (p->bia[b] && (st = dnnl_memory_set_data_handle(p->bia[b], (void *)((const float *)a->bias + b * w))) !=
                             dnnl_success)
            return st;
    }
    const int threads = p->nb > 1 ? oar_gemm_threads(a->M * a->N * a->K) : 1;
    dnnl_status_t bad = dnnl_success;
    #pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int b = 0; b < p->nb; b++) {
        block_job_t j = {p, wts, b, dnnl_success};
        oar_gemm_one_thread(block_run, &j);
        if (j.st != dnnl_success) {
            #pragma omp atomic write
            bad = j.st;
        }
    }
    return bad;
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
