/* sched.c — the request queue and the worker threads. An HTTP thread
 * queues its checked request as a job and waits for it until its deadline;
 * worker w (its own thread, predictor w) takes the job at the head, and with
 * --max-batch > 1 gathers the queued jobs that stack with it (batch.c) until
 * the batch has max_batch rows or batch_timeout has passed since the first
 * job came; one worker gathers at a time, so the others do not take the
 * jobs it waits for. A job past its deadline answers 504 at once: taken out
 * of the queue if it is still there, else left to its worker, which
 * cancels its run when every job in it has been given up and frees it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "serve.h"

/* a bound on the requests one run serves (each brings at least one row), so
 * that a huge --max-batch does not size the workers' arrays */
#define SERVE_MAX_BATCH_JOBS 1024

enum { QUEUED, TAKEN, RUNNING, DONE };   /* TAKEN: in a batch being gathered */

typedef struct job {
    serve_request_t req;
    serve_result_t res;
    int status;
    char err[SERVE_ERRLEN];
    double arrived, deadline;    /* deadline 0: none */
    int64_t rows;                /* serve_batch_rows: -1 runs alone */
    int state, refs, worker;
    bool abandoned;
    pthread_cond_t cv;           /* DONE */
    struct job *next;
} job_t;

struct serve_sched {
    serve_model_t *model;
    int nworkers, max_batch;
    int max_jobs;                /* requests in one run: at most max_batch, and SERVE_MAX_BATCH_JOBS */
    double batch_timeout;
    bool batching, stopping, gathering;
    job_t *head, *tail;
    int *live;                   /* per worker: jobs in its run not given up */
    int nqueued, nrunning;       /* for the metrics' gauges */
    pthread_mutex_t mu;
    pthread_cond_t queued;       /* a job came, a gatherer is done, or stop */
    pthread_condattr_t monotonic;
    pthread_t *threads; int nthreads;
};

double serve_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct timespec abs_time(double t) {
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    return ts;
}

static void job_unref(job_t *j) {   /* under s->mu */
    if (--j->refs > 0) return;
    serve_request_free(&j->req);
    serve_result_free(&j->res);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static void unlink_job(serve_sched_t *s, job_t *j) {
    job_t **p = &s->head, *prev = NULL;
    while (*p && *p != j) { prev = *p; p = &(*p)->next; }
    if (!*p) return;
    *p = j->next;
    if (s->tail == j) s->tail = prev;
    j->next = NULL;
    serve_metrics_gauges(--s->nqueued, s->nrunning);
}

/* the jobs of the next run, taken out of the queue (under s->mu; returns
 * with it held); 0 when stopping */
static int take(serve_sched_t *s, job_t **batch) {
    while (!s->stopping && (!s->head || s->gathering)) pthread_cond_wait(&s->queued, &s->mu);
    if (s->stopping) return 0;
    job_t *first = s->head;
    unlink_job(s, first);
    first->state = TAKEN;
    batch[0] = first;
    int n = 1;
    if (!s->batching || first->rows < 0 || first->rows >= s->max_batch) return n;
    s->gathering = true;
    int64_t rows = first->rows;
    double until = first->arrived + s->batch_timeout;
    for (;;) {
        for (job_t *j = s->head, *next; j && rows < s->max_batch && n < s->max_jobs; j = next) {
            next = j->next;
            if (j->rows < 0 || rows + j->rows > s->max_batch ||
                !serve_batch_compatible(s->model, &first->req, &j->req)) continue;
            unlink_job(s, j);
            j->state = TAKEN;
            batch[n++] = j;
            rows += j->rows;
        }
        if (rows >= s->max_batch || n >= s->max_jobs || s->stopping || serve_now() >= until) break;
        struct timespec ts = abs_time(until);
        pthread_cond_timedwait(&s->queued, &s->mu, &ts);
    }
    s->gathering = false;
    pthread_cond_broadcast(&s->queued);
    return n;
}

typedef struct { serve_sched_t *s; int w; } worker_arg_t;

static void *worker(void *arg) {
    serve_sched_t *s = ((worker_arg_t *)arg)->s;
    int w = ((worker_arg_t *)arg)->w;
    free(arg);
    int cap = s->max_jobs;
    job_t **batch = calloc((size_t)cap, sizeof *batch), **run = calloc((size_t)cap, sizeof *run);
    serve_request_t **reqs = calloc((size_t)cap, sizeof *reqs);
    int *status = calloc((size_t)cap, sizeof *status);
    serve_result_t *res = calloc((size_t)cap, sizeof *res);
    char (*err)[SERVE_ERRLEN] = calloc((size_t)cap, sizeof *err);
    if (!batch || !run || !reqs || !status || !res || !err) {
        fprintf(stderr, "oar serve: worker %d: out of memory\n", w);
        goto out;
    }
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int n = take(s, batch);
        if (n == 0) break;
        /* those already past their deadline do not run */
        int k = 0;
        double now = serve_now();
        for (int i = 0; i < n; i++) {
            job_t *j = batch[i];
            if (j->abandoned || (j->deadline > 0 && now >= j->deadline)) {
                j->status = 504;
                snprintf(j->err, sizeof j->err, "the request's deadline passed before the model ran it");
                j->state = DONE;
                pthread_cond_signal(&j->cv);
                job_unref(j);
                continue;
            }
            j->state = RUNNING;
            j->worker = w;
            run[k] = j;
            reqs[k++] = &j->req;
        }
        if (k == 0) continue;
        s->live[w] = k;
        s->nrunning += k;
        serve_metrics_gauges(s->nqueued, s->nrunning);
        pthread_mutex_unlock(&s->mu);

        int fell_back = serve_batch_run(s->model, w, reqs, k, s->batching, status, res, err);

        pthread_mutex_lock(&s->mu);
        s->live[w] = 0;
        s->nrunning -= k;
        serve_metrics_gauges(s->nqueued, s->nrunning);
        if (fell_back && s->batching) {
            s->batching = false;
            fprintf(stderr, "oar serve: note: an output's first dimension is not the batch's rows: dynamic batching "
                            "is off, each request runs on its own\n");
        }
        for (int i = 0; i < k; i++) {
            job_t *j = run[i];
            j->status = status[i];
            j->res = res[i];
            memcpy(j->err, err[i], sizeof j->err);
            j->state = DONE;
            pthread_cond_signal(&j->cv);
            job_unref(j);
        }
    }
    pthread_mutex_unlock(&s->mu);
out:
    free(batch); free(run); free(reqs); free(status); free(res); free(err);
    return NULL;
}

