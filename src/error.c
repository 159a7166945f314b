/* error.c — the thread-local error message, checked allocation and checked
 * shape arithmetic that every other file reports through. */
#include "error.h"
#include "tensor.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OAR_MSG_CAP 4096

static _Thread_local char g_msg[OAR_MSG_CAP];
/* the message already names its op (the executor adds an op's context once,
 * however deeply nested the run that failed) */
static _Thread_local bool g_op_context;

bool oar_error_has_op_context(void) { return g_op_context; }
void oar_error_mark_op_context(void) { g_op_context = true; }

const char *oar_last_error(void) { return g_msg; }

void oar_clear_error(void) { g_msg[0] = '\0'; }

int oar_error(int status, const char *fmt, ...)
{
    /* format into a temporary: arguments may point into g_msg itself */
    char tmp[OAR_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(g_msg, tmp, strlen(tmp) + 1);
    g_op_context = false;
    return status;
}

int oar_error_in_op(int status, const char *fmt, ...)
{
    char tmp[OAR_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(g_msg, tmp, strlen(tmp) + 1);
    g_op_context = true;
    return status;
}

void oar_error_prefix(const char *fmt, ...)
{
    char pre[OAR_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    if (r <= 0) return;
    size_t plen = strlen(pre);
    if (plen >= OAR_MSG_CAP - 1) plen = OAR_MSG_CAP - 1;
    size_t mlen = strlen(g_msg);
    /* keep as much of the old message as fits after the prefix */
    if (plen + mlen > OAR_MSG_CAP - 1) mlen = OAR_MSG_CAP - 1 - plen;
    memmove(g_msg + plen, g_msg, mlen);
    memcpy(g_msg, pre, plen);
    g_msg[plen + mlen] = '\0';
    /* the message now begins with this prefix: an op context, if any, is
     * inside it, and the enclosing op adds its own (callers that prefix an
     * op's context mark it again) */
    g_op_context = false;
}

static void *nomem(size_t n)
{
    oar_error(OAR_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return NULL;
}

void *oar_xmalloc(size_t n)
{
    if (n > OAR_MAX_BYTES) return nomem(n);
    void *p = malloc(n ? n : 1);
    return p ? p : nomem(n);
}

void *oar_xcalloc(size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        oar_error(OAR_ERR_NOMEM, "out of memory allocating %zu x %zu bytes (size overflows)",
                  count, size);
        return NULL;
    }
    if (n > OAR_MAX_BYTES) return nomem(n);
    void *p = calloc(count ? count : 1, count ? size : 1);
    return p ? p : nomem(n);
}

void *oar_xrealloc(void *p, size_t n)
{
    if (n > OAR_MAX_BYTES) return nomem(n);
    void *q = realloc(p, n ? n : 1);
    return q ? q : nomem(n);   /* on failure p is left intact for the caller */
}

char *oar_xstrdup(const char *s)
{
    if (!s) {
        oar_error(OAR_ERR_INVALID, "oar_xstrdup: NULL string");
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *d = oar_xmalloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int oar_grow(void **arr, int *cap, int need, size_t elem)
{
    if (need < 0) return oar_error(OAR_ERR_INVALID, "oar_grow: negative size %d", need);
    if (need <= *cap) return OAR_OK;
    int64_t nc = *cap > 0 ? (int64_t)*cap * 2 : 8;
    if (nc < need) nc = need;
    if (nc > INT32_MAX) nc = INT32_MAX;
    size_t bytes;
    if (__builtin_mul_overflow((size_t)nc, elem, &bytes))
        return oar_error(OAR_ERR_NOMEM, "out of memory growing an array to %lld elements of %zu bytes",
                         (long long)nc, elem);
    void *p = oar_xrealloc(*arr, bytes);
    if (!p) return OAR_ERR_NOMEM;
    *arr = p;
    *cap = (int)nc;
    return OAR_OK;
}

int oar_mul_checked(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return oar_error(OAR_ERR_SHAPE, "shape product overflows int64 (%lld * %lld)",
                         (long long)a, (long long)b);
    *out = r;
    return OAR_OK;
}

int oar_shape_numel(const int64_t *dims, int ndim, int64_t *out)
{
    char buf[256];
    if (ndim < 0 || (ndim > 0 && !dims))
        return oar_error(OAR_ERR_INVALID, "invalid shape: ndim %d%s", ndim, dims ? "" : " with NULL dims");
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0)
            return oar_error(OAR_ERR_SHAPE, "negative dimension %lld at axis %d of shape %s",
                             (long long)dims[i], i, oar_shape_str(dims, ndim, buf, sizeof buf));
        if (__builtin_mul_overflow(n, dims[i], &n))
            return oar_error(OAR_ERR_SHAPE, "shape product overflows int64: %s",
                             oar_shape_str(dims, ndim, buf, sizeof buf));
    }
    *out = n;
    return OAR_OK;
}

const char *oar_shape_str(const int64_t *dims, int ndim, char *buf, size_t n)
{
    if (!buf || n == 0) return buf;
    size_t used = 0;
    buf[0] = '\0';
#define OAR_APPEND(...) do { \
        if (used < n) { int w_ = snprintf(buf + used, n - used, __VA_ARGS__); \
            if (w_ > 0) used += (size_t)w_; } } while (0)
    OAR_APPEND("[");
    for (int i = 0; dims && i < ndim; i++) OAR_APPEND(i ? ", %lld" : "%lld", (long long)dims[i]);
    OAR_APPEND("]");
#undef OAR_APPEND
    /* on truncation snprintf already terminated the buffer; mark it */
    if (used >= n && n >= 4) memcpy(buf + n - 4, "...", 4);
    return buf;
}
