/* double_grad_makers.c — grad makers of first-order grad ops (see
 * double_grad_makers.h). The "forward" op a maker sees here is the grad op:
 * its inputs are the forward values (X, Out, Out@GRAD, ...), its outputs
 * the first-order grads (X@GRAD, ...); the double-grad op reads DDX, the
 * gradient of X@GRAD, and writes the gradients of the grad op's inputs. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/double_grad_makers.h"

/* "<grad op type>_grad", or the forward type when `forward` */
static oar_op_desc_t *new_op(oar_grad_ctx_t *g, bool forward)
{
    if (!forward) return oar_gc_new_grad_op(g);
    const char *t = oar_gc_fwd(g)->type;
    size_t n = strlen(t);
    if (n <= 5 || strcmp(t + n - 5, "_grad") != 0) {
        oar_error(OAR_ERR_INVALID, "op '%s' is not a grad op", t);
        return NULL;
    }
    char *type = oar_xstrdup(t);
    if (!type) return NULL;
    type[n - 5] = '\0';
    oar_op_desc_t *op = oar_gc_new_op(g, type);
    free(type);
    return op;
}

/* a double-grad op wired by a fixed list of slot mappings, applied in
 * order: IN (the grad op's input `slot` under its own name), IN_AS (that
 * input as `as`), OUT_AS (the grad op's output `slot` read as input `as`),
 * OUT_GRAD_AS (the gradient of that output, an input `as`), IN_GRAD_AS (the
 * gradient of the grad op's input `slot`, an output `as`) */
enum step_kind { IN, IN_AS, OUT_AS, OUT_GRAD_AS, IN_GRAD_AS };
typedef struct { enum step_kind kind; const char *slot, *as; } step_t;

static int by_steps(oar_grad_ctx_t *g, const step_t *steps, size_t n)
{
    oar_op_desc_t *op = new_op(g, false);
    if (!op) return OAR_ERR_NOMEM;
    int rc = OAR_OK;
    for (size_t i = 0; i < n; i++) {
        const step_t *s = &steps[i];
        switch (s->kind) {
        case IN: rc = oar_gc_in(g, op, s->slot); break;
        case IN_AS: rc = oar_gc_in_as(g, op, s->slot, s->as); break;
        case OUT_AS: rc = oar_gc_out_as(g, op, s->slot, s->as); break;
        case OUT_GRAD_AS: rc = oar_gc_out_grad_as(g, op, s->slot, s->as); break;
        case IN_GRAD_AS: rc = oar_gc_in_grad_as(g, op, s->slot, s->as); break;
        }
        if (rc != OAR_OK) return rc;
    }
    return rc;
}

/* unary activations: the forward value the grad op reads (`dep`, Out or
 * X), DDX, DDOut, and optionally DOut (in) and DX (out) */
static int act(oar_grad_ctx_t *g, const char *dep, bool dout, bool dx)
{
    oar_op_desc_t *op = new_op(g, false);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, dep));
    if (dout) OAR_TRY(oar_gc_in_as(g, op, "Out@GRAD", "DOut"));
    OAR_TRY(oar_gc_out_grad_as(g, op, "X@GRAD", "DDX"));
    if (dx) OAR_TRY(oar_gc_in_grad_as(g, op, "X", "DX"));
    return oar_gc_in_grad_as(g, op, "Out@GRAD", "DDOut");
}

int oar_dg_relu_maker(oar_grad_ctx_t *g) { return act(g, "Out", false, false); }
int oar_dg_leaky_relu_maker(oar_grad_ctx_t *g) { return act(g, "X", false, false); }
int oar_dg_elu_maker(oar_grad_ctx_t *g) { return act(g, "X", true, true); }
int oar_dg_square_maker(oar_grad_ctx_t *g) { return act(g, "X", true, true); }

int oar_dg_sqrt_maker(oar_grad_ctx_t *g)
{
    static const step_t steps[] = {
        { IN, "Out", NULL },             { OUT_AS, "X@GRAD", "DX" },
        { OUT_GRAD_AS, "X@GRAD", "DDX" }, { IN_GRAD_AS, "Out", "DOut" },
        { IN_GRAD_AS, "Out@GRAD", "DDOut" },
    };
    return by_steps(g, steps, sizeof steps / sizeof steps[0]);
}

