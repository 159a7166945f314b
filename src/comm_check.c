/* comm_check.c — every worker must run the same program: before a
 * program's first collective (and again after it changes) the workers
 * compare a hash of it. The hash covers the serialized program without the
 * attrs that may differ between workers of one job: op_callstack (the Lua
 * file:line, which depends on where each machine keeps the script) and seed
 * (random ops may be seeded per worker; parameters are broadcast anyway). */
#include "comm.h"
#include "desc.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

int oar_program_hash(const oar_program_t *p, uint64_t *hash)
{
    if (!p || !hash) return oar_error(OAR_ERR_INVALID, "oar_program_hash: NULL argument");
    oar_program_t *c;
    OAR_TRY(oar_program_clone(p, &c));
    int rc = OAR_OK;
    for (int b = 0; b < oar_program_num_blocks(c) && rc == OAR_OK; b++) {
        oar_block_t *blk = oar_program_block(c, b);
        for (int i = 0; i < oar_block_num_ops(blk) && rc == OAR_OK; i++) {
            oar_op_desc_t *op = oar_block_op_at(blk, i);
            /* blanked rather than removed: a declared attr stays on an op in a block */
            if (oar_op_desc_attr_type(op, "op_callstack") >= 0)
                rc = oar_op_desc_set_attr_strings(op, "op_callstack", NULL, 0);
            int st = oar_op_desc_attr_type(op, "seed");
            if (rc == OAR_OK && st == OAR_ATTR_INT) rc = oar_op_desc_set_attr_int(op, "seed", 0);
            if (rc == OAR_OK && st == OAR_ATTR_LONG) rc = oar_op_desc_set_attr_long(op, "seed", 0);
        }
    }
    void *bytes = NULL;
    size_t n = 0;
    if (rc == OAR_OK) rc = oar_program_serialize(c, &bytes, &n);
    if (rc == OAR_OK) *hash = fnv1a(bytes, n);
    oar_free(bytes);
    oar_program_free(c);
    return rc;
}

int oar_comm_check_program(const oar_program_t *p, const char *who)
{
    if (!who) who = "program check";
    uint64_t h;
    OAR_TRY(oar_program_hash(p, &h));
    int n = oar_comm_size();
    if (n <= 1) return OAR_OK;
    uint64_t *all = oar_xmalloc(sizeof *all * (size_t)n);
    if (!all) return OAR_ERR_NOMEM;
    int rc = oar_comm_allgather_check(&h, all, sizeof h, who);
    if (rc == OAR_ERR_COMM) {
        oar_error(OAR_ERR_COMM, "%s: comparing the program with the other workers failed: %s", who,
                  oar_comm_broken());
    } else if (rc == OAR_OK) {
        for (int i = 1; i < n; i++) {
            if (all[i] != all[0]) {
                rc = oar_error(OAR_ERR_COMM,
                               "%s: worker %d runs a different program than worker 0 (program hash %016llx vs "
                               "%016llx): every worker must build the same program (same layers, shapes and "
                               "optimizer) for data-parallel training",
                               who, i, (unsigned long long)all[i], (unsigned long long)all[0]);
                oar_comm_break();
                break;
            }
        }
    }
    free(all);
    return rc;
}

/* The programs already checked, by (uid, version): a collective kernel pays
 * one comparison per run once its program was checked. */
#define CHECKED_SLOTS 32
static struct { uint64_t uid, version; } checked[CHECKED_SLOTS];
static int checked_next;

int oar_comm_check_once(const oar_program_t *p, const char *who)
{
    if (!p) return OAR_OK;
    for (int i = 0; i < CHECKED_SLOTS; i++)
        if (checked[i].uid == p->uid && checked[i].version == p->version) return OAR_OK;
    if (oar_comm_size() > 1) OAR_TRY(oar_comm_check_program(p, who));
    checked[checked_next].uid = p->uid;
    checked[checked_next].version = p->version;
    checked_next = (checked_next + 1) % CHECKED_SLOTS;
    return OAR_OK;
}
