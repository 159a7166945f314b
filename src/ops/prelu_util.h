/* prelu_util.h — which alpha applies to an element of X, for prelu's kernels
 * (the op is declared in prelu.ops; its slots and oar_prelu_attrs_t are in
 * the generated ops/prelu.h). */
#ifndef OAR_OPS_PRELU_UTIL_H
#define OAR_OPS_PRELU_UTIL_H
#include "op.h"
#include "ops/prelu.h"

/* which alpha element applies to element i of X (dims xd, nd) */
static inline int64_t oar_prelu_alpha_index(const oar_prelu_attrs_t *a, const int64_t *xd, int nd, int64_t i)
{
    if (a->mode == OAR_PRELU_MODE_ALL) return 0;
    if (a->mode == OAR_PRELU_MODE_ELEMENT) {
        int64_t per = 1;   /* alpha covers X's dims after the batch dim */
        for (int d = 1; d < nd; d++) per *= xd[d];
        return per > 0 ? i % per : 0;
    }
    if (nd < 2) return 0;
    if (a->layout == OAR_PRELU_LAYOUT_NHWC) return i % xd[nd - 1];   /* channel is last */
    int64_t inner = 1;
    for (int d = 2; d < nd; d++) inner *= xd[d];
    return inner > 0 ? (i / inner) % xd[1] : 0;
}
#endif
