/* comm_mpi.c — the OpenMPI engine of the communication interface (comm.h).
 * Built only when pkg-config finds OpenMPI (OAR_WITH_MPI).
 *
 * Bounded waits: a blocking MPI call on a dead or stuck peer may never
 * return (on shared memory OpenMPI does not notice a dead peer at all). So
 * every data collective first waits for all the workers to arrive: an
 * MPI_Ibarrier followed by an MPI_Test loop with a deadline, which returns
 * an error naming the cause when a worker is gone, stuck, stopped early or
 * runs another program. Then the blocking collective itself (OpenMPI's
 * tuned MPI_Allreduce, much faster than its nonblocking forms for small
 * messages, measured), under a watchdog thread: should a peer die in that
 * short window, the worker prints why and exits at the deadline. MPI_Init, which cannot be made nonblocking, runs in a helper thread
 * that the caller stops waiting for at the deadline (a worker that never
 * joins). The data collectives run on a duplicate of MPI_COMM_WORLD and the
 * program check on a second one, so that a worker checking a changed program
 * can never be matched with another worker's data. */
#ifdef OAR_WITH_MPI
#include "comm.h"
#include "error.h"

#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static MPI_Comm data_comm = MPI_COMM_NULL, check_comm = MPI_COMM_NULL;
static int my_rank, my_size = 1;
static bool finalized;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mpi_fail(int err, const char *who, const char *call)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(err, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", err);
    oar_error(OAR_ERR_COMM, "%s: %s failed on worker %d of %d: %s (a worker died or the job is broken)", who, call,
              my_rank, my_size, s);
    return oar_comm_break();
}

/* The launcher (mpirun) stops every worker with SIGTERM when one of them
 * dies. A worker waiting in a collective then says why it stops, instead
 * of vanishing without a word; the handler is in place only while waiting. */
static const char *waiting_in;
static void on_term(int sig)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg,
                     "oar worker %d: stopped by the launcher (signal %d) while waiting in %s: another worker of the "
                     "job ended or failed (see the launcher's message)\n",
                     my_rank, sig, waiting_in ? waiting_in : "a collective");
    if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)w;
    }
    _exit(128 + sig);
}

static struct sigaction term_old;
static bool term_armed;

static void term_arm(const char *call)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    waiting_in = call;
    term_armed = sigaction(SIGTERM, &sa, &term_old) == 0;
    /* a handler the user installed stays theirs */
    if (term_armed && term_old.sa_handler != SIG_DFL) {
        sigaction(SIGTERM, &term_old, NULL);
        term_armed = false;
    }
}

static void term_disarm(void)
{
    if (term_armed) sigaction(SIGTERM, &term_old, NULL);
    term_armed = false;
}

static int wait_req_(MPI_Request *req, const char *who, const char *call);
static int wait_req(MPI_Request *req, const char *who, const char *call)
{
    term_arm(call);
    int rc = wait_req_(req, who, call);
    term_disarm();
    return rc;
}

/* Waits for req until the job's timeout. MPI makes progress only inside its
 * calls, so the loop tests without pause for a while (a transfer under
 * way), yielding now and then, and then sleeps between tests (a peer that
 * is still computing, or gone). */
static int wait_req_(MPI_Request *req, const char *who, const char *call)
{
    const double t0 = now_s(), limit = oar_comm_timeout();
    for (long i = 0;; i++) {
        int done = 0;
        int err = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) return mpi_fail(err, who, call);
        if (done) return OAR_OK;
        if ((i & 63) != 63) continue;
        double waited = now_s() - t0;
        if (waited < 0.002) continue;   /* a peer a little behind: keep polling */
        if (waited > limit) {
            oar_error(OAR_ERR_COMM,
                      "%s: worker %d of %d waited %.1f s in %s and the other workers did not answer: a worker died, "
                      "hangs, never joined, or runs a different program (the bound is fleet.init{timeout=} or "
                      "OAR_COMM_TIMEOUT)",
                      who, my_rank, my_size, waited, call);
            return oar_comm_break();
        }
        if (waited < 0.1) {
            sched_yield();
        } else {
            struct timespec ts = {0, waited < 1.0 ? 50000 : 500000};
            nanosleep(&ts, NULL);
        }
    }
}

