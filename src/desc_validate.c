/* desc_validate.c — whole-program checks, run on every parsed program and
 * callable on any other: a program that passes cannot make the executor
 * index out of range, loop through sub-blocks forever, or meet an op type,
 * attr type or input variable it does not know.
 *
 * Block rules: idx equals position; block 0 is the only root (parent -1);
 * parents are in range and acyclic, nesting at most OAR_MAX_BLOCK_DEPTH deep;
 * forward_block_idx is -1 or in range. A BLOCK attr is -1 (not yet set, the
 * op definitions' default) or names a block other than 0 and the op's own;
 * BLOCKS entries likewise, without -1; and the "op in block a runs block b"
 * references form no cycle. */
#include "desc.h"
#include "error.h"
#include "op.h"
#include "attr_check.h"
#include "desc_check.h"

#include <stdlib.h>
#include <string.h>

#define OAR_MAX_BLOCK_DEPTH 64

static const char *const attr_names[] = {
    "INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS", "BOOLEAN",
    "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS"};

static const char *attr_type_name(int t)
{
    return t >= 0 && t <= OAR_ATTR_LONGS ? attr_names[t] : "unknown";
}

static int check_block_fields(const oar_program_t *p, int i)
{
    const oar_block_t *b = p->blocks[i];
    int n = p->nblocks;
    if (b->idx != i)
        return oar_error(OAR_ERR_FORMAT, "invalid program: block at position %d has idx %d", i, b->idx);
    if (i == 0 && b->parent_idx != -1)
        return oar_error(OAR_ERR_FORMAT, "invalid program: block 0 has parent_idx %d (the global block's is -1)",
                         b->parent_idx);
    if (i > 0 && (b->parent_idx < 0 || b->parent_idx >= n || b->parent_idx == i))
        return oar_error(OAR_ERR_FORMAT, "invalid program: block %d has parent_idx %d (must be 0..%d and not itself)",
                         i, b->parent_idx, n - 1);
    if (b->forward_block_idx < -1 || b->forward_block_idx >= n)
        return oar_error(OAR_ERR_FORMAT, "invalid program: block %d has forward_block_idx %d (must be -1 or 0..%d)",
                         i, b->forward_block_idx, n - 1);
    return OAR_OK;
}

/* Depth of every block along its parent chain, memoized so the walk is linear. */
static int check_parent_chains(const oar_program_t *p)
{
    int n = p->nblocks, rc = OAR_OK;
    int *depth = oar_xmalloc((size_t)n * sizeof *depth);
    int *path = oar_xmalloc((size_t)n * sizeof *path);
    char *onpath = oar_xcalloc((size_t)n, 1);
    if (!depth || !path || !onpath) { rc = OAR_ERR_NOMEM; goto done; }
    for (int i = 0; i < n; i++) depth[i] = -1;
    for (int i = 0; i < n && rc == OAR_OK; i++) {
        int j = i, len = 0;
        while (j >= 0 && depth[j] < 0 && !onpath[j]) {
            onpath[j] = 1;
            path[len++] = j;
            j = p->blocks[j]->parent_idx;
        }
        if (j >= 0 && onpath[j]) {
            rc = oar_error(OAR_ERR_FORMAT, "invalid program: the parent chain of block %d loops through block %d",
                           i, j);
            break;
        }
        int base = j < 0 ? -1 : depth[j];
        for (int k = len - 1; k >= 0; k--) {
            depth[path[k]] = base + (len - k);
            onpath[path[k]] = 0;
        }
        if (depth[i] > OAR_MAX_BLOCK_DEPTH)
            rc = oar_error(OAR_ERR_FORMAT, "invalid program: block %d is nested %d levels deep (at most %d)",
                           i, depth[i], OAR_MAX_BLOCK_DEPTH);
    }
done:
    free(depth);
    free(path);
    free(onpath);
    return rc;
}

static int check_vars(const oar_block_t *b)
{
    for (int i = 0; i < b->nvars; i++) {
        const oar_var_desc_t *v = b->vars[i];
        if (!v->name || !*v->name)
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, var #%d has an empty name", b->idx, i);
        if (oar_strmap_get(&b->var_index, v->name) != i)
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d declares var '%s' twice", b->idx, v->name);
        if (!oar_desc_var_type_valid(v->type))
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, var '%s' has type %s (%d), not a variable kind",
                             b->idx, v->name, oar_desc_type_name(v->type), v->type);
        bool tensor = v->type == OAR_VAR_LOD_TENSOR || v->type == OAR_VAR_LOD_TENSOR_ARRAY ||
                      v->type == OAR_VAR_SELECTED_ROWS;
        if (!tensor) continue;
        if (!oar_desc_dtype_valid(v->dtype))
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, var '%s' has dtype %d, not a tensor element type",
                             b->idx, v->name, v->dtype);
        if (v->ndim != -1 && oar_desc_check_dims(v->dims, v->ndim, v->name) != OAR_OK) {
            oar_error_prefix("invalid program: block %d: ", b->idx);
            return OAR_ERR_FORMAT;
        }
        if (v->lod_level < 0 || v->lod_level > OAR_MAX_LOD)
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, var '%s' has lod_level %d (0..%d)",
                             b->idx, v->name, v->lod_level, OAR_MAX_LOD);
    }
    return OAR_OK;
}

