/* loss_ext.c — CPU kernels of the losses in src/ops/loss_ext.ops and their
 * grads, float32 and float64: the bodies are in loss_ext_tpl.h, included
 * once per type. Formulas follow Fluid 1.8's kernels; bad labels and out of
 * range inputs are errors naming the variable, never aborts. */
#include "op.h"
#include "ops/loss_ext.h"

#include <math.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }


/* a class id in [0, C) */
static int label_ok(oar_kernel_ctx_t *k, int slot, int64_t c, int64_t C, int64_t at)
{
    if (c < 0 || c >= C)
        return oar_k_error(k, OAR_ERR_RANGE, "input Label '%s' holds %lld at %lld; class ids must lie in [0, %lld)",
                           nm(oar_k_input_name(k, slot, 0)), (long long)c, (long long)at, (long long)C);
    return OAR_OK;
}

/* nll_loss: X [N, C] or [N, C, H, W] -> N, C and the H W map size */
static int nll_geom(oar_kernel_ctx_t *k, const oar_tensor_t *x, int64_t *N, int64_t *C, int64_t *map)
{
    if (!x || (x->ndim != 2 && x->ndim != 4))
        return oar_k_error(k, OAR_ERR_SHAPE, "input X must be [N, C] or [N, C, H, W]");
    *N = x->dims[0];
    *C = x->dims[1];
    *map = x->ndim == 4 ? x->dims[2] * x->dims[3] : 1;
    return OAR_OK;
}

/* bpr_loss: X [..., C] -> rows and C (at least 2 classes: one positive, some negatives) */
static int bpr_geom(oar_kernel_ctx_t *k, const oar_tensor_t *x, int64_t *rows, int64_t *C)
{
    if (!x || x->ndim < 2) return oar_k_error(k, OAR_ERR_SHAPE, "input X must have rank >= 2");
    *C = x->dims[x->ndim - 1];
    if (*C < 2) return oar_k_error(k, OAR_ERR_SHAPE, "input X has %lld classes; bpr_loss needs at least 2",
                                   (long long)*C);
    *rows = oar_tensor_numel_of(x) / *C;
    return OAR_OK;
}

#define T float
#define DT OAR_FP32
#define SFX f32
#include "loss_ext_tpl.h"
#undef T
#undef DT
#undef SFX

#define T double
#define DT OAR_FP64
#define SFX f64
#include "loss_ext_tpl.h"
#undef T
#undef DT
#undef SFX
