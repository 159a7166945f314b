/* random.h — slots and decoded attributes of uniform_random,
 * gaussian_random and truncated_gaussian_random (src/ops/random.c), read by
 * every place's kernels. */
#ifndef OAR_OPS_RANDOM_H
#define OAR_OPS_RANDOM_H
#include "op.h"

enum { OAR_RND_OUT = 0 };
typedef struct oar_random_attrs {
    int dtype, seed;
    double a, b;           /* uniform: min and max - min; gaussian: mean and std */
} oar_random_attrs_t;
#endif
