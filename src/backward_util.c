/* backward_util.c — name sets, string pools, op lists and op footprints for
 * the program passes (backward*.c, prune.c). */
#include "backward_pass.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- name sets --------------------------------------------------------- */

int oar_bw_names_add(oar_bw_names_t *s, const char *name)
{
    if (!name) return oar_error(OAR_ERR_INVALID, "name set: NULL name");
    if (oar_strmap_get(&s->index, name) >= 0) return OAR_OK;
    OAR_TRY(oar_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v));
    OAR_TRY(oar_strmap_put(&s->index, name, s->n));
    s->v[s->n++] = name;
    return OAR_OK;
}

int oar_bw_names_add_copy(oar_bw_names_t *s, const char *name)
{
    if (!name) return oar_error(OAR_ERR_INVALID, "name set: NULL name");
    if (oar_strmap_get(&s->index, name) >= 0) return OAR_OK;
    OAR_TRY(oar_grow((void **)&s->owned, &s->capowned, s->nowned + 1, sizeof *s->owned));
    char *c = oar_xstrdup(name);
    if (!c) return OAR_ERR_NOMEM;
    s->owned[s->nowned++] = c;
    return oar_bw_names_add(s, c);
}

bool oar_bw_names_has(const oar_bw_names_t *s, const char *name)
{
    return name && oar_strmap_get(&s->index, name) >= 0;
}

void oar_bw_names_free(oar_bw_names_t *s)
{
    if (!s) return;
    free(s->v);
    oar_strmap_free(&s->index);
    for (int i = 0; i < s->nowned; i++) free(s->owned[i]);
    free(s->owned);
    memset(s, 0, sizeof *s);
}

/* ---- string pool ------------------------------------------------------- */

static char *pool_keep(oar_bw_pool_t *pool, char *s)
{
    if (!s) return NULL;
    if (oar_grow((void **)&pool->v, &pool->cap, pool->n + 1, sizeof *pool->v) != OAR_OK) {
        free(s);
        return NULL;
    }
    pool->v[pool->n++] = s;
    return s;
}

char *oar_bw_pool_strdup(oar_bw_pool_t *pool, const char *s)
{
    return pool_keep(pool, oar_xstrdup(s));
}

char *oar_bw_pool_printf(oar_bw_pool_t *pool, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) { oar_error(OAR_ERR_INVALID, "bad name format '%s'", fmt); return NULL; }
    char *s = oar_xmalloc((size_t)len + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return pool_keep(pool, s);
}

void oar_bw_pool_free(oar_bw_pool_t *pool)
{
    if (!pool) return;
    for (int i = 0; i < pool->n; i++) free(pool->v[i]);
    free(pool->v);
    memset(pool, 0, sizeof *pool);
}

/* ---- op lists ----------------------------------------------------------- */

int oar_bw_list_push(oar_bw_list_t *l, oar_op_desc_t *op, bool maker)
{
    int rc = oar_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v);
    if (rc != OAR_OK) { oar_op_desc_free(op); return rc; }
    l->v[l->n].op = op;
    l->v[l->n].maker = maker;
    l->n++;
    return OAR_OK;
}

void oar_bw_list_free(oar_bw_list_t *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++)
        if (l->v[i].op && !l->v[i].op->block) oar_op_desc_free(l->v[i].op);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* ---- roles and dtypes ----------------------------------------------------- */

int oar_bw_op_role(const oar_op_desc_t *op)
{
    const oar_attr_t *a = oar_op_find_attr(op, "op_role");
    if (!a) return OAR_ROLE_FORWARD;
    if (a->type == OAR_ATTR_INT) return a->v.i;
    if (a->type == OAR_ATTR_LONG) return (int)a->v.l;
    return OAR_ROLE_FORWARD;
}

int oar_bw_set_role(oar_op_desc_t *op, int role)
{
    return oar_op_desc_set_attr_int(op, "op_role", role);
}

bool oar_bw_dtype_differentiable(const oar_var_desc_t *v)
{
    if (!v) return true;
    switch (v->type) {
    case OAR_VAR_LOD_TENSOR: case OAR_VAR_SELECTED_ROWS: case OAR_VAR_LOD_TENSOR_ARRAY:
        break;
    default:
        return false;   /* step scopes, rank tables, readers carry no gradient */
    }
    switch (v->dtype) {
    case OAR_FP16: case OAR_FP32: case OAR_FP64: case -1:
        return true;
    default:
        return false;   /* integer and bool values have no gradient */
    }
}

/* ---- footprints ------------------------------------------------------------ */

