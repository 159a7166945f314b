/* prelu.h — slots and decoded attrs of prelu (Fluid 1.8 / Paddle 2.x) and
 * its grad, shared with kernels/cpu/prelu.c. */
#ifndef OAR_OPS_PRELU_H
#define OAR_OPS_PRELU_H
#include "op.h"

enum { OAR_PRELU_X = 0, OAR_PRELU_ALPHA = 1, OAR_PRELUG_DOUT = 2 };
enum { OAR_PRELU_OUT = 0 };
enum { OAR_PRELUG_DX = 0, OAR_PRELUG_DALPHA = 1 };

enum { OAR_PRELU_ALL = 0, OAR_PRELU_CHANNEL = 1, OAR_PRELU_ELEMENT = 2 };
typedef struct { int mode; int layout; /* index in "NCHW|NHWC" */ } oar_prelu_attrs_t;

/* which alpha element applies to element i of X (dims xd, nd) */
static inline int64_t oar_prelu_alpha_index(const oar_prelu_attrs_t *a, const int64_t *xd, int nd, int64_t i)
{
    if (a->mode == OAR_PRELU_ALL) return 0;
    if (a->mode == OAR_PRELU_ELEMENT) {
        int64_t per = 1;   /* alpha covers X's dims after the batch dim */
        for (int d = 1; d < nd; d++) per *= xd[d];
        return per > 0 ? i % per : 0;
    }
    if (nd < 2) return 0;
    if (a->layout == 1) return i % xd[nd - 1];   /* NHWC: channel is last */
    int64_t inner = 1;
    for (int d = 2; d < nd; d++) inner *= xd[d];
    return inner > 0 ? (i / inner) % xd[1] : 0;
}
#endif
