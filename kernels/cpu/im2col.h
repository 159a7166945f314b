/* im2col.h — unfolding image patches into GEMM columns (and back) for
 * convolution on the CPU, and the kernels' readers of window attributes.
 * The geometry itself is src/ops/window.h. */
#ifndef OAR_KERNELS_CPU_IM2COL_H
#define OAR_KERNELS_CPU_IM2COL_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"
#include "ops/window.h"

/* Rows of the column matrix are (channel, ki, kj) in that order, so the rows of
 * channel group g are contiguous; columns are output positions (oh, ow).
 * Row r is written at col + r*ld, so several images can be laid side by side
 * in one wide matrix (ld = images * oh*ow, col advanced by image * oh*ow). */
void oar_im2col_f32(const float *x, const oar_win2d_t *g, float *col, int64_t ld);
void oar_im2col_f64(const double *x, const oar_win2d_t *g, double *col, int64_t ld);
/* The adjoint: adds each column entry back into its image position of dx. */
void oar_col2im_f32(const float *col, const oar_win2d_t *g, int64_t ld, float *dx);
void oar_col2im_f64(const double *col, const oar_win2d_t *g, int64_t ld, double *dx);

#endif