int serve_sched_start(serve_model_t *m, int workers, int max_batch, int batch_timeout_ms, serve_sched_t **out,
                      char *err, size_t errlen) {
    serve_sched_t *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
    s->model = m;
    s->nworkers = workers;
    s->max_batch = max_batch > 1 ? max_batch : 1;
    s->batch_timeout = batch_timeout_ms / 1000.0;
    s->batching = s->max_batch > 1;
    s->max_jobs = s->max_batch < SERVE_MAX_BATCH_JOBS ? s->max_batch : SERVE_MAX_BATCH_JOBS;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&s->monotonic);
    pthread_condattr_setclock(&s->monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&s->queued, &s->monotonic);
    s->live = calloc((size_t)workers, sizeof *s->live);
    s->threads = calloc((size_t)workers, sizeof *s->threads);
    if (!s->live || !s->threads) { snprintf(err, errlen, "out of memory"); serve_sched_stop(s); return -1; }
    for (int w = 0; w < workers; w++) {
        worker_arg_t *a = malloc(sizeof *a);
        if (!a) { snprintf(err, errlen, "out of memory"); serve_sched_stop(s); return -1; }
        a->s = s;
        a->w = w;
        int rc = pthread_create(&s->threads[w], NULL, worker, a);
        if (rc) {
            free(a);
            snprintf(err, errlen, "cannot start worker thread %d: %s", w, strerror(rc));
            serve_sched_stop(s);
            return -1;
        }
        s->nthreads = w + 1;
    }
    *out = s;
    return 0;
}

int serve_sched_infer(serve_sched_t *s, serve_request_t *req, double deadline, serve_result_t *res, char *err,
                      size_t errlen) {
    memset(res, 0, sizeof *res);
    int rc = serve_model_check(s->model, req, err, errlen);
    if (rc) return rc;
    job_t *j = calloc(1, sizeof *j);
    if (!j) { snprintf(err, errlen, "out of memory"); return 500; }
    j->req = *req;
    memset(req, 0, sizeof *req);
    req->timeout_us = -1;
    j->arrived = serve_now();
    j->deadline = deadline;
    j->rows = serve_batch_rows(s->model, &j->req);
    j->refs = 2;   /* this thread's and the worker's */
    j->state = QUEUED;
    pthread_cond_init(&j->cv, &s->monotonic);
    pthread_mutex_lock(&s->mu);
    if (s->tail) s->tail->next = j; else s->head = j;
    s->tail = j;
    serve_metrics_gauges(++s->nqueued, s->nrunning);
    pthread_cond_broadcast(&s->queued);
    struct timespec ts = abs_time(deadline);
    while (j->state != DONE) {
        if (deadline <= 0) { pthread_cond_wait(&j->cv, &s->mu); continue; }
        if (pthread_cond_timedwait(&j->cv, &s->mu, &ts) == ETIMEDOUT && j->state != DONE) break;
    }
    int status;
    if (j->state == DONE) {
        status = j->status;
        if (status == 200) { *res = j->res; memset(&j->res, 0, sizeof j->res); }
        else snprintf(err, errlen, "%s", j->err);
    } else {
        status = 504;
        if (j->state == QUEUED) {
            unlink_job(s, j);
            j->refs--;   /* no worker will see it */
            snprintf(err, errlen, "the request's deadline passed while it waited for a worker");
        } else {
            j->abandoned = true;
            if (j->state == RUNNING && --s->live[j->worker] == 0) serve_model_cancel(s->model, j->worker);
            snprintf(err, errlen, "the request's deadline passed while the model ran it");
        }
    }
    job_unref(j);
    pthread_mutex_unlock(&s->mu);
    return status;
}

void serve_sched_stop(serve_sched_t *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->queued);
    pthread_mutex_unlock(&s->mu);
    for (int w = 0; w < s->nthreads; w++) pthread_join(s->threads[w], NULL);
    /* the HTTP side has stopped: no job is queued, nobody waits */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->queued);
    pthread_condattr_destroy(&s->monotonic);
    free(s->live);
    free(s->threads);
    free(s);
}
