/* tensor_io.h — Fluid's LoDTensor stream format, plus oar's checksum trailer,
 * to and from memory; and whole-file reads and atomic file writes. */
#ifndef OAR_TENSOR_IO_H
#define OAR_TENSOR_IO_H
#include "oar.h"

/* A growable byte buffer. */
typedef struct oar_bytes { uint8_t *data; size_t n, cap; } oar_bytes_t;
int oar_bytes_append(oar_bytes_t *b, const void *p, size_t n);
void oar_bytes_free(oar_bytes_t *b);

/* Appends one tensor record to b, with oar's checksum trailer (files of one
 * record) or without it: Paddle's bytes exactly (combined files). */
int oar_tensor_write_record(oar_bytes_t *b, const oar_tensor_t *t);
int oar_tensor_write_record_plain(oar_bytes_t *b, const oar_tensor_t *t);
/* The checksum of a whole file kept beside it in `<path>.crc`: written after
 * the file, removed before the file is replaced (a crash in between leaves a
 * file without a checksum, never a false mismatch), checked on reading when
 * present (absent: OK). */
int oar_crc_sidecar_write(const char *path, const void *data, size_t n);
int oar_crc_sidecar_remove(const char *path);
int oar_crc_sidecar_check(const char *path, const void *data, size_t n);
/* Parses one record at data[0..n); *consumed is its length. Every length,
 * the LoD, the dtype, and the data size are checked; a checksum trailer, when
 * present (oar writes one; Fluid does not), must match. `what` names the
 * source in errors (a file name). */
int oar_tensor_read_record(const uint8_t *data, size_t n, size_t *consumed, const char *what,
                           oar_tensor_t **out);

/* Reads a whole file (at most max_bytes). */
int oar_file_read_all(const char *path, size_t max_bytes, uint8_t **data, size_t *n);
/* Writes via a temp file in the same directory, fsync, rename, fsync of the
 * directory: a crash leaves either the old file or the new one. */
int oar_file_write_atomic(const char *path, const void *data, size_t n);
uint32_t oar_crc32(uint32_t crc, const void *data, size_t n);
/* the most bytes one record of a tensor declared with these dims can take
 * (SIZE_MAX when a dim is unknown): loads read no more than the program declares */
size_t oar_record_max_bytes(const int64_t *dims, int ndim);
#endif
