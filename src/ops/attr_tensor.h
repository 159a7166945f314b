/*
 * attr_tensor.h — attributes that a tensor input may override (Fluid's
 * StartsTensor, ShapeTensorList, ScaleTensor, AxisTensor, ...).
 *
 * An int list comes from, in order: a 1-D int32/int64 tensor input
 * `tslot`, a list of one-value tensors `lslot`, else the INTS/LONGS attr
 * `attr`. At compile time tensor-given values are unknown: *known is false,
 * the values are -1 and *n the count when the tensors tell it (-1 if not).
 * Any slot name may be NULL.
 */
#ifndef OAR_OPS_ATTR_TENSOR_H
#define OAR_OPS_ATTR_TENSOR_H
#include "op.h"

int oar_ic_int_list(oar_infer_ctx_t *c, const char *tslot, const char *lslot, const char *attr,
                    int64_t *v, int max, int *n, bool *known);
int oar_k_int_list(oar_kernel_ctx_t *k, const char *tslot, const char *lslot, const char *attr,
                   int64_t *v, int max, int *n);
/* one number: the one-value tensor input `slot` (any numeric dtype) when
 * given, else attr `attr` (INT/LONG/FLOAT/BOOLEAN); compile time: *known
 * false when the tensor decides */
int oar_ic_scalar(oar_infer_ctx_t *c, const char *slot, const char *attr, double *v, bool *known);
int oar_k_scalar(oar_kernel_ctx_t *k, const char *slot, const char *attr, double *v);
/* Kernels, by slot index (-1: the op has no such slot; names are for
 * messages only). The value of one-value tensor input `slot` when given;
 * *v is left as it is when the input is absent, so the caller seeds it with
 * the decoded attribute. */
int oar_k_scalar_at(oar_kernel_ctx_t *k, int slot, const char *sname, double *v);
/* An int list from 1-D tensor input `tslot`, else the one-value tensors of
 * `lslot`; *given false (v and *n untouched) when neither is present. */
int oar_k_int_list_at(oar_kernel_ctx_t *k, int tslot, const char *tname, int lslot, const char *lname,
                      int64_t *v, int max, int *n, bool *given);
/* an INTS or LONGS attr as int64 (absent: 0 values); false when it has another type */
bool oar_attr_int_list(const oar_op_desc_t *op, const char *name, int64_t *v, int max, int *n);
#endif
