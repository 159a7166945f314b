/* predict.c — run a model saved by oar.io.save_inference_model, with no Lua.
 *
 *   ./predict MODEL_DIR [INPUT_FILE [DIM ...]]
 *
 * INPUT_FILE holds whitespace-separated floats for the model's input (named
 * by $OAR_INPUT_NAME, default "img"); its shape is the DIMs given (e.g.
 * `1 1 28 28` for the LeNet), else [1, count] (784 pixels for the MLP).
 * Without a file, the input is 784 zeros. Prints the first output's shape and
 * values, and the index of the largest value (the predicted class). */
#include <stdio.h>
#include <stdlib.h>
#include "oar.h"

static int fail(const char *what) {
    fprintf(stderr, "predict: %s: %s\n", what, oar_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [INPUT_FILE]\n", argv[0]);
        return 2;
    }
    oar_predictor_t *p;
    if (oar_predictor_load(argv[1], &p) != OAR_OK) return fail("load");

    size_t cap = 784, n = 0;
    float *x = calloc(cap, sizeof *x);
    if (!x) { oar_predictor_free(p); return 1; }
    if (argc > 2) {
        FILE *f = fopen(argv[2], "r");
        if (!f) { perror(argv[2]); free(x); oar_predictor_free(p); return 1; }
        float v;
        while (fscanf(f, "%f", &v) == 1) {
            if (n == cap) {
                float *bigger = realloc(x, 2 * cap * sizeof *x);
                if (!bigger) { fclose(f); free(x); oar_predictor_free(p); return 1; }
                x = bigger;
                cap *= 2;
            }
            x[n++] = v;
        }
        fclose(f);
    } else {
        n = cap;
    }

    int64_t dims[8] = {1, (int64_t)n};
    int ndims = 2;
    if (argc > 3) {
        ndims = argc - 3;
        if (ndims > 8) { fprintf(stderr, "predict: at most 8 dims\n"); free(x); oar_predictor_free(p); return 2; }
        for (int i = 0; i < ndims; i++) {
            char *end;
            long long d = strtoll(argv[3 + i], &end, 10);
            if (*end || d < 0) { fprintf(stderr, "predict: bad dim '%s'\n", argv[3 + i]); free(x); oar_predictor_free(p); return 2; }
            dims[i] = d;
        }
    }
    long long want = 1;
    for (int i = 0; i < ndims; i++) want *= dims[i];
    if (want != (long long)n) {
        fprintf(stderr, "predict: the dims hold %lld values, the input has %zu\n", want, n);
        free(x);
        oar_predictor_free(p);
        return 2;
    }
    const char *input = getenv("OAR_INPUT_NAME");
    if (oar_predictor_set_input(p, input ? input : "img", x, dims, ndims) != OAR_OK) {
        free(x);
        int rc = fail("set_input");
        oar_predictor_free(p);
        return rc;
    }
    free(x);
    if (oar_predictor_run(p) != OAR_OK) { int rc = fail("run"); oar_predictor_free(p); return rc; }

    const float *out;
    const int64_t *odims;
    int ondims;
    if (oar_predictor_get_output(p, 0, &out, &odims, &ondims) != OAR_OK) {
        int rc = fail("get_output");
        oar_predictor_free(p);
        return rc;
    }
    int64_t count = 1;
    printf("output shape [");
    for (int i = 0; i < ondims; i++) {
        printf("%s%lld", i ? ", " : "", (long long)odims[i]);
        count *= odims[i];
    }
    printf("]\n");
    int64_t best = 0;
    for (int64_t i = 0; i < count; i++) {
        printf("%s%.6f", i ? " " : "", out[i]);
        if (out[i] > out[best]) best = i;
    }
    printf("\nargmax %lld\n", (long long)best);
    oar_predictor_free(p);
    return 0;
}
