/*
 * broadcast.h — Fluid's elementwise broadcasting and numpy's matmul shapes:
 * place-neutral geometry shared by the op definitions (shape inference) and
 * every place's kernels (loop plans). Kernel-side helpers for the CPU are in
 * kernels/cpu/bcast_run.h.
 *
 * Shapes: the operand of lower rank is aligned into the other one starting at
 * `axis` (-1: right-aligned, i.e. rank(big) - rank(small), computed before the
 * small operand's trailing 1s are trimmed, as Fluid does); then every aligned
 * pair of dims must be equal or one of them 1 (numpy rule, Fluid 2.x). This
 * covers Fluid 1.x's rule (Y matches a contiguous run of X's dims) and adds
 * both-sides broadcasting.
 *
 * Loops: a plan describes the output as up to OAR_MAX_DIMS nested loops with
 * one stride per operand (0 along broadcast dims), after dropping size-1 dims
 * and merging neighbours that both operands walk contiguously. Same-shape
 * operands collapse to one loop, a bias add to two ([rows, n], Y stride 0 on
 * rows), so kernels run plain tight inner loops.
 */
#ifndef OAR_OPS_BROADCAST_H
#define OAR_OPS_BROADCAST_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "op.h"

enum {
    OAR_BCAST_OK = 0,
    OAR_BCAST_AXIS = 1,     /* axis out of range for the ranks */
    OAR_BCAST_MISMATCH = 2  /* an aligned pair of dims differs and neither is 1 */
};

/* Broadcast shape of x (xn dims) and y (yn dims) at `axis`. Fills out[*nd],
 * and the operands' dims padded with 1s to *nd (xp, yp; may be NULL). Dims
 * may be -1 (unknown at compile time): -1 with 1 gives -1, -1 with k > 1
 * gives k. */
static inline int oar_bcast_shape(const int64_t *xd, int xn, const int64_t *yd, int yn,
                                  int axis, int64_t *out, int64_t *xp, int64_t *yp, int *nd)
{
    int64_t px[OAR_MAX_DIMS], py[OAR_MAX_DIMS];
    const int64_t *big = xd, *small = yd;
    int bn = xn, sn = yn;
    int64_t *pbig = px, *psmall = py;
    if (xn < yn) { big = yd; small = xd; bn = yn; sn = xn; pbig = py; psmall = px; }
    if (bn > OAR_MAX_DIMS) return OAR_BCAST_AXIS;
    int a = axis == -1 ? bn - sn : axis;
    if (a < 0 || a > bn) return OAR_BCAST_AXIS;
    /* trailing 1s of the small operand only matter when they overflow */
    while (sn > 0 && a + sn > bn && small[sn - 1] == 1) sn--;
    if (a + sn > bn) return OAR_BCAST_AXIS;
    for (int i = 0; i < bn; i++) {
        pbig[i] = big[i];
        psmall[i] = (i >= a && i < a + sn) ? small[i - a] : 1;
    }
    for (int i = 0; i < bn; i++) {
        int64_t p = px[i], q = py[i], o;
        if (p == q) o = p;
        else if (p == 1) o = q;
        else if (q == 1) o = p;
        else if (p < 0) o = q;
        else if (q < 0) o = p;
        else return OAR_BCAST_MISMATCH;
        out[i] = o;
    }
    *nd = bn;
    if (xp) for (int i = 0; i < bn; i++) xp[i] = px[i];
    if (yp) for (int i = 0; i < bn; i++) yp[i] = py[i];
    return OAR_BCAST_OK;
}

/* Loop plan over an output of known (nonnegative) dims. n[nd-1] is the
 * innermost loop; xs/ys are element strides of the operands (0: broadcast).
 * nd is at least 1 (a scalar output is one loop of 1). */
typedef struct oar_bplan {
    int nd;
    int64_t n[OAR_MAX_DIMS], xs[OAR_MAX_DIMS], ys[OAR_MAX_DIMS];
    int64_t total;        /* product of n */
    bool x_full, y_full;  /* operand has the output's shape (no broadcast) */
} oar_bplan_t;

