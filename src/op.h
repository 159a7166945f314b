/*
 * op.h — how an operator is defined and how its kernels are written.
 *
 * An operator is one declaration (src/ops/<family>.ops, a Lua data file),
 * the C its declaration cannot say (src/ops/<family>.c: inference, grad
 * makers) and any number of kernels (kernels/cpu/<family>.c,
 * kernels/cuda/<family>.cu), registered per (op type, place, dtype).
 * tools/gen_ops.lua turns the declaration into build/ops/<family>.h: the
 * slot indices, the typed attribute struct, and (included once more with
 * OAR_OPS_DEFINE) the slot and attribute tables, the decoder and the
 * OAR_REGISTER_OP of an oar_op_def_t (below). A declaration gives:
 *   - input/output slots (duplicable: takes a list; dispensable: may be absent),
 *   - attributes with types, defaults and range checks (filled in at insertion),
 *   - `infer`: shape/dtype inference, written once against oar_infer_ctx_t and
 *     run both at compile time (on var descs, -1 = unknown batch dim) and at
 *     run time (on tensors, right before the kernel; it sizes the outputs),
 *   - `grad`: a grad maker that emits the grad op descs (oar_grad_ctx_t);
 *     the grad op is declared beside it (docs/CONTRIBUTING.md, "Adding an op").
 *
 * A whole op, Out = scale * X (spec/header_tours_spec.lua builds these three
 * files into a library, loads it and runs the op in a program):
 *
 * @tour-begin my_scale.ops
 *     op "my_scale" {
 *       doc = [[Out = scale * X, elementwise.]],
 *       inputs = { { "X", "the input, any shape" } },
 *       outputs = { { "Out", "X's shape, dtype and LoD" } },
 *       attrs = { { "scale", "float", 1.0, doc = "the factor" } },
 *       infer = "my_scale_infer", dtype_slot = "X",
 *     }
 * @tour-end
 *
 * @tour-begin my_scale.c
 *     #include "op.h"
 *     #include "ops/my_scale.h"   // OAR_MY_SCALE_X, oar_my_scale_attrs_t
 *
 *     static int my_scale_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }
 *
 *     #define OAR_OPS_DEFINE
 *     #include "ops/my_scale.h"   // the tables, the decoder, the registration
 * @tour-end
 *
 * @tour-begin my_scale_kernels.c
 *     #include "op.h"
 *     #include "ops/my_scale.h"
 *
 *     static int my_scale_f32(oar_kernel_ctx_t *k) {
 *         const oar_my_scale_attrs_t *a = oar_k_attrs(k);
 *         oar_tensor_t *x = oar_k_input(k, OAR_MY_SCALE_X, 0);
 *         const int64_t n = oar_tensor_numel(x);
 *         void *out;
 *         OAR_TRY(oar_k_output_sized(k, OAR_MY_SCALE_OUT, "Out", OAR_FP32, n, false, &out));
 *         const float *xv = oar_tensor_data(x);
 *         float *y = out;
 *         for (int64_t i = 0; i < n; i++) y[i] = a->scale * xv[i];
 *         return OAR_OK;
 *     }
 *     OAR_REGISTER_KERNEL("my_scale", OAR_PLACE_CPU, OAR_FP32, my_scale_f32)
 * @tour-end
 *
 * Slots are addressed by the generated enum, attributes through the decoded
 * struct (oar_k_attrs), never by name on the per-op path. Run-time
 * inference has already sized every output the kernel writes, so a kernel
 * only asks for the data. Errors: return oar_k_error(k, status, fmt, ...);
 * the executor adds the op's context (type, block, index, Lua line).
 */
#ifndef OAR_OP_H
#define OAR_OP_H
#include "oar.h"
#include "desc.h"
#include "tensor.h"
#include "variable.h"
#include "error.h"

/* ---- definitions ------------------------------------------------------- */
enum { OAR_SLOT_DUPLICABLE = 1, OAR_SLOT_DISPENSABLE = 2 };
typedef struct oar_slot_def {
    const char *name;
    int flags;
    const char *doc;       /* what the slot holds (declarations always give one) */
} oar_slot_def_t;

