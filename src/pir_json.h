/* pir_json.h — Paddle 3's PIR program in JSON (`model.json`, written by
 * paddle.jit.save and save_inference_model under the PIR API) translated into
 * a Fluid ProgramDesc. pir_json.c reads the document (json-c) and keeps the
 * value table; pir_json_ops.c maps each pd_op.* operation onto Fluid ops.
 *
 * The schema (Paddle's paddle/fluid/pir/serialize_deserialize): program ->
 * regions[] -> blocks[] -> ops[]; an op is {"#": "<dialect>.<name>", "I":
 * [{"%": id}], "O": [{"%": id, "TT": type}], "A": [{"N": name, "AT": {"#":
 * attr type, "D": data}}]}; dialect 0 is builtin, 1 pd_op; "p" is a compressed
 * builtin.parameter (A: [.., .., .., name], O: one value). Value id 0 is an
 * absent optional input. */
#ifndef OAR_PIR_JSON_H
#define OAR_PIR_JSON_H
#include <json-c/json.h>
#include "desc.h"

#define PIR_MAX_CONST 64

typedef struct pir_value {
    bool defined;
    char *name;                 /* its variable in the ProgramDesc; NULL until needed */
    int dtype, ndim, lod_level;
    int64_t dims[OAR_MAX_DIMS];
    bool persistable;
    /* pd_op.full / full_int_array: folded into attributes where Fluid takes them */
    bool is_const;
    int nconst;
    double cvals[PIR_MAX_CONST];
    /* builtin.combine: the member value ids */
    int64_t *members; int nmembers;
} pir_value_t;

typedef struct pir_ctx {
    oar_block_t *block;
    pir_value_t *vals; int64_t nvals;
    int nfeed;
    int op_index;               /* of the PIR op being translated, for errors */
    const char *op_name;        /* "pd_op.conv2d" */
} pir_ctx_t;

/* one PIR operation, decoded */
typedef struct pir_op {
    char name[96];              /* "pd_op.conv2d" */
    json_object *attrs;         /* the "A" array (may be NULL) */
    int64_t *in; int nin;
    int64_t *out; int nout;
} pir_op_t;

/* ---- for the op translators (pir_json_ops.c) ---- */
pir_value_t *pir_value(pir_ctx_t *c, int64_t id);              /* NULL for id 0 or undefined */
pir_value_t *pir_in(pir_ctx_t *c, const pir_op_t *op, int i);  /* NULL when absent */
/* the variable that holds input i (a constant becomes a fill_constant op) */
int pir_in_name(pir_ctx_t *c, const pir_op_t *op, int i, const char **name);
/* the variables of a builtin.combine input */
int pir_in_names(pir_ctx_t *c, const pir_op_t *op, int i, const char ***names, int *n);
/* the variable for output i (declared with the PIR type); `alias` names an
 * existing variable to use instead (in-place outputs such as MeanOut) */
int pir_out_name(pir_ctx_t *c, const pir_op_t *op, int i, const char *alias, const char **name);
/* the constant values of input i (a pd_op.full / full_int_array output) */
int pir_in_const(pir_ctx_t *c, const pir_op_t *op, int i, double *v, int max, int *n);

/* attributes of the PIR op; return false when absent */
json_object *pir_attr(const pir_op_t *op, const char *name);
bool pir_attr_num(const pir_op_t *op, const char *name, double *v);
bool pir_attr_bool(const pir_op_t *op, const char *name, bool *v);
const char *pir_attr_str(const pir_op_t *op, const char *name);
bool pir_attr_nums(const pir_op_t *op, const char *name, double *v, int max, int *n);
int pir_dtype_from_name(const char *s);                        /* "float32" -> OAR_FP32, -1 unknown */

/* Fluid op attrs, set with the type the op declares (INT/LONG/FLOAT/BOOLEAN;
 * INTS/LONGS/FLOATS): Paddle versions differ on these */
int pir_set_num(oar_op_desc_t *op, const char *name, double v);
int pir_set_nums(oar_op_desc_t *op, const char *name, const double *v, int n);
/* copies a PIR attribute (number, bool, string or list) under a Fluid name */
int pir_copy_attr(const pir_op_t *pop, oar_op_desc_t *op, const char *pir_name, const char *fluid_name);
/* inserts a built op into the block (checks it, fills defaults, infers) */
int pir_emit(pir_ctx_t *c, oar_op_desc_t *op);

/* ---- pir_json_ops.c ---- */
/* Translates one op; OAR_ERR_UNSUPPORTED names an op with no Fluid mapping. */
int pir_translate_op(pir_ctx_t *c, const pir_op_t *op);

/* ---- entry ---- */
int oar_pir_json_translate(const void *bytes, size_t n, oar_program_t **out);
#endif
