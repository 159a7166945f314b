/* backend.h — the interface between liboar and a device backend loaded at
 * run time (today one: CUDA, build/liboar_cuda.so).
 *
 * liboar.so links no device library. The first time a CUDA place is asked
 * for (an executor on CUDAPlace(n), oar_cuda_device_count,
 * oar_is_compiled_with_cuda), src/device.c dlopens the backend and calls its
 * entry point, OAR_BACKEND_ENTRY, which returns a table of functions
 * (oar_backend_t). Everything liboar does on a device goes through that
 * table (src/device.h wraps it); a process that never asks for CUDA maps no
 * CUDA library at all. The way ggml loads its backends and Paddle its
 * dynload, in small.
 *
 * Where the backend is looked for, in order:
 *   1. $OAR_CUDA_BACKEND, a path (only that file is tried);
 *   2. liboar_cuda.so in the directory liboar.so was loaded from;
 *   3. liboar_cuda.so on the dynamic linker's search path.
 * A failure names what is missing: the backend file, a library it needs
 * (the dynamic linker's message, e.g. libcudnn.so.9), the CUDA driver.
 *
 * The backend's kernels register themselves from its constructors, which
 * run inside dlopen and call back into liboar (the backend is linked
 * against liboar.so, so it uses the already loaded copy). The liboar
 * symbols a backend may use are listed below, in OAR_BACKEND_IMPORTS.
 * liboar hides its symbols by default (-fvisibility=hidden): each one listed
 * is marked OAR_API where it is declared (the op-authoring API, oar_op.h),
 * spec/exports_spec.lua checks that, and spec/cuda_backend_spec.lua checks
 * that liboar_cuda.so needs no other.
 */
#ifndef OAR_BACKEND_H
#define OAR_BACKEND_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* bumped whenever oar_backend_t, an imported function or a public struct the
 * kernels read (tensor.h, variable.h) changes meaning. The kernel context is
 * opaque to a backend (only the imported oar_k_* accessors reach it, never
 * exec.h), so the executor's own structs change without a bump. */
#define OAR_BACKEND_ABI 2
#define OAR_BACKEND_ENTRY "oar_cuda_backend"
#define OAR_BACKEND_FILE "liboar_cuda.so"
#define OAR_BACKEND_ENV "OAR_CUDA_BACKEND"

typedef struct oar_backend {
    int abi;                  /* OAR_BACKEND_ABI of the backend's build */
    const char *name;         /* "cuda" */
    /* usable devices; 0 with the reason in *why (a static string) when none */
    int (*device_count)(const char **why);
    /* at least `bytes` on `device`; contents unspecified */
    int (*alloc)(int device, size_t bytes, void **out);
    void (*free)(int device, void *p);
    /* host<->device and device<->device (possibly between two devices);
     * returns once the host side may be reused and, for a copy between two
     * devices, once the copy is ordered after the source device's work and
     * before any later work there (the source block may then be reused). */
    int (*copy)(void *dst, int dst_place, int dst_device, const void *src, int src_place, int src_device,
                size_t bytes);
    int (*memset_zero)(void *p, size_t bytes, int device);
    int (*use)(int device);   /* the calling thread's current device */
    int (*sync)(int device);  /* waits for queued work; reports a failed kernel */
    /* the end of an executor run: waits for the device and reports the first
     * range check a kernel flagged during the run (one read per run) */
    int (*run_end)(int device);
    /* gives the device's cached free blocks back to the driver */
    void (*release_cache)(int device);
} oar_backend_t;

typedef const oar_backend_t *(*oar_backend_entry_fn)(int abi);

/* The backend, loading it on first use; NULL (and the error set, naming what
 * is missing) when it cannot be loaded. Thread-safe; tried once. */
const oar_backend_t *oar_backend_cuda(void);
/* NULL once loaded, else why it could not be (without trying to load) */
const char *oar_backend_cuda_error(void);

/* ---- what a backend imports from liboar ---------------------------------
 * Every liboar function a backend calls; the list spec/cuda_backend_spec.lua
 * holds liboar_cuda.so's undefined symbols to. Grouped by header. */
#define OAR_BACKEND_IMPORTS                                                             \
    /* error.h */ "oar_error", "oar_error_prefix", "oar_last_error", "oar_xmalloc",     \
    "oar_xrealloc", "oar_mul_checked",                                                  \
    /* op.h: registration, the kernel context, rng */ "oar_registry_load_kernel",       \
    "oar_k_op", "oar_k_error", "oar_k_dtype", "oar_k_attrs", "oar_k_input",             \
    "oar_k_output_data", "oar_k_output_sized", "oar_k_output_resized", "oar_k_input_name", "oar_rng_next", "oar_rng_next_r",          \
    "oar_rng_seed", "oar_k_output", "oar_k_output_name", "oar_k_input_var",             \
    "oar_k_output_var", "oar_k_nin", "oar_k_nout", "oar_k_input_slot_name",             \
    "oar_k_output_slot_name", "oar_k_device", "oar_k_context",                          \
    /* tensor.h, variable.h */ "oar_dtype_name", "oar_dtype_size", "oar_shape_str",     \
    "oar_tensor_clear_lod", "oar_tensor_copy_lod", "oar_tensor_free",                   \
    "oar_tensor_mutable", "oar_tensor_mutable_on", "oar_tensor_new_empty", "oar_tensor_new_sized",              \
    "oar_tensor_resize", "oar_tensor_share", "oar_tensor_share_data",                   \
    "oar_var_selected_rows", "oar_variable_type",                                       \
    /* device.h: scratch device memory, the debug flag */ "oar_device_alloc",           \
    "oar_device_copy", "oar_device_free", "oar_flag_cuda_sync_each_op",                 \
    /* comm.h: NCCL's unique id travels over the job's communicator */                  \
    "oar_comm_broadcast", "oar_comm_check_once", "oar_comm_rank", "oar_comm_size",      \
    "oar_comm_timeout", "oar_k_program", "oar_op_desc_type",                            \
    /* ops/lod_plumbing.h */ "oar_cf_concat_lod",                                       \
    /* op.h, ops/seq_layout.h: the recurrent kernels (lstm.cu, gru.cu) */               \
    "oar_seqb_make", "oar_seqb_free", "oar_seqb_prev_rows",                             \
    /* ops/seq_lod.h: layer_norm.cu, sequence*.cu */ "oar_seq_lod_last",                \
    "oar_seq_set_upper_lod", "oar_seq_expand_plan", "oar_seq_expand_rows",              \
    "oar_seq_expand_set_lod"

#ifdef __cplusplus
}
#endif
#endif
