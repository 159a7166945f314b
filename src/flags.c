/* flags.c — process-wide runtime flags (Fluid's FLAGS_*). */
#include "op.h"
#include "profiler.h"

#include <omp.h>
#include <string.h>

int oar_flag_check_nan_inf = 0;
int oar_flag_memory_plan = 1;   /* release temporaries after their last use */
static int g_num_threads = 0;   /* 0: never set, report OpenMP's default */

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
    if (strcmp(name, "num_threads") == 0) {
        if (value < 1 || value > 4096)
            return oar_error(OAR_ERR_INVALID, "flag num_threads takes 1 to 4096, got %lld", (long long)value);
        /* one pool: OpenMP's. OpenBLAS stays on one thread (kernels/cpu/gemm.h) */
        g_num_threads = (int)value;
        omp_set_num_threads(g_num_threads);
        return OAR_OK;
    }
    return oar_error(OAR_ERR_NOT_FOUND, "unknown flag '%s' (known: check_nan_inf, memory_plan, num_threads, profile)", name);
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
    if (strcmp(name, "num_threads") == 0) return g_num_threads > 0 ? g_num_threads : omp_get_max_threads();
    oar_error(OAR_ERR_NOT_FOUND, "unknown flag '%s' (known: check_nan_inf, memory_plan, num_threads, profile)", name);
    return -1;
}
