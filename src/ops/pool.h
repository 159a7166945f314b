/* pool.h — pool2d and pool2d_grad: slots by index and the decoded attributes
 * every place's kernels read (src/ops/pool.c). */
#ifndef OAR_OPS_POOL_H
#define OAR_OPS_POOL_H
#include <stdbool.h>
#include <stdint.h>
#include "conv.h"

enum { OAR_POOL_X = 0, OAR_POOL_OUT_IN = 1, OAR_POOL_DOUT = 2 };  /* pool2d_grad's inputs */
enum { OAR_POOL_OUT = 0 };                                        /* pool2d's output */
enum { OAR_POOL_DX = 0 };                                         /* pool2d_grad's output */

enum { OAR_POOL_MAX = 0, OAR_POOL_AVG = 1 };
#define OAR_POOL_CHOICES "max|avg"

typedef struct oar_pool_attrs {
    int type;                 /* OAR_POOL_MAX / OAR_POOL_AVG */
    int64_t ks[2], st[2];     /* ksize (0, 0 when empty: global pooling sets it), strides */
    int64_t pd[4];            /* {top, bottom, left, right} as written */
    int algo;                 /* OAR_PAD_* */
    bool global, exclusive, adaptive, ceil_mode;
    bool nhwc;                /* X and Out are [N, H, W, C] */
} oar_pool_attrs_t;
#endif
