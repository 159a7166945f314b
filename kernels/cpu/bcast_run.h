/*
 * bcast_run.h — CPU kernel side of broadcasting ops: the inputs and loop plan
 * of a kernel (read by slot index and decoded axis), row runners and the
 * OpenMP split. Geometry lives in the definition layer, src/ops/broadcast.h.
 */
#ifndef OAR_KERNELS_CPU_BCAST_RUN_H
#define OAR_KERNELS_CPU_BCAST_RUN_H
#include "ops/broadcast.h"


/* Rows [*lo, *hi) of `rows` for the calling OpenMP thread. */
#ifdef _OPENMP
#include <omp.h>
#endif
static inline void oar_omp_range(int64_t rows, int64_t *lo, int64_t *hi)
{
#ifdef _OPENMP
    int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
#else
    int64_t nt = 1, t = 0;
#endif
    int64_t q = rows / nt, rem = rows % nt;
    *lo = t * q + (t < rem ? t : rem);
    *hi = *lo + q + (t < rem ? 1 : 0);
}

#define OAR_PAR_THRESHOLD 65536

/* Inputs X and Y of a broadcasting kernel, their plan and data. */
typedef struct oar_bargs {
    const oar_tensor_t *x, *y;
    oar_bplan_t plan;
    int64_t xn, yn;        /* numel of X and Y */
    const void *xd, *yd;   /* taken before any output is allocated (in-place safety) */
} oar_bargs_t;

static inline int oar_bcast_setup(oar_kernel_ctx_t *k, oar_bargs_t *a)
{
    a->x = oar_k_input(k, OAR_BCAST_X, 0);
    a->y = oar_k_input(k, OAR_BCAST_Y, 0);
    if (!a->x || !a->y)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", a->x ? "Y" : "X");
    int64_t od[OAR_MAX_DIMS], xp[OAR_MAX_DIMS], yp[OAR_MAX_DIMS];
    int nd;
    int axis = ((const oar_bcast_attrs_t *)oar_k_attrs(k))->axis;
    if (oar_bcast_shape(a->x->dims, a->x->ndim, a->y->dims, a->y->ndim, axis, od, xp, yp, &nd)) {
        char bx[128], by[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Y ('%s') shape %s does not broadcast to X ('%s') shape %s at axis %d",
                           oar_k_input_name(k, OAR_BCAST_Y, 0), oar_shape_str(a->y->dims, a->y->ndim, by, sizeof by),
                           oar_k_input_name(k, OAR_BCAST_X, 0), oar_shape_str(a->x->dims, a->x->ndim, bx, sizeof bx), axis);
    }
    oar_bplan_make(&a->plan, od, xp, yp, nd);
    a->xn = oar_tensor_numel_of(a->x);
    a->yn = oar_tensor_numel_of(a->y);
    if (a->plan.total > 0 && (!oar_tensor_has_data(a->x) || !oar_tensor_has_data(a->y)))
        return oar_k_error(k, OAR_ERR_INVALID, "input %s holds no data", oar_tensor_has_data(a->x) ? "Y" : "X");
    a->xd = oar_tensor_data((oar_tensor_t *)a->x);
    a->yd = oar_tensor_data((oar_tensor_t *)a->y);
    return OAR_OK;
}

typedef void (*oar_brows_fn)(const oar_bplan_t *p, const void *x, const void *y, void *o,
                           int64_t lo, int64_t hi);

/* Rows [lo, hi) of a binary op; EXPR computes the result from a (x) and b (y). */
#define OAR_BROWS(NAME, TI, TO, EXPR)                                                   \
    static void NAME(const oar_bplan_t *p, const void *xv, const void *yv, void *ov,  \
                     int64_t lo, int64_t hi)                                          \
    {                                                                                 \
        const TI *x = xv, *y = yv;                                                    \
        TO *o = ov;                                                                   \
        const int d = p->nd - 1;                                                      \
        const int64_t n = p->n[d];                                                    \
        const bool xv1 = p->xs[d] != 0, yv1 = p->ys[d] != 0;                          \
        int64_t xo, yo, idx[OAR_MAX_DIMS];                                            \
        if (lo >= hi) return;                                                         \
        oar_bplan_row(p, lo, &xo, &yo, idx);                                          \
        for (int64_t r = lo; r < hi; r++) {                                           \
            const TI *xr = x + xo, *yr = y + yo;                                      \
            TO *orow = o + r * n;                                                     \
            if (xv1 && yv1) {                                                         \
                for (int64_t i = 0; i < n; i++) { TI a = xr[i], b = yr[i]; orow[i] = (EXPR); } \
            } else if (xv1) {                                                         \
                const TI b = *yr;                                                     \
                for (int64_t i = 0; i < n; i++) { TI a = xr[i]; orow[i] = (EXPR); }   \
            } else {                                                                  \
                const TI a = *xr;                                                     \
                for (int64_t i = 0; i < n; i++) { TI b = yr[i]; orow[i] = (EXPR); }   \
            }                                                                         \
            oar_bplan_next(p, &xo, &yo, idx);                                         \
        }                                                                             \
    }

static inline void oar_brun_rows(const oar_bplan_t *p, oar_brows_fn fn, const void *x, const void *y, void *o)
{
    int64_t rows = p->total / p->n[p->nd - 1];
    if (p->total > OAR_PAR_THRESHOLD && rows > 1) {
        #pragma omp parallel
        {
            int64_t lo, hi;
            oar_omp_range(rows, &lo, &hi);
            fn(p, x, y, o, lo, hi);
        }
    } else {
        fn(p, x, y, o, 0, rows);
    }
}

#endif
