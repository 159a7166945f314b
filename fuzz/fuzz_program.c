/* fuzz_program.c — libFuzzer target for ProgramDesc parsing and validation.
 *
 * Any byte string goes to oar_program_parse, which either rejects it with a
 * status and a message or returns a program that passed oar_program_validate.
 * An accepted program must then survive the round trip: it serializes, the
 * bytes parse again, the second serialization is byte-identical to the
 * first, and a clone validates and serializes to the same bytes too. Any
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

    oar_free(b1);
    oar_free(b2);
    oar_free(b3);
    oar_program_free(c);
    oar_program_free(q);
    oar_program_free(p);
    return 0;
}
