/* dtype.c — element sizes and names of Fluid's VarType dtypes. */
#include "oar.h"

#include <string.h>

static const struct { int dtype; size_t size; const char *name; } g_dtypes[] = {
    { OAR_BOOL,  1, "bool" },    { OAR_INT16, 2, "int16" },   { OAR_INT32, 4, "int32" },
    { OAR_INT64, 8, "int64" },   { OAR_FP16,  2, "float16" }, { OAR_FP32,  4, "float32" },
    { OAR_FP64,  8, "float64" }, { OAR_UINT8, 1, "uint8" },   { OAR_INT8,  1, "int8" },
};
#define NDTYPES (sizeof g_dtypes / sizeof g_dtypes[0])

size_t oar_dtype_size(int dtype)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (g_dtypes[i].dtype == dtype) return g_dtypes[i].size;
    return 0;
}

const char *oar_dtype_name(int dtype)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (g_dtypes[i].dtype == dtype) return g_dtypes[i].name;
    return NULL;
}

/* Exact names only: accepting aliases here would make two spellings of one
 * dtype round-trip differently through oar_dtype_name. */
int oar_dtype_from_name(const char *name)
{
    if (!name) return -1;
    for (size_t i = 0; i < NDTYPES; i++)
        if (strcmp(g_dtypes[i].name, name) == 0) return g_dtypes[i].dtype;
    return -1;
}

