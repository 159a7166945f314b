/*
 * oar.h — the public C API of the oar runtime.
 *
 * oar realizes PaddlePaddle Fluid's design in C: a program is a description
 * (ProgramDesc -> BlockDesc -> OpDesc/VarDesc); an executor runs a block of it
 * against a scope of variables; kernels do the arithmetic.
 *
 * Quick tour (error checks elided; every int-returning call returns OAR_OK=0
 * on success and a negative status otherwise, with oar_last_error() telling
 * why). spec/header_tours_spec.lua compiles it into a main() and runs it:
 *
 * @tour-begin main
 *     oar_program_t *prog;  oar_program_new(&prog);
 *     oar_block_t *b = oar_program_block(prog, 0);
 *     oar_var_desc_t *x;    oar_block_var_new(b, "x", &x);
 *     int64_t dims[2] = {-1, 3};
 *     oar_var_desc_set_shape(x, dims, 2);
 *     oar_var_desc_set_dtype(x, OAR_FP32);
 *     oar_op_desc_t *op;    oar_op_desc_new("relu", &op);
 *     const char *in[1] = {"x"}, *out[1] = {"y"};
 *     oar_op_desc_set_input(op, "X", in, 1);
 *     oar_op_desc_set_output(op, "Out", out, 1);
 *     oar_block_insert_op(b, -1, op);          // validates + infers "y"; b owns op
 *
 *     oar_executor_t *exe;  oar_executor_new(OAR_PLACE_CPU, 0, &exe);
 *     oar_scope_t *scope;   oar_scope_new(&scope);
 *     int64_t feed_dims[2] = {2, 3};
 *     const float data[6] = {-1, 2, -3, 4, -5, 6};
 *     oar_tensor_t *feed;   oar_tensor_from_data(OAR_FP32, feed_dims, 2, data, &feed);
 *     oar_tensor_t *y;      // fetched: a new reference
 *     oar_executor_run(exe, prog, 0, scope, 1, in, &feed, 1, out, &y);
 *     const float *yv = oar_tensor_data(y);
 *     printf("%g %g %g\n", yv[0], yv[1], yv[5]);   // 0 2 6
 *
 *     oar_tensor_free(y);  oar_tensor_free(feed);
 *     oar_scope_free(scope);  oar_executor_free(exe);  oar_program_free(prog);
 * @tour-end
 *
 * Ownership: *_new and *_free pairs; handles that are refcounted (tensors, scopes)
 * also have *_retain, and *_free drops one reference. Borrowed pointers
 * (blocks, var/op descs inside a program, variables inside a scope) live as
 * long as their owner.
 *
 * The section between OAR_FFI_BEGIN and OAR_FFI_END is free of preprocessor
 * lines: the build copies it into lua/oar/cdef.lua for LuaJIT's ffi.cdef
 * (tools/gen_cdef.sh, which drops the OAR_API marks).
 *
 * liboar.so is built with -fvisibility=hidden: it exports exactly the
 * functions marked OAR_API, those of this header and of the op-authoring
 * API (oar_op.h). docs/DECISIONS.md, "What liboar exports".
 */
#ifndef OAR_H
#define OAR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* marks a function (or variable) liboar.so exports */
#ifndef OAR_API
#if defined(__GNUC__) || defined(__clang__)
#define OAR_API __attribute__((visibility("default")))
#else
#define OAR_API
#endif
#endif

/* OAR_FFI_BEGIN */

/* ---- status ------------------------------------------------------------ */
enum {
    OAR_OK = 0,
    OAR_ERR_INVALID = -1,    /* bad argument */
    OAR_ERR_NOT_FOUND = -2,  /* missing variable, op type, kernel, file */
    OAR_ERR_SHAPE = -3,      /* shape mismatch */
    OAR_ERR_DTYPE = -4,      /* dtype mismatch */
    OAR_ERR_NOMEM = -5,      /* allocation failed or too large */
    OAR_ERR_IO = -6,         /* file system */
    OAR_ERR_FORMAT = -7,     /* malformed program or tensor file */
    OAR_ERR_RANGE = -8,      /* index out of range */
    OAR_ERR_NUMERIC = -9,    /* NaN/Inf found, division by zero */
    OAR_ERR_UNSUPPORTED = -10, /* no kernel for this place/dtype */
    OAR_ERR_DEVICE = -11,    /* a CUDA runtime/cuBLAS/cuDNN call failed */
    OAR_ERR_COMM = -12,      /* a collective failed: a worker died, timed out or differs */
    OAR_ERR_CANCELLED = -13  /* stopped by oar_executor_cancel / oar_predictor_cancel */
};
OAR_API const char *oar_last_error(void);
OAR_API void oar_clear_error(void);

