/* fileio.c — whole-file reads and crash-safe writes. A write goes to a temp
 * file in the target's directory, is fsync'd, renamed over the target, and
 * the directory is fsync'd: at every moment the target holds either its old
 * or its new contents. No path ever goes through a shell. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.h"
#include "tensor_io.h"

int oar_file_read_all(const char *path, size_t max_bytes, uint8_t **data, size_t *n) {
    if (!path || !*path || !data || !n) return oar_error(OAR_ERR_INVALID, "read: empty path or NULL output");
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return oar_error(errno == ENOENT ? OAR_ERR_NOT_FOUND : OAR_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return oar_error(OAR_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > max_bytes) {
        close(fd);
        return oar_error(OAR_ERR_FORMAT, "'%s' is %lld bytes, more than the %zu bytes its contents may take",
                         path, (long long)st.st_size, max_bytes);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = oar_xmalloc(size ? size : 1);
    if (!buf) { close(fd); return OAR_ERR_NOMEM; }
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, buf + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int err = errno;
            free(buf);
            close(fd);
            return oar_error(OAR_ERR_IO, "reading '%s': %s", path, k == 0 ? "file shrank while reading" : strerror(err));
        }
        got += (size_t)k;
    }
    close(fd);
    *data = buf;
    *n = size;
    return OAR_OK;
}

static int write_fully(int fd, const void *data, size_t n) {
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int oar_file_write_atomic(const char *path, const void *data, size_t n) {
    if (!path || !*path || (!data && n)) return oar_error(OAR_ERR_INVALID, "write: empty path or NULL data");
    size_t len = strlen(path);
    char *tmp = oar_xmalloc(len + 32);
    char *dircopy = oar_xstrdup(path);
    if (!tmp || !dircopy) { free(tmp); free(dircopy); return OAR_ERR_NOMEM; }
    const char *dir = dirname(dircopy);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* the six trailing X are the pattern mkstemp replaces with a unique suffix;
     * a long name gets a short temp name (a name may use all of NAME_MAX) */
    if (strlen(base) <= 200) snprintf(tmp, len + 32, "%s/.%s.tmp.XXXXXX", dir, base);
    else snprintf(tmp, len + 32, "%s/.oar.tmp.XXXXXX", dir);
    int rc = OAR_OK;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rc = oar_error(OAR_ERR_IO, "cannot create a temp file next to '%s': %s", path, strerror(errno));
    } else {
        /* mkstemp creates 0600; give the file the mode it replaces, or 0644 */
        struct stat old;
        mode_t mode = stat(path, &old) == 0 ? (old.st_mode & 07777) : 0644;
        if (fchmod(fd, mode) != 0)
            rc = oar_error(OAR_ERR_IO, "setting the mode of '%s': %s", tmp, strerror(errno));
        if (rc == OAR_OK && (write_fully(fd, data, n) != 0 || fsync(fd) != 0))
            rc = oar_error(OAR_ERR_IO, "writing '%s': %s", tmp, strerror(errno));
        if (close(fd) != 0 && rc == OAR_OK) rc = oar_error(OAR_ERR_IO, "closing '%s': %s", tmp, strerror(errno));
        if (rc == OAR_OK && rename(tmp, path) != 0)
            rc = oar_error(OAR_ERR_IO, "renaming '%s' to '%s': %s", tmp, path, strerror(errno));
        if (rc != OAR_OK) {
            unlink(tmp);
        } else {
            int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) { fsync(dfd); close(dfd); }
        }
    }
    free(tmp);
    free(dircopy);
    return rc;
}

/* ---- public wrappers ---------------------------------------------------- */
/* a Lua string (what oar_file_read's callers make of the bytes) holds less than 2 GiB */
#define OAR_FILE_LIMIT ((size_t)INT32_MAX - 64)

int oar_file_write(const char *path, const void *data, size_t n) { return oar_file_write_atomic(path, data, n); }

int oar_file_read(const char *path, void **data, size_t *n) {
    uint8_t *d = NULL;
    OAR_TRY(oar_file_read_all(path, OAR_FILE_LIMIT, &d, n));
    *data = d;
    return OAR_OK;
}

int oar_file_check_regular(const char *path) {
    if (!path || !*path) return oar_error(OAR_ERR_INVALID, "oar_file_check_regular: empty path");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return oar_error(errno == ENOENT ? OAR_ERR_NOT_FOUND : OAR_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    return ok ? OAR_OK : oar_error(OAR_ERR_IO, "'%s' is not a regular file", path);
}
