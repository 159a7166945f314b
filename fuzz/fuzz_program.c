/* fuzz_program.c — libFuzzer target for ProgramDesc parsing and validation.
 *
 * Any byte string goes to oar_program_parse, which either rejects it with a
 * status and a message or returns a program that passed oar_program_validate.
 * An accepted program must then survive the round trip: it serializes, the
 * bytes parse again, the second serialization is byte-identical to the
 * first, and a clone validates and serializes to the same bytes too. The
 * passes run on loaded programs (prune to one of block 0's vars, the
 * inference cleanup) must leave programs that validate and parse back. Any
 * violation aborts (a finding); sanitizers catch memory and UB errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oar.h"

static void finding(const char *what) {
    fprintf(stderr, "fuzz_program: %s (last error: %s)\n", what, oar_last_error());
    abort();
}

static void check_error_message(void) {
    const char *msg = oar_last_error();
    if (!msg || !*msg) finding("a rejected program left no error message");
}

/* q must validate, serialize, and parse back. */
static void must_stay_valid(oar_program_t *q, const char *what) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s does not validate", what);
    if (oar_program_validate(q) != OAR_OK) finding(msg);
    void *b = NULL;
    size_t n = 0;
    snprintf(msg, sizeof msg, "%s does not serialize", what);
    if (oar_program_serialize(q, &b, &n) != OAR_OK) finding(msg);
    oar_program_t *r = NULL;
    snprintf(msg, sizeof msg, "%s does not parse back", what);
    if (oar_program_parse(b, n, &r) != OAR_OK) finding(msg);
    oar_program_free(r);
    oar_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oar_program_t *p = NULL;
    int rc = oar_program_parse(data, size, &p);
    if (rc != OAR_OK) {
        if (p) finding("parse failed but returned a program");
        check_error_message();
        return 0;
    }
    if (oar_program_validate(p) != OAR_OK) finding("a parsed program does not validate");

    void *b1 = NULL, *b2 = NULL, *b3 = NULL;
    size_t n1 = 0, n2 = 0, n3 = 0;
    if (oar_program_serialize(p, &b1, &n1) != OAR_OK) finding("a parsed program does not serialize");
    oar_program_t *q = NULL;
    if (oar_program_parse(b1, n1, &q) != OAR_OK) finding("serialized bytes of a parsed program do not parse");
    if (oar_program_serialize(q, &b2, &n2) != OAR_OK) finding("the re-parsed program does not serialize");
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) finding("serialize(parse(serialize(p))) differs from serialize(p)");

    oar_program_t *c = NULL;
    if (oar_program_clone(p, &c) != OAR_OK) finding("a parsed program does not clone");
    if (oar_program_validate(c) != OAR_OK) finding("a clone does not validate");
    if (oar_program_serialize(c, &b3, &n3) != OAR_OK) finding("a clone does not serialize");
    if (n1 != n3 || memcmp(b1, b3, n1) != 0) finding("a clone serializes differently from its original");
    if (oar_program_num_blocks(c) != oar_program_num_blocks(p)) finding("a clone has a different block count");

    /* the passes that run on loaded programs must keep them valid */
    oar_block_t *b0 = oar_program_block(p, 0);
    int nvars = oar_block_num_vars(b0);
    if (nvars > 0) {
        const char *target = oar_var_desc_name(oar_block_var_at(b0, (int)(size % (size_t)nvars)));
        oar_program_t *pruned = NULL;
        if (oar_program_prune(p, &target, 1, &pruned) == OAR_OK) {
            must_stay_valid(pruned, "a pruned program");
            oar_program_free(pruned);
        } else {
            check_error_message();
        }
    }
    if (oar_program_inference_optimize(c) == OAR_OK) must_stay_valid(c, "an inference-optimized program");
    else check_error_message();

    oar_free(b1);
    oar_free(b2);
    oar_free(b3);
    oar_program_free(c);
    oar_program_free(q);
    oar_program_free(p);
    return 0;
}