/* ---- dtypes and places (values are Fluid's VarType.Type) ---------------- */
typedef enum {
    OAR_BOOL = 0, OAR_INT16 = 1, OAR_INT32 = 2, OAR_INT64 = 3,
    OAR_FP16 = 4, OAR_FP32 = 5, OAR_FP64 = 6,
    OAR_UINT8 = 20, OAR_INT8 = 21
} oar_dtype_t;

/* variable kinds, also Fluid's VarType.Type values */
typedef enum {
    OAR_VAR_LOD_TENSOR = 7, OAR_VAR_SELECTED_ROWS = 8,
    OAR_VAR_FEED_MINIBATCH = 9, OAR_VAR_FETCH_LIST = 10,
    OAR_VAR_STEP_SCOPES = 11, OAR_VAR_LOD_RANK_TABLE = 12,
    OAR_VAR_LOD_TENSOR_ARRAY = 13, OAR_VAR_RAW = 17
} oar_var_type_t;

typedef enum { OAR_PLACE_CPU = 0, OAR_PLACE_CUDA = 1 } oar_place_kind_t;

OAR_API size_t oar_dtype_size(int dtype);          /* 0 for an unknown dtype */
OAR_API const char *oar_dtype_name(int dtype);     /* "float32", ... or NULL */
OAR_API int oar_dtype_from_name(const char *name); /* -1 if unknown */
/* whether the CUDA backend (liboar_cuda.so) exists and loads; loads it */
OAR_API bool oar_is_compiled_with_cuda(void);
/* NULL when the CUDA backend loads, else why not (naming what is missing) */
OAR_API const char *oar_cuda_backend_error(void);
OAR_API int oar_cuda_device_count(void);           /* 0 without the backend, a driver or a GPU */
/* Kernel calls per (op type, place) while counting is on (flag
 * count_kernels): how often op_type ran a kernel of that place. */
OAR_API int64_t oar_kernel_calls(const char *op_type, int place);
OAR_API void oar_kernel_calls_reset(void);
/* whether op_type has a kernel for place and dtype (CUDA: once the backend
 * is loaded) */
OAR_API bool oar_kernel_registered(const char *op_type, int place, int dtype);

/* ---- tensors (refcounted) ---------------------------------------------- */
typedef struct oar_tensor oar_tensor_t;

OAR_API int oar_tensor_new(int dtype, const int64_t *dims, int ndim, oar_tensor_t **out); /* zeros */
OAR_API int oar_tensor_new_empty(oar_tensor_t **out);          /* no dims, no buffer */
OAR_API int oar_tensor_from_data(int dtype, const int64_t *dims, int ndim,
                                 const void *data, oar_tensor_t **out); /* copies */
OAR_API oar_tensor_t *oar_tensor_retain(oar_tensor_t *t);
OAR_API void oar_tensor_free(oar_tensor_t *t);                 /* drops one reference */
OAR_API int oar_tensor_dtype(const oar_tensor_t *t);
OAR_API int oar_tensor_ndim(const oar_tensor_t *t);
OAR_API const int64_t *oar_tensor_dims(const oar_tensor_t *t);
OAR_API int64_t oar_tensor_numel(const oar_tensor_t *t);
OAR_API void *oar_tensor_data(oar_tensor_t *t);                /* NULL until allocated or on a device */
/* Call before writing through oar_tensor_data's pointer into a tensor a
 * program has run on: drops what kernels derived from its data and keep for
 * later runs (fc's reordered weights, conv2d's unfolded images). Writes by
 * ops, oar_tensor_mutable* and new tensors need nothing. */
OAR_API void oar_tensor_touch(oar_tensor_t *t);
/* The version of the memory t's data lies in (its whole buffer, shared with
 * views and tensors sharing it): a number that changes on every write
 * through the API (ops writing in place, oar_tensor_mutable*,
 * oar_tensor_mark_written) and differs between buffers. Eager autograd
 * saves it when it records an op and checks it at backward. 0 without
 * data. oar_tensor_mark_written is oar_tensor_touch plus a new version:
 * call it before writing through oar_tensor_data's pointer when autograd
 * must know (a write touch alone leaves unseen, as PyTorch's `.data`). */
OAR_API uint64_t oar_tensor_version(const oar_tensor_t *t);
OAR_API void oar_tensor_mark_written(oar_tensor_t *t);
OAR_API int oar_tensor_place(const oar_tensor_t *t);
OAR_API int oar_tensor_device(const oar_tensor_t *t);          /* the CUDA device of its data (0 on the host) */
/* a new tensor (dims, dtype, LoD) with src's data copied to place/device */
OAR_API int oar_tensor_copy_to(const oar_tensor_t *src, int place, int device, oar_tensor_t **out);
OAR_API int oar_tensor_copy(const oar_tensor_t *src, oar_tensor_t **out); /* deep copy incl. LoD */
/* A tensor of `dims` over src's elements from `offset` (in elements) on,
 * sharing src's memory: writes through either are seen by both (eager
 * mode's views). A kernel that writes a shared view as an output gets a
 * buffer of its own, as with any shared buffer. */