static int check_block_ref(const oar_program_t *p, const oar_block_t *b, int opi, const oar_op_desc_t *op,
                           const oar_attr_t *a, int target)
{
    if (target >= 1 && target < p->nblocks && target != b->idx) return OAR_OK;
    return oar_error(OAR_ERR_FORMAT,
                     "invalid program: block %d, op #%d '%s': attr '%s' names block %d "
                     "(a sub-block must exist and be neither block 0 nor the op's own; "
                     "the program has %d blocks)",
                     b->idx, opi, op->type, a->name, target, p->nblocks);
}

static int check_op(const oar_program_t *p, oar_block_t *b, int opi)
{
    const oar_op_desc_t *op = b->ops[opi];
    if (!op->type || !*op->type)
        return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, op #%d has an empty type", b->idx, opi);
    const oar_op_def_t *def = oar_registry_op(op->type);
    if (!def)
        return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, op #%d: op type '%s' is not registered",
                         b->idx, opi, op->type);
    if (oar_op_check_def_const(op, def) != OAR_OK) {
        oar_error_prefix("invalid program: block %d, op #%d '%s': ", b->idx, opi, op->type);
        return OAR_ERR_FORMAT;
    }
    for (int i = 0; i < op->nattrs; i++) {
        const oar_attr_t *a = &op->attrs[i];
        int want = oar_op_attr_type(op->type, a->name);
        if (want >= 0 && want != a->type && !oar_attr_kind_accepted(op->type, a->name, a->type))
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, op #%d '%s': attr '%s' is %s, "
                             "the op declares %s", b->idx, opi, op->type, a->name,
                             attr_type_name(a->type), attr_type_name(want));
        if (a->type == OAR_ATTR_BLOCK && a->v.block != -1)
            OAR_TRY(check_block_ref(p, b, opi, op, a, a->v.block));
        if (a->type == OAR_ATTR_BLOCKS)
            for (int k = 0; k < a->n; k++) OAR_TRY(check_block_ref(p, b, opi, op, a, ((int32_t *)a->list)[k]));
    }
    for (int s = 0; s < op->ninputs; s++) {
        const oar_op_slot_t *slot = &op->inputs[s];
        for (int k = 0; k < slot->nargs; k++) {
            const char *arg = slot->args[k];
            if (strcmp(arg, OAR_EMPTY_VAR) == 0 || oar_block_find_var_recursive(b, arg)) continue;
            return oar_error(OAR_ERR_FORMAT, "invalid program: block %d, op #%d '%s': input %s[%d] names "
                             "var '%s', which is declared neither in block %d nor its ancestors",
                             b->idx, opi, op->type, slot->slot, k, arg, b->idx);
        }
    }
    return OAR_OK;
}

/* ---- the "runs sub-block" graph must be acyclic ----------------------------------- */

typedef struct edge { int from, to, op; const char *attr; } edge_t;

static int edge_cmp(const void *x, const void *y)
{
    const edge_t *a = x, *b = y;
    return a->from != b->from ? (a->from < b->from ? -1 : 1) : 0;
}

static int collect_edges(const oar_program_t *p, edge_t **out, int *nout)
{
    int64_t n = 0;
    for (int i = 0; i < p->nblocks; i++)
        for (int j = 0; j < p->blocks[i]->nops; j++) {
            const oar_op_desc_t *op = p->blocks[i]->ops[j];
            for (int k = 0; k < op->nattrs; k++)
                n += op->attrs[k].type == OAR_ATTR_BLOCK ? 1 : op->attrs[k].type == OAR_ATTR_BLOCKS ? op->attrs[k].n : 0;
        }
    if (n > INT32_MAX) return oar_error(OAR_ERR_FORMAT, "invalid program: too many sub-block references");
    edge_t *e = oar_xcalloc((size_t)(n ? n : 1), sizeof *e);
    if (!e) return OAR_ERR_NOMEM;
    int m = 0;
    for (int i = 0; i < p->nblocks; i++)
        for (int j = 0; j < p->blocks[i]->nops; j++) {
            const oar_op_desc_t *op = p->blocks[i]->ops[j];
            for (int k = 0; k < op->nattrs; k++) {
                const oar_attr_t *a = &op->attrs[k];
                if (a->type == OAR_ATTR_BLOCK && a->v.block >= 0)
                    e[m++] = (edge_t){i, a->v.block, j, a->name};
                if (a->type == OAR_ATTR_BLOCKS)
                    for (int t = 0; t < a->n; t++) e[m++] = (edge_t){i, ((int32_t *)a->list)[t], j, a->name};
            }
        }
    qsort(e, (size_t)m, sizeof *e, edge_cmp);
    *out = e;
    *nout = m;
    return OAR_OK;
}

