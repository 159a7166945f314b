/*
 * paddle_attrs.h — attribute declarations for the switches Paddle's makers
 * add to many ops for its oneDNN (MKLDNN), cuDNN and int8 paths: Fluid 1.8's
 * AddAttr lines, Paddle 2.x's "extra" attrs, Paddle 3's onednn names.
 *
 * They choose how Paddle runs an op, not what it computes: oar runs its own
 * float kernel whatever they say (int8 scales only approximate that), so a
 * definition declares them and they are accepted with any value. Attributes
 * that change the result (fuse_*, use_addto, ...) are declared here too but
 * src/attr_check.c refuses them unless they hold their default.
 * Table of where each came from: spec/fixtures/paddle_attrs/.
 */
#ifndef OAR_OPS_PADDLE_ATTRS_H
#define OAR_OPS_PADDLE_ATTRS_H
#include "op.h"

#define OAR_PA_DOC "a switch of Paddle's own execution paths: accepted, oar's kernels do not read it"
#define OAR_PA_B(n, d) {n, OAR_ATTR_BOOLEAN, d, NULL, false, 0, 0, NULL, OAR_PA_DOC}
#define OAR_PA_I(n, d) {n, OAR_ATTR_INT, d, NULL, false, 0, 0, NULL, OAR_PA_DOC}
#define OAR_PA_F(n, d) {n, OAR_ATTR_FLOAT, d, NULL, false, 0, 0, NULL, OAR_PA_DOC}
#define OAR_PA_S(n, d) {n, OAR_ATTR_STRING, 0, d, false, 0, 0, NULL, OAR_PA_DOC}
#define OAR_PA_L(n, t) {n, t, 0, NULL, false, 0, 0, NULL, OAR_PA_DOC}   /* a list, empty by default */

/* Paddle 3's names for the oneDNN switches (every op that has use_mkldnn) */
#define OAR_PA_ONEDNN OAR_PA_B("use_onednn", 0), OAR_PA_S("onednn_data_type", "float32")
#define OAR_PA_MKLDNN_DT OAR_PA_S("mkldnn_data_type", "float32")
#define OAR_PA_USE_MKLDNN OAR_PA_B("use_mkldnn", 0)
#define OAR_PA_QUANTIZER OAR_PA_B("use_quantizer", 0)
/* int8 scales of binary ops (elementwise_*) */
#define OAR_PA_SCALES_XY OAR_PA_F("Scale_x", 1.0), OAR_PA_F("Scale_y", 1.0), OAR_PA_F("Scale_out", 1.0)
/* conv2d / depthwise_conv2d: MKLDNN fusions and int8 scales (Fluid 1.8) */
#define OAR_PA_CONV_FUSION                                                          \
    OAR_PA_B("fuse_relu", 0), OAR_PA_B("fuse_brelu", 0), OAR_PA_F("fuse_brelu_threshold", 6.0), \
    OAR_PA_S("fuse_activation", ""), OAR_PA_F("fuse_alpha", 0.0), OAR_PA_F("fuse_beta", 0.0), \
    OAR_PA_B("fuse_residual_connection", 0), OAR_PA_B("fuse_relu_before_depthwise_conv", 0), \
    OAR_PA_B("use_addto", 0), OAR_PA_B("force_fp32_output", 0),                       \
    OAR_PA_F("Scale_in", 1.0), OAR_PA_F("Scale_out", 1.0), OAR_PA_F("Scale_in_eltwise", 1.0), \
    OAR_PA_L("Scale_weights", OAR_ATTR_FLOATS)
#endif
