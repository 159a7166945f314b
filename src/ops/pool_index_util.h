/* pool_index_util.h — the output geometry of max_pool{2,3}d_with_index,
 * unpool and spp (Fluid 1.8), shared by the inference (src/ops/pool_index.c)
 * and the kernels (kernels/cpu/pool_index.c). The ops are declared in
 * src/ops/pool_index.ops. */
#ifndef OAR_OPS_POOL_INDEX_UTIL_H
#define OAR_OPS_POOL_INDEX_UTIL_H
#include "op.h"
#include "ops/pool_index.h"   /* generated: slots, oar_pwi_attrs_t, ... */

/* One with_index pooling, as 3-D (the 2-D ops have depth 1, window 1). */
typedef struct oar_pwi_geom {
    int64_t in[3], out[3], ks[3], st[3], pd[3];
    bool adaptive;
    int bad;   /* the spatial dim (0-based, of the op's own nd) an error names */
} oar_pwi_geom_t;

/* sp: the nd spatial input dims (may be -1 at compile time: that output
 * stays -1). Returns OAR_OK, or OAR_ERR_SHAPE with g->bad set when no
 * window fits. */
static inline int oar_pwi_plan(const oar_pwi_attrs_t *a, const int64_t *sp, oar_pwi_geom_t *g) {
    const int off = 3 - a->nd;
    g->adaptive = a->adaptive && !a->global;
    g->bad = 0;
    for (int i = 0; i < 3; i++) {
        const int64_t in = i < off ? 1 : sp[i - off];
        g->in[i] = in;
        g->ks[i] = a->global ? in : a->ks[i];
        g->st[i] = a->global ? 1 : a->st[i];
        g->pd[i] = a->global ? 0 : a->pd[i];
        if (a->global) { g->out[i] = 1; continue; }
        if (g->adaptive) { g->out[i] = g->ks[i]; continue; }
        if (in < 0) { g->out[i] = -1; continue; }
        const int64_t room = in + 2 * g->pd[i] - g->ks[i];
        if (room < 0) { g->bad = i - off; return OAR_ERR_SHAPE; }
        g->out[i] = room / g->st[i] + 1;
    }
    return OAR_OK;
}

/* unpool's output size along one dim */
static inline int64_t oar_unpool_out(int64_t in, int64_t k, int64_t s, int64_t p) {
    return in < 0 ? -1 : (in - 1) * s - 2 * p + k;
}

/* spp level p's bins, window (= stride) and padding along a dim of size in */
static inline void oar_spp_level(int p, int64_t in, int64_t *bins, int64_t *k, int64_t *pad) {
    *bins = (int64_t)1 << p;
    *k = (in + *bins - 1) / *bins;
    *pad = (*k * *bins - in + 1) / 2;
}
#endif
