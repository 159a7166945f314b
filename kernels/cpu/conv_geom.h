/* conv_geom.h — the geometry conv.c works out for one conv2d call, shared
 * with the direct depthwise loops (conv_depthwise.c). Private to
 * kernels/cpu. */
#ifndef OAR_KERNELS_CPU_CONV_GEOM_H
#define OAR_KERNELS_CPU_CONV_GEOM_H
#include <stdbool.h>
#include <stdint.h>
#include "im2col.h"

typedef struct conv_geom {
    int64_t n, c, h, w;       /* input (logical NCHW) */
    int64_t m, kh, kw;        /* filter */
    int64_t oh, ow, p;        /* output, p = oh*ow */
    int64_t groups, cg, mg;   /* channels per group in and out */
    int64_t kg;               /* GEMM depth per group: cg*kh*kw */
    int64_t img, ktot;        /* input values per image; column rows (kg*groups) */
    int threads;              /* OpenMP threads for this call */
    int64_t bimg;             /* images side by side in one GEMM (batch mode) */
    bool direct;              /* 1x1, stride 1, no padding: no im2col */
    bool plain;               /* no padding, horizontal stride 1: im2col copies whole rows */
    bool nhwc;
    oar_win2d_t win;
} conv_geom_t;

/* depthwise convolution (one input channel per group) by direct loops */
void oar_dw_fwd_f32(const float *x, const float *w, float *y, const conv_geom_t *g);
void oar_dw_fwd_f64(const double *x, const double *w, double *y, const conv_geom_t *g);
void oar_dw_bwd_data_f32(const float *w, const float *dy, float *dx, const conv_geom_t *g);
void oar_dw_bwd_data_f64(const double *w, const double *dy, double *dx, const conv_geom_t *g);
void oar_dw_bwd_filter_f32(const float *x, const float *dy, float *dw, const conv_geom_t *g);
void oar_dw_bwd_filter_f64(const double *x, const double *dy, double *dw, const conv_geom_t *g);
#endif
