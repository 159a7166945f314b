/* sequence.h — slots and decoded attributes of the LoD sequence ops
 * (src/ops/sequence.c), read by every place's kernels. */
#ifndef OAR_OPS_SEQUENCE_H
#define OAR_OPS_SEQUENCE_H
#include "op.h"

/* X is input 0 of every op here */
enum { OAR_SEQ_X = 0 };

/* sequence_pool: X -> Out, MaxIndex; grad: X, MaxIndex, Out@GRAD -> X@GRAD */
enum { OAR_SEQPOOL_OUT = 0, OAR_SEQPOOL_MAX_INDEX = 1 };
enum { OAR_SEQPOOLG_MAX_INDEX = 1, OAR_SEQPOOLG_DOUT = 2 };
/* pooltype: the choices and their codes */
#define OAR_SEQPOOL_TYPES "AVERAGE|SUM|SQRT|MAX|LAST|FIRST"
enum { OAR_SEQPOOL_AVERAGE, OAR_SEQPOOL_SUM, OAR_SEQPOOL_SQRT, OAR_SEQPOOL_MAX, OAR_SEQPOOL_LAST,
       OAR_SEQPOOL_FIRST };
typedef struct oar_seqpool_attrs { int pooltype; float pad_value; } oar_seqpool_attrs_t;

/* sequence_softmax: X -> Out; grad: X, Out, Out@GRAD -> X@GRAD */
enum { OAR_SEQSM_OUT = 0 };
enum { OAR_SEQSMG_OUT = 1, OAR_SEQSMG_DOUT = 2 };

/* sequence_expand: X, Y -> Out; grad: X, Y, Out@GRAD -> X@GRAD */
enum { OAR_SEQEXP_Y = 1, OAR_SEQEXPG_DOUT = 2 };
enum { OAR_SEQEXP_OUT = 0 };
typedef struct oar_seqexpand_attrs { int ref_level; } oar_seqexpand_attrs_t;

/* sequence_conv: X, Filter, PaddingData -> Out; grad: the same and Out@GRAD
 * -> X@GRAD, Filter@GRAD, PaddingData@GRAD */
enum { OAR_SEQCONV_FILTER = 1, OAR_SEQCONV_PADDING = 2, OAR_SEQCONVG_DOUT = 3 };
enum { OAR_SEQCONV_OUT = 0 };
enum { OAR_SEQCONVG_DX = 0, OAR_SEQCONVG_DFILTER = 1, OAR_SEQCONVG_DPADDING = 2 };
typedef struct oar_seqconv_attrs { int context_length, context_start; bool padding_trainable; } oar_seqconv_attrs_t;

/* every grad op here writes X@GRAD as output 0 */
enum { OAR_SEQG_DX = 0 };
#endif
