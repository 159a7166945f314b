/* loss.h — slots and decoded attributes of cross_entropy,
 * softmax_with_cross_entropy and sigmoid_cross_entropy_with_logits with
 * their grads (src/ops/loss.c), read by every place's kernels. */
#ifndef OAR_OPS_LOSS_H
#define OAR_OPS_LOSS_H
#include "op.h"

/* cross_entropy: X, Label -> Y; the grad adds Y@GRAD and gives X@GRAD */
enum { OAR_CE_X = 0, OAR_CE_LABEL = 1, OAR_CEG_DY = 2 };
enum { OAR_CE_Y = 0 };
enum { OAR_CEG_DX = 0 };
typedef struct oar_ce_attrs { bool soft_label; int ignore_index; } oar_ce_attrs_t;

/* softmax_with_cross_entropy: Logits, Label -> Softmax, Loss;
 * grad: Label, Softmax, Loss@GRAD -> Logits@GRAD */
enum { OAR_SWCE_LOGITS = 0, OAR_SWCE_LABEL = 1 };
enum { OAR_SWCE_SOFTMAX = 0, OAR_SWCE_LOSS = 1 };
enum { OAR_SWCEG_LABEL = 0, OAR_SWCEG_SOFTMAX = 1, OAR_SWCEG_DLOSS = 2 };
enum { OAR_SWCEG_DLOGITS = 0 };
typedef struct oar_swce_attrs { bool soft_label; int ignore_index, axis; } oar_swce_attrs_t;

/* sigmoid_cross_entropy_with_logits: X, Label -> Out; the grad adds
 * Out@GRAD and gives X@GRAD */
enum { OAR_SCE_X = 0, OAR_SCE_LABEL = 1, OAR_SCEG_DOUT = 2 };
enum { OAR_SCE_OUT = 0 };
enum { OAR_SCEG_DX = 0 };
typedef struct oar_sce_attrs { int ignore_index; bool normalize; } oar_sce_attrs_t;
#endif
