/* tensor_io.c — one LoDTensor record in Fluid's stream format:
 *
 *   uint32 version (0)
 *   uint64 LoD levels; per level: uint64 byte count, then that many bytes of
 *          uint64 offsets
 *   uint32 tensor version (0)
 *   int32  length of a TensorDesc protobuf, then the TensorDesc
 *   raw little-endian data
 *
 * A file of one record (Fluid's `save` op) gets oar's 12-byte trailer,
 * "OARC" + uint32 version 1 + uint32 CRC-32 of the record, that Fluid's `load`
 * never reads (it stops after the data). Combined files (`save_combine`,
 * `__params__`, `.pdiparams`) are Paddle's bytes exactly: Paddle's
 * load_combine reads records back to back and would take a trailer for the
 * next record, so their checksum lives beside them in `<file>.crc` (see
 * oar_crc_sidecar_*). The reader verifies a trailer when present (oar's older
 * combined files have one per record) and accepts files without. */
#include <stdlib.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "framework.pb-c.h"
#include "error.h"
#include "tensor.h"
#include "tensor_io.h"

#define TRAILER_MAGIC "OARC"
#define TRAILER_BYTES 12
#define MAX_DESC_BYTES (1 << 20)

/* ---- byte buffers ------------------------------------------------------ */
int oar_bytes_append(oar_bytes_t *b, const void *p, size_t n) {
    if (b->n + n < b->n) return oar_error(OAR_ERR_NOMEM, "byte buffer overflow");
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) {
            if (cap > SIZE_MAX / 2) return oar_error(OAR_ERR_NOMEM, "byte buffer overflow");
            cap *= 2;
        }
        uint8_t *d = oar_xrealloc(b->data, cap);
        if (!d) return OAR_ERR_NOMEM;
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->n, p, n);
    b->n += n;
    return OAR_OK;
}

void oar_bytes_free(oar_bytes_t *b) { free(b->data); b->data = NULL; b->n = b->cap = 0; }

