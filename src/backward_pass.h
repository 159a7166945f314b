/* backward_pass.h — private to the program passes (backward*.c, prune.c).
 *
 * The backward pass runs once per block: the top-level run works on block 0
 * (seeded by the loss or the targets' grads), and every grad maker that calls
 * oar_gc_grad_block starts a nested run over a forward sub-block whose grad
 * ops go to a freshly appended block. A run has four steps:
 *   generate  grad makers of the forward ops, last op first (backward_ctx.c)
 *   prune     drop grad ops nothing feeds, fill_zeros_like for grads
 *             nobody produced (backward_block.c)
 *   addup     rename duplicate writers and sum them (backward_block.c)
 *   commit    declare grad vars like their forward vars and insert the ops
 */
#ifndef OAR_BACKWARD_PASS_H
#define OAR_BACKWARD_PASS_H
#include "op.h"

enum {
    OAR_ROLE_FORWARD = 0, OAR_ROLE_BACKWARD = 1, OAR_ROLE_OPTIMIZE = 2,
    OAR_ROLE_RPC = 4, OAR_ROLE_DIST = 8, OAR_ROLE_LRSCHED = 16, OAR_ROLE_LOSS = 256
};

/* ---- small containers (backward_util.c) ------------------------------- */

/* A set of names in insertion order. Names are borrowed unless added with
 * oar_bw_names_add_copy (then the set owns its copy). */
typedef struct oar_bw_names {
    const char **v; int n, cap;
    oar_strmap_t index;
    char **owned; int nowned, capowned;
} oar_bw_names_t;

int oar_bw_names_add(oar_bw_names_t *s, const char *name);       /* status; no-op when present */
int oar_bw_names_add_copy(oar_bw_names_t *s, const char *name);
bool oar_bw_names_has(const oar_bw_names_t *s, const char *name);
void oar_bw_names_free(oar_bw_names_t *s);

