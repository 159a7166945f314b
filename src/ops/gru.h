/* gru.h — gru, gru_unit and their grads: slots by index (the definitions'
 * order, src/ops/gru.c) and the decoded attributes. */
#ifndef OAR_OPS_GRU_H
#define OAR_OPS_GRU_H
#include <stdbool.h>
#include "op.h"

/* gru's inputs; gru_grad's start the same and add the rest */
enum { OAR_GRU_INPUT = 0, OAR_GRU_H0 = 1, OAR_GRU_WEIGHT = 2, OAR_GRU_BIAS = 3, OAR_GRU_BATCHGATE_IN = 4,
       OAR_GRU_BATCHRHP_IN = 5, OAR_GRU_BATCHHIDDEN_IN = 6, OAR_GRU_HIDDEN_IN = 7, OAR_GRU_DHIDDEN = 8 };
enum { OAR_GRU_BATCHGATE = 0, OAR_GRU_BATCHRHP = 1, OAR_GRU_BATCHHIDDEN = 2, OAR_GRU_HIDDEN = 3 };
enum { OAR_GRU_DINPUT = 0, OAR_GRU_DH0 = 1, OAR_GRU_DWEIGHT = 2, OAR_GRU_DBIAS = 3 };

/* gru_unit */
enum { OAR_GRUU_INPUT = 0, OAR_GRUU_HPREV = 1, OAR_GRUU_WEIGHT = 2, OAR_GRUU_BIAS = 3, OAR_GRUU_GATE_IN = 4,
       OAR_GRUU_RHP_IN = 5, OAR_GRUU_DHIDDEN = 6 };
enum { OAR_GRUU_GATE = 0, OAR_GRUU_RHP = 1, OAR_GRUU_HIDDEN = 2 };
enum { OAR_GRUU_DINPUT = 0, OAR_GRUU_DHPREV = 1, OAR_GRUU_DWEIGHT = 2, OAR_GRUU_DBIAS = 3 };

#define OAR_GRU_ACT_CHOICES "identity|sigmoid|tanh|relu"

/* gru: activations by name; gru_unit: by Fluid's INT codes (same numbering) */
typedef struct oar_gru_attrs {
    int act, gate;
    bool origin, reverse;
} oar_gru_attrs_t;
#endif