/* ---- CRC-32 (IEEE, reflected) -------------------------------------------- */
uint32_t oar_crc32(uint32_t crc, const void *data, size_t n) {
    static uint32_t table[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    const uint8_t *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* ---- writing ------------------------------------------------------------- */
int oar_tensor_write_record_plain(oar_bytes_t *b, const oar_tensor_t *t) {
    if (!t) return oar_error(OAR_ERR_INVALID, "serialize: NULL tensor");
    if (t->dtype < 0 || oar_dtype_size(t->dtype) == 0)
        return oar_error(OAR_ERR_INVALID, "serialize: the tensor has no dtype (never written?)");
    int64_t numel;
    OAR_TRY(oar_shape_numel(t->dims, t->ndim, &numel));
    uint32_t version = 0;
    uint64_t levels = (uint64_t)t->lod_levels;
    OAR_TRY(oar_bytes_append(b, &version, 4));
    OAR_TRY(oar_bytes_append(b, &levels, 8));
    for (int l = 0; l < t->lod_levels; l++) {
        uint64_t bytes = (uint64_t)t->lod_size[l] * 8;
        OAR_TRY(oar_bytes_append(b, &bytes, 8));
        for (int64_t i = 0; i < t->lod_size[l]; i++) {
            uint64_t off = (uint64_t)t->lod[l][i];
            OAR_TRY(oar_bytes_append(b, &off, 8));
        }
    }
    OAR_TRY(oar_bytes_append(b, &version, 4));
    Paddle__Framework__Proto__VarType__TensorDesc desc = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TENSOR_DESC__INIT;
    desc.data_type = (Paddle__Framework__Proto__VarType__Type)t->dtype;
    desc.n_dims = (size_t)t->ndim;
    desc.dims = (int64_t *)t->dims;
    size_t dlen = protobuf_c_message_get_packed_size(&desc.base);
    uint8_t dbuf[256];
    if (dlen > sizeof dbuf) return oar_error(OAR_ERR_INVALID, "serialize: TensorDesc too large");
    protobuf_c_message_pack(&desc.base, dbuf);
    int32_t dlen32 = (int32_t)dlen;
    OAR_TRY(oar_bytes_append(b, &dlen32, 4));
    OAR_TRY(oar_bytes_append(b, dbuf, dlen));
    size_t data_bytes = (size_t)numel * oar_dtype_size(t->dtype);
    if (data_bytes) {
        if (!oar_tensor_has_data(t) || t->buf->bytes < data_bytes)
            return oar_error(OAR_ERR_INVALID, "serialize: the tensor holds fewer bytes than its shape needs");
        if (t->buf->place != OAR_PLACE_CPU)
            return oar_error(OAR_ERR_UNSUPPORTED, "serialize: the tensor's data is on CUDAPlace(%d); copy it to "
                             "the host first", t->buf->device);
        OAR_TRY(oar_bytes_append(b, t->buf->data, data_bytes));
    }
    return OAR_OK;
}

int oar_tensor_write_record(oar_bytes_t *b, const oar_tensor_t *t) {
    size_t start = b->n;
    OAR_TRY(oar_tensor_write_record_plain(b, t));
    uint32_t crc = oar_crc32(0, b->data + start, b->n - start);
    uint32_t tv = 1;
    OAR_TRY(oar_bytes_append(b, TRAILER_MAGIC, 4));
    OAR_TRY(oar_bytes_append(b, &tv, 4));
    OAR_TRY(oar_bytes_append(b, &crc, 4));
    return OAR_OK;
}

int oar_tensor_serialize(const oar_tensor_t *t, void **bytes, size_t *n) {
    if (!bytes || !n) return oar_error(OAR_ERR_INVALID, "oar_tensor_serialize: NULL output");
    oar_bytes_t b = {0};
    int rc = oar_tensor_write_record(&b, t);
    if (rc != OAR_OK) { oar_bytes_free(&b); return rc; }
    *bytes = b.data;
    *n = b.n;
    return OAR_OK;
}

/* ---- reading ------------------------------------------------------------- */
typedef struct reader { const uint8_t *p; size_t n, at; const char *what; } reader_t;

static int take(reader_t *r, void *dst, size_t k, const char *field) {
    if (r->n - r->at < k)
        return oar_error(OAR_ERR_FORMAT, "%s: truncated tensor record: %s needs %zu bytes at offset %zu, %zu left",
                         r->what, field, k, r->at, r->n - r->at);
    memcpy(dst, r->p + r->at, k);
    r->at += k;
    return OAR_OK;
}

static int read_lod(reader_t *r, int64_t *lod[], int64_t sizes[], int *nlevels) {
    uint64_t levels = 0;
    OAR_TRY(take(r, &levels, 8, "LoD level count"));
    if (levels > OAR_MAX_LOD)
        return oar_error(OAR_ERR_FORMAT, "%s: %llu LoD levels (at most %d)", r->what, (unsigned long long)levels, OAR_MAX_LOD);
    *nlevels = 0;
    for (uint64_t l = 0; l < levels; l++) {
        uint64_t bytes = 0;
        OAR_TRY(take(r, &bytes, 8, "LoD level size"));
        if (bytes % 8 != 0 || bytes > r->n - r->at)
            return oar_error(OAR_ERR_FORMAT, "%s: LoD level %llu claims %llu bytes (%zu left, must be a multiple of 8)",
                             r->what, (unsigned long long)l, (unsigned long long)bytes, r->n - r->at);
        int64_t count = (int64_t)(bytes / 8);
        int64_t *offs = oar_xmalloc((size_t)(count ? count : 1) * sizeof *offs);
        if (!offs) return OAR_ERR_NOMEM;
        lod[l] = offs;
        sizes[l] = count;
        (*nlevels)++;
        for (int64_t i = 0; i < count; i++) {
            uint64_t o = 0;
            OAR_TRY(take(r, &o, 8, "LoD offset"));
            if (o > (uint64_t)INT64_MAX)
                return oar_error(OAR_ERR_FORMAT, "%s: LoD offset %llu out of range", r->what, (unsigned long long)o);
            offs[i] = (int64_t)o;
        }
    }
    return OAR_OK;
}

static int read_desc(reader_t *r, int *dtype, int64_t *dims, int *ndim) {
    int32_t dlen = 0;
    OAR_TRY(take(r, &dlen, 4, "TensorDesc length"));
    if (dlen < 0 || dlen > MAX_DESC_BYTES || (size_t)dlen > r->n - r->at)
        return oar_error(OAR_ERR_FORMAT, "%s: TensorDesc length %d is invalid (%zu bytes left)", r->what, dlen, r->n - r->at);
    ProtobufCMessage *m = protobuf_c_message_unpack(&paddle__framework__proto__var_type__tensor_desc__descriptor,
                                                    NULL, (size_t)dlen, r->p + r->at);
    if (!m) return oar_error(OAR_ERR_FORMAT, "%s: malformed TensorDesc protobuf", r->what);
    r->at += (size_t)dlen;
    Paddle__Framework__Proto__VarType__TensorDesc *d = (Paddle__Framework__Proto__VarType__TensorDesc *)m;
    int rc = OAR_OK;
    *dtype = (int)d->data_type;
    if (oar_dtype_size(*dtype) == 0)
        rc = oar_error(OAR_ERR_FORMAT, "%s: unknown tensor data type %d", r->what, *dtype);
    else if (d->n_dims > OAR_MAX_DIMS)
        rc = oar_error(OAR_ERR_FORMAT, "%s: %zu dims (at most %d)", r->what, d->n_dims, OAR_MAX_DIMS);
    else {
        *ndim = (int)d->n_dims;
        for (size_t i = 0; i < d->n_dims; i++) {
            if (d->dims[i] < 0) { rc = oar_error(OAR_ERR_FORMAT, "%s: negative dim %lld", r->what, (long long)d->dims[i]); break; }
            dims[i] = d->dims[i];
        }
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

static int read_record(reader_t *r, oar_tensor_t **out) {
    uint32_t version = 0;
    int64_t *lod[OAR_MAX_LOD] = {0};
    int64_t lod_sizes[OAR_MAX_LOD] = {0};
    int nlevels = 0;
    int64_t dims[OAR_MAX_DIMS];
    int ndim = 0, dtype = -1;
    oar_tensor_t *t = NULL;
    int rc = take(r, &version, 4, "version");
    if (rc == OAR_OK && version != 0)
        rc = oar_error(OAR_ERR_FORMAT, "%s: unsupported LoDTensor version %u", r->what, version);
    if (rc == OAR_OK) rc = read_lod(r, lod, lod_sizes, &nlevels);
    if (rc == OAR_OK) rc = take(r, &version, 4, "tensor version");
    if (rc == OAR_OK && version != 0)
        rc = oar_error(OAR_ERR_FORMAT, "%s: unsupported tensor version %u", r->what, version);
    if (rc == OAR_OK) rc = read_desc(r, &dtype, dims, &ndim);
    int64_t numel = 0;
    if (rc == OAR_OK) {
        rc = oar_shape_numel(dims, ndim, &numel);
        if (rc != OAR_OK) oar_error_prefix("%s: ", r->what);
    }
    size_t bytes = 0;
    if (rc == OAR_OK) {
        size_t es = oar_dtype_size(dtype);
        if ((uint64_t)numel > (uint64_t)(r->n - r->at) / es)
            rc = oar_error(OAR_ERR_FORMAT, "%s: the shape needs %lld elements of %s, but only %zu bytes follow",
                           r->what, (long long)numel, oar_dtype_name(dtype), r->n - r->at);
        else
            bytes = (size_t)numel * es;
    }
    if (rc == OAR_OK) rc = oar_tensor_from_data(dtype, dims, ndim, r->p + r->at, &t);
    if (rc == OAR_OK) {
        r->at += bytes;
        if (nlevels > 0) rc = oar_tensor_set_lod(t, nlevels, (const int64_t *const *)lod, lod_sizes);
        if (rc != OAR_OK) oar_error_prefix("%s: ", r->what);
    }
    for (int l = 0; l < nlevels; l++) free(lod[l]);
    if (rc != OAR_OK) { oar_tensor_free(t); return rc; }
    *out = t;
    return OAR_OK;
}

int oar_tensor_read_record(const uint8_t *data, size_t n, size_t *consumed, const char *what, oar_tensor_t **out) {
    if (!data && n) return oar_error(OAR_ERR_INVALID, "deserialize: NULL data");
    reader_t r = {.p = data, .n = n, .at = 0, .what = what ? what : "tensor"};
    oar_tensor_t *t = NULL;
    OAR_TRY(read_record(&r, &t));
    if (r.n - r.at >= TRAILER_BYTES && memcmp(r.p + r.at, TRAILER_MAGIC, 4) == 0) {
        uint32_t tv, crc;
        memcpy(&tv, r.p + r.at + 4, 4);
        memcpy(&crc, r.p + r.at + 8, 4);
        uint32_t want = oar_crc32(0, r.p, r.at);
        if (tv != 1 || crc != want) {
            oar_tensor_free(t);
            return oar_error(OAR_ERR_FORMAT, "%s: checksum mismatch (file corrupted): stored %08x, computed %08x",
                             r.what, crc, want);
        }
        r.at += TRAILER_BYTES;
    } else if (r.n > r.at && r.n - r.at < TRAILER_BYTES &&
               memcmp(r.p + r.at, TRAILER_MAGIC, r.n - r.at < 4 ? r.n - r.at : 4) == 0) {
        /* the record ends in the first bytes of a trailer: the file was cut */
        oar_tensor_free(t);
        return oar_error(OAR_ERR_FORMAT, "%s: truncated tensor record: the checksum trailer needs %d bytes at offset %zu, "
                         "%zu left", r.what, TRAILER_BYTES, r.at, r.n - r.at);
    }
    *consumed = r.at;
    *out = t;
    return OAR_OK;
}

int oar_tensor_deserialize(const void *bytes, size_t n, size_t *consumed, oar_tensor_t **out) {
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_tensor_deserialize: NULL output");
    size_t used = 0;
    OAR_TRY(oar_tensor_read_record(bytes, n, &used, "tensor bytes", out));
    if (consumed) *consumed = used;
    return OAR_OK;
}

/* ---- checksum sidecars --------------------------------------------------- */
/* `<path>.crc` holds one line: "oar-crc32 1 <bytes> <crc32 in hex>\n". */
#define SIDECAR_SUFFIX ".crc"

static char *sidecar_path(const char *path) {
    size_t n = strlen(path) + sizeof SIDECAR_SUFFIX;
    char *s = oar_xmalloc(n);
    if (s) snprintf(s, n, "%s" SIDECAR_SUFFIX, path);
    return s;
}

int oar_crc_sidecar_remove(const char *path) {
    char *side = sidecar_path(path);
    if (!side) return OAR_ERR_NOMEM;
    int rc = OAR_OK;
    /* a name too long for a sidecar never had one */
    if (unlink(side) != 0 && errno != ENOENT && errno != ENAMETOOLONG)
        rc = oar_error(OAR_ERR_IO, "cannot remove the stale checksum file '%s': %s", side, strerror(errno));
    free(side);
    return rc;
}

int oar_crc_sidecar_write(const char *path, const void *data, size_t n) {
    char *side = sidecar_path(path);
    if (!side) return OAR_ERR_NOMEM;
    char line[96];
    int len = snprintf(line, sizeof line, "oar-crc32 1 %zu %08x\n", n, oar_crc32(0, data, n));
    /* a file name within 4 bytes of NAME_MAX cannot have a sidecar: it is saved unchecked */
    const char *base = strrchr(side, '/');
    if (strlen(base ? base + 1 : side) > 255) { free(side); return OAR_OK; }
    int rc = oar_file_write_atomic(side, line, (size_t)len);
    free(side);
    return rc;
}

int oar_crc_sidecar_check(const char *path, const void *data, size_t n) {
    char *side = sidecar_path(path);
    if (!side) return OAR_ERR_NOMEM;
    if (access(side, F_OK) != 0) { free(side); return OAR_OK; }   /* none: nothing to check */
    uint8_t *text = NULL;
    size_t tn = 0;
    int rc = oar_file_read_all(side, 256, &text, &tn);
    if (rc != OAR_OK) { free(side); return rc; }
    char buf[257];
    memcpy(buf, text, tn);
    buf[tn] = 0;
    free(text);
    unsigned long long size = 0;
    unsigned crc = 0;
    int version = 0;
    if (sscanf(buf, "oar-crc32 %d %llu %x", &version, &size, &crc) != 3 || version != 1) {
        rc = oar_error(OAR_ERR_FORMAT, "'%s' is not an oar checksum file (\"oar-crc32 1 <bytes> <crc>\")", side);
    } else {
        uint32_t got = oar_crc32(0, data, n);
        if (size != (unsigned long long)n || got != crc)
            rc = oar_error(OAR_ERR_FORMAT, "'%s': checksum mismatch (file corrupted, or replaced without its "
                           "checksum file '%s'): %zu bytes with CRC-32 %08x, the checksum file says %llu bytes "
                           "with %08x", path, side, n, got, size, crc);
    }
    free(side);
    return rc;
}

/* The most bytes a record of a tensor declared with dims can take: data at
 * 8 bytes an element (any dtype, load_as_fp16 included), a LoD of at most
 * OAR_MAX_LOD levels of rows+1 offsets, the headers, a TensorDesc and the
 * trailer. SIZE_MAX when a dim is unknown (the file size is then the bound). */
size_t oar_record_max_bytes(const int64_t *dims, int ndim)
{
    if (ndim < 0 || ndim > OAR_MAX_DIMS) return SIZE_MAX;
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) return SIZE_MAX;
        if (dims[i] != 0 && numel > INT64_MAX / 16 / dims[i]) return SIZE_MAX;
        numel *= dims[i];
    }
    int64_t rows = ndim > 0 ? dims[0] : 1;
    if (rows > INT64_MAX / 64 / OAR_MAX_LOD) return SIZE_MAX;
    uint64_t total = (uint64_t)numel * 8 + (uint64_t)OAR_MAX_LOD * ((uint64_t)rows + 2) * 8 + 4096;
    return total > SIZE_MAX / 2 ? SIZE_MAX : (size_t)total;
}
