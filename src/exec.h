/* exec.h — the executor's prepared form of a block, shared by the executor
 * (executor.c), the run-time contexts (infer.c, kernel_ctx.c). */
#ifndef OAR_EXEC_H
#define OAR_EXEC_H
#include "op.h"
#include "strmap.h"

#define OAR_NUM_DTYPES 22

typedef struct oar_pslot {
    const char *name;        /* slot name (the definition's, or the desc's for undeclared slots) */
    int n;                   /* 0 when the desc does not fill the slot */
    int *ids;                /* var table index per argument; -1 for @EMPTY@ */
} oar_pslot_t;

/* What run-time inference produced the last time the op ran, replayed while
 * its inputs keep their dtypes and dims (and carry no LoD). */
typedef struct oar_memo_in { int type, dtype, ndim; int64_t dims[OAR_MAX_DIMS]; } oar_memo_in_t;
typedef struct oar_memo_out { int dtype, ndim; int64_t dims[OAR_MAX_DIMS]; } oar_memo_out_t;
enum { OAR_MEMO_EMPTY = 0, OAR_MEMO_VALID = 1, OAR_MEMO_NEVER = -1 };

typedef struct oar_prep_op {
    const oar_op_desc_t *desc;
    const oar_op_def_t *def;
    /* slots in the definition's order (index = the definition's slot enum),
     * then any the desc has that the definition does not declare */
    oar_pslot_t *ins; int nins;
    oar_pslot_t *outs; int nouts;
    oar_kernel_fn kernels[OAR_NUM_DTYPES];
    unsigned char kplace[OAR_NUM_DTYPES];  /* place of kernels[t]: a CUDA executor falls back to CPU */
    bool host_inputs;        /* OAR_OP_NO_KERNEL op that reads its inputs on the host */
    int dispatch_id;         /* var id whose tensor dtype picks the kernel, -1 none */
    int fallback_dtype;      /* when the dispatch var has no dtype yet */
    char *context;           /* "op 'mul' (block 0, #3, created at x.lua:5)" */
    void *attrs;             /* the definition's decoded attributes (NULL without decode) */
    void *kstate;            /* the kernel's state across runs (oar_k_set_state) */
    void (*kstate_free)(void *);
    signed char grad_follows; /* a later op is this op's grad on the same first input;
                                 -1 until a kernel asks (oar_k_grad_follows) */
    /* memory plan: variables whose last use is this op (released after it) */
    int *release; int nrelease;
    int inplace_in, inplace_out;   /* var ids of an in-place pair, -1 none */
    /* run-time inference memo */
    int memo_state;
    int memo_nin, memo_nout;
    oar_memo_in_t *memo_in;
    oar_memo_out_t *memo_out;
} oar_prep_op_t;

typedef struct oar_prepared {
    uint64_t uid, version;
    int block_idx;
    bool plan;                   /* built with a memory plan (top-level runs) */
    oar_program_t *program;
    oar_prep_op_t *ops; int nops;
    char **names; int nnames;    /* var table: every name the ops use */
    oar_strmap_t index;          /* name -> var table index */
    const oar_var_desc_t **decl; /* the desc declaring it in this block, or NULL */
    bool *persistable;           /* declared persistable in this block or an ancestor */
    bool *planned;               /* temporaries the memory plan may release early */
    unsigned char *keep;         /* per run: fetched variables the plan must not release */
    /* bound once (oar_executor_run): the caller's scope, the local scope kept
     * for it, and the variable table; valid while oar_scope_epoch holds */
    oar_scope_t *bound_scope;
    oar_scope_t *bound_local;
    uint64_t bound_epoch;
    oar_variable_t **bound_vars;
} oar_prepared_t;

struct oar_kernel_ctx {
    oar_executor_t *exe;
    const oar_prepared_t *prep;
    const oar_prep_op_t *op;
    oar_variable_t **vars;       /* var table of this block run */
    oar_scope_t *scope;
    int dtype;
    int place, device;           /* where the running kernel works (oar_k_out_data allocates there) */
    const oar_buffer_t *inplace_buf;  /* the dying input's buffer the output may write into */
    bool infer_read_values;      /* run-time inference read an input's values (no memo) */
};

struct oar_infer_ctx {
    bool runtime;
    const oar_op_desc_t *op;
    oar_block_t *block;          /* compile time */
    oar_kernel_ctx_t *k;         /* run time */
    const oar_op_def_t *def;     /* compile time: for oar_ic_attrs */
    void *attrs;                 /* compile time: decoded on first oar_ic_attrs, freed by the caller */
};

const oar_pslot_t *oar_pslot_find(const oar_pslot_t *slots, int n, const char *name);
oar_variable_t *oar_k_var(oar_kernel_ctx_t *k, const oar_pslot_t *s, int i);
int oar_infer_runtime(oar_kernel_ctx_t *k);   /* runs def->infer on tensors */
/* prepare.c: builds the prepared form of block block_idx (ops, var table,
 * decoded attrs, memory plan) for an executor of place `place` */
/* whether a later op of p is ops[i]'s '<type>_grad' on its first input */
bool oar_prep_grad_follows(const oar_prepared_t *p, int i);
int oar_prepare_block(int place, oar_program_t *prog, int block_idx, bool plan_memory, oar_prepared_t **out);
void oar_prepared_free(oar_prepared_t *p);
int oar_prepared_find(const oar_prepared_t *p, const char *name);   /* var table index or -1 */
/* run-time inference, or the replay of its memo when the inputs are unchanged */
int oar_infer_runtime_memo(oar_kernel_ctx_t *k);
int oar_executor_run_block(oar_executor_t *e, oar_program_t *p, int block_idx, oar_scope_t *scope);
int oar_executor_place(const oar_executor_t *e);
/* runs op i of p alone on vars (no memory plan): eager mode (eager.c) */
int oar_executor_run_prepared_op(oar_executor_t *e, const oar_prepared_t *p, int i, oar_variable_t **vars,
                                 oar_scope_t *scope);
#endif