static MPI_Datatype mpi_dtype(int dtype)
{
    switch (dtype) {
    case OAR_FP32: return MPI_FLOAT;
    case OAR_FP64: return MPI_DOUBLE;
    case OAR_INT32: return MPI_INT32_T;
    case OAR_INT64: return MPI_INT64_T;
    case OAR_INT16: return MPI_INT16_T;
    case OAR_INT8: return MPI_INT8_T;
    case OAR_UINT8: return MPI_UINT8_T;
    case OAR_BOOL: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(int op)
{
    switch (op) {
    case OAR_REDUCE_SUM: return MPI_SUM;
    case OAR_REDUCE_MAX: return MPI_MAX;
    case OAR_REDUCE_MIN: return MPI_MIN;
    default: return MPI_PROD;
    }
}

/* ---- the watchdog of blocking calls ------------------------------------ */
static _Atomic long long guard_deadline_ns;   /* 0: not in a blocking call */
static const char *_Atomic guard_call;
static bool guard_started;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
        long long d = guard_deadline_ns;
        if (d > 0 && now_ns() > d) {
            fprintf(stderr, "oar worker %d: %s did not finish within %.0f s although every worker had entered it: "
                    "a worker died or hangs during the collective; ending this process\n", my_rank,
                    guard_call ? guard_call : "a collective", oar_comm_timeout());
            fflush(stderr);
            _exit(1);
        }
    }
    return NULL;
}

/* Waits until every worker reached this collective (bounded, error return). */
static int arrive(const char *who, const char *call)
{
    MPI_Request req;
    int err = MPI_Ibarrier(data_comm, &req);
    if (err != MPI_SUCCESS) return mpi_fail(err, who, call);
    return wait_req_(&req, who, call);
}

static void guard_begin(const char *call)
{
    guard_call = call;
    guard_deadline_ns = now_ns() + (long long)(oar_comm_timeout() * 1e9);
}
static void guard_end(void) { guard_deadline_ns = 0; }

static int allreduce_(void *buf, int64_t count, int dtype, int op, const char *who);
static int mpi_allreduce(void *buf, int64_t count, int dtype, int op, const char *who)
{
    term_arm("MPI_Allreduce");
    int rc = allreduce_(buf, count, dtype, op, who);
    term_disarm();
    return rc;
}

static int allreduce_(void *buf, int64_t count, int dtype, int op, const char *who)
{
    MPI_Datatype dt = mpi_dtype(dtype);
    if (dt == MPI_DATATYPE_NULL)
        return oar_error(OAR_ERR_UNSUPPORTED, "%s: MPI cannot reduce %s data", who,
                         oar_dtype_name(dtype) ? oar_dtype_name(dtype) : "this");
    char *p = buf;
    size_t es = oar_dtype_size(dtype);
    for (int64_t off = 0; off < count; off += OAR_COMM_CHUNK) {
        int n = (int)(count - off < OAR_COMM_CHUNK ? count - off : OAR_COMM_CHUNK);
        OAR_TRY(arrive(who, "MPI_Allreduce"));
        guard_begin("MPI_Allreduce");
        int err = MPI_Allreduce(MPI_IN_PLACE, p + (size_t)off * es, n, dt, mpi_op(op), data_comm);
        guard_end();
        if (err != MPI_SUCCESS) return mpi_fail(err, who, "MPI_Allreduce");
    }
    return OAR_OK;
}

static int broadcast_(void *buf, size_t bytes, int root, const char *who);
static int mpi_broadcast(void *buf, size_t bytes, int root, const char *who)
{
    term_arm("MPI_Bcast");
    int rc = broadcast_(buf, bytes, root, who);
    term_disarm();
    return rc;
}

