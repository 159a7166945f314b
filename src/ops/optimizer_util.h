/* optimizer_util.h — what the optimizers' kernels share beyond the
 * generated declarations (build/ops/optimizer.h from optimizer.ops): Param
 * is input 0 and ParamOut output 0 of every optimizer, so code common to
 * them addresses those slots by one name (src/ops/optimizer.c checks it). */
#ifndef OAR_OPS_OPTIMIZER_UTIL_H
#define OAR_OPS_OPTIMIZER_UTIL_H
#include "ops/optimizer.h"

enum { OAR_OPT_PARAM = 0 };
enum { OAR_OPT_PARAM_OUT = 0 };
#endif
