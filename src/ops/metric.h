/* metric.h — slots of accuracy (src/ops/metric.c), read by every place's
 * kernels. */
#ifndef OAR_OPS_METRIC_H
#define OAR_OPS_METRIC_H

enum { OAR_ACC_OUT = 0, OAR_ACC_INDICES = 1, OAR_ACC_LABEL = 2 };
enum { OAR_ACC_ACCURACY = 0, OAR_ACC_CORRECT = 1, OAR_ACC_TOTAL = 2 };
#endif
