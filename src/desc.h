/* desc.h — in-memory program descriptions (Fluid's framework.proto). */
#ifndef OAR_DESC_H
#define OAR_DESC_H
#include "oar.h"
#include "strmap.h"
#include "tensor.h"

typedef struct oar_op_slot {
    char *slot;
    char **args; int nargs;
} oar_op_slot_t;

typedef struct oar_attr {
    char *name;
    int type;                     /* OAR_ATTR_* */
    union { int32_t i; int64_t l; float f; bool b; char *s; int32_t block; } v;
    void *list; int n;            /* INTS int32_t[], LONGS int64_t[], FLOATS float[],
                                     BOOLEANS bool[], STRINGS char*[], BLOCKS int32_t[] */
} oar_attr_t;

struct oar_op_desc {
    char *type;
    oar_op_slot_t *inputs; int ninputs;
    oar_op_slot_t *outputs; int noutputs;
    oar_attr_t *attrs; int nattrs;
    bool is_target;
    oar_block_t *block;           /* NULL while detached */
};

struct oar_var_desc {
    char *name;
    int type;                     /* oar_var_type_t */
    int dtype;                    /* oar_dtype_t, -1 unknown */
    int ndim;                     /* -1 unknown */
    int64_t dims[OAR_MAX_DIMS];
    int lod_level;
    bool persistable, stop_gradient, need_check_feed;
    oar_block_t *block;
};

struct oar_block {
    int idx, parent_idx, forward_block_idx;
    oar_var_desc_t **vars; int nvars, capv;
    oar_strmap_t var_index;
    oar_op_desc_t **ops; int nops, capo;
    oar_program_t *program;
};

struct oar_program {
    oar_block_t **blocks; int nblocks, capb;
    uint64_t version;
    int64_t fluid_version;        /* ProgramDesc.version.version */
    uint64_t uid;                 /* unique per program object (executor cache key) */
    int64_t max_while_iterations; /* 0: the flag decides (oar_program_set_max_while_iterations) */
};

/* internal helpers */
void oar_program_touch(oar_program_t *p);          /* bump version */
void oar_desc_touch_block(oar_block_t *b);
const oar_attr_t *oar_op_find_attr(const oar_op_desc_t *op, const char *name);
const oar_op_slot_t *oar_op_find_input(const oar_op_desc_t *op, const char *slot);
const oar_op_slot_t *oar_op_find_output(const oar_op_desc_t *op, const char *slot);
OAR_API int oar_op_desc_copy(const oar_op_desc_t *src, oar_op_desc_t **out); /* detached copy */
OAR_API int oar_op_desc_copy_attrs(oar_op_desc_t *dst, const oar_op_desc_t *src);
OAR_API int oar_var_desc_copy_from(oar_var_desc_t *dst, const oar_var_desc_t *src); /* all but name */
/* append without definition checks (parse, passes that build ops already valid) */
OAR_API int oar_block_append_op_raw(oar_block_t *b, oar_op_desc_t *op);
OAR_API int oar_block_insert_op_raw(oar_block_t *b, int pos, oar_op_desc_t *op);

/* Attribute reads for kernels and inference; defaults are filled at insertion,
 * so a missing attr yields 0/""/empty. */
OAR_API int32_t oar_attr_i(const oar_op_desc_t *op, const char *name);
OAR_API int64_t oar_attr_l(const oar_op_desc_t *op, const char *name);
OAR_API float oar_attr_f(const oar_op_desc_t *op, const char *name);
OAR_API bool oar_attr_b(const oar_op_desc_t *op, const char *name);
OAR_API const char *oar_attr_s(const oar_op_desc_t *op, const char *name);
OAR_API const int32_t *oar_attr_ints(const oar_op_desc_t *op, const char *name, int *n);
OAR_API const int64_t *oar_attr_longs(const oar_op_desc_t *op, const char *name, int *n);
OAR_API const float *oar_attr_floats(const oar_op_desc_t *op, const char *name, int *n);
/* block-typed attr value, -1 if absent */
OAR_API int oar_attr_block(const oar_op_desc_t *op, const char *name);
/* "op 'mul' (block 0, #3, created at train.lua:12)" into buf */
OAR_API const char *oar_op_context(const oar_op_desc_t *op, char *buf, size_t n);

/* shared by desc.c, desc_attr.c, desc_pb.c, desc_validate.c */
void oar_attr_value_free(oar_attr_t *a);          /* frees the value, keeps the name */
bool oar_desc_dtype_valid(int dtype);             /* a tensor element type oar knows */
bool oar_desc_var_type_valid(int var_type);       /* an oar_var_type_t value */
const char *oar_desc_type_name(int t);            /* VarType.Type name: "FP32", "LOD_TENSOR" */
/* rank 0..OAR_MAX_DIMS, dims >= -1, known dims' product fits int64 (OAR_ERR_SHAPE) */
int oar_desc_check_dims(const int64_t *dims, int ndim, const char *var);
#endif
