/* tensor.h — internal layout of tensors and their refcounted buffers. */
#ifndef OAR_TENSOR_H
#define OAR_TENSOR_H
#include "oar.h"

#define OAR_MAX_DIMS 9
#define OAR_MAX_LOD 8
#define OAR_MAX_BYTES ((size_t)1 << 40)   /* refuse single buffers over 1 TiB */

typedef struct oar_buffer {
    int refcount;
    int place, device;
    void *data;
    size_t bytes;
    size_t cap;                /* bytes actually allocated (>= bytes) */
    /* one blob a kernel derived from the data (oar_tensor_attach), with the
     * key it was derived with; dropped on any write through the API */
    void *aux;
    void (*aux_free)(void *);
    unsigned char *aux_key;
    size_t aux_key_len;
    /* a view's buffer (oar_tensor_view): data points into parent's, which
     * it holds a reference on; writes through it drop parent's aux too */
    struct oar_buffer *parent;
    /* a number no other state of any buffer had: set when the buffer is made
     * and on each write through the API (oar_tensor_mutable on a kept
     * buffer, oar_tensor_mark_written), on the view and every parent; eager
     * autograd compares it to what it saved (oar_tensor_version) */
    uint64_t version;
} oar_buffer_t;

struct oar_tensor {
    int refcount;
    int dtype;                 /* -1 while unknown */
    int ndim;
    int64_t dims[OAR_MAX_DIMS];
    oar_buffer_t *buf;         /* NULL until allocated */
    int lod_levels;
    int64_t *lod[OAR_MAX_LOD]; /* owned copies */
    int64_t lod_size[OAR_MAX_LOD];
};

/* Sets dims (checked product); keeps the buffer until oar_tensor_mutable. */
OAR_API int oar_tensor_resize(oar_tensor_t *t, const int64_t *dims, int ndim);
/* A new tensor of dims with no buffer yet: a kernel's private scratch (an
 * output is sized by inference, or by oar_k_output_resized). */
OAR_API int oar_tensor_new_sized(oar_tensor_t **out, const int64_t *dims, int ndim);
/* bytes held by live tensor buffers, and their high-water mark since the
 * last oar_mem_peak_reset (which sets it to the live bytes) */
int64_t oar_mem_live_bytes(void);
int64_t oar_mem_peak_bytes(void);
void oar_mem_peak_reset(void);
/* bytes t's dims take in dtype (checked) */
OAR_API int oar_tensor_bytes_for(const oar_tensor_t *t, int dtype, size_t *bytes);
/* t becomes a view of src's data: src's dtype and (shared) buffer, t's own
 * dims and LoD (reshape-like kernels of every place) */
OAR_API int oar_tensor_share_data(oar_tensor_t *t, const oar_tensor_t *src);
/* One blob a kernel derived from a tensor's data, kept with its buffer for a
 * later kernel (conv2d keeps the images it unfolded for conv2d_grad): `key`
 * (key_len bytes) says how it was derived, and oar_tensor_attached returns
 * the blob only for an equal key. Any write through oar_tensor_mutable*
 * drops it (free_fn(blob)), as does the buffer's end; attaching replaces the
 * buffer's previous blob. Views sharing the buffer share the blob. */
OAR_API int oar_tensor_attach(oar_tensor_t *t, const void *key, size_t key_len, void *blob,
                              void (*free_fn)(void *));
OAR_API void *oar_tensor_attached(const oar_tensor_t *t, const void *key, size_t key_len);
/* dst shares src's buffer (keeping its own dims): the memory plan's in-place pairs */
int oar_tensor_adopt_buffer(oar_tensor_t *dst, const oar_tensor_t *src);
/* Returns writable storage for numel(dims) elements of dtype, allocating (64-byte
 * aligned, zeroed) when there is none, it is too small, or it is shared with
 * another tensor (then the old one is left to its other owners: read inputs
 * before asking for an in-place output). NULL with OAR_ERR_NOMEM set on failure. */
OAR_API void *oar_tensor_mutable(oar_tensor_t *t, int dtype);
/* The same on a place: a buffer on another place (or CUDA device) is replaced
 * by a new one on `place`, like a shared one. oar_tensor_mutable is
 * oar_tensor_mutable_on(t, dtype, OAR_PLACE_CPU, 0). */
OAR_API void *oar_tensor_mutable_on(oar_tensor_t *t, int dtype, int place, int device);
/* The same, but a new host buffer is not zeroed: for a caller that writes
 * every element (kernels of OAR_OP_WRITES_OUTPUTS definitions). */
OAR_API void *oar_tensor_mutable_raw_on(oar_tensor_t *t, int dtype, int place, int device);
/* Moves t's data to place/device (Fluid's data transform): a new buffer there
 * receives a copy and t drops its old buffer, which other sharers keep.
 * Nothing to do when t has no data or is there already. */
OAR_API int oar_tensor_to_place(oar_tensor_t *t, int place, int device);
/* t takes src's dims, dtype, buffer (shared) and LoD. */
OAR_API int oar_tensor_share(oar_tensor_t *t, const oar_tensor_t *src);
/* deep copy of data, dims and LoD into existing t; the data stays on src's place */
OAR_API int oar_tensor_copy_into(oar_tensor_t *t, const oar_tensor_t *src);
OAR_API int oar_tensor_copy_lod(oar_tensor_t *dst, const oar_tensor_t *src);
/* bytes of a host bool tensor other than 0/1 become 1 (always OAR_OK) */
OAR_API int oar_tensor_normalize_bool(oar_tensor_t *t);
OAR_API void oar_tensor_clear_lod(oar_tensor_t *t);
/* drops buffer and LoD, keeps the object */
OAR_API void oar_tensor_reset(oar_tensor_t *t);
static inline bool oar_tensor_has_data(const oar_tensor_t *t) { return t && t->buf && t->buf->data; }
static inline int64_t oar_tensor_numel_of(const oar_tensor_t *t) {
    int64_t n = 1; for (int i = 0; i < t->ndim; i++) n *= t->dims[i]; return n;
}
#endif