static int broadcast_(void *buf, size_t bytes, int root, const char *who)
{
    char *p = buf;
    for (size_t off = 0; off < bytes; off += (size_t)OAR_COMM_CHUNK) {
        int n = (int)(bytes - off < (size_t)OAR_COMM_CHUNK ? bytes - off : (size_t)OAR_COMM_CHUNK);
        OAR_TRY(arrive(who, "MPI_Bcast"));
        guard_begin("MPI_Bcast");
        int err = MPI_Bcast(p + off, n, MPI_BYTE, root, data_comm);
        guard_end();
        if (err != MPI_SUCCESS) return mpi_fail(err, who, "MPI_Bcast");
    }
    return OAR_OK;
}

static int gather_on(MPI_Comm comm, const void *send, void *recv, size_t bytes, const char *who)
{
    if (bytes > (size_t)INT_MAX)
        return oar_error(OAR_ERR_RANGE, "%s: %zu bytes per worker; MPI gathers at most %d", who, bytes, INT_MAX);
    char *slot = (char *)recv + (size_t)my_rank * bytes;
    if (bytes > 0 && slot != send) memmove(slot, send, bytes);
    MPI_Request req;
    int err = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)bytes, MPI_BYTE, comm, &req);
    if (err != MPI_SUCCESS) return mpi_fail(err, who, "MPI_Iallgather");
    return wait_req(&req, who, "MPI_Iallgather");
}

static int allgather_(const void *send, void *recv, size_t bytes, const char *who);
static int mpi_allgather(const void *send, void *recv, size_t bytes, const char *who)
{
    term_arm("MPI_Allgather");
    int rc = allgather_(send, recv, bytes, who);
    term_disarm();
    return rc;
}

static int allgather_(const void *send, void *recv, size_t bytes, const char *who)
{
    if (bytes > (size_t)INT_MAX)
        return oar_error(OAR_ERR_RANGE, "%s: %zu bytes per worker; MPI gathers at most %d", who, bytes, INT_MAX);
    char *slot = (char *)recv + (size_t)my_rank * bytes;
    if (bytes > 0 && slot != send) memmove(slot, send, bytes);
    OAR_TRY(arrive(who, "MPI_Allgather"));
    guard_begin("MPI_Allgather");
    int err = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)bytes, MPI_BYTE, data_comm);
    guard_end();
    if (err != MPI_SUCCESS) return mpi_fail(err, who, "MPI_Allgather");
    return OAR_OK;
}

static int mpi_allgather_check(const void *send, void *recv, size_t bytes, const char *who)
{
    return gather_on(check_comm, send, recv, bytes, who);
}

static int mpi_barrier(const char *who)
{
    MPI_Request req;
    int err = MPI_Ibarrier(data_comm, &req);
    if (err != MPI_SUCCESS) return mpi_fail(err, who, "MPI_Ibarrier");
    return wait_req(&req, who, "MPI_Ibarrier");
}

static int mpi_rank(void) { return my_rank; }
static int mpi_size(void) { return my_size; }
static void mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

/* MPI_Finalize is a fence over the job: bounded by a watchdog thread that
 * ends the process when it does not return in time. */
static void *finalize_watchdog(void *arg)
{
    double limit = *(double *)arg;
    struct timespec ts = {(time_t)limit, (long)((limit - (double)(time_t)limit) * 1e9)};
    nanosleep(&ts, NULL);
    fprintf(stderr, "oar worker %d: MPI_Finalize did not return within %.0f s (another worker did not finish); "
            "ending this process\n", my_rank, limit);
    fflush(stderr);
    _exit(1);
    return NULL;
}

