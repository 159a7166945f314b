/* interp.h — slots and decoded attrs of bilinear_interp_v2 / nearest_interp_v2
 * (Paddle 2.x, NCHW) and their grads, shared with the CPU kernels. */
#ifndef OAR_OPS_INTERP_H
#define OAR_OPS_INTERP_H
#include "op.h"

/* forward and grad inputs share the first four; the grad adds Out@GRAD */
enum { OAR_IP_X = 0, OAR_IP_OUTSIZE = 1, OAR_IP_SIZETENSOR = 2, OAR_IP_SCALE = 3, OAR_IPG_DOUT = 4 };
enum { OAR_IP_OUT = 0 };
enum { OAR_IPG_DX = 0 };

enum { OAR_IP_BILINEAR = 0, OAR_IP_NEAREST = 1 };
typedef struct {
    int method;          /* OAR_IP_*: attr interp_method, which decides, as in Paddle */
    bool v2;             /* *_interp_v2: scale is FLOATS and sets the sampling ratio */
    int out_h, out_w;
    oar_floats_t scale;  /* v2 */
    float scale1;        /* v1 */
    bool align_corners;
    int align_mode;
    int layout;          /* index in "NCHW|NHWC" */
} oar_interp_attrs_t;
#endif