/* mul and elementwise_{add,sub,mul}: X, Y, DOut, DDX, DDY -> DX, DY, DDOut */
static int binary(oar_grad_ctx_t *g, bool dxy)
{
    oar_op_desc_t *op = new_op(g, false);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Y"));
    OAR_TRY(oar_gc_in_as(g, op, "Out@GRAD", "DOut"));
    OAR_TRY(oar_gc_out_grad_as(g, op, "X@GRAD", "DDX"));
    OAR_TRY(oar_gc_out_grad_as(g, op, "Y@GRAD", "DDY"));
    if (dxy) {
        OAR_TRY(oar_gc_in_grad_as(g, op, "X", "DX"));
        OAR_TRY(oar_gc_in_grad_as(g, op, "Y", "DY"));
    }
    return oar_gc_in_grad_as(g, op, "Out@GRAD", "DDOut");
}

int oar_dg_mul_maker(oar_grad_ctx_t *g) { return binary(g, true); }

int oar_dg_ew_maker(oar_grad_ctx_t *g)
{
    /* add and sub are linear in X and Y: only DDOut */
    return binary(g, strcmp(oar_gc_fwd(g)->type, "elementwise_mul_grad") == 0);
}

int oar_dg_ew_div_maker(oar_grad_ctx_t *g)
{
    static const step_t steps[] = {
        { IN, "Y", NULL },                { IN, "Out", NULL },
        { OUT_AS, "X@GRAD", "DX" },       { OUT_GRAD_AS, "X@GRAD", "DDX" },
        { OUT_GRAD_AS, "Y@GRAD", "DDY" }, { IN_GRAD_AS, "Y", "Y@GRAD" },
        { IN_GRAD_AS, "Out", "DOut" },    { IN_GRAD_AS, "Out@GRAD", "DDOut" },
    };
    return by_steps(g, steps, sizeof steps / sizeof steps[0]);
}

int oar_dg_reshape2_maker(oar_grad_ctx_t *g)
{
    static const step_t steps[] = {
        { IN_AS, "Out@GRAD", "DOut" }, { OUT_GRAD_AS, "X@GRAD", "DDX" }, { IN_GRAD_AS, "Out@GRAD", "DDOut" },
    };
    return by_steps(g, steps, sizeof steps / sizeof steps[0]);
}

int oar_dg_conv_maker(oar_grad_ctx_t *g)
{
    static const step_t steps[] = {
        { IN, "Input", NULL },                     { IN, "Filter", NULL },
        { IN_AS, "Output@GRAD", "DOutput" },       { OUT_GRAD_AS, "Input@GRAD", "DDInput" },
        { OUT_GRAD_AS, "Filter@GRAD", "DDFilter" }, { IN_GRAD_AS, "Input", "DInput" },
        { IN_GRAD_AS, "Filter", "DFilter" },       { IN_GRAD_AS, "Output@GRAD", "DDOutput" },
    };
    return by_steps(g, steps, sizeof steps / sizeof steps[0]);
}

int oar_dg_instance_norm_maker(oar_grad_ctx_t *g)
{
    static const step_t steps[] = {
        { IN, "X", NULL },                        { IN, "Scale", NULL },
        { IN_AS, "Y@GRAD", "DY" },                { OUT_GRAD_AS, "X@GRAD", "DDX" },
        { OUT_GRAD_AS, "Scale@GRAD", "DDScale" }, { OUT_GRAD_AS, "Bias@GRAD", "DDBias" },
        { IN_GRAD_AS, "X", "DX" },                { IN_GRAD_AS, "Scale", "DScale" },
        { IN_GRAD_AS, "Y@GRAD", "DDY" },
    };
    return by_steps(g, steps, sizeof steps / sizeof steps[0]);
}

int oar_dg_linear_maker(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *gop = oar_gc_fwd(g);
    oar_op_desc_t *op = new_op(g, true);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out_grad_as(g, op, "X@GRAD", "X"));
    for (int s = 0; s < gop->ninputs; s++) {
        const char *slot = gop->inputs[s].slot;
        if (strcmp(slot, "X") == 0 || strcmp(slot, "Out") == 0 || strcmp(slot, "Out@GRAD") == 0) continue;
        OAR_TRY(oar_gc_in(g, op, slot));
    }
    return oar_gc_in_grad_as(g, op, "Out@GRAD", "Out");
}
