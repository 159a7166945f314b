/* exec.h — the executor's prepared form of a block, shared by the executor
 * (executor.c), the run-time contexts (infer.c, kernel_ctx.c). */
#ifndef OAR_EXEC_H
#define OAR_EXEC_H
#include "op.h"

#define OAR_NUM_DTYPES 22

typedef struct oar_pslot {
    const char *name;        /* slot name (borrowed from the desc) */
    int n;
    int *ids;                /* var table index per argument; -1 for @EMPTY@ */
} oar_pslot_t;

typedef struct oar_prep_op {
    const oar_op_desc_t *desc;
    const oar_op_def_t *def;
    oar_pslot_t *ins; int nins;
    oar_pslot_t *outs; int nouts;
    oar_kernel_fn kernels[OAR_NUM_DTYPES];
    unsigned char kplace[OAR_NUM_DTYPES];  /* place of kernels[t]: a CUDA executor falls back to CPU */
    bool host_inputs;        /* OAR_OP_NO_KERNEL op that reads its inputs on the host */
    int dispatch_id;         /* var id whose tensor dtype picks the kernel, -1 none */
    int fallback_dtype;      /* when the dispatch var has no dtype yet */
    char *context;           /* "op 'mul' (block 0, #3, created at x.lua:5)" */
} oar_prep_op_t;

typedef struct oar_prepared {
    uint64_t uid, version;
    int block_idx;
    oar_program_t *program;
    oar_prep_op_t *ops; int nops;
    char **names; int nnames;    /* var table: every name the ops use */
    const oar_var_desc_t **decl; /* the desc declaring it in this block, or NULL */
    bool *persistable;           /* declared persistable in this block or an ancestor */
} oar_prepared_t;

struct oar_kernel_ctx {
    oar_executor_t *exe;
    const oar_prepared_t *prep;
    const oar_prep_op_t *op;
    oar_variable_t **vars;       /* var table of this block run */
    oar_scope_t *scope;
    int dtype;
    int place, device;           /* where the running kernel works (oar_k_out_data allocates there) */
};

struct oar_infer_ctx {
    bool runtime;
    const oar_op_desc_t *op;
    oar_block_t *block;          /* compile time */
    oar_kernel_ctx_t *k;         /* run time */
};

const oar_pslot_t *oar_pslot_find(const oar_pslot_t *slots, int n, const char *name);
oar_variable_t *oar_k_var(oar_kernel_ctx_t *k, const oar_pslot_t *s, int i);
int oar_infer_runtime(oar_kernel_ctx_t *k);   /* runs def->infer on tensors */
int oar_executor_run_block(oar_executor_t *e, oar_program_t *p, int block_idx, oar_scope_t *scope);
int oar_executor_place(const oar_executor_t *e);
#endif
