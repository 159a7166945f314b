/* fuzz_tensor.c — libFuzzer target for the tensor file loader.
 *
 * Any byte string goes to oar_tensor_deserialize (the parser behind load,
 * load_combine and the C predictor), as a whole and then record after
 * record like load_combine reads a combined file. A rejected input must
 * leave a message; an accepted record must not claim more bytes than it
 * was given, and must survive the round trip: it serializes, the bytes
 * deserialize to the same dtype, dims, LoD and data, and re-serialize
 * byte-identically. Any violation aborts (a finding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oar.h"

static void finding(const char *what) {
    fprintf(stderr, "fuzz_tensor: %s (last error: %s)\n", what, oar_last_error());
    abort();
}

static void same_tensor(oar_tensor_t *a, oar_tensor_t *b) {
    if (oar_tensor_dtype(a) != oar_tensor_dtype(b)) finding("round trip changed the dtype");
    int nd = oar_tensor_ndim(a);
    if (nd != oar_tensor_ndim(b)) finding("round trip changed the rank");
    if (nd > 0 && memcmp(oar_tensor_dims(a), oar_tensor_dims(b), (size_t)nd * sizeof(int64_t)) != 0)
        finding("round trip changed the dims");
    int levels = oar_tensor_lod_levels(a);
    if (levels != oar_tensor_lod_levels(b)) finding("round trip changed the LoD level count");
    for (int l = 0; l < levels; l++) {
        int64_t n = oar_tensor_lod_size(a, l);
        if (n != oar_tensor_lod_size(b, l)) finding("round trip changed a LoD level's size");
        if (n > 0 && memcmp(oar_tensor_lod_data(a, l), oar_tensor_lod_data(b, l), (size_t)n * sizeof(int64_t)) != 0)
            finding("round trip changed LoD offsets");
    }
    size_t bytes = (size_t)oar_tensor_numel(a) * oar_dtype_size(oar_tensor_dtype(a));
    if (bytes > 0) {
        const void *da = oar_tensor_data(a), *db = oar_tensor_data(b);
        if (!da || !db) finding("a non-empty tensor has no data");
        if (memcmp(da, db, bytes) != 0) finding("round trip changed the data");
    }
}

/* One record at data[0..size); returns the bytes it used, 0 when rejected. */
static size_t one_record(const uint8_t *data, size_t size) {
    oar_tensor_t *t = NULL;
    size_t used = 0;
    if (oar_tensor_deserialize(data, size, &used, &t) != OAR_OK) {
        if (t) finding("deserialize failed but returned a tensor");
        const char *msg = oar_last_error();
        if (!msg || !*msg) finding("a rejected record left no error message");
        return 0;
    }
    if (!t) finding("deserialize succeeded without a tensor");
    if (used == 0 || used > size) finding("deserialize consumed 0 bytes or more than it was given");
    if (oar_dtype_size(oar_tensor_dtype(t)) == 0) finding("an accepted tensor has no valid dtype");

    void *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0, used2 = 0;
    if (oar_tensor_serialize(t, &b1, &n1) != OAR_OK) finding("an accepted tensor does not serialize");
    oar_tensor_t *u = NULL;
    if (oar_tensor_deserialize(b1, n1, &used2, &u) != OAR_OK) finding("serialized bytes do not deserialize");
    if (used2 != n1) finding("a serialized record is not consumed exactly");
    same_tensor(t, u);
    if (oar_tensor_serialize(u, &b2, &n2) != OAR_OK) finding("the round-tripped tensor does not serialize");
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) finding("serialization is not deterministic");

    oar_tensor_t *copy = NULL;
    if (oar_tensor_copy(t, &copy) != OAR_OK) finding("an accepted tensor does not copy");
    same_tensor(t, copy);

    oar_free(b1);
    oar_free(b2);
    oar_tensor_free(copy);
    oar_tensor_free(u);
    oar_tensor_free(t);
    return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t at = 0;
    for (int i = 0; i < 64 && at < size; i++) {   /* a combined file: records back to back */
        size_t used = one_record(data + at, size - at);
        if (used == 0) break;
        at += used;
    }
    if (size == 0) one_record(data, 0);
    return 0;
}