int oar_bw_op_sub_blocks(const oar_op_desc_t *op, int **idx, int *n)
{
    *idx = NULL;
    *n = 0;
    int count = 0;
    for (int i = 0; i < op->nattrs; i++) {
        if (op->attrs[i].type == OAR_ATTR_BLOCK && op->attrs[i].v.block >= 0) count++;
        else if (op->attrs[i].type == OAR_ATTR_BLOCKS) count += op->attrs[i].n;
    }
    if (count == 0) return OAR_OK;
    int *v = oar_xmalloc((size_t)count * sizeof *v);
    if (!v) return OAR_ERR_NOMEM;
    int k = 0;
    for (int i = 0; i < op->nattrs; i++) {
        const oar_attr_t *a = &op->attrs[i];
        if (a->type == OAR_ATTR_BLOCK && a->v.block >= 0) v[k++] = a->v.block;
        else if (a->type == OAR_ATTR_BLOCKS)
            for (int j = 0; j < a->n; j++) v[k++] = ((const int32_t *)a->list)[j];
    }
    *idx = v;
    *n = k;
    return OAR_OK;
}

static int add_args(const oar_op_slot_t *slots, int nslots, oar_bw_names_t *out)
{
    for (int i = 0; i < nslots; i++)
        for (int j = 0; j < slots[i].nargs; j++)
            if (strcmp(slots[i].args[j], OAR_EMPTY_VAR) != 0)
                OAR_TRY(oar_bw_names_add(out, slots[i].args[j]));
    return OAR_OK;
}

/* Names block `bi` (and blocks nested in it) reads/writes that are not
 * declared in `bi`. `stack` holds the blocks being visited, so a block that
 * (wrongly) nests itself is reported instead of looping. */
static int block_outer(oar_program_t *p, int bi, int *stack, int depth,
                       oar_bw_names_t *reads, oar_bw_names_t *writes)
{
    oar_block_t *b = oar_program_block(p, bi);
    if (!b) return oar_error(OAR_ERR_FORMAT, "sub-block %d does not exist (program has %d blocks)",
                             bi, oar_program_num_blocks(p));
    for (int i = 0; i < depth; i++)
        if (stack[i] == bi) return oar_error(OAR_ERR_FORMAT, "block %d contains itself through sub-block attrs", bi);
    stack[depth] = bi;
    oar_bw_names_t r = {0}, w = {0};
    int rc = OAR_OK;
    for (int i = 0; i < b->nops && rc == OAR_OK; i++) {
        const oar_op_desc_t *op = b->ops[i];
        rc = add_args(op->inputs, op->ninputs, &r);
        if (rc == OAR_OK) rc = add_args(op->outputs, op->noutputs, &w);
        int *sub = NULL, nsub = 0;
        if (rc == OAR_OK) rc = oar_bw_op_sub_blocks(op, &sub, &nsub);
        for (int k = 0; k < nsub && rc == OAR_OK; k++) {
            if (depth + 1 >= oar_program_num_blocks(p) + 1) {
                rc = oar_error(OAR_ERR_FORMAT, "sub-blocks nest deeper than the program has blocks");
                break;
            }
            rc = block_outer(p, sub[k], stack, depth + 1, &r, &w);
        }
        free(sub);
    }
    for (int i = 0; i < r.n && rc == OAR_OK; i++)
        if (!oar_block_find_var(b, r.v[i])) rc = oar_bw_names_add(reads, r.v[i]);
    for (int i = 0; i < w.n && rc == OAR_OK; i++)
        if (!oar_block_find_var(b, w.v[i])) rc = oar_bw_names_add(writes, w.v[i]);
    oar_bw_names_free(&r);
    oar_bw_names_free(&w);
    return rc;
}

int oar_bw_op_footprint(oar_program_t *p, const oar_op_desc_t *op,
                        oar_bw_names_t *reads, oar_bw_names_t *writes)
{
    OAR_TRY(add_args(op->inputs, op->ninputs, reads));
    OAR_TRY(add_args(op->outputs, op->noutputs, writes));
    int *sub = NULL, nsub = 0;
    OAR_TRY(oar_bw_op_sub_blocks(op, &sub, &nsub));
    if (nsub == 0) return OAR_OK;
    int nb = oar_program_num_blocks(p);
    int *stack = oar_xmalloc((size_t)(nb + 1) * sizeof *stack);
    int rc = stack ? OAR_OK : OAR_ERR_NOMEM;
    for (int k = 0; k < nsub && rc == OAR_OK; k++) rc = block_outer(p, sub[k], stack, 0, reads, writes);
    free(stack);
    free(sub);
    return rc;
}