/* Iterative depth-first search (no recursion: the input may be hostile). */
static int check_block_graph(const oar_program_t *p)
{
    edge_t *e = NULL;
    int ne, nb = p->nblocks, rc = OAR_OK;
    OAR_TRY(collect_edges(p, &e, &ne));
    int *first = oar_xcalloc((size_t)nb + 1, sizeof *first);
    int *next = oar_xcalloc((size_t)nb, sizeof *next);      /* next edge to follow per block */
    int *stack = oar_xcalloc((size_t)nb, sizeof *stack);
    char *color = oar_xcalloc((size_t)nb, 1);                /* 0 new, 1 on stack, 2 done */
    if (!first || !next || !stack || !color) { rc = OAR_ERR_NOMEM; goto done; }
    for (int k = 0; k < ne; k++) first[e[k].from + 1]++;
    for (int i = 0; i < nb; i++) first[i + 1] += first[i];
    for (int root = 0; root < nb && rc == OAR_OK; root++) {
        if (color[root]) continue;
        int top = 0;
        stack[top++] = root;
        color[root] = 1;
        next[root] = first[root];
        while (top > 0 && rc == OAR_OK) {
            int u = stack[top - 1];
            if (next[u] == first[u + 1]) { color[u] = 2; top--; continue; }
            const edge_t *ed = &e[next[u]++];
            int v = ed->to;
            if (color[v] == 1) {
                rc = oar_error(OAR_ERR_FORMAT, "invalid program: block %d, op #%d '%s': attr '%s' runs block %d, "
                               "which itself leads back to block %d (sub-block references form a cycle)",
                               u, ed->op, p->blocks[u]->ops[ed->op]->type, ed->attr, v, u);
            } else if (color[v] == 0) {
                color[v] = 1;
                next[v] = first[v];
                stack[top++] = v;
            }
        }
    }
done:
    free(e);
    free(first);
    free(next);
    free(stack);
    free(color);
    return rc;
}

/* A parsed program's ops get what insertion gives an op: attrs brought to
 * their declared types, declared defaults for missing attrs, required slots
 * checked. Ops of unknown types are left to oar_program_validate. */
int oar_program_normalize(oar_program_t *p)
{
    for (int i = 0; i < p->nblocks; i++)
        for (int j = 0; j < p->blocks[i]->nops; j++) {
            oar_op_desc_t *op = p->blocks[i]->ops[j];
            const oar_op_def_t *def = op->type ? oar_registry_op(op->type) : NULL;
            if (def && oar_op_check_def(op, def, false) != OAR_OK) {
                oar_error_prefix("invalid program: block %d, op #%d '%s': ", i, j, op->type);
                return OAR_ERR_FORMAT;
            }
        }
    return OAR_OK;
}

int oar_program_validate(const oar_program_t *p)
{
    if (!p) return oar_error(OAR_ERR_INVALID, "oar_program_validate: NULL program");
    if (p->nblocks < 1) return oar_error(OAR_ERR_FORMAT, "invalid program: no blocks");
    for (int i = 0; i < p->nblocks; i++) OAR_TRY(check_block_fields(p, i));
    OAR_TRY(check_parent_chains(p));
    for (int i = 0; i < p->nblocks; i++) OAR_TRY(check_vars(p->blocks[i]));
    for (int i = 0; i < p->nblocks; i++)
        for (int j = 0; j < p->blocks[i]->nops; j++) OAR_TRY(check_op(p, p->blocks[i], j));
    OAR_TRY(check_block_graph(p));
    for (int i = 0; i < p->nblocks; i++)    /* attrs oar would ignore (attr_check.c) */
        for (int j = 0; j < p->blocks[i]->nops; j++)
            if (oar_op_check_attrs(p->blocks[i]->ops[j]) != OAR_OK) {
                oar_error_prefix("invalid program: block %d, op #%d: ", i, j);
                return OAR_ERR_FORMAT;
            }
    return OAR_OK;
}
