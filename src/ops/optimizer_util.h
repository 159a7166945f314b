/* optimizer_util.h — what the optimizers' kernels share beyond the
 * generated declarations (build/ops/optimizer.h from optimizer.ops): Param
 * is input 0 and ParamOut output 0 of every optimizer, so code common to
 * them addresses those slots by one name (src/ops/optimizer.c checks it). */
#ifndef OAR_OPS_OPTIMIZER_UTIL_H
#define OAR_OPS_OPTIMIZER_UTIL_H
#include "ops/optimizer.h"

enum { OAR_OPT_PARAM = 0 };
enum { OAR_OPT_PARAM_OUT = 0 };

/* An optimizer's shape contract, checked at compile and run time by
 * oar_opt_infer (src/ops/optimizer.c; optimizer_ext.c uses it too). Each list
 * is NULL-terminated; a slot the op desc leaves empty is skipped. */
typedef struct {
    const char *const *same;     /* inputs shaped like Param (Grad excepted when sparse) */
    const char *const *scalars;  /* inputs of exactly one element */
    const char *const *pairs;    /* in, out, in, out, ...: out gets in's shape */
} oar_opt_shape_t;

struct oar_infer_ctx;
int oar_opt_infer(struct oar_infer_ctx *c, const oar_opt_shape_t *s);
#endif
