/* conv3d_util.h — the geometry of conv3d and conv3d_transpose (Fluid 1.8),
 * shared by the definitions' inference (src/ops/conv3d.c) and the kernels
 * (kernels/cpu/conv3d.c). The ops are declared in src/ops/conv3d.ops.
 *
 * One geometry serves both ops: a convolution from a "volume" side
 * (c channels, spatial vin) to a "result" side (m channels, spatial vout)
 * with filters [m, c / groups, k...]. conv3d's Input is the volume side;
 * conv3d_transpose's Input is the result side and its Output the volume
 * side (its Filter [C_in, C_out / groups, k...] is exactly that shape). */
#ifndef OAR_OPS_CONV3D_UTIL_H
#define OAR_OPS_CONV3D_UTIL_H
#include <stdio.h>
#include "op.h"
#include "ops/conv3d.h"   /* generated: slots, oar_conv3d_attrs_t, oar_c3t_attrs_t */
#include "window.h"

typedef struct oar_c3_geom {
    int64_t n, c, vin[3];   /* volume side: batch, channels, spatial */
    int64_t m, vout[3];     /* result side: channels, spatial */
    int64_t k[3], st[3], dl[3], pd[6];   /* pd: {front, back, top, bottom, left, right} */
    int64_t groups;
    bool cl;                /* channels last (NDHWC) */
} oar_c3_geom_t;

/* dims as NCDHW (channels moved from the last dim when cl) */
static inline void oar_c3_logical(const int64_t *d, bool cl, int64_t out[5]) {
    if (cl) { out[0] = d[0]; out[1] = d[4]; out[2] = d[1]; out[3] = d[2]; out[4] = d[3]; }
    else for (int i = 0; i < 5; i++) out[i] = d[i];
}

/* dims of a [n, ch, sp...] volume in the layout */
static inline void oar_c3_physical(int64_t n, int64_t ch, const int64_t sp[3], bool cl, int64_t out[5]) {
    out[0] = n;
    if (cl) { out[1] = sp[0]; out[2] = sp[1]; out[3] = sp[2]; out[4] = ch; }
    else { out[1] = ch; out[2] = sp[0]; out[3] = sp[1]; out[4] = sp[2]; }
}

static inline void oar_c3_copy_win(oar_c3_geom_t *g, const int64_t st[3], const int64_t dl[3], const int64_t pd[6]) {
    for (int i = 0; i < 3; i++) { g->st[i] = st[i]; g->dl[i] = dl[i]; }
    for (int i = 0; i < 6; i++) g->pd[i] = pd[i];
}

/* what both geometries start with: Input (dims xd as stored) and Filter f
 * 5-D, no Filter dim 0; x gets Input's dims in NCDHW order, g the layout,
 * groups and the window attributes. On error writes why. */
static inline int oar_c3_begin(bool cl, int64_t groups, const int64_t st[3], const int64_t dl[3],
                               const int64_t pd[6], const int64_t *xd, int xn, const int64_t *f, int fn,
                               const char *in_name, const char *f_name, oar_c3_geom_t *g, int64_t x[5], char *why,
                               size_t wn) {
    if (xn != 5) {
        snprintf(why, wn, "Input '%s' must be 5-D (NCDHW or NDHWC), it has rank %d", in_name, xn);
        return OAR_ERR_SHAPE;
    }
    if (fn != 5) {
        snprintf(why, wn, "Filter '%s' must be 5-D [M, C/groups, kd, kh, kw], it has rank %d", f_name, fn);
        return OAR_ERR_SHAPE;
    }
    oar_c3_logical(xd, cl, x);
    g->cl = cl;
    g->groups = groups;
    oar_c3_copy_win(g, st, dl, pd);
    for (int i = 0; i < 5; i++)
        if (f[i] == 0) { snprintf(why, wn, "Filter '%s' has an empty dimension (dim %d)", f_name, i); return OAR_ERR_SHAPE; }
    return OAR_OK;
}

/* conv3d: xd Input's dims as stored, f Filter's dims; dims may be -1 at
 * compile time (the outputs they decide stay -1). On error writes why. */
