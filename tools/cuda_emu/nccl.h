/* tools/cuda_emu/nccl.h — the emulated NCCL of tools/cuda_emu (see run): the
 * subset kernels/cuda/collective.cu calls, with NCCL's names and values,
 * carried by oar's own communication interface (oar_comm_*: OpenMPI between
 * the processes of an mpirun job, or one worker) on host memory, which is
 * the emulator's device memory. emu_nccl.cpp implements it. Not NCCL: no
 * streams (every call completes before it returns), no GPUs. */
#ifndef EMU_NCCL_H
#define EMU_NCCL_H
#include <stddef.h>

typedef struct emu_nccl_comm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef enum {
    ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
    ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7
} ncclResult_t;
typedef enum {
    ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
    ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8
} ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;
typedef struct { size_t size; unsigned magic, version; int blocking; } ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER { sizeof(ncclConfig_t), 0xcafebeef, 0, 1 }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
/* blocking = 0: returns ncclInProgress, and the first ncclCommGetAsyncError
 * says ncclInProgress too, as a real non-blocking init may */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async);
ncclResult_t ncclCommAbort(ncclComm_t comm);
const char *ncclGetErrorString(ncclResult_t r);
const char *ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                           ncclComm_t comm, void *stream);
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                           void *stream);
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclComm_t comm,
                           void *stream);
#endif
