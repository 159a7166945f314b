/* predict.c — run an inference model with no Lua: one saved by
 * oar.io.save_inference_model, or by PaddlePaddle (Fluid's `__model__`,
 * Paddle 2.x's `.pdmodel`, Paddle 3's PIR `.json`).
 *
 *   ./predict MODEL_DIR [INPUT_FILE [DIM ...]]
 *
 * INPUT_FILE holds whitespace-separated floats for the model's input (named
 * by $OAR_INPUT_NAME, default "img"); its shape is the DIMs given (e.g.
 * `1 1 28 28` for the LeNet), else [1, count] (784 pixels for the MLP).
 * Without a file, the input is 784 zeros. Prints the first output's shape and
 * values, and the index of the largest value (the predicted class).
 *
 *   ./predict --model MODEL_FILE [--params PARAMS_FILE] --input NAME=TENSOR_FILE ...
 *
 * Any layout: MODEL_FILE is `dir/__model__`, `dir/model.pdmodel` or
 * `dir/model.json`; PARAMS_FILE the combined parameters (`__params__`,
 * `model.pdiparams`), left out when there is one file per parameter beside
 * the model. Each TENSOR_FILE is one tensor in Fluid's LoDTensor format (any
 * dtype, with its LoD: an int64 sequence batch for an LSTM, say). Prints every
 * output: its index, name, dtype, shape, LoD, then its values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oar.h"

static int fail(const char *what) {
    fprintf(stderr, "predict: %s: %s\n", what, oar_last_error());
    return 1;
}

/* ---- the original float32 text mode ---- */
static int run_text(int argc, char **argv) {
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

/* ---- tensor files, any dtype, with LoD ---- */
static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) { free(buf); buf = NULL; break; }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Reads a tensor file and feeds it to input `name` with oar_predictor_set_input_ex. */
static int feed_file(oar_predictor_t *p, const char *name, const char *path) {
    size_t n = 0;
    char *bytes = read_file(path, &n);
    if (!bytes) { perror(path); return 1; }
    oar_tensor_t *t = NULL;
    int rc = oar_tensor_deserialize(bytes, n, NULL, &t);
    free(bytes);
    if (rc != OAR_OK) return fail(path);
    /* one LoD level: the last one, the sequences of the rows */
    int levels = oar_tensor_lod_levels(t);
    int lod_len = levels > 0 ? (int)oar_tensor_lod_size(t, levels - 1) : 0;
    uint64_t *lod = lod_len > 0 ? malloc((size_t)lod_len * sizeof *lod) : NULL;
    for (int i = 0; i < lod_len; i++) lod[i] = (uint64_t)oar_tensor_lod_data(t, levels - 1)[i];
    rc = oar_predictor_set_input_ex(p, name, oar_tensor_dtype(t), oar_tensor_data(t), oar_tensor_dims(t),
                                    oar_tensor_ndim(t), lod, lod_len);
    free(lod);
    oar_tensor_free(t);
    return rc == OAR_OK ? 0 : fail("set_input_ex");
}

static void print_value(int dtype, const void *data, int64_t i) {
    switch (dtype) {
    case OAR_FP32: printf("%.9g", ((const float *)data)[i]); break;
    case OAR_FP64: printf("%.17g", ((const double *)data)[i]); break;
    case OAR_INT32: printf("%d", ((const int32_t *)data)[i]); break;
    case OAR_INT64: printf("%lld", (long long)((const int64_t *)data)[i]); break;
    case OAR_BOOL: case OAR_UINT8: printf("%u", ((const uint8_t *)data)[i]); break;
    case OAR_INT8: printf("%d", ((const int8_t *)data)[i]); break;
    case OAR_INT16: printf("%d", ((const int16_t *)data)[i]); break;
    default: printf("?");
    }
}

static int run_files(int argc, char **argv) {
    const char *model = NULL, *params = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--model") == 0) model = argv[i + 1];
        else if (strcmp(argv[i], "--params") == 0) params = argv[i + 1];
        else if (strcmp(argv[i], "--input") != 0) { fprintf(stderr, "predict: unknown option '%s'\n", argv[i]); return 2; }
    }
    if (!model || argc % 2 == 0) {
        fprintf(stderr, "usage: %s --model FILE [--params FILE] --input NAME=TENSOR_FILE ...\n", argv[0]);
        return 2;
    }
    oar_predictor_t *p;
    if (oar_predictor_load_files(model, params, &p) != OAR_OK) return fail("load");
    int rc = 0;
    for (int i = 1; i + 1 < argc && rc == 0; i += 2) {
        if (strcmp(argv[i], "--input") != 0) continue;
        char *eq = strchr(argv[i + 1], '=');
        if (!eq) { fprintf(stderr, "predict: --input wants NAME=FILE, got '%s'\n", argv[i + 1]); rc = 2; break; }
        *eq = 0;
        rc = feed_file(p, argv[i + 1], eq + 1);
    }
    if (rc == 0 && oar_predictor_run(p) != OAR_OK) rc = fail("run");
    for (int o = 0; rc == 0 && o < oar_predictor_num_outputs(p); o++) {
        int dtype, ndims, lod_len;
        const void *data;
        const int64_t *dims;
        const uint64_t *lod;
        if (oar_predictor_get_output_ex(p, o, &dtype, &data, &dims, &ndims, &lod, &lod_len) != OAR_OK) {
            rc = fail("get_output_ex");
            break;
        }
        int64_t count = 1;
        printf("output %d %s %s shape [", o, oar_predictor_output_name(p, o), oar_dtype_name(dtype));
        for (int i = 0; i < ndims; i++) {
            printf("%s%lld", i ? ", " : "", (long long)dims[i]);
            count *= dims[i];
        }
        printf("] lod [");
        for (int i = 0; i < lod_len; i++) printf("%s%llu", i ? ", " : "", (unsigned long long)lod[i]);
        printf("]\n");
        for (int64_t i = 0; i < count; i++) {
            if (i) printf(" ");
            print_value(dtype, data, i);
        }
        printf("\n");
    }
    oar_predictor_free(p);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [INPUT_FILE [DIM ...]]\n"
                        "       %s --model FILE [--params FILE] --input NAME=TENSOR_FILE ...\n", argv[0], argv[0]);
        return 2;
    }
    if (strncmp(argv[1], "--", 2) == 0) return run_files(argc, argv);
    return run_text(argc, argv);
}
