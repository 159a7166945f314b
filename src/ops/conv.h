/* conv.h — conv2d / depthwise_conv2d and their grads: slots by index and the
 * decoded attributes every place's kernels read (src/ops/conv.c). */
#ifndef OAR_OPS_CONV_H
#define OAR_OPS_CONV_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"

enum { OAR_CONV_INPUT = 0, OAR_CONV_FILTER = 1, OAR_CONV_DOUTPUT = 2 };  /* DOUTPUT: grad op only */
enum { OAR_CONV_OUTPUT = 0 };
enum { OAR_CONV_DINPUT = 0, OAR_CONV_DFILTER = 1 };

/* padding_algorithm's choices, in the definition's order */
enum { OAR_PAD_EXPLICIT = 0, OAR_PAD_SAME = 1, OAR_PAD_VALID = 2 };
#define OAR_PAD_CHOICES "EXPLICIT|SAME|VALID"
/* data_format's choices: Fluid 1.x writes "AnyLayout" for the default NCHW */
enum { OAR_FMT_NCHW = 0, OAR_FMT_NHWC = 1, OAR_FMT_ANY = 2 };
#define OAR_FMT_CHOICES "NCHW|NHWC|AnyLayout"

typedef struct oar_conv_attrs {
    int64_t st[2], dl[2];   /* strides, dilations (empty attrs: 1, 1) */
    int64_t pd[4];          /* paddings {top, bottom, left, right} as written */
    int64_t groups;
    int algo;               /* OAR_PAD_* */
    bool nhwc;              /* Input/Output are [N, H, W, C]; Filter stays [M, C/groups, kh, kw] */
    int64_t workspace_mb;   /* workspace_size_MB: cuDNN's workspace limit */
} oar_conv_attrs_t;

#endif
