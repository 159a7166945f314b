/*
 * sequence_args.cuh — what the CUDA kernels of the sequence ops share
 * (sequence.cu, sequence_conv.cu): outputs by slot index with the CPU
 * kernels' checks and messages (inputs: cuda_common.h's in_checked), the
 * host LoD offsets copied to the device (one small copy per call), and the
 * row -> sequence search.
 */
#ifndef OAR_CUDA_SEQUENCE_ARGS_CUH
#define OAR_CUDA_SEQUENCE_ARGS_CUH
#include "cuda_common.h"
extern "C" {
#include "ops/sequence_util.h"
#include "ops/seq_lod.h"
}

namespace oarcu {
namespace seq {

/* Output `slot` holding `numel` elements (sized by inference) of dtype on
 * the kernel's device; absent: *p NULL when `optional`, else an error. */
inline int output(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel, bool optional, void **p)
{
    return oar_k_output_sized(k, slot, name, dtype, numel, optional, p);
}
/* n host int64 values (n >= 0) copied into fresh device scratch s */
int offsets_to_device(oar_kernel_ctx_t *k, Scratch &s, const int64_t *h, int64_t n, const char *what);

/* the last s in [0, n) with offs[s] <= r, offs nondecreasing with
 * offs[0] <= r: the sequence holding row r; -1 when r < offs[0] */
__device__ inline int64_t seq_of(const int64_t *offs, int64_t n, int64_t r)
{
    int64_t lo = 0, hi = n;   /* the first index with offs[idx] > r lies in [lo, hi] */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (offs[mid] <= r) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* element count of one row (product of dims[1..]) */
static inline int64_t row_width(const oar_tensor_t *t)
{
    int64_t w = 1;
    for (int i = 1; i < t->ndim; i++) w *= t->dims[i];
    return w;
}

}  // namespace seq
}  // namespace oarcu
#endif