static inline int oar_c3_conv_geometry(const oar_conv3d_attrs_t *a, const int64_t *xd, int xn, const int64_t *f,
                                       int fn, const char *in_name, const char *f_name, oar_c3_geom_t *g,
                                       char *why, size_t wn) {
    int64_t x[5];
    int rc = oar_c3_begin(a->cl, a->groups, a->st, a->dl, a->pd, xd, xn, f, fn, in_name, f_name, g, x, why, wn);
    if (rc != OAR_OK) return rc;
    g->n = x[0]; g->c = x[1]; g->m = f[0];
    for (int i = 0; i < 3; i++) { g->vin[i] = x[2 + i]; g->k[i] = f[2 + i]; g->vout[i] = -1; }
    if (x[1] >= 0 && f[1] >= 0 && x[1] != f[1] * g->groups) {
        snprintf(why, wn, "Input '%s' has %lld channels but Filter '%s' [%lld, %lld, ...] with groups = %lld expects "
                 "Filter[1] * groups = %lld", in_name, (long long)x[1], f_name, (long long)f[0], (long long)f[1],
                 (long long)g->groups, (long long)(f[1] * g->groups));
        return OAR_ERR_SHAPE;
    }
    if (f[0] >= 0 && f[0] % g->groups != 0) {
        snprintf(why, wn, "Filter '%s': %lld output channels are not divisible by groups = %lld", f_name,
                 (long long)f[0], (long long)g->groups);
        return OAR_ERR_SHAPE;
    }
    static const char *const dims[] = {"depth", "height", "width"};
    for (int i = 0; i < 3; i++) {
        if (g->vin[i] < 0 || g->k[i] < 0) continue;
        if (g->vin[i] == 0) {
            snprintf(why, wn, "Input '%s' has an empty %s", in_name, dims[i]);
            return OAR_ERR_SHAPE;
        }
        oar_win_resolve_pad_dim(a->algo, g->vin[i], g->k[i], g->st[i], &g->pd[2 * i], &g->pd[2 * i + 1], &g->dl[i]);
        if (g->vin[i] > INT64_MAX / 8 || g->k[i] > INT32_MAX || g->dl[i] > INT32_MAX) {
            snprintf(why, wn, "Input '%s': sizes overflow", in_name);
            return OAR_ERR_SHAPE;
        }
        const int64_t span = g->dl[i] * (g->k[i] - 1) + 1;
        const int64_t room = g->vin[i] + g->pd[2 * i] + g->pd[2 * i + 1] - span;
        if (room < 0) {
            snprintf(why, wn, "output %s would be empty: Input '%s' %s %lld, paddings %lld + %lld, the dilated "
                     "filter spans %lld", dims[i], in_name, dims[i], (long long)g->vin[i], (long long)g->pd[2 * i],
                     (long long)g->pd[2 * i + 1], (long long)span);
            return OAR_ERR_SHAPE;
        }
        g->vout[i] = room / g->st[i] + 1;
    }
    return OAR_OK;
}

/* conv3d_transpose: xd Input's dims as stored (the result side), f Filter
 * [C_in, C_out / groups, k...]. */
static inline int oar_c3_convt_geometry(const oar_c3t_attrs_t *a, const int64_t *xd, int xn, const int64_t *f,
                                        int fn, const char *in_name, const char *f_name, oar_c3_geom_t *g,
                                        char *why, size_t wn) {
    int64_t x[5];
    int rc = oar_c3_begin(a->cl, a->groups, a->st, a->dl, a->pd, xd, xn, f, fn, in_name, f_name, g, x, why, wn);
    if (rc != OAR_OK) return rc;
    g->n = x[0]; g->m = x[1];
    g->c = f[1] < 0 ? -1 : f[1] * g->groups;
    for (int i = 0; i < 3; i++) { g->vout[i] = x[2 + i]; g->k[i] = f[2 + i]; g->vin[i] = -1; }
    if (x[1] >= 0 && f[0] >= 0 && x[1] != f[0]) {
        snprintf(why, wn, "Input '%s' has %lld channels but Filter '%s' dim 0 is %lld (Filter is [C_in, C_out/groups, "
                 "kd, kh, kw])", in_name, (long long)x[1], f_name, (long long)f[0]);
        return OAR_ERR_SHAPE;
    }
    if (x[1] >= 0 && x[1] % g->groups != 0) {
        snprintf(why, wn, "Input '%s' has %lld channels, not divisible by groups = %lld", in_name, (long long)x[1],
                 (long long)g->groups);
        return OAR_ERR_SHAPE;
    }
    static const char *const dims[] = {"depth", "height", "width"};
    for (int i = 0; i < 3; i++) {
        if (g->vout[i] < 0 || g->k[i] < 0) continue;
        if (g->vout[i] == 0) {
            snprintf(why, wn, "Input '%s' has an empty %s", in_name, dims[i]);
            return OAR_ERR_SHAPE;
        }
        oar_win_resolve_pad_dim(a->algo, g->vout[i], g->k[i], g->st[i], &g->pd[2 * i], &g->pd[2 * i + 1], &g->dl[i]);
        if (g->vout[i] > INT32_MAX || g->k[i] > INT32_MAX || g->dl[i] > INT32_MAX || g->st[i] > INT32_MAX) {
            snprintf(why, wn, "Input '%s': sizes overflow", in_name);
            return OAR_ERR_SHAPE;
        }
        int64_t o = (g->vout[i] - 1) * g->st[i] - g->pd[2 * i] - g->pd[2 * i + 1] + g->dl[i] * (g->k[i] - 1) + 1;
        if (a->osz[i] > 0) {
            if (a->osz[i] < o || a->osz[i] >= o + g->st[i]) {
                snprintf(why, wn, "attr output_size[%d] = %lld must be in [%lld, %lld) for this input, filter and "
                         "stride", i, (long long)a->osz[i], (long long)o, (long long)(o + g->st[i]));
                return OAR_ERR_INVALID;
            }
            o = a->osz[i];
        } else if (a->opad[i] > 0) {
            const int64_t lim = g->st[i] > g->dl[i] ? g->st[i] : g->dl[i];
            if (a->opad[i] >= lim) {
                snprintf(why, wn, "attr output_padding[%d] = %lld must be in [0, max(stride, dilation) = %lld)", i,
                         (long long)a->opad[i], (long long)lim);
                return OAR_ERR_INVALID;
            }
            o += a->opad[i];
        }
        if (o <= 0) {
            snprintf(why, wn, "output %s would be %lld: the paddings crop more than the transposed convolution makes",
                     dims[i], (long long)o);
            return OAR_ERR_SHAPE;
        }
        g->vin[i] = o;
    }
    return OAR_OK;
}
#endif
