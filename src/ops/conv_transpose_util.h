/* conv_transpose_util.h — the output geometry of conv2d_transpose /
 * depthwise_conv2d_transpose (Fluid 1.8 / Paddle 2.x), shared by the
 * definitions' inference (src/ops/conv_transpose.c) and the kernels. The ops
 * (slots, oar_convt_attrs_t) are declared in src/ops/conv_transpose.ops. */
#ifndef OAR_OPS_CONV_TRANSPOSE_UTIL_H
#define OAR_OPS_CONV_TRANSPOSE_UTIL_H
#include <stdio.h>
#include "op.h"
#include "ops/conv_transpose.h"   /* generated: slots, oar_convt_attrs_t */

/* The geometry of one call. Input [n, cin, h, w], Filter [cin, cout/groups,
 * kh, kw], Output [n, cout, oh, ow]; pads top/bottom/left/right. */
typedef struct {
    int64_t n, cin, h, w, cout, kh, kw, oh, ow;
    int64_t sh, sw, dh, dw, pt, pb, pl, pr, groups;
} oar_convt_geom_t;

/* Fills g from the input and filter dims (dims may be -1 at compile time:
 * the output dims that depend on them are -1 then). On error writes why. */
static inline int oar_convt_geometry(const oar_convt_attrs_t *a, const int64_t *in, int nin,
                                     const int64_t *f, int nf, oar_convt_geom_t *g, char *why, size_t wn)
{
    if (nin != 4 || nf != 4) {
        snprintf(why, wn, "Input and Filter must be 4-D (Input has %d dims, Filter %d)", nin, nf);
        return OAR_ERR_SHAPE;
    }
    if (a->layout == OAR_CT_LAYOUT_NHWC) {
        snprintf(why, wn, "data_format \"NHWC\" is not supported by oar's conv2d_transpose (NCHW only)");
        return OAR_ERR_UNSUPPORTED;
    }
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
    const oar_ints_t *lists[2] = {&a->strides, &a->dilations};
    int64_t *vals[2] = {s, d};
    const char *names[2] = {"strides", "dilations"};
    for (int j = 0; j < 2; j++) {
        if (lists[j]->n != 0 && lists[j]->n != 2) {
            snprintf(why, wn, "attr %s has %d values, expected 2", names[j], lists[j]->n);
            return OAR_ERR_INVALID;
        }
        for (int i = 0; i < lists[j]->n; i++) {
            if (lists[j]->v[i] < 1) {
                snprintf(why, wn, "attr %s[%d] = %d must be >= 1", names[j], i, (int)lists[j]->v[i]);
                return OAR_ERR_INVALID;
            }
            vals[j][i] = lists[j]->v[i];
        }
    }
    if (a->paddings.n == 2) {
        p[0] = p[1] = a->paddings.v[0];
        p[2] = p[3] = a->paddings.v[1];
    } else if (a->paddings.n == 4) {
        for (int i = 0; i < 4; i++) p[i] = a->paddings.v[i];
    } else if (a->paddings.n != 0) {
        snprintf(why, wn, "attr paddings has %d values, expected 2 or 4", a->paddings.n);
        return OAR_ERR_INVALID;
    }
    for (int i = 0; i < 4; i++)
        if (p[i] < 0) {
            snprintf(why, wn, "attr paddings[%d] = %lld must be >= 0", i, (long long)p[i]);
            return OAR_ERR_INVALID;
        }
    if (a->groups < 1) {
        snprintf(why, wn, "attr groups = %d must be >= 1", a->groups);
        return OAR_ERR_INVALID;
    }
    g->n = in[0]; g->cin = in[1]; g->h = in[2]; g->w = in[3];
    g->kh = f[2]; g->kw = f[3];
    g->groups = a->groups;
    g->cout = f[1] < 0 ? -1 : f[1] * a->groups;
    if (in[1] >= 0 && f[0] >= 0 && in[1] != f[0]) {
        snprintf(why, wn, "Input has %lld channels but Filter's dim 0 is %lld (Filter is [C_in, C_out/groups, kh, kw])",
                 (long long)in[1], (long long)f[0]);
        return OAR_ERR_SHAPE;
    }
    if (in[1] >= 0 && in[1] % a->groups != 0) {
        snprintf(why, wn, "Input channels %lld are not divisible by groups %d", (long long)in[1], a->groups);
        return OAR_ERR_SHAPE;
    }
    /* Paddle's UpdatePaddingAndDilation over the input's spatial dims */
    const int64_t sp[2] = {in[2], in[3]}, k[2] = {f[2], f[3]};
    for (int i = 0; i < 2; i++) {
        if (a->pad_algo == OAR_CT_PAD_VALID) {
            p[2 * i] = p[2 * i + 1] = 0;
        } else if (a->pad_algo == OAR_CT_PAD_SAME && sp[i] >= 0 && k[i] >= 0) {
            int64_t out = (sp[i] + s[i] - 1) / s[i];
            int64_t sum = (out - 1) * s[i] + k[i] - sp[i];
            if (sum < 0) sum = 0;
            p[2 * i] = sum / 2;
            p[2 * i + 1] = sum - sum / 2;
            d[i] = 1;
        }
    }
    g->sh = s[0]; g->sw = s[1]; g->dh = d[0]; g->dw = d[1];
    g->pt = p[0]; g->pb = p[1]; g->pl = p[2]; g->pr = p[3];
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        if (sp[i] < 0 || k[i] < 0) { o[i] = -1; continue; }
        o[i] = (sp[i] - 1) * s[i] - p[2 * i] - p[2 * i + 1] + d[i] * (k[i] - 1) + 1;
        if (a->output_size.n > 0) {
            if (a->output_size.n != 2) {
                snprintf(why, wn, "attr output_size has %d values, expected 2", a->output_size.n);
                return OAR_ERR_INVALID;
            }
            int64_t want = a->output_size.v[i];
            if (want < o[i] || want >= o[i] + s[i]) {
                snprintf(why, wn, "attr output_size[%d] = %lld must be in [%lld, %lld) for this input, filter "
                         "and stride", i, (long long)want, (long long)o[i], (long long)(o[i] + s[i]));
                return OAR_ERR_INVALID;
            }
            o[i] = want;
        } else if (a->output_padding.n > 0) {
            if (a->output_padding.n != 2) {
                snprintf(why, wn, "attr output_padding has %d values, expected 2", a->output_padding.n);
                return OAR_ERR_INVALID;
            }
            int64_t op = a->output_padding.v[i], lim = s[i] > d[i] ? s[i] : d[i];
            if (op < 0 || op >= lim) {
                snprintf(why, wn, "attr output_padding[%d] = %lld must be in [0, max(stride, dilation) = %lld)",
                         i, (long long)op, (long long)lim);
                return OAR_ERR_INVALID;
            }
            o[i] += op;
        }
        if (o[i] <= 0) {
            snprintf(why, wn, "the output's spatial dim %d would be %lld (input %lld, filter %lld, paddings %lld+%lld)",
                     i, (long long)o[i], (long long)sp[i], (long long)k[i], (long long)p[2 * i], (long long)p[2 * i + 1]);
            return OAR_ERR_SHAPE;
        }
    }
    g->oh = o[0]; g->ow = o[1];
    return OAR_OK;
}
#endif
