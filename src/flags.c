/* flags.c — process-wide runtime flags (Fluid's FLAGS_*). */
#include "op.h"
#include "profiler.h"
#include "bounded.h"
#include "backend_count.h"
#include "device.h"

#include <omp.h>
#include <string.h>

int oar_flag_check_nan_inf = 0;
int oar_flag_memory_plan = 1;   /* release temporaries after their last use */
static int g_num_threads = 0;   /* 0: never set, report OpenMP's default */
int64_t oar_flag_max_while_iterations = 0;
int64_t oar_flag_inference_max_while_iterations = 1000000;

int oar_set_flag(const char *name, int64_t value)
{
    if (!name) return oar_error(OAR_ERR_INVALID, "oar_set_flag: NULL flag name");
    if (strcmp(name, "check_nan_inf") == 0) {
        if (value != 0 && value != 1)
            return oar_error(OAR_ERR_INVALID, "flag check_nan_inf takes 0 or 1, got %lld", (long long)value);
        oar_flag_check_nan_inf = (int)value;
        return OAR_OK;
    }
    if (strcmp(name, "profile") == 0) {
        if (value != 0 && value != 1)
            return oar_error(OAR_ERR_INVALID, "flag profile takes 0 or 1, got %lld", (long long)value);
        oar_flag_profile = (int)value;
        return OAR_OK;
    }
    if (strcmp(name, "memory_plan") == 0) {
        if (value != 0 && value != 1)
            return oar_error(OAR_ERR_INVALID, "flag memory_plan takes 0 or 1, got %lld", (long long)value);
        oar_flag_memory_plan = (int)value;
        return OAR_OK;
    }
    /* the CUDA place's counters and debug switch (backend_count.c, device.c) */
    int *sw = strcmp(name, "count_kernels") == 0 ? &oar_flag_count_kernels
            : strcmp(name, "cuda_sync_each_op") == 0 ? &oar_flag_cuda_sync_each_op : NULL;
    if (sw) {
        if (value != 0 && value != 1)
            return oar_error(OAR_ERR_INVALID, "flag %s takes 0 or 1, got %lld", name, (long long)value);
        *sw = (int)value;
        return OAR_OK;
    }
    if (strcmp(name, "num_threads") == 0) {
        if (value < 1 || value > 4096)
            return oar_error(OAR_ERR_INVALID, "flag num_threads takes 1 to 4096, got %lld", (long long)value);
        /* one pool: OpenMP's. OpenBLAS stays on one thread (kernels/cpu/gemm.h) */
        g_num_threads = (int)value;
        omp_set_num_threads(g_num_threads);
        return OAR_OK;
    }
    if (strcmp(name, "max_while_iterations") == 0 || strcmp(name, "inference_max_while_iterations") == 0) {
        if (value < 0)
            return oar_error(OAR_ERR_INVALID, "flag %s takes 0 (no bound) or more, got %lld", name, (long long)value);
        *(name[0] == 'm' ? &oar_flag_max_while_iterations : &oar_flag_inference_max_while_iterations) = value;
        return OAR_OK;
    }
    return oar_error(OAR_ERR_NOT_FOUND, "unknown flag '%s' (known: check_nan_inf, count_kernels, cuda_sync_each_op, inference_max_while_iterations, "
                     "max_while_iterations, memory_plan, num_threads, profile)", name);
}

int64_t oar_get_flag(const char *name)
{
    if (!name) {
        oar_error(OAR_ERR_INVALID, "oar_get_flag: NULL flag name");
        return -1;
    }
    if (strcmp(name, "check_nan_inf") == 0) return oar_flag_check_nan_inf;
    if (strcmp(name, "profile") == 0) return oar_flag_profile;
    if (strcmp(name, "memory_plan") == 0) return oar_flag_memory_plan;
    if (strcmp(name, "count_kernels") == 0) return oar_flag_count_kernels;
    if (strcmp(name, "cuda_sync_each_op") == 0) return oar_flag_cuda_sync_each_op;
    if (strcmp(name, "num_threads") == 0) return g_num_threads > 0 ? g_num_threads : omp_get_max_threads();
    if (strcmp(name, "max_while_iterations") == 0) return oar_flag_max_while_iterations;
    if (strcmp(name, "inference_max_while_iterations") == 0) return oar_flag_inference_max_while_iterations;
    oar_error(OAR_ERR_NOT_FOUND, "unknown flag '%s' (known: check_nan_inf, count_kernels, cuda_sync_each_op, inference_max_while_iterations, "
              "max_while_iterations, memory_plan, num_threads, profile)", name);
    return -1;
}
