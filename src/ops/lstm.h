/* lstm.h — lstm, lstm_unit and their grads: slots by index (the
 * definitions' order, src/ops/lstm.c) and the decoded attributes. */
#ifndef OAR_OPS_LSTM_H
#define OAR_OPS_LSTM_H
#include <stdbool.h>
#include "op.h"

/* lstm's inputs; lstm_grad's start the same and add the rest */
enum { OAR_LSTM_INPUT = 0, OAR_LSTM_H0 = 1, OAR_LSTM_C0 = 2, OAR_LSTM_WEIGHT = 3, OAR_LSTM_BIAS = 4,
       OAR_LSTM_HIDDEN_IN = 5, OAR_LSTM_CELL_IN = 6, OAR_LSTM_BATCHGATE_IN = 7, OAR_LSTM_BATCHCELL_IN = 8,
       OAR_LSTM_DHIDDEN = 9, OAR_LSTM_DCELL = 10 };
enum { OAR_LSTM_HIDDEN = 0, OAR_LSTM_CELL = 1, OAR_LSTM_BATCHGATE = 2, OAR_LSTM_BATCHCELL = 3 };
enum { OAR_LSTM_DINPUT = 0, OAR_LSTM_DH0 = 1, OAR_LSTM_DC0 = 2, OAR_LSTM_DWEIGHT = 3, OAR_LSTM_DBIAS = 4 };

/* lstm_unit */
enum { OAR_LSTMU_X = 0, OAR_LSTMU_CPREV = 1, OAR_LSTMU_C_IN = 2, OAR_LSTMU_DC = 3, OAR_LSTMU_DH = 4 };
enum { OAR_LSTMU_C = 0, OAR_LSTMU_H = 1 };
enum { OAR_LSTMU_DX = 0, OAR_LSTMU_DCPREV = 1 };

/* activation choices in the order of the kernels' codes (identity, sigmoid, tanh, relu) */
#define OAR_ACT_CHOICES "identity|sigmoid|tanh|relu"

typedef struct oar_lstm_attrs {
    bool peepholes, reverse;
    int gate, cell, cand;     /* activation codes */
} oar_lstm_attrs_t;
typedef struct oar_lstm_unit_attrs { float forget_bias; } oar_lstm_unit_attrs_t;
#endif