typedef struct oar_attr_def {
    const char *name;
    int type;              /* OAR_ATTR_* */
    double def;            /* default of INT/LONG/FLOAT/BOOLEAN */
    const char *def_str;   /* default of STRING; list and block attrs default to empty/-1 */
    bool required;         /* no default: must be set */
    double min, max;       /* inclusive range check on scalars when min < max */
    const char *choices;   /* STRING attrs that name one of a fixed set: "max|avg" (checked
                              wherever a program comes from; oar_dec_choice decodes the
                              value to its index) */
    const char *doc;       /* what the attribute means */
} oar_attr_def_t;

typedef struct oar_infer_ctx oar_infer_ctx_t;
typedef struct oar_kernel_ctx oar_kernel_ctx_t;
typedef struct oar_grad_ctx oar_grad_ctx_t;
typedef int (*oar_kernel_fn)(oar_kernel_ctx_t *k);
typedef struct oar_decode_ctx oar_decode_ctx_t;

enum {
    OAR_OP_NO_KERNEL = 1,   /* `run` does the work (control flow, array ops): no dtype dispatch */
    OAR_OP_NO_INFER_RUNTIME = 2, /* skip run-time inference (the run fn sizes outputs itself) */
    OAR_OP_PLACE_AWARE = 4, /* with NO_KERNEL: `run` handles tensors on any place (assign, shape);
                               other NO_KERNEL ops get their inputs on the host */
    OAR_OP_INPLACE = 8,     /* output slot 0 may take input slot 0's buffer when the input dies
                               here: the kernel reads element i before writing element i */
    OAR_OP_WRITES_OUTPUTS = 16 /* every kernel writes each element of each output it gets from
                               oar_k_output_data, so a new host buffer there is not zeroed */
};

typedef struct oar_op_def {
    const char *type;
    const oar_slot_def_t *inputs;    /* {NULL, 0}-terminated */
    const oar_slot_def_t *outputs;
    const oar_attr_def_t *attrs;     /* {NULL}-terminated; may be NULL */
    int (*infer)(oar_infer_ctx_t *c);
    int (*grad)(oar_grad_ctx_t *g);  /* NULL: the op has no gradient */
    const char *dtype_slot;          /* input whose dtype picks the kernel; NULL: first present input */
    int flags;
    oar_kernel_fn run;               /* with OAR_OP_NO_KERNEL */
    /* Decoded attributes: at prepare the executor allocates attrs_size zeroed
     * bytes and calls decode once; kernels read the struct with oar_k_attrs. */
    size_t attrs_size;
    int (*decode)(oar_decode_ctx_t *d, void *attrs);
    const char *doc;                 /* what the op computes (the generated reference) */
} oar_op_def_t;

/* Registration is strict: an op declared twice, or a second kernel for the
 * same (op, place, dtype), is refused with both names. The add calls
 * return the status; the load calls (what OAR_REGISTER_OP/_KERNEL run from
 * constructors) keep the failure for oar_registry_check, which also refuses
 * a kernel whose op no definition declares. The Lua binding, the C
 * predictor and the backend loader call it before anything runs. */
OAR_API int oar_registry_add_op(const oar_op_def_t *def);
OAR_API int oar_registry_add_kernel(const char *type, int place, int dtype, oar_kernel_fn fn);
OAR_API int oar_registry_add_kernel_named(const char *type, int place, int dtype, oar_kernel_fn fn, const char *name);
OAR_API void oar_registry_load_op(const oar_op_def_t *def);
OAR_API void oar_registry_load_kernel(const char *type, int place, int dtype, oar_kernel_fn fn, const char *name);
OAR_API const char *oar_registry_place_name(int place);   /* "CPU", "CUDA" */
OAR_API const oar_op_def_t *oar_registry_op(const char *type);           /* NULL if unknown */
OAR_API oar_kernel_fn oar_registry_kernel(const char *type, int place, int dtype);
/* the attr definition of `name` for def (including the attrs common to every op) */
OAR_API const oar_attr_def_t *oar_registry_attr_def(const oar_op_def_t *def, const char *name);
OAR_API const oar_slot_def_t *oar_registry_input_slot(const oar_op_def_t *def, const char *name);
OAR_API const oar_slot_def_t *oar_registry_output_slot(const oar_op_def_t *def, const char *name);

#define OAR_CAT_(a, b) a##b
#define OAR_CAT(a, b) OAR_CAT_(a, b)
#define OAR_REGISTER_OP(def) \
    __attribute__((constructor)) static void OAR_CAT(oar_reg_op_, def)(void) { oar_registry_load_op(&def); }