OAR_API int oar_tensor_view(oar_tensor_t *src, int64_t offset, const int64_t *dims, int ndim, oar_tensor_t **out);
/* LoD: level l has n_l offsets; offsets are 0-based and nondecreasing */
OAR_API int oar_tensor_lod_levels(const oar_tensor_t *t);
OAR_API int64_t oar_tensor_lod_size(const oar_tensor_t *t, int level);
OAR_API const int64_t *oar_tensor_lod_data(const oar_tensor_t *t, int level);
OAR_API int oar_tensor_set_lod(oar_tensor_t *t, int nlevels, const int64_t *const *offsets,
                               const int64_t *sizes);          /* validated against dims[0] */

/* Fluid's LoDTensor stream format (with oar's checksum trailer); bytes from malloc (oar_free). */
OAR_API int oar_tensor_serialize(const oar_tensor_t *t, void **bytes, size_t *n);
OAR_API int oar_tensor_deserialize(const void *bytes, size_t n, size_t *consumed, oar_tensor_t **out);
/* files: atomic replace (temp + fsync + rename), and whole reads */
OAR_API int oar_file_write(const char *path, const void *data, size_t n);
OAR_API int oar_file_read(const char *path, void **data, size_t *n);  /* free with oar_free */
/* 0 when path is a regular file; an error otherwise (never blocks: a FIFO or
 * a device is refused without being opened for reading) */
OAR_API int oar_file_check_regular(const char *path);

/* ---- checkpoint directories ---------------------------------------------
 * A save of several files commits all or nothing: the files are written
 * into a staging directory beside them, a commit record is written, and the
 * files are renamed into place (a commit interrupted by a crash is completed
 * by the next save or load; uncommitted staging directories are removed).
 * Saves and loads of one directory hold a flock on it, so a load
 * never sees two saves mixed. The files keep Fluid's layout. */
typedef struct oar_ckpt oar_ckpt_t;
/* locks dir (creating it), recovers, makes the staging directory */
OAR_API int oar_ckpt_begin_save(const char *dir, oar_ckpt_t **out);
OAR_API const char *oar_ckpt_stage_dir(const oar_ckpt_t *c);   /* write the files here */
/* makes every file of the staging directory part of dir at once; always frees c */
OAR_API int oar_ckpt_commit(oar_ckpt_t *c);
/* locks dir for reading and completes or removes an interrupted save; a
 * directory that does not exist is not an error (the load reports it) */
OAR_API int oar_ckpt_begin_load(const char *dir, oar_ckpt_t **out);
/* unlocks; drops an uncommitted staging directory; frees c (NULL is fine) */
OAR_API void oar_ckpt_end(oar_ckpt_t *c);

/* ---- scopes and variables --------------------------------------------- */
typedef struct oar_scope oar_scope_t;
typedef struct oar_variable oar_variable_t;

OAR_API int oar_scope_new(oar_scope_t **out);                  /* a root scope */
OAR_API oar_scope_t *oar_scope_retain(oar_scope_t *s);
OAR_API void oar_scope_free(oar_scope_t *s);
OAR_API int oar_scope_new_scope(oar_scope_t *s, oar_scope_t **kid); /* kid is retained for the caller */
OAR_API void oar_scope_drop_kids(oar_scope_t *s);
OAR_API oar_scope_t *oar_scope_parent(oar_scope_t *s);         /* borrowed; NULL at a root */
OAR_API int oar_scope_var(oar_scope_t *s, const char *name, oar_variable_t **out); /* find locally or create */
OAR_API oar_variable_t *oar_scope_find_var(oar_scope_t *s, const char *name); /* through parents; NULL if absent */
OAR_API oar_variable_t *oar_scope_find_local(oar_scope_t *s, const char *name);
OAR_API int oar_scope_erase(oar_scope_t *s, const char *name);
OAR_API int oar_scope_num_vars(oar_scope_t *s);
OAR_API const char *oar_scope_var_name(oar_scope_t *s, int i); /* creation order */
OAR_API int oar_scope_num_kids(oar_scope_t *s);
/* scopes alive in this process (a debugging aid: leak checks in specs) */
OAR_API int oar_debug_live_scopes(void);
/* conv2d's CPU column matrices (a debugging aid for specs; the counter is
 * kept by kernels/cpu/conv.c): what 0 = images unfolded with im2col so far,
 * 1 = whole-batch matrices a forward kept for its grad that are alive now */
