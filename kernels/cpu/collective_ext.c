/* collective_ext.c — the CPU kernel of c_reducescatter
 * (src/ops/collective_ext.ops): X is summed over the workers with the
 * communication interface's all-reduce (src/comm.h) on a scratch copy, and
 * each worker keeps its rank's part of dim 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "comm.h"
#include "ops/collective_ext.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static int reducescatter(oar_kernel_ctx_t *k)
{
    const oar_crs_attrs_t *a = oar_k_attrs(k);
    const int dt = oar_k_dtype(k);
    const char *xn = nm(oar_k_input_name(k, OAR_CRS_X, 0));
    if (a->ring_id != 0)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "ring_id %d: oar has one communicator (ring 0, every worker of "
                           "the job)", a->ring_id);
    const int size = oar_comm_size(), rank = oar_comm_rank();
    if (a->nranks != size)
        return oar_k_error(k, OAR_ERR_INVALID, "nranks is %d but the job has %d workers", a->nranks, size);
    int rc = oar_comm_check_once(oar_k_program(k), "c_reducescatter");
    if (rc != OAR_OK) {
        char msg[1536];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        return oar_k_error(k, rc, "%s", msg);
    }
    oar_tensor_t *x = oar_k_input(k, OAR_CRS_X, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no value", xn);
    const int64_t n = oar_tensor_numel_of(x), part = n / a->nranks;
    const void *xp = oar_tensor_data(x);
    if (!xp && n > 0) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no data", xn);
    const size_t es = oar_dtype_size(dt);
    void *sum = oar_xmalloc(es * (size_t)(n > 0 ? n : 1));
    if (!sum) return OAR_ERR_NOMEM;
    if (n > 0) memcpy(sum, xp, es * (size_t)n);
    rc = oar_comm_allreduce(sum, n, dt, OAR_REDUCE_SUM);
    if (rc != OAR_OK) {
        char msg[1536];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        free(sum);
        return oar_k_error(k, rc, "%s", msg);
    }
    void *out;
    rc = oar_k_output_sized(k, OAR_CRS_OUT, "Out", dt, part, false, &out);
    if (rc == OAR_OK && part > 0) memcpy(out, (const char *)sum + es * (size_t)(rank * part), es * (size_t)part);
    free(sum);
    return rc;
}

static int reducescatter_f64(oar_kernel_ctx_t *k) { return reducescatter(k); }
static int reducescatter_i32(oar_kernel_ctx_t *k) { return reducescatter(k); }
static int reducescatter_i64(oar_kernel_ctx_t *k) { return reducescatter(k); }
OAR_REGISTER_KERNEL("c_reducescatter", OAR_PLACE_CPU, OAR_FP32, reducescatter)
OAR_REGISTER_KERNEL("c_reducescatter", OAR_PLACE_CPU, OAR_FP64, reducescatter_f64)
OAR_REGISTER_KERNEL("c_reducescatter", OAR_PLACE_CPU, OAR_INT32, reducescatter_i32)
OAR_REGISTER_KERNEL("c_reducescatter", OAR_PLACE_CPU, OAR_INT64, reducescatter_i64)