#define OAR_REGISTER_KERNEL(type, place, dtype, fn) \
    __attribute__((constructor)) static void OAR_CAT(oar_reg_k_, fn)(void) { \
        oar_registry_load_kernel(type, place, dtype, fn, #fn " (" __FILE__ ")"); }

/* ---- inference context (compile time and run time) --------------------- */
OAR_API bool oar_ic_runtime(const oar_infer_ctx_t *c);
/* the op's decoded attribute struct (the definition's decode), at compile
 * time and at run time alike; NULL (an error set) when decoding failed or
 * the op declares none */
OAR_API const void *oar_ic_attrs(oar_infer_ctx_t *c);
OAR_API const oar_op_desc_t *oar_ic_op(const oar_infer_ctx_t *c);
OAR_API int oar_ic_in_count(const oar_infer_ctx_t *c, const char *slot);   /* 0 if absent */
OAR_API int oar_ic_out_count(const oar_infer_ctx_t *c, const char *slot);
OAR_API const char *oar_ic_in_name(const oar_infer_ctx_t *c, const char *slot, int i);
OAR_API const char *oar_ic_out_name(const oar_infer_ctx_t *c, const char *slot, int i);
/* slot's argument 0 exists and is not @EMPTY@ (an optional input given, a
 * grad output the backward pass wants) */
OAR_API bool oar_ic_in_present(const oar_infer_ctx_t *c, const char *slot);
OAR_API bool oar_ic_out_present(const oar_infer_ctx_t *c, const char *slot);
/* dims of input i of slot: ndim into *ndim; NULL (and an error set) when the
 * input is missing or its shape unknown. Compile time may contain -1. */
OAR_API const int64_t *oar_ic_in_dims(oar_infer_ctx_t *c, const char *slot, int i, int *ndim);
OAR_API int oar_ic_in_dtype(oar_infer_ctx_t *c, const char *slot, int i);  /* -1 if unknown */
OAR_API int oar_ic_in_var_type(oar_infer_ctx_t *c, const char *slot, int i);
OAR_API int oar_ic_in_lod_level(oar_infer_ctx_t *c, const char *slot, int i);
OAR_API int oar_ic_out_var_type(oar_infer_ctx_t *c, const char *slot, int i);
/* compile time: sets the var desc's shape/dtype; run time: resizes the tensor
 * (dtype applies when the kernel allocates). dtype -1 keeps the current. */
OAR_API int oar_ic_set_out(oar_infer_ctx_t *c, const char *slot, int i, const int64_t *dims, int ndim, int dtype);
OAR_API int oar_ic_set_out_lod_level(oar_infer_ctx_t *c, const char *slot, int i, int level); /* compile time only; no-op at run time */
OAR_API int oar_ic_set_out_var_type(oar_infer_ctx_t *c, const char *slot, int i, int var_type);
/* out gets in's LoD (run time) or lod_level (compile time) */
OAR_API int oar_ic_share_lod(oar_infer_ctx_t *c, const char *in_slot, int i, const char *out_slot, int j);
/* run time only: the tensor behind an input (NULL at compile time) */
OAR_API const oar_tensor_t *oar_ic_in_tensor(oar_infer_ctx_t *c, const char *slot, int i);
/* the same for an op that needs only the dims and the LoD (always on the
 * host): the data stay where they are, on a device too */
OAR_API const oar_tensor_t *oar_ic_in_lod_tensor(oar_infer_ctx_t *c, const char *slot, int i);
OAR_API int oar_ic_error(oar_infer_ctx_t *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* common inference shapes */
OAR_API int oar_infer_same_as(oar_infer_ctx_t *c, const char *in, const char *out); /* dims, dtype, LoD */
/* for X_grad ops: every output slot "S@GRAD" i gets the dims/dtype of input slot "S" i */
OAR_API int oar_infer_grad_like_inputs(oar_infer_ctx_t *c);
/* for ops whose grad reads Out: X@GRAD (when wanted) gets Out's dims, dtype
 * and LoD; Out@GRAD must have Out's dims */
OAR_API int oar_infer_grad_like_out(oar_infer_ctx_t *c);
/* true if two dims agree, treating -1 (compile time) as a wildcard */
static inline bool oar_dim_eq(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }

/* common input checks (src/infer_check.c); errors name slot and variable */
/* input `slot` is 2-D [rows, cols] (-1: any); `what` describes the expected
 * shape in the error; *dims (may be NULL) gets its dims */
OAR_API int oar_ic_check_2d(oar_infer_ctx_t *c, const char *slot, int64_t rows, int64_t cols, const char *what,
                            const int64_t **dims);
/* input `slot` is float32/float64 (like -1) or has dtype `like` (skipped while unknown) */
OAR_API int oar_ic_check_float(oar_infer_ctx_t *c, const char *slot, int like);
/* run time: the sequence count of input `slot`'s last LoD level, which must
 * end at its row count */
OAR_API int oar_ic_seq_count(oar_infer_ctx_t *c, const char *slot, int64_t *nseq);
/* input `slot` has the dims of input `like` (-1 matching anything) */
OAR_API int oar_ic_check_same_dims(oar_infer_ctx_t *c, const char *slot, const char *like);
/* string attr `attr` names an activation: identity, sigmoid, tanh or relu */
OAR_API int oar_ic_check_act_attr(oar_infer_ctx_t *c, const char *attr);

/* ---- decoding attributes (at prepare, once per op) ----------------------
 * A definition's `decode` reads each attribute its kernels use by name, once,
 * into its typed struct:
 *
 *     typedef struct { int type; bool exclusive; oar_ints_t ksize; } pool_attrs_t;
 *     static int pool_decode(oar_decode_ctx_t *d, void *out) {
 *         pool_attrs_t *a = out;
 *         a->type = oar_dec_choice(d, "pooling_type");
 *         a->exclusive = oar_dec_b(d, "exclusive");
 *         a->ksize = oar_dec_ints(d, "ksize");
 *         return oar_dec_status(d);
 *     }
 *
 * An attribute the definition does not declare (a misspelling in the decode
 * step) or of another type fails the prepare with the op's context; an
 * attribute the desc lacks reads as its declared default. List values point
 * into the op desc, which outlives the prepared op. */
typedef struct { const int32_t *v; int n; } oar_ints_t;
typedef struct { const int64_t *v; int n; } oar_longs_t;
typedef struct { const float *v; int n; } oar_floats_t;
OAR_API int32_t oar_dec_i(oar_decode_ctx_t *d, const char *name);
OAR_API int64_t oar_dec_l(oar_decode_ctx_t *d, const char *name);   /* LONG, or INT widened */
OAR_API float oar_dec_f(oar_decode_ctx_t *d, const char *name);
OAR_API bool oar_dec_b(oar_decode_ctx_t *d, const char *name);
OAR_API const char *oar_dec_s(oar_decode_ctx_t *d, const char *name);  /* "" when unset */
OAR_API int oar_dec_choice(oar_decode_ctx_t *d, const char *name);     /* index in the def's choices */
OAR_API oar_ints_t oar_dec_ints(oar_decode_ctx_t *d, const char *name);
OAR_API oar_longs_t oar_dec_longs(oar_decode_ctx_t *d, const char *name);
OAR_API oar_floats_t oar_dec_floats(oar_decode_ctx_t *d, const char *name);
OAR_API bool oar_dec_has(oar_decode_ctx_t *d, const char *name);     /* set in the desc */
OAR_API const oar_op_desc_t *oar_dec_op(const oar_decode_ctx_t *d);
/* records the first failure; decode returns oar_dec_status(d) */
OAR_API int oar_dec_error(oar_decode_ctx_t *d, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
OAR_API int oar_dec_status(const oar_decode_ctx_t *d);
/* decodes `op` into attrs (attrs_size bytes, zeroed by the caller) with its
 * definition's decode; used by the executor and by compile-time inference */
OAR_API int oar_op_decode(const oar_op_def_t *def, const oar_op_desc_t *op, void *attrs);
/* index of `value` in a "a|b|c" choices list, -1 when absent */
OAR_API int oar_attr_choice_index(const char *choices, const char *value);

/* ---- kernel context ----------------------------------------------------
 * Slots are addressed by their index in the definition's slot list (an enum
 * next to the definition); the name-based forms below remain for code off
 * the per-op path (control flow, io). */
OAR_API int oar_k_nin(const oar_kernel_ctx_t *k, int slot);              /* 0 if absent */
OAR_API int oar_k_nout(const oar_kernel_ctx_t *k, int slot);
OAR_API oar_tensor_t *oar_k_input(oar_kernel_ctx_t *k, int slot, int i);  /* NULL: absent/unset */
OAR_API oar_tensor_t *oar_k_output(oar_kernel_ctx_t *k, int slot, int i);
OAR_API void *oar_k_output_data(oar_kernel_ctx_t *k, int slot, int i, int dtype);
/* The first tensor of output `slot`, checked to hold `numel` elements (its
 * shape was inferred), as writable data of dtype on the kernel's place; an
 * error names the slot (`name`) and the variable. optional: an absent
 * output gives *p = NULL and OAR_OK. */
OAR_API int oar_k_output_sized(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel,
                               bool optional, void **p);
/* The input twin: the data of input `slot`, checked to be of dtype (-1: any)
 * and, when numel >= 0, to hold numel elements; errors name the slot
 * (`name`) and the variable. */
OAR_API int oar_k_input_sized(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel,
                              const void **p);
/* The one sanctioned way for a kernel to set an output's shape, only where
 * the shape depends on the data (rows gathered from other ranks, a sparse
 * grad's row count): sizes the first tensor of output `slot` (a
 * SELECTED_ROWS output: its value tensor, created when missing) to dims and
 * returns its writable data of dtype on the kernel's place (NULL with the
 * error set, or for zero elements). Every other output is sized by the op's
 * inference; kernels take it with oar_k_output_data / oar_k_output_sized,
 * and spec/kernel_shapes_spec.lua keeps oar_tensor_resize out of kernels/. */
OAR_API void *oar_k_output_resized(oar_kernel_ctx_t *k, int slot, const int64_t *dims, int ndim, int dtype);
OAR_API oar_variable_t *oar_k_input_var(oar_kernel_ctx_t *k, int slot, int i);
OAR_API oar_variable_t *oar_k_output_var(oar_kernel_ctx_t *k, int slot, int i);
OAR_API const char *oar_k_input_name(const oar_kernel_ctx_t *k, int slot, int i);
OAR_API const char *oar_k_output_name(const oar_kernel_ctx_t *k, int slot, int i);
OAR_API const void *oar_k_attrs(const oar_kernel_ctx_t *k);              /* the decoded struct */
/* Slot `slot`'s name as the definition (or the desc) spells it; NULL when
 * the op has no such slot. For messages. */
OAR_API const char *oar_k_input_slot_name(const oar_kernel_ctx_t *k, int slot);
OAR_API const char *oar_k_output_slot_name(const oar_kernel_ctx_t *k, int slot);
/* The device number the running kernel works on (the CUDA ordinal; 0 on
 * the CPU); outputs are allocated there. */
OAR_API int oar_k_device(const oar_kernel_ctx_t *k);
/* The op as the executor names it in errors: "op 'mul' (block 0, #3,
 * created at x.lua:5)"; NULL outside a prepared op. */
OAR_API const char *oar_k_context(const oar_kernel_ctx_t *k);
/* State a kernel keeps across runs of one prepared op (a oneDNN primitive,
 * weights reordered once): NULL until set; set replaces (freeing the old
 * state) and free_fn runs when the prepared op goes. */
OAR_API void *oar_k_state(const oar_kernel_ctx_t *k);
OAR_API void oar_k_set_state(oar_kernel_ctx_t *k, void *state, void (*free_fn)(void *));
/* true when a later op of the block is this op's '<type>_grad' reading the
 * same first input: a forward may keep work for it (oar_tensor_attach) */
OAR_API bool oar_k_grad_follows(const oar_kernel_ctx_t *k);

OAR_API const oar_op_desc_t *oar_k_op(const oar_kernel_ctx_t *k);
OAR_API int oar_k_in_count(const oar_kernel_ctx_t *k, const char *slot);
OAR_API int oar_k_out_count(const oar_kernel_ctx_t *k, const char *slot);
OAR_API const char *oar_k_in_name(const oar_kernel_ctx_t *k, const char *slot, int i);
OAR_API const char *oar_k_out_name(const oar_kernel_ctx_t *k, const char *slot, int i);
/* LoD tensor of an input/output (NULL if the slot or arg is absent or
 * "@EMPTY@", or the variable holds another kind) */
OAR_API oar_tensor_t *oar_k_in(oar_kernel_ctx_t *k, const char *slot, int i);
OAR_API oar_tensor_t *oar_k_out(oar_kernel_ctx_t *k, const char *slot, int i);
/* writable output data in dtype, sized by run-time inference; NULL on failure */
OAR_API void *oar_k_out_data(oar_kernel_ctx_t *k, const char *slot, int i, int dtype);
OAR_API oar_variable_t *oar_k_in_var(oar_kernel_ctx_t *k, const char *slot, int i);
OAR_API oar_variable_t *oar_k_out_var(oar_kernel_ctx_t *k, const char *slot, int i);
OAR_API oar_scope_t *oar_k_scope(oar_kernel_ctx_t *k);          /* the scope the block runs in */
OAR_API oar_program_t *oar_k_program(oar_kernel_ctx_t *k);
OAR_API int oar_k_dtype(const oar_kernel_ctx_t *k);             /* the dispatch dtype */
/* Runs block `block_idx` of the same program in `scope` (control flow). */
OAR_API int oar_k_run_block(oar_kernel_ctx_t *k, int block_idx, oar_scope_t *scope);
OAR_API int oar_k_error(oar_kernel_ctx_t *k, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- grad makers ------------------------------------------------------- */
OAR_API const oar_op_desc_t *oar_gc_fwd(const oar_grad_ctx_t *g);
/* new grad op (attrs copied from the forward op); owned by the pass */
OAR_API oar_op_desc_t *oar_gc_new_op(oar_grad_ctx_t *g, const char *type);
/* the same with type "<forward type>_grad" */
OAR_API oar_op_desc_t *oar_gc_new_grad_op(oar_grad_ctx_t *g);
OAR_API int oar_gc_in(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot);       /* fwd input slot -> op input slot */
OAR_API int oar_gc_out(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot);      /* fwd output slot -> op input slot */
OAR_API int oar_gc_out_grad(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot); /* "slot@GRAD" input: fwd outputs + @GRAD */
OAR_API int oar_gc_in_grad(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot);  /* "slot@GRAD" output: fwd inputs + @GRAD */
/* The same under another slot name, as double-grad ops name theirs (Fluid's
 * relu_grad_grad: "DDX" is the grad of relu_grad's output "X@GRAD"):
 * forward input/output `fwd_slot` -> op input `slot`; the grads of forward
 * output `fwd_slot` -> op input `slot`; the grads of forward input
 * `fwd_slot` -> op output `slot` (@EMPTY@ where no grad is wanted). */
OAR_API int oar_gc_in_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot);
OAR_API int oar_gc_out_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot);
OAR_API int oar_gc_out_grad_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot);
OAR_API int oar_gc_in_grad_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot);
/* Fluid's default maker: "<type>_grad" with every fwd input, output, output grad
 * as inputs and every input grad as outputs. */
OAR_API int oar_grad_default(oar_grad_ctx_t *g);
/* Builds the grad block of forward sub-block `fwd_block` (recursing into the
 * backward pass); returns its idx or a negative status. */
OAR_API int oar_gc_grad_block(oar_grad_ctx_t *g, int fwd_block);
/* The same, for an op that provides at run time the gradients of `linked`,
 * variables declared in the sub-block (a recurrent op's step outputs and
 * updated memories): inside the grad block they count as given, like the
 * grads of outer variables. */
OAR_API int oar_gc_grad_block_linked(oar_grad_ctx_t *g, int fwd_block, const char *const *linked, int n);
/* names the pass must treat as not needing a gradient (no_grad set) */
OAR_API bool oar_gc_no_grad(const oar_grad_ctx_t *g, const char *var);

#define OAR_GRAD_SUFFIX "@GRAD"
#define OAR_EMPTY_VAR "@EMPTY@"

/* ---- random numbers (one global generator; its state is checkpointed) --- */
OAR_API uint64_t oar_rng_next(void);                 /* 64 random bits */
OAR_API double oar_rng_uniform(void);                /* [0, 1) */
OAR_API double oar_rng_normal(void);
/* an op-local generator for ops with a nonzero `seed` attr */
typedef struct { uint64_t s[4]; } oar_rng_t;
OAR_API void oar_rng_seed(oar_rng_t *r, uint64_t seed);
OAR_API uint64_t oar_rng_next_r(oar_rng_t *r);
OAR_API double oar_rng_uniform_r(oar_rng_t *r);
OAR_API double oar_rng_normal_r(oar_rng_t *r);

/* ---- flags -------------------------------------------------------------- */
extern OAR_API int oar_flag_check_nan_inf;
extern OAR_API int oar_flag_memory_plan;
#endif