OAR_API int64_t oar_debug_conv_cols(int what);

OAR_API int oar_variable_type(const oar_variable_t *v);        /* oar_var_type_t, 0 if still empty */
OAR_API const char *oar_variable_name(const oar_variable_t *v);
OAR_API int oar_variable_get_tensor(oar_variable_t *v, oar_tensor_t **out); /* new reference, shares data */
OAR_API int oar_variable_set_tensor(oar_variable_t *v, oar_tensor_t *t);    /* shares t's data and LoD */
OAR_API int oar_variable_array_size(oar_variable_t *v);        /* LOD_TENSOR_ARRAY length */
OAR_API int oar_variable_array_get(oar_variable_t *v, int i, oar_tensor_t **out);

/* ---- program descriptions --------------------------------------------- */
typedef struct oar_program oar_program_t;
typedef struct oar_block oar_block_t;
typedef struct oar_var_desc oar_var_desc_t;
typedef struct oar_op_desc oar_op_desc_t;

typedef enum {
    OAR_ATTR_INT = 0, OAR_ATTR_FLOAT = 1, OAR_ATTR_STRING = 2, OAR_ATTR_INTS = 3,
    OAR_ATTR_FLOATS = 4, OAR_ATTR_STRINGS = 5, OAR_ATTR_BOOLEAN = 6,
    OAR_ATTR_BOOLEANS = 7, OAR_ATTR_BLOCK = 8, OAR_ATTR_LONG = 9,
    OAR_ATTR_BLOCKS = 10, OAR_ATTR_LONGS = 11
} oar_attr_type_t;

OAR_API int oar_program_new(oar_program_t **out);              /* with global block 0 */
OAR_API void oar_program_free(oar_program_t *p);
OAR_API int oar_program_clone(const oar_program_t *p, oar_program_t **out);
OAR_API int oar_program_parse(const void *bytes, size_t n, oar_program_t **out); /* validates */
/* A model file, told apart by content: a ProgramDesc protobuf (`__model__`,
 * `.pdmodel`) or Paddle 3's PIR JSON (`.json`), translated to a ProgramDesc
 * with feed/fetch ops and the parameters as persistable variables. */
OAR_API int oar_program_parse_model(const void *bytes, size_t n, oar_program_t **out);
OAR_API int oar_program_serialize(const oar_program_t *p, void **bytes, size_t *n); /* free with oar_free */
OAR_API void oar_free(void *ptr);
OAR_API int oar_program_num_blocks(const oar_program_t *p);
OAR_API oar_block_t *oar_program_block(oar_program_t *p, int idx); /* NULL if out of range */
OAR_API int oar_program_append_block(oar_program_t *p, int parent_idx, oar_block_t **out);
OAR_API uint64_t oar_program_version(const oar_program_t *p); /* bumps on every change */
OAR_API int oar_program_validate(const oar_program_t *p);
/* Bounds every `while` op of p to n iterations (n > 0), or leaves the bound
 * to the "max_while_iterations" flag (n = 0, the default; flag 0: none).
 * The predictor and load_inference_model bound what they load by the
 * "inference_max_while_iterations" flag. Not serialized. */
OAR_API int oar_program_set_max_while_iterations(oar_program_t *p, int64_t n);
OAR_API int64_t oar_program_max_while_iterations(const oar_program_t *p);

OAR_API int oar_block_idx(const oar_block_t *b);
OAR_API int oar_block_parent_idx(const oar_block_t *b);
OAR_API int oar_block_forward_block_idx(const oar_block_t *b);
OAR_API int oar_block_set_forward_block_idx(oar_block_t *b, int idx);
OAR_API oar_program_t *oar_block_program(oar_block_t *b);
OAR_API int oar_block_num_vars(const oar_block_t *b);
OAR_API oar_var_desc_t *oar_block_var_at(oar_block_t *b, int i);  /* creation order */
OAR_API oar_var_desc_t *oar_block_find_var(oar_block_t *b, const char *name);  /* this block only */
OAR_API oar_var_desc_t *oar_block_find_var_recursive(oar_block_t *b, const char *name);
OAR_API int oar_block_var_new(oar_block_t *b, const char *name, oar_var_desc_t **out); /* error if exists here */
OAR_API int oar_block_remove_var(oar_block_t *b, const char *name);
OAR_API int oar_block_num_ops(const oar_block_t *b);
OAR_API oar_op_desc_t *oar_block_op_at(oar_block_t *b, int i);
/* Takes ownership of op on success (validates slots/attrs against the op
 * definition, fills default attrs, runs compile-time inference, declares
 * missing output vars); on failure op stays the caller's and the block is
 * unchanged. pos -1 appends, 0 prepends. */
