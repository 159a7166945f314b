/* backend_count.h — kernel calls per (op type, place) (backend_count.c). */
#ifndef OAR_BACKEND_COUNT_H
#define OAR_BACKEND_COUNT_H
#include "oar.h"

/* flag count_kernels: the executor counts every kernel call */
extern int oar_flag_count_kernels;
void oar_kernel_count(const char *op_type, int place);
#endif
