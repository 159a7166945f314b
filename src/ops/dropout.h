/* dropout.h — slots and decoded attributes of dropout and dropout_grad
 * (src/ops/dropout.c), read by every place's kernels. */
#ifndef OAR_OPS_DROPOUT_H
#define OAR_OPS_DROPOUT_H
#include "op.h"

enum { OAR_DO_X = 0, OAR_DO_SEED = 1 };
enum { OAR_DO_OUT = 0, OAR_DO_MASK = 1 };
/* dropout_grad: Mask, Out@GRAD -> X@GRAD */
enum { OAR_DOG_MASK = 0, OAR_DOG_DOUT = 1 };
enum { OAR_DOG_DX = 0 };

/* dropout_implementation: the choices and their codes */
#define OAR_DO_IMPLS "downgrade_in_infer|upscale_in_train"
enum { OAR_DO_DOWNGRADE_IN_INFER = 0, OAR_DO_UPSCALE_IN_TRAIN = 1 };

typedef struct oar_dropout_attrs {
    float prob;
    bool is_test, fix_seed;
    int seed;
    int impl;              /* OAR_DO_DOWNGRADE_IN_INFER / OAR_DO_UPSCALE_IN_TRAIN */
} oar_dropout_attrs_t;
#endif