OAR_API int oar_block_insert_op(oar_block_t *b, int pos, oar_op_desc_t *op);
OAR_API int oar_block_remove_op(oar_block_t *b, int pos);

OAR_API const char *oar_var_desc_name(const oar_var_desc_t *v);
OAR_API int oar_var_desc_type(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_type(oar_var_desc_t *v, int var_type);
OAR_API int oar_var_desc_dtype(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_dtype(oar_var_desc_t *v, int dtype);
OAR_API int oar_var_desc_ndim(const oar_var_desc_t *v);
OAR_API const int64_t *oar_var_desc_dims(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_shape(oar_var_desc_t *v, const int64_t *dims, int ndim);
OAR_API int oar_var_desc_lod_level(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_lod_level(oar_var_desc_t *v, int lod_level);
OAR_API bool oar_var_desc_persistable(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_persistable(oar_var_desc_t *v, bool p);
OAR_API bool oar_var_desc_stop_gradient(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_stop_gradient(oar_var_desc_t *v, bool s);
OAR_API bool oar_var_desc_need_check_feed(const oar_var_desc_t *v);
OAR_API int oar_var_desc_set_need_check_feed(oar_var_desc_t *v, bool c);

OAR_API int oar_op_desc_new(const char *type, oar_op_desc_t **out); /* detached, caller owns */
OAR_API void oar_op_desc_free(oar_op_desc_t *op);              /* only for detached ops */
OAR_API const char *oar_op_desc_type(const oar_op_desc_t *op);
OAR_API int oar_op_desc_set_input(oar_op_desc_t *op, const char *slot, const char *const *names, int n);
OAR_API int oar_op_desc_set_output(oar_op_desc_t *op, const char *slot, const char *const *names, int n);
OAR_API int oar_op_desc_num_inputs(const oar_op_desc_t *op);   /* number of slots */
OAR_API const char *oar_op_desc_input_slot(const oar_op_desc_t *op, int i);
OAR_API int oar_op_desc_num_outputs(const oar_op_desc_t *op);
OAR_API const char *oar_op_desc_output_slot(const oar_op_desc_t *op, int i);
OAR_API int oar_op_desc_input_count(const oar_op_desc_t *op, const char *slot);   /* -1 if no slot */
OAR_API const char *oar_op_desc_input_arg(const oar_op_desc_t *op, const char *slot, int i);
OAR_API int oar_op_desc_output_count(const oar_op_desc_t *op, const char *slot);
OAR_API const char *oar_op_desc_output_arg(const oar_op_desc_t *op, const char *slot, int i);
OAR_API int oar_op_desc_rename_input(oar_op_desc_t *op, const char *from, const char *to);
OAR_API int oar_op_desc_rename_output(oar_op_desc_t *op, const char *from, const char *to);

OAR_API int oar_op_desc_num_attrs(const oar_op_desc_t *op);
OAR_API const char *oar_op_desc_attr_name(const oar_op_desc_t *op, int i);
OAR_API int oar_op_desc_attr_type(const oar_op_desc_t *op, const char *name); /* -1 if absent */
OAR_API int oar_op_desc_set_attr_int(oar_op_desc_t *op, const char *name, int32_t v);
OAR_API int oar_op_desc_set_attr_long(oar_op_desc_t *op, const char *name, int64_t v);
OAR_API int oar_op_desc_set_attr_float(oar_op_desc_t *op, const char *name, float v);
OAR_API int oar_op_desc_set_attr_bool(oar_op_desc_t *op, const char *name, bool v);
OAR_API int oar_op_desc_set_attr_string(oar_op_desc_t *op, const char *name, const char *v);
OAR_API int oar_op_desc_set_attr_block(oar_op_desc_t *op, const char *name, int32_t block_idx);
OAR_API int oar_op_desc_set_attr_ints(oar_op_desc_t *op, const char *name, const int32_t *v, int n);
OAR_API int oar_op_desc_set_attr_longs(oar_op_desc_t *op, const char *name, const int64_t *v, int n);
OAR_API int oar_op_desc_set_attr_floats(oar_op_desc_t *op, const char *name, const float *v, int n);
OAR_API int oar_op_desc_set_attr_bools(oar_op_desc_t *op, const char *name, const bool *v, int n);
OAR_API int oar_op_desc_set_attr_strings(oar_op_desc_t *op, const char *name, const char *const *v, int n);
OAR_API int oar_op_desc_set_attr_blocks(oar_op_desc_t *op, const char *name, const int32_t *v, int n);
/* getters: scalar via out pointer; lists return a pointer valid until the attr changes */
OAR_API int oar_op_desc_get_attr_int(const oar_op_desc_t *op, const char *name, int32_t *v);
OAR_API int oar_op_desc_get_attr_long(const oar_op_desc_t *op, const char *name, int64_t *v);
OAR_API int oar_op_desc_get_attr_float(const oar_op_desc_t *op, const char *name, float *v);
OAR_API int oar_op_desc_get_attr_bool(const oar_op_desc_t *op, const char *name, bool *v);
OAR_API const char *oar_op_desc_get_attr_string(const oar_op_desc_t *op, const char *name);
OAR_API int oar_op_desc_get_attr_list(const oar_op_desc_t *op, const char *name, const void **data, int *n);
OAR_API const char *oar_op_desc_get_attr_strings_at(const oar_op_desc_t *op, const char *name, int i);
OAR_API int oar_op_desc_remove_attr(oar_op_desc_t *op, const char *name);

/* ---- op registry queries ---------------------------------------------- */
/* OAR_OK when every op and kernel registered cleanly as the libraries
 * loaded (no op declared twice, no two kernels for one op, place and
 * dtype, no kernel for an undeclared op); else the error names them */
OAR_API int oar_registry_check(void);
OAR_API bool oar_op_is_registered(const char *type);
OAR_API int oar_op_num_registered(void);
OAR_API const char *oar_op_registered_at(int i);
OAR_API bool oar_op_has_grad(const char *type);
/* declared type (OAR_ATTR_*) of attr `name` of op `type`, -1 if not declared.
 * Every op also declares op_role (INT), op_role_var (STRINGS), op_callstack
 * (STRINGS) and op_namescope (STRING). */
OAR_API int oar_op_attr_type(const char *type, const char *name);
/* An op's declared attributes in declaration order (src/ops/<family>.ops),
 * for layers that take their arguments from the declaration and for the
 * generated reference: what attribute i says. The strings belong to the
 * registry and live as long as the library. */
typedef struct oar_attr_info {
    const char *name;
    int type;             /* OAR_ATTR_* */
    double def;           /* default of INT/LONG/FLOAT/BOOLEAN */
    const char *def_str;  /* default of STRING (NULL otherwise) */
    bool required;
    double min, max;      /* a range when min < max */
    const char *choices;  /* "a|b|c" or NULL */
    const char *doc;
} oar_attr_info_t;
OAR_API int oar_op_num_attrs(const char *type);   /* -1: no such op */
OAR_API int oar_op_attr_info(const char *type, int i, oar_attr_info_t *out);
OAR_API const char *oar_op_doc(const char *type);  /* NULL: no such op */
/* slot queries for the Lua side: 1 duplicable, 2 dispensable (bit flags), -1 unknown slot */
OAR_API int oar_op_input_flags(const char *type, const char *slot);
OAR_API int oar_op_output_flags(const char *type, const char *slot);
OAR_API int oar_op_num_input_slots(const char *type);
OAR_API const char *oar_op_input_slot_at(const char *type, int i);
OAR_API int oar_op_num_output_slots(const char *type);
OAR_API const char *oar_op_output_slot_at(const char *type, int i);

/* ---- passes ------------------------------------------------------------ */
/* Appends grad ops for `loss` (in block 0) and declares X@GRAD vars. On
 * success *pairs lists 2*n names (param, grad, param, grad, ...) for the
 * params (or, with params==NULL, every persistable var the loss depends on
 * whose grad was produced); free with oar_strings_free. */
OAR_API int oar_backward_append(oar_program_t *p, const char *loss,
                                const char *const *params, int nparams,
                                const char *const *no_grad, int nno_grad,
                                char ***pairs, int *npairs);
/* Grads of targets w.r.t. inputs; target_grads may be NULL (ones). Names of
 * the grad vars in *grads, in input order (NULL entries mean no path). */
OAR_API int oar_backward_gradients(oar_program_t *p, const char *const *targets, int ntargets,
                                   const char *const *target_grads,
                                   const char *const *inputs, int ninputs,
                                   const char *const *no_grad, int nno_grad,
                                   char ***grads);
OAR_API void oar_strings_free(char **s, int n);
OAR_API int oar_program_prune(const oar_program_t *p, const char *const *targets, int ntargets,
                              oar_program_t **out);
/* drop ops whose op_role is Backward/Optimize/LRSched and set is_test attrs */
OAR_API int oar_program_inference_optimize(oar_program_t *p);

/* ---- eager mode (src/eager.c) ---------------------------------------------
 * One registered op run at once on tensors, without a program: the op is
 * checked and its attrs decoded once (oar_eager_op_new), then each run binds
 * tensors to its arguments, runs run-time inference (replayed while the
 * input shapes repeat) and the kernel for the inputs' place and dtype.
 * Arguments are positional: the desc's input slots in order, each slot's
 * arguments in order (the same for outputs); "@EMPTY@" arguments take no
 * tensor. Errors name the op ("op 'elementwise_add': ..."). */
typedef struct oar_eager_op oar_eager_op_t;
/* checks op (a copy is kept, with its defaults filled) for `place` */
OAR_API int oar_eager_op_new(const oar_op_desc_t *op, int place, int device, oar_eager_op_t **out);
OAR_API void oar_eager_op_free(oar_eager_op_t *e);
/* the checked desc (defaults filled), valid while e lives */
OAR_API const oar_op_desc_t *oar_eager_op_desc(const oar_eager_op_t *e);
OAR_API int oar_eager_op_num_inputs(const oar_eager_op_t *e);   /* positional arguments */
OAR_API int oar_eager_op_num_outputs(const oar_eager_op_t *e);
/* Runs once. ins[i] may be NULL for an argument left without a value. An
 * outs[i] given is written (its buffer replaced when shared); a NULL one
 * receives a new tensor (a reference for the caller). On failure the new
 * outputs are dropped (NULL again). */
OAR_API int oar_eager_op_run(oar_eager_op_t *e, oar_tensor_t *const *ins, int nin, oar_tensor_t **outs, int nout);
/* The grad op descs the grad maker of `fwd` emits (what append_backward
 * adds for it, before summing shared grads): the grad of var v is named
 * "v@GRAD"; vars in no_grad get none. Free with oar_op_descs_free. */
OAR_API int oar_eager_grad_ops(const oar_op_desc_t *fwd, const char *const *no_grad, int nno_grad,
                               oar_op_desc_t ***ops, int *nops);
OAR_API void oar_op_descs_free(oar_op_desc_t **ops, int n);

/* ---- executor ---------------------------------------------------------- */
typedef struct oar_executor oar_executor_t;
OAR_API int oar_executor_new(int place_kind, int device, oar_executor_t **out);
OAR_API void oar_executor_free(oar_executor_t *e);
/* Runs block `block_idx` of p. Persistable vars live in `scope`; the rest in
 * a local child scope dropped after the run. Feeds are shared, not copied;
 * fetched tensors are new references (copies for persistables). */
OAR_API int oar_executor_run(oar_executor_t *e, oar_program_t *p, int block_idx, oar_scope_t *scope,
                             int nfeed, const char *const *feed_names, oar_tensor_t *const *feeds,
                             int nfetch, const char *const *fetch_names, oar_tensor_t **fetched);
/* Asks the run in progress on e to stop; safe from another thread or a
 * signal handler (it only sets an atomic flag). The run checks the flag
 * between ops and between while iterations and fails with OAR_ERR_CANCELLED.
 * Each new top-level run starts with the flag cleared. */
OAR_API void oar_executor_cancel(oar_executor_t *e);
/* on = 1: SIGINT (Ctrl-C) cancels every run in progress instead of ending
 * the process (the REPL); on = 0 restores the previous handler */
OAR_API int oar_sigint_cancels_runs(int on);
OAR_API int oar_interrupt_pending(void);   /* a SIGINT arrived since the last clear */
/* asks every run in progress to stop, as a SIGINT does while installed;
 * async-signal-safe (one atomic store): the `oar` command's Ctrl-C calls it */
OAR_API void oar_interrupt_runs(void);
OAR_API void oar_interrupt_clear(void);

/* ---- flags ------------------------------------------------------------- */
OAR_API int oar_set_flag(const char *name, int64_t value);  /* "check_nan_inf", "num_threads" */
OAR_API int64_t oar_get_flag(const char *name);
/* with the "profile" flag set, the executor times every op by type */
OAR_API const char *oar_profile_report(void);   /* a table, valid until the next call */
OAR_API void oar_profile_reset(void);
/* the largest peak of tensor buffer bytes a run reached above those live when
 * it started, since the last reset (collected while profiling) */
OAR_API int64_t oar_profile_peak_bytes(void);
OAR_API uint64_t oar_random_seed(void);
OAR_API void oar_set_random_seed(uint64_t seed);
/* the global generator's state (checkpoints save and restore it) */
OAR_API int oar_rng_get_state(uint64_t state[4]);
OAR_API int oar_rng_set_state(const uint64_t state[4]);

/* ---- inference API ----------------------------------------------------- */
typedef struct oar_predictor oar_predictor_t;
OAR_API int  oar_predictor_load(const char *model_dir, oar_predictor_t **out);
OAR_API int  oar_predictor_set_input(oar_predictor_t *p, const char *name,
                                     const float *data, const int64_t *dims, int ndims);
OAR_API int  oar_predictor_run(oar_predictor_t *p);
OAR_API int  oar_predictor_get_output(oar_predictor_t *p, int index, const float **data,
                                      const int64_t **dims, int *ndims);
OAR_API void oar_predictor_free(oar_predictor_t *p);
/* A model file (ProgramDesc or PIR JSON, by content) and its combined
 * parameter file (`__params__`, `.pdiparams`), or params_path NULL: one file
 * per parameter in the model's directory. */
OAR_API int  oar_predictor_load_files(const char *model_path, const char *params_path, oar_predictor_t **out);
/* dtype: Fluid's VarType code (OAR_FP32, OAR_INT64, ...); lod: lod_len offsets
 * of one level (0, ..., dims[0]), or NULL and 0. */
OAR_API int  oar_predictor_set_input_ex(oar_predictor_t *p, const char *name, int dtype, const void *data,
                                        const int64_t *dims, int ndims, const uint64_t *lod, int lod_len);
/* an output in its own dtype, with the offsets of its last LoD level (lod
 * and lod_len may be NULL; *lod is NULL and *lod_len 0 without LoD); valid
 * until the next run */
OAR_API int  oar_predictor_get_output_ex(oar_predictor_t *p, int index, int *dtype, const void **data,
                                         const int64_t **dims, int *ndims, const uint64_t **lod, int *lod_len);
OAR_API int  oar_predictor_num_inputs(const oar_predictor_t *p);
OAR_API int  oar_predictor_num_outputs(const oar_predictor_t *p);
OAR_API const char *oar_predictor_input_name(const oar_predictor_t *p, int index);   /* NULL out of range */
OAR_API const char *oar_predictor_output_name(const oar_predictor_t *p, int index);
/* what the model declares for an input or output: dtype, shape (-1 for a
 * free dimension) and LoD level; OAR_ERR_NOT_FOUND when it declares nothing
 * by that name. The pointers live as long as the predictor. */
OAR_API int  oar_predictor_var_info(const oar_predictor_t *p, const char *name, int *dtype,
                                    const int64_t **dims, int *ndims, int *lod_level);

/* ---- data-parallel communication (src/comm.c) ------------------------ */
/* One job of N workers started by mpirun (OpenMPI) or, without MPI, one
 * worker. Collective ops (c_allreduce_sum, ...) go through this interface. */
typedef enum { OAR_REDUCE_SUM = 0, OAR_REDUCE_MAX = 1, OAR_REDUCE_MIN = 2, OAR_REDUCE_PROD = 3 } oar_reduce_t;
OAR_API bool oar_comm_compiled_with_mpi(void);
/* Joins the job (idempotent). timeout_s > 0 bounds every blocking call,
 * MPI_Init included; <= 0 keeps the current bound (default 300 s, or
 * OAR_COMM_TIMEOUT seconds from the environment). */
OAR_API int oar_comm_init(double timeout_s);
OAR_API bool oar_comm_initialized(void);
OAR_API const char *oar_comm_backend_name(void);   /* "mpi" or "single" */
/* Why the job has one worker although the launcher asked for more; "" otherwise. */
OAR_API const char *oar_comm_note(void);
OAR_API int oar_comm_rank(void);
OAR_API int oar_comm_size(void);
OAR_API int oar_comm_set_timeout(double seconds);
OAR_API double oar_comm_timeout(void);
/* in place over every worker; dtype an oar_dtype_t, op an oar_reduce_t */
OAR_API int oar_comm_allreduce(void *buf, int64_t count, int dtype, int op);
OAR_API int oar_comm_broadcast(void *buf, size_t bytes, int root);
/* recv holds size * bytes: worker i's `bytes` at offset i * bytes */
OAR_API int oar_comm_allgather(const void *send, void *recv, size_t bytes);
OAR_API int oar_comm_barrier(void);
/* Ends the whole job now (MPI_Abort) after printing why to stderr. */
OAR_API void oar_comm_abort(int code, const char *why);
OAR_API int oar_comm_finalize(void);
/* The message of the failure that broke the job's communication (a worker
 * lost, a timeout); "" while none. oar launch tells a lost worker from a
 * script error by it. */
OAR_API const char *oar_comm_broken(void);
/* The hash the workers compare before a program's first collective: the
 * serialized program without the op_callstack and seed attrs. */
OAR_API int oar_program_hash(const oar_program_t *p, uint64_t *hash);
/* Checks that every worker runs a program with the same hash (collective). */
OAR_API int oar_comm_check_program(const oar_program_t *p, const char *who);
/* oar_executor_cancel for the predictor's run in progress */
OAR_API void oar_predictor_cancel(oar_predictor_t *p);

/* OAR_FFI_END */

#ifdef __cplusplus
}
#endif
#endif