static inline void oar_bplan_make(oar_bplan_t *p, const int64_t *od, const int64_t *xp,
                                  const int64_t *yp, int nd)
{
    int64_t sx = 1, sy = 1, total = 1;
    int64_t n[OAR_MAX_DIMS], xs[OAR_MAX_DIMS], ys[OAR_MAX_DIMS];
    int k = 0;
    p->x_full = p->y_full = true;
    /* an empty output: nothing to walk (and the other dims' product may
     * overflow int64 where the zero has not yet been multiplied in) */
    for (int i = 0; i < nd; i++)
        if (od[i] == 0) {
            for (int j = 0; j < nd; j++) {
                if (xp[j] != od[j]) p->x_full = false;
                if (yp[j] != od[j]) p->y_full = false;
            }
            p->nd = 1; p->n[0] = 0; p->xs[0] = 1; p->ys[0] = 1; p->total = 0;
            return;
        }
    /* walk from the innermost dim, computing contiguous strides per operand */
    for (int i = nd - 1; i >= 0; i--) {
        int64_t o = od[i];
        total *= o;
        if (xp[i] != o) p->x_full = false;
        if (yp[i] != o) p->y_full = false;
        if (o == 1) continue;
        int64_t cx = xp[i] == o ? sx : 0, cy = yp[i] == o ? sy : 0;
        if (xp[i] == o) sx *= o;
        if (yp[i] == o) sy *= o;
        /* merge with the dim inside it when both operands continue it */
        if (k > 0 && cx == xs[k - 1] * n[k - 1] && cy == ys[k - 1] * n[k - 1]) {
            n[k - 1] *= o;
            continue;
        }
        n[k] = o; xs[k] = cx; ys[k] = cy; k++;
    }
    if (k == 0) { n[0] = 1; xs[0] = 1; ys[0] = 1; k = 1; }
    p->nd = k;
    for (int i = 0; i < k; i++) {   /* stored outermost first */
        p->n[i] = n[k - 1 - i]; p->xs[i] = xs[k - 1 - i]; p->ys[i] = ys[k - 1 - i];
    }
    p->total = total;
}

/* Operand offsets of outer row r (rows = total / n[nd-1]). */
static inline void oar_bplan_row(const oar_bplan_t *p, int64_t r, int64_t *xo, int64_t *yo,
                                 int64_t *idx)
{
    int64_t a = 0, b = 0;
    for (int d = p->nd - 2; d >= 0; d--) {
        int64_t i = r % p->n[d];
        r /= p->n[d];
        idx[d] = i;
        a += i * p->xs[d];
        b += i * p->ys[d];
    }
    *xo = a; *yo = b;
}

/* Advances to the next outer row. */
static inline void oar_bplan_next(const oar_bplan_t *p, int64_t *xo, int64_t *yo, int64_t *idx)
{
    for (int d = p->nd - 2; d >= 0; d--) {
        *xo += p->xs[d]; *yo += p->ys[d];
        if (++idx[d] < p->n[d]) return;
        *xo -= p->xs[d] * p->n[d]; *yo -= p->ys[d] * p->n[d];
        idx[d] = 0;
    }
}
/* ---- matmul shapes -------------------------------------------------------
 * numpy's matmul: a rank-1 X is a row [1, K] and a rank-1 Y a column [K, 1]
 * (their transpose flags are ignored), dropped again from Out; leading
 * (batch) dims broadcast right-aligned. Out = batch ++ [M] ++ [N], or [1]
 * when both are vectors. */
typedef struct oar_mm_shape {
    int64_t M, N, K;
    bool tx, ty;            /* effective transposes */
    bool x_vec, y_vec;
    int bnd;                /* batch rank of Out */
    int64_t bdims[OAR_MAX_DIMS], xb[OAR_MAX_DIMS], yb[OAR_MAX_DIMS]; /* padded to bnd */
    int64_t batch, xbatch, ybatch;  /* products (compile time: may be < 0) */
    int ond;
    int64_t out[OAR_MAX_DIMS];
} oar_mm_shape_t;

enum { OAR_MM_OK = 0, OAR_MM_RANK = 1, OAR_MM_K = 2, OAR_MM_BATCH = 3 };

static inline int64_t oar_dims_prod_unknown(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) { if (d[i] < 0) return -1; p *= d[i]; }
    return p;
}