/* Strings owned for the lifetime of a pass (strmap keys borrow them). */
typedef struct oar_bw_pool { char **v; int n, cap; } oar_bw_pool_t;
char *oar_bw_pool_strdup(oar_bw_pool_t *pool, const char *s);        /* NULL on OOM */
char *oar_bw_pool_printf(oar_bw_pool_t *pool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void oar_bw_pool_free(oar_bw_pool_t *pool);

/* An op list in emission order; `maker` marks ops made by grad makers. */
typedef struct oar_bw_item { oar_op_desc_t *op; bool maker; } oar_bw_item_t;
typedef struct oar_bw_list { oar_bw_item_t *v; int n, cap; } oar_bw_list_t;

int oar_bw_list_push(oar_bw_list_t *l, oar_op_desc_t *op, bool maker); /* on failure frees op */
void oar_bw_list_free(oar_bw_list_t *l);                                /* frees detached ops too */

/* Names an op reads and writes, counting what its sub-blocks (BLOCK and
 * BLOCKS attrs, recursively) read and write from enclosing blocks. "@EMPTY@"
 * is skipped. Names are borrowed from the program. */
int oar_bw_op_footprint(oar_program_t *p, const oar_op_desc_t *op,
                        oar_bw_names_t *reads, oar_bw_names_t *writes);
/* sub-block indices of an op into *idx (caller frees), count in *n */
int oar_bw_op_sub_blocks(const oar_op_desc_t *op, int **idx, int *n);

int oar_bw_op_role(const oar_op_desc_t *op);      /* 0 (Forward) when unset */
int oar_bw_set_role(oar_op_desc_t *op, int role);
bool oar_bw_dtype_differentiable(const oar_var_desc_t *v);

/* ---- pass state (backward.c) ------------------------------------------- */

typedef struct oar_bw_pass {
    oar_program_t *p;
    int nblocks0;                 /* blocks that existed before the pass */
    int nvars0;                   /* block 0's vars before the pass */
    oar_bw_names_t no_grad;       /* caller's no_grad names (copies) */
    oar_bw_names_t wanted;        /* gradients(): inputs asked for (override stop_gradient) */
    oar_bw_names_t reach;         /* block-0 vars that vary with what is differentiated */
    bool use_reach;
    /* block-0 vars computed from `reach` by an op with no grad maker: no
     * gradient can flow through them (the op's type in blocked_by) */
    oar_bw_names_t blocked;
    const char **blocked_by; int capblocked;
    /* grad names: gname maps a forward name to its entry; gfwd maps every
     * grad name handed out (renames too) to the entry of its forward var */
    oar_strmap_t gname, gfwd;
    struct oar_bw_entry { const char *fwd, *grad; } *entries; int nentries, capentries;
    oar_bw_pool_t pool;
    int depth;                    /* nesting of sub-block runs */
    int *made; int nmade, capmade; /* blocks the pass appended (emptied on failure) */
    /* block-0 grads an earlier pass declared get fresh names: old -> new */
    oar_strmap_t renamed;
    const char **rnew; int nrnew, caprnew;
} oar_bw_pass_t;

/* One run over one forward block. */
typedef struct oar_bw_run {
    oar_bw_pass_t *P;
    oar_block_t *fwd_block;       /* where the forward ops live */
    oar_block_t *target;          /* where grad ops go */
    bool top;                     /* block 0 run (seeded); else grads of outer vars flow in */
    struct oar_bw_run *up;        /* the run whose grad maker started this one */
    const oar_bw_names_t *linked; /* vars of fwd_block whose grads the grad op links in (may be NULL) */
    oar_bw_list_t list;
    oar_bw_names_t written;       /* names the committed ops write */
} oar_bw_run_t;

struct oar_grad_ctx {
    oar_bw_pass_t *P;
    oar_bw_run_t *R;
    const oar_op_desc_t *fwd;
    int status;                   /* first failure of a gc_* call (sticky) */
};

/* The gradient name of forward var `fwd`: "fwd@GRAD". (When block 0
 * already declares a grad name the pass writes, an earlier pass made it; the
 * commit renames this pass's writes, see `renamed`.) */
const char *oar_bw_grad_name(oar_bw_pass_t *P, const char *fwd);
/* declared in block 0 before the pass (an earlier pass's grad is a forward
 * value to this one) */
bool oar_bw_declared_before(oar_bw_pass_t *P, const char *name);
/* registers an extra grad name (a rename) for the same forward var as `of` */
int oar_bw_alias(oar_bw_pass_t *P, const char *name, const char *of);
/* the forward var of a grad name; NULL if `name` is not a grad name. As in
 * Fluid, every name containing "@GRAD" is one; the forward var of a name no
 * helper handed out (built by hand in a maker) is the part before "@GRAD". */
const char *oar_bw_fwd_of(oar_bw_run_t *R, const char *name);
/* no gradient wanted for `var` as seen from forward block `b` */
bool oar_bw_no_grad(oar_bw_pass_t *P, oar_block_t *b, const char *var);

/* Runs generate/prune/addup/commit for `fwd_ops` (in forward order) of
 * R->fwd_block into R->target; R->list may hold seed ops already. */
int oar_bw_run_block(oar_bw_run_t *R, oar_op_desc_t *const *fwd_ops, int nfwd);
/* A nested run over forward block `fwd_idx` into a new child of R's target;
 * returns the new block's idx or a negative status. */
int oar_bw_run_sub_block(oar_bw_run_t *R, int fwd_idx);
/* the same, where the grads of `linked` (vars declared in the sub-block) are
 * provided by the enclosing grad op at run time, like grads of outer vars */
int oar_bw_run_sub_block_linked(oar_bw_run_t *R, int fwd_idx, const oar_bw_names_t *linked);
/* the name `grad` ended up with in block 0 (after renames) */
const char *oar_bw_final_name(oar_bw_pass_t *P, const char *grad);
/* the grad ops one forward op's maker emits (eager mode, oar_eager_grad_ops) */
int oar_bw_op_grad_descs(const oar_op_desc_t *fwd, const char *const *no_grad, int nno_grad,
                         oar_op_desc_t ***ops, int *nops);
/* makes a grad-pass op of `type` with op_role Backward; NULL on failure */
oar_op_desc_t *oar_bw_new_op(const char *type);
#endif
