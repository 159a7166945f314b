/* comm.h — the communication backend behind the collective ops.
 *
 * One small ops table, filled by one engine: OpenMPI (src/comm_mpi.c, built
 * when pkg-config finds it: OAR_WITH_MPI) between processes and machines,
 * or the single-process fallback (src/comm.c). The collective ops' CPU
 * kernels call the public oar_comm_* functions (oar.h), which dispatch here;
 * the CUDA kernels use NCCL and only borrow broadcast to send NCCL's unique id.
 *
 * Every blocking call is bounded by the job's timeout: an engine returns
 * OAR_ERR_COMM with a message naming the call and the cause when the other
 * workers do not answer in time or the engine reports an error, and from
 * then on the communicator is broken (every later call fails at once,
 * naming the first failure). `who` names the caller (an op type) in errors. */
#ifndef OAR_COMM_H
#define OAR_COMM_H
#include "oar.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oar_comm_backend {
    const char *name;
    int (*allreduce)(void *buf, int64_t count, int dtype, int op, const char *who);
    int (*broadcast)(void *buf, size_t bytes, int root, const char *who);
    int (*allgather)(const void *send, void *recv, size_t bytes, const char *who);
    /* the same on a second communicator, so that a worker checking its
     * program can never be matched with another worker's data collective */
    int (*allgather_check)(const void *send, void *recv, size_t bytes, const char *who);
    int (*barrier)(const char *who);
    int (*rank)(void);
    int (*size)(void);
    void (*abort)(int code);
    int (*finalize)(void);
} oar_comm_backend_t;

/* the single-process engine (always built) */
const oar_comm_backend_t *oar_comm_single(void);
#ifdef OAR_WITH_MPI
/* Starts MPI (bounded by timeout_s: a worker that never joins is an error)
 * and returns its engine, or NULL with the error set. */
const oar_comm_backend_t *oar_comm_mpi_start(double timeout_s);
#endif
/* true when a launcher (mpirun, srun) started this process as one of a job;
 * *size gets the size it announced (0 when unknown) */
bool oar_comm_launched(int *size);
/* oar_comm_broken (oar.h): the message of the failure that broke the communicator */
/* Marks the communicator broken with the current oar_last_error() message;
 * returns OAR_ERR_COMM. */
int oar_comm_break(void);
/* allgather on the program check's own communicator (comm_check.c) */
int oar_comm_allgather_check(const void *send, void *recv, size_t bytes, const char *who);
/* For collective kernels: checks p across the workers (oar_comm_check_program)
 * the first time a program, or a new version of it, runs a collective. */
OAR_API int oar_comm_check_once(const oar_program_t *p, const char *who);
/* the rank to print in messages (-1 before init) */
int oar_comm_rank_for_messages(void);
/* the chunk size an engine splits large messages into (elements) */
#define OAR_COMM_CHUNK ((int64_t)1 << 28)

#ifdef __cplusplus
}
#endif
#endif
