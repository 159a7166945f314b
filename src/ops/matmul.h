/* matmul.h — mul, matmul, matmul_v2 and their grads: slots by index and the
 * decoded attributes (src/ops/matmul.c). */
#ifndef OAR_OPS_MATMUL_H
#define OAR_OPS_MATMUL_H
#include <stdbool.h>
#include "op.h"

enum { OAR_MM_X = 0, OAR_MM_Y = 1, OAR_MM_DOUT = 2 };   /* DOUT: grad ops only */
enum { OAR_MM_OUT = 0 };
enum { OAR_MM_DX = 0, OAR_MM_DY = 1 };

typedef struct oar_mul_attrs { int xnf, ynf; } oar_mul_attrs_t;   /* x/y_num_col_dims */
typedef struct oar_matmul_attrs {
    bool v2;          /* matmul_v2: numpy's matmul; matmul: Fluid's v1 vector rules */
    bool tx, ty;      /* transpose_X/Y (trans_x/y) */
    double alpha;     /* 1 for matmul_v2 */
} oar_matmul_attrs_t;
#endif
