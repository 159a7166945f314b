/* error.h — thread-local error message behind oar_last_error(). */
#ifndef OAR_ERROR_H
#define OAR_ERROR_H
#include "oar.h"

/* Sets the message and returns status, so callers can `return oar_error(...)`. */
OAR_API int oar_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* oar_error for a message that already begins with its op's context
 * ("op 'mul' (block 0, #3, created at x.lua:5): ..."): the executor adds no
 * second one. */
OAR_API int oar_error_in_op(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool oar_error_has_op_context(void);
void oar_error_mark_op_context(void);
/* Prefixes the current message with context ("op 'mul' (block 0, #3): "). */
OAR_API void oar_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Status-propagating helper. */
#define OAR_TRY(expr) do { int oar_try_rc_ = (expr); if (oar_try_rc_ != OAR_OK) return oar_try_rc_; } while (0)

/* Checked allocation: sets OAR_ERR_NOMEM on failure. */
OAR_API void *oar_xmalloc(size_t n);
OAR_API void *oar_xcalloc(size_t count, size_t size);
OAR_API void *oar_xrealloc(void *p, size_t n);
OAR_API char *oar_xstrdup(const char *s);
/* grows *arr (of elem bytes) so that it holds at least need; returns status */
OAR_API int oar_grow(void **arr, int *cap, int need, size_t elem);

/* Checked int64 arithmetic on shapes. */
OAR_API int oar_mul_checked(int64_t a, int64_t b, int64_t *out);
/* numel of dims, -1 dims not allowed; error names `what` */
OAR_API int oar_shape_numel(const int64_t *dims, int ndim, int64_t *out);
/* "[2, 3, -1]" into buf */
OAR_API const char *oar_shape_str(const int64_t *dims, int ndim, char *buf, size_t n);
#endif