static inline int oar_mm_shape(const int64_t *xd, int xn, const int64_t *yd, int yn,
                               bool tx, bool ty, oar_mm_shape_t *s)
{
    if (xn < 1 || yn < 1) return OAR_MM_RANK;
    int64_t kx, ky;
    s->x_vec = xn == 1;
    s->y_vec = yn == 1;
    s->tx = s->x_vec ? false : tx;
    s->ty = s->y_vec ? false : ty;
    if (s->x_vec) { s->M = 1; kx = xd[0]; }
    else { s->M = s->tx ? xd[xn - 1] : xd[xn - 2]; kx = s->tx ? xd[xn - 2] : xd[xn - 1]; }
    if (s->y_vec) { s->N = 1; ky = yd[0]; }
    else { s->N = s->ty ? yd[yn - 2] : yd[yn - 1]; ky = s->ty ? yd[yn - 1] : yd[yn - 2]; }
    if (!(kx == ky || kx < 0 || ky < 0)) return OAR_MM_K;
    s->K = kx >= 0 ? kx : ky;
    int xbn = s->x_vec ? 0 : xn - 2, ybn = s->y_vec ? 0 : yn - 2;
    if (oar_bcast_shape(xd, xbn, yd, ybn, -1, s->bdims, s->xb, s->yb, &s->bnd) != OAR_BCAST_OK)
        return OAR_MM_BATCH;
    s->batch = oar_dims_prod_unknown(s->bdims, s->bnd);
    s->xbatch = oar_dims_prod_unknown(xd, xbn);
    s->ybatch = oar_dims_prod_unknown(yd, ybn);
    int n = 0;
    for (int i = 0; i < s->bnd; i++) s->out[n++] = s->bdims[i];
    if (!s->x_vec) s->out[n++] = s->M;
    if (!s->y_vec) s->out[n++] = s->N;
    if (n == 0) s->out[n++] = 1;
    s->ond = n;
    return OAR_MM_OK;
}


/* Fluid's matmul (v1): a rank-1 X is a row [1, D] and a rank-1 Y a column
 * [D, 1] *before* transposing, so a transposed vector operand is the matrix
 * [D, 1] (X) or [1, D] (Y); Out then drops the vector's dim only where it
 * is 1 (X: [K] with transpose_X and Y: [K] with transpose_Y give [K, K]).
 * Without transposes this is oar_mm_shape. */
static inline int oar_mm_shape_v1(const int64_t *xd, int xn, const int64_t *yd, int yn,
                                  bool tx, bool ty, oar_mm_shape_t *s)
{
    int64_t xm[2], ym[2];
    bool xcol = xn == 1 && tx, yrow = yn == 1 && ty;
    if (xcol) { xm[0] = xd[0]; xm[1] = 1; xd = xm; xn = 2; tx = false; }
    if (yrow) { ym[0] = 1; ym[1] = yd[0]; yd = ym; yn = 2; ty = false; }
    int rc = oar_mm_shape(xd, xn, yd, yn, tx, ty, s);
    if (rc != OAR_MM_OK || (!xcol && !yrow)) return rc;
    if (xcol && s->ond >= 2 && s->out[s->ond - 2] == 1) {
        s->out[s->ond - 2] = s->out[s->ond - 1];
        s->ond--;
    }
    if (yrow && s->ond >= 1 && s->out[s->ond - 1] == 1) s->ond--;
    if (s->ond == 0) s->out[s->ond++] = 1;
    return OAR_MM_OK;
}

/* Every broadcasting op (elementwise_*, comparisons, logical ops and their
 * grads) has inputs X, Y first and Out first among its outputs; its decoded
 * attributes begin with `axis` (-1 for ops without one). */
enum { OAR_BCAST_X = 0, OAR_BCAST_Y = 1 };
enum { OAR_BCAST_OUT = 0 };
typedef struct oar_bcast_attrs { int axis; } oar_bcast_attrs_t;

/* Shape inference of a broadcasting binary op with slots X, Y -> Out and
 * the decoded `axis` (oar_ic_attrs): checks dtypes agree and the shapes broadcast, sets Out's dims
 * (dtype out_dtype, or X's when -1) and passes on the LoD of the operand
 * whose leading dim Out keeps. */
int oar_bcast_infer(oar_infer_ctx_t *c, int out_dtype);
#endif