static int mpi_finalize(void)
{
    if (finalized) return OAR_OK;
    finalized = true;
    if (oar_comm_broken()[0]) {
        /* a collective is still pending and a peer may be gone: MPI_Finalize
         * could wait forever, so end the whole job instead (mpirun reports it) */
        MPI_Abort(MPI_COMM_WORLD, 1);
        return OAR_ERR_COMM;
    }
    static double limit;
    limit = oar_comm_timeout();
    pthread_t th;
    bool dog = pthread_create(&th, NULL, finalize_watchdog, &limit) == 0;
    if (dog) pthread_detach(th);
    MPI_Comm_free(&check_comm);
    MPI_Comm_free(&data_comm);
    int err = MPI_Finalize();
    if (err != MPI_SUCCESS) return mpi_fail(err, "finalize", "MPI_Finalize");
    return OAR_OK;
}

static void at_exit(void) { mpi_finalize(); }

static const oar_comm_backend_t mpi_engine = {
    .name = "mpi", .allreduce = mpi_allreduce, .broadcast = mpi_broadcast, .allgather = mpi_allgather,
    .allgather_check = mpi_allgather_check, .barrier = mpi_barrier, .rank = mpi_rank, .size = mpi_size,
    .abort = mpi_abort, .finalize = mpi_finalize};

/* ---- start ------------------------------------------------------------------- */
struct init_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, err, provided;
};

static void *init_thread(void *arg)
{
    struct init_wait *w = arg;
    int provided = 0;
    int err = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    w->err = err;
    w->provided = provided;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int dup_comm(MPI_Comm *out)
{
    MPI_Request req;
    int err = MPI_Comm_idup(MPI_COMM_WORLD, out, &req);
    if (err != MPI_SUCCESS) return mpi_fail(err, "init", "MPI_Comm_idup");
    OAR_TRY(wait_req(&req, "init", "MPI_Comm_idup"));
    MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
    return OAR_OK;
}

const oar_comm_backend_t *oar_comm_mpi_start(double timeout_s)
{
    /* LuaJIT loads liboar with RTLD_LOCAL, which hides libmpi's symbols from
     * the OpenMPI components it opens itself; make them global */
    Dl_info info;
    if (dladdr((void *)&MPI_Init_thread, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);

    int already = 0;
    MPI_Initialized(&already);
    if (!already) {
        /* the waiter lives on the heap: a helper stuck in MPI_Init outlives this call */
        struct init_wait *w = calloc(1, sizeof *w);
        if (!w) { oar_error(OAR_ERR_NOMEM, "init: out of memory"); return NULL; }
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        pthread_t th;
        if (pthread_create(&th, NULL, init_thread, w) != 0) {
            oar_error(OAR_ERR_COMM, "init: cannot start a thread for MPI_Init");
            return NULL;
        }
        pthread_detach(th);
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += (time_t)timeout_s;
        dl.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
        if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
        pthread_mutex_lock(&w->mu);
        while (!w->done) {
            if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) != 0 && !w->done) break;
        }
        int done = w->done, err = w->err;
        pthread_mutex_unlock(&w->mu);
        if (!done) {
            oar_error(OAR_ERR_COMM,
                      "init: MPI_Init did not finish within %.0f s: a worker of the job never joined (it failed or "
                      "is stuck before oar.fleet.init, or a host of the hostfile cannot be reached)", timeout_s);
            oar_comm_break();
            return NULL;
        }
        if (err != MPI_SUCCESS) {
            mpi_fail(err, "init", "MPI_Init_thread");
            return NULL;
        }
        atexit(at_exit);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &my_size);
    if (dup_comm(&data_comm) != OAR_OK || dup_comm(&check_comm) != OAR_OK) return NULL;
    if (!guard_started) {
        pthread_t th;
        if (pthread_create(&th, NULL, watchdog, NULL) != 0) {
            oar_error(OAR_ERR_COMM, "init: cannot start the watchdog thread");
            return NULL;
        }
        pthread_detach(th);
        guard_started = true;
    }
    return &mpi_engine;
}
#endif /* OAR_WITH_MPI */
