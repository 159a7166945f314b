/* double_grad_makers.h — the grad makers of first-order grad ops (their
 * `grad` field in the family's .ops file), which emit Fluid's double-grad
 * ops (src/ops/double_grad.ops) or, where Fluid does, the forward op applied
 * to the direction DDX (the grads of linear maps: mean, reduce_mean, expand).
 * Defined in src/ops/double_grad_makers.c. */
#ifndef OAR_OPS_DOUBLE_GRAD_MAKERS_H
#define OAR_OPS_DOUBLE_GRAD_MAKERS_H
#include "op.h"

int oar_dg_relu_maker(oar_grad_ctx_t *g);        /* relu_grad -> relu_grad_grad */
int oar_dg_leaky_relu_maker(oar_grad_ctx_t *g);  /* leaky_relu_grad -> leaky_relu_grad_grad */
int oar_dg_elu_maker(oar_grad_ctx_t *g);
int oar_dg_sqrt_maker(oar_grad_ctx_t *g);
int oar_dg_square_maker(oar_grad_ctx_t *g);
int oar_dg_mul_maker(oar_grad_ctx_t *g);         /* mul_grad -> mul_grad_grad */
int oar_dg_ew_maker(oar_grad_ctx_t *g);          /* elementwise_{add,sub,mul}_grad */
int oar_dg_ew_div_maker(oar_grad_ctx_t *g);      /* elementwise_div_grad */
int oar_dg_reshape2_maker(oar_grad_ctx_t *g);    /* reshape2_grad -> reshape2_grad_grad */
int oar_dg_conv_maker(oar_grad_ctx_t *g);        /* conv2d_grad/conv3d_grad -> <type>_grad */
int oar_dg_instance_norm_maker(oar_grad_ctx_t *g);
/* "<fwd>_grad" of a linear forward op X -> Out: the forward op again, on
 * DDX (X = the grads of X@GRAD, Out = the grad of Out@GRAD), the grad op's
 * other inputs (ExpandTimes, ...) and attrs copied: mean, reduce_mean,
 * reduce_sum, expand */
int oar_dg_linear_maker(oar_grad_ctx_t *g);
#endif
