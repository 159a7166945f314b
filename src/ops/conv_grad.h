/* conv_grad.h — the grad maker that conv2d / depthwise_conv2d
 * (src/ops/conv.c), conv2d_transpose (conv_transpose.c) and conv3d /
 * conv3d_transpose (conv3d.c) share: Input, Filter, Output@GRAD ->
 * Input@GRAD, Filter@GRAD. */
#ifndef OAR_OPS_CONV_GRAD_H
#define OAR_OPS_CONV_GRAD_H
#include "op.h"

static inline int oar_conv_grad_maker(oar_grad_ctx_t *g) {
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Input"));
    OAR_TRY(oar_gc_in(g, op, "Filter"));
    OAR_TRY(oar_gc_out_grad(g, op, "Output"));
    OAR_TRY(oar_gc_in_grad(g, op, "Input"));
    return oar_gc_in_grad(g, op, "Filter");
}
#endif
