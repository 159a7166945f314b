/* sequence_util.h — what the sequence ops' kernels share beyond the
 * generated declarations (build/ops/sequence.h from sequence.ops): X is
 * input 0 of every sequence op and X@GRAD output 0 of every grad, so code
 * common to them addresses those slots by one name (src/ops/sequence.c
 * checks it). */
#ifndef OAR_OPS_SEQUENCE_UTIL_H
#define OAR_OPS_SEQUENCE_UTIL_H
#include "ops/sequence.h"

enum { OAR_SEQ_X = 0 };
enum { OAR_SEQG_DX = 0 };
#endif
