/* comm.c — the communication interface: picks the engine at oar_comm_init,
 * dispatches the public oar_comm_* calls to it, and holds the
 * single-process engine (one worker: reductions and broadcasts leave the
 * data as it is, a gather copies). See comm.h. */
#include "comm.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const oar_comm_backend_t *engine;   /* NULL until oar_comm_init */
static double timeout_s = 300.0;
static bool timeout_from_env;
static char note[512];
static char broken[1024];

/* ---- the single-process engine ------------------------------------------ */
static int single_allreduce(void *buf, int64_t count, int dtype, int op, const char *who)
{
    (void)buf; (void)count; (void)dtype; (void)op; (void)who;
    return OAR_OK;
}
static int single_broadcast(void *buf, size_t bytes, int root, const char *who)
{
    (void)buf; (void)bytes;
    if (root != 0) return oar_error(OAR_ERR_RANGE, "%s: root %d is not a worker of a job of 1", who, root);
    return OAR_OK;
}
static int single_allgather(const void *send, void *recv, size_t bytes, const char *who)
{
    (void)who;
    if (bytes > 0 && send != recv) memmove(recv, send, bytes);
    return OAR_OK;
}
static int single_barrier(const char *who) { (void)who; return OAR_OK; }
static int single_rank(void) { return 0; }
static int single_size(void) { return 1; }
static void single_abort(int code) { exit(code); }
static int single_finalize(void) { return OAR_OK; }

static const oar_comm_backend_t single_engine = {
    .name = "single", .allreduce = single_allreduce, .broadcast = single_broadcast,
    .allgather = single_allgather, .allgather_check = single_allgather, .barrier = single_barrier,
    .rank = single_rank, .size = single_size, .abort = single_abort, .finalize = single_finalize};

const oar_comm_backend_t *oar_comm_single(void) { return &single_engine; }

/* ---- job detection ------------------------------------------------------- */
static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return (*end || n < 0 || n > 1 << 24) ? -1 : (int)n;
}

bool oar_comm_launched(int *size)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", NULL};
    static const char *const marks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};
    int n = 0;
    bool launched = false;
    for (int i = 0; sizes[i]; i++) {
        int v = env_int(sizes[i]);
        if (v > 0) { n = v; launched = true; break; }
    }
    for (int i = 0; marks[i] && !launched; i++)
        if (env_int(marks[i]) >= 0) launched = true;
    if (size) *size = n;
    return launched;
}

bool oar_comm_compiled_with_mpi(void)
{
#ifdef OAR_WITH_MPI
    return true;
#else
    return false;
#endif
}

/* ---- init and state -------------------------------------------------------- */
static void read_env_timeout(void)
{
    if (timeout_from_env) return;
    timeout_from_env = true;
    const char *v = getenv("OAR_COMM_TIMEOUT");
    if (v && *v) {
        char *end;
        double s = strtod(v, &end);
        if (!*end && s > 0) timeout_s = s;
    }
}

int oar_comm_init(double t)
{
    read_env_timeout();
    if (t > 0) OAR_TRY(oar_comm_set_timeout(t));
    if (engine) return OAR_OK;
    int asked = 0;
    bool launched = oar_comm_launched(&asked);
    note[0] = '\0';
    if (!launched) {
        engine = &single_engine;
        return OAR_OK;
    }
#ifdef OAR_WITH_MPI
    const oar_comm_backend_t *e = oar_comm_mpi_start(timeout_s);
    if (!e) return OAR_ERR_COMM;
    engine = e;
    return OAR_OK;
#else
    if (asked != 1)
        snprintf(note, sizeof note,
                 "a launcher started this process as one of %d workers, but oar was built without MPI "
                 "(pkg-config found no OpenMPI: install libopenmpi-dev and rebuild); each process runs "
                 "alone as worker 0 of 1", asked);
    engine = &single_engine;
    return OAR_OK;
#endif
}

bool oar_comm_initialized(void) { return engine != NULL; }
const char *oar_comm_backend_name(void) { return engine ? engine->name : "none"; }
const char *oar_comm_note(void) { return note; }
const char *oar_comm_broken(void) { return broken; }

int oar_comm_break(void)
{
    if (!broken[0]) snprintf(broken, sizeof broken, "%s", oar_last_error());
    return OAR_ERR_COMM;
}

int oar_comm_set_timeout(double s)
{
    read_env_timeout();
    if (!(s > 0) || s > 1e7)
        return oar_error(OAR_ERR_INVALID, "the communication timeout must be in (0, 1e7] seconds, got %g", s);
    timeout_s = s;
    return OAR_OK;
}

double oar_comm_timeout(void)
{
    read_env_timeout();
    return timeout_s;
}

/* joins as a lone worker when nobody called oar_comm_init */
static int ready(const char *who)
{
    if (!engine) {
        int rc = oar_comm_init(0);
        if (rc != OAR_OK) return rc;
    }
    if (broken[0])
        return oar_error(OAR_ERR_COMM, "%s: the job's communication failed earlier and cannot be used again: %s",
                         who, broken);
    return OAR_OK;
}

int oar_comm_rank_for_messages(void) { return engine ? engine->rank() : -1; }
int oar_comm_rank(void)
{
    if (!engine) oar_comm_init(0);
    return engine ? engine->rank() : 0;
}

int oar_comm_size(void)
{
    if (!engine) oar_comm_init(0);
    return engine ? engine->size() : 1;
}

int oar_comm_allreduce(void *buf, int64_t count, int dtype, int op)
{
    OAR_TRY(ready("allreduce"));
    if (count < 0 || (count > 0 && !buf)) return oar_error(OAR_ERR_INVALID, "allreduce: bad buffer or count %lld", (long long)count);
    if (op < OAR_REDUCE_SUM || op > OAR_REDUCE_PROD) return oar_error(OAR_ERR_INVALID, "allreduce: unknown reduction %d", op);
    if (engine->size() == 1 || count == 0) return OAR_OK;
    return engine->allreduce(buf, count, dtype, op, "allreduce");
}

int oar_comm_broadcast(void *buf, size_t bytes, int root)
{
    OAR_TRY(ready("broadcast"));
    if (bytes > 0 && !buf) return oar_error(OAR_ERR_INVALID, "broadcast: NULL buffer");
    if (root < 0 || root >= engine->size())
        return oar_error(OAR_ERR_RANGE, "broadcast: root %d is not a worker (the job has %d)", root, engine->size());
    if (engine->size() == 1 || bytes == 0) return OAR_OK;
    return engine->broadcast(buf, bytes, root, "broadcast");
}

int oar_comm_allgather(const void *send, void *recv, size_t bytes)
{
    OAR_TRY(ready("allgather"));
    if (bytes > 0 && (!send || !recv)) return oar_error(OAR_ERR_INVALID, "allgather: NULL buffer");
    return engine->allgather(send, recv, bytes, "allgather");
}

int oar_comm_barrier(void)
{
    OAR_TRY(ready("barrier"));
    return engine->barrier("barrier");
}

void oar_comm_abort(int code, const char *why)
{
    fprintf(stderr, "oar worker %d: ending the job: %s\n", oar_comm_rank_for_messages(), why ? why : "abort");
    fflush(stderr);
    if (engine) engine->abort(code);
    exit(code);
}

int oar_comm_finalize(void)
{
    if (!engine) return OAR_OK;
    int rc = engine->finalize();
    return rc;
}

int oar_comm_allgather_check(const void *send, void *recv, size_t bytes, const char *who)
{
    OAR_TRY(ready(who));
    return engine->allgather_check(send, recv, bytes, who);
}
