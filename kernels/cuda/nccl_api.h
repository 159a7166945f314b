/*
 * nccl_api.h — the part of NCCL's C interface the collective ops use
 * (kernels/cuda/collective.cu), declared here instead of taken from
 * nccl.h, so the backend builds on a machine without NCCL and never links
 * it: collective.cu opens the library when a collective op first runs and
 * reaches these functions through the table below.
 *
 * These are NCCL's stable ABI since 2.14 (the first with
 * ncclCommInitRankConfig): the communicator is an opaque pointer, the
 * unique id 128 bytes passed by value, the result/dtype/reduction enums
 * ints with fixed values, and the config struct versioned by its own size
 * field: NCCL reads only the `size` bytes it is given and takes its
 * defaults for the rest, so the prefix declared here (up to `blocking`) is
 * a complete config. Where nccl.h is found at build time,
 * collective.cu checks every value and layout here against it
 * (OAR_NCCL_ABI_CHECK). tools/cuda_emu/emu_nccl.cpp implements the same
 * functions, under their NCCL names, over oar's MPI engine.
 */
#ifndef OAR_NCCL_API_H
#define OAR_NCCL_API_H
#include <stddef.h>

namespace oarnccl {

typedef struct opaque_comm *Comm;                /* ncclComm_t */
struct UniqueId { char internal[128]; };         /* ncclUniqueId */
enum Result {                                    /* ncclResult_t */
    Success = 0, UnhandledCudaError = 1, SystemError = 2, InternalError = 3, InvalidArgument = 4,
    InvalidUsage = 5, RemoteError = 6, InProgress = 7
};
enum DataType {                                  /* ncclDataType_t */
    Int8 = 0, Uint8 = 1, Int32 = 2, Uint32 = 3, Int64 = 4, Uint64 = 5, Float16 = 6, Float32 = 7, Float64 = 8
};
enum RedOp { Sum = 0, Prod = 1, Max = 2, Min = 3 };   /* ncclRedOp_t */
/* the first fields of ncclConfig_t; `size` says how many bytes NCCL reads */
struct Config {
    size_t size;
    unsigned magic, version;
    int blocking;
};
constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr int kMinVersion = 21400;               /* NCCL_VERSION(2, 14, 0): 2.14.0 */
/* a non-blocking config: NCCL reads size..blocking and defaults the rest */
inline Config nonblocking_config()
{
    Config c;
    c.size = offsetof(Config, blocking) + sizeof(int);
    c.magic = kConfigMagic;
    c.version = (unsigned)kMinVersion;
    c.blocking = 0;
    return c;
}

/* the functions, as NCCL exports them (extern "C"; streams are cudaStream_t,
 * a pointer) */
struct Api {
    Result (*GetVersion)(int *version);
    Result (*GetUniqueId)(UniqueId *id);
    Result (*CommInitRankConfig)(Comm *comm, int nranks, UniqueId id, int rank, Config *config);
    Result (*CommGetAsyncError)(Comm comm, Result *async);
    Result (*CommAbort)(Comm comm);
    const char *(*GetErrorString)(Result r);
    const char *(*GetLastError)(Comm comm);
    Result (*AllReduce)(const void *send, void *recv, size_t count, DataType dt, RedOp op, Comm comm, void *stream);
    Result (*Broadcast)(const void *send, void *recv, size_t count, DataType dt, int root, Comm comm, void *stream);
    Result (*AllGather)(const void *send, void *recv, size_t count, DataType dt, Comm comm, void *stream);
};

}  // namespace oarnccl
#endif
