/* fuzz_run.c — libFuzzer target that parses a program and runs it.
 *
 * A program that parses is run on small inputs: every LoD-tensor variable of
 * block 0 gets a tensor made from its var desc (unknown dims become 2, every
 * dim at most 4, values small and derived from the input bytes, one LoD
 * level where the desc has one); persistables go into the scope, the rest
 * are fed. Whatever the program does, the run must end with a status (and
 * a message when it fails): never a crash, a sanitizer report or a hang.
 * Work is bounded: while loops stop after 64 iterations (the flag), and an
 * interval timer cancels a run still going after 2 s (oar_executor_cancel
 * from a signal handler, as the API allows). Programs with save/load ops are
 * skipped: they would touch the file system. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "oar.h"

/* allocations too large for the sanitizer become NULL: oar must refuse them cleanly */
const char *__asan_default_options(void) { return "allocator_may_return_null=1:detect_leaks=1"; }

static oar_executor_t *g_exe;

static void on_alarm(int sig) { (void)sig; oar_executor_cancel(g_exe); }

static void finding(const char *what) {
    fprintf(stderr, "fuzz_run: %s (last error: %s)\n", what, oar_last_error());
    abort();
}

static int g_ready;
static void setup(void) {
    if (g_ready) return;
    g_ready = 1;
    oar_set_flag("max_while_iterations", 64);
    oar_set_flag("num_threads", 1);
    if (oar_executor_new(OAR_PLACE_CPU, 0, &g_exe) != OAR_OK) finding("no executor");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
}

static bool touches_files(oar_program_t *p) {
    for (int b = 0; b < oar_program_num_blocks(p); b++) {
        oar_block_t *blk = oar_program_block(p, b);
        for (int i = 0; i < oar_block_num_ops(blk); i++) {
            const char *t = oar_op_desc_type(oar_block_op_at(blk, i));
            if (strcmp(t, "save") == 0 || strcmp(t, "load") == 0 || strcmp(t, "save_combine") == 0 ||
                strcmp(t, "load_combine") == 0)
                return true;
        }
    }
    return false;
}

/* a small tensor for var v, its values from seed */
static oar_tensor_t *make_input(const oar_var_desc_t *v, uint32_t seed) {
    int dtype = oar_var_desc_dtype(v);
    if (dtype < 0) dtype = OAR_FP32;
    int nd = oar_var_desc_ndim(v);
    const int64_t *vd = oar_var_desc_dims(v);
    int64_t dims[9];
    if (nd < 0) { nd = 1; dims[0] = 2; }
    else
        for (int i = 0; i < nd; i++) dims[i] = vd[i] < 0 ? 2 : (vd[i] > 4 ? 4 : vd[i]);
    oar_tensor_t *t = NULL;
    if (oar_tensor_new(dtype, dims, nd, &t) != OAR_OK) return NULL;
    uint8_t *p = oar_tensor_data(t);
    int64_t n = oar_tensor_numel(t);
    for (int64_t i = 0; p && i < n; i++) {
        uint32_t r = (seed = seed * 1103515245u + 12345u) >> 16;
        switch (dtype) {
        case OAR_FP32: ((float *)p)[i] = (float)((int)(r % 9) - 4) * 0.5f; break;
        case OAR_FP64: ((double *)p)[i] = (double)((int)(r % 9) - 4) * 0.5; break;
        case OAR_INT32: ((int32_t *)p)[i] = (int32_t)(r % 3); break;
        case OAR_INT64: ((int64_t *)p)[i] = (int64_t)(r % 3); break;
        case OAR_BOOL: case OAR_UINT8: p[i] = (uint8_t)(r % 2); break;
        default: break;
        }
    }
    if (oar_var_desc_lod_level(v) > 0 && nd > 0) {
        int64_t off[2] = {0, dims[0]};
        const int64_t *lod[1] = {off};
        int64_t sizes[1] = {2};
        oar_tensor_set_lod(t, 1, lod, sizes);
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    oar_program_t *p = NULL;
    if (oar_program_parse(data, size, &p) != OAR_OK) return 0;
    if (touches_files(p)) { oar_program_free(p); return 0; }
    uint32_t seed = 2166136261u;
    for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 16777619u;

    oar_scope_t *scope = NULL;
    if (oar_scope_new(&scope) != OAR_OK) finding("no scope");
    oar_block_t *b = oar_program_block(p, 0);
    int nvars = oar_block_num_vars(b);
    const char **names = calloc((size_t)nvars + 1, sizeof *names);
    oar_tensor_t **feeds = calloc((size_t)nvars + 1, sizeof *feeds);
    int nfeed = 0;
    for (int i = 0; i < nvars; i++) {
        oar_var_desc_t *v = oar_block_var_at(b, i);
        if (oar_var_desc_type(v) != OAR_VAR_LOD_TENSOR) continue;
        oar_tensor_t *t = make_input(v, seed + (uint32_t)i);
        if (!t) continue;
        if (oar_var_desc_persistable(v)) {
            oar_variable_t *var = NULL;
            if (oar_scope_var(scope, oar_var_desc_name(v), &var) == OAR_OK) oar_variable_set_tensor(var, t);
            oar_tensor_free(t);
        } else {
            names[nfeed] = oar_var_desc_name(v);
            feeds[nfeed++] = t;
        }
    }
    struct itimerval it = {{0, 0}, {2, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    int rc = oar_executor_run(g_exe, p, 0, scope, nfeed, names, feeds, 0, NULL, NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    if (rc != OAR_OK && !*oar_last_error()) finding("a failed run left no error message");
    for (int i = 0; i < nfeed; i++) oar_tensor_free(feeds[i]);
    free(feeds);
    free(names);
    oar_scope_free(scope);
    oar_program_free(p);
    return 0;
}
