/* checkpoint.c — saves of several files into one directory that commit all
 * or nothing, and loads that never see two saves mixed.
 *
 * A save holds an exclusive flock on DIR itself, writes its files into a
 * fresh staging directory DIR/.oar-stage-XXXXXX (same file system), then
 * writes the commit record DIR/.oar-commit (atomically: temp file, fsync,
 * rename) naming the staging directory, renames every staged file into DIR,
 * fsyncs DIR, and removes the record and the staging directory. A crash
 * before the record leaves DIR as it was (plus a staging directory); a crash
 * after it leaves a record that the next save or load, under the same lock,
 * rolls forward. Whatever is left of killed saves (uncommitted staging
 * directories, temp files of atomic writes) is removed then too. The files
 * themselves keep Fluid's layout: Paddle reads DIR as before. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.h"
#include "tensor_io.h"

#define RECORD_NAME ".oar-commit"
#define STAGE_PREFIX ".oar-stage-"

struct oar_ckpt {
    char *dir;
    char *stage;       /* full path of the staging directory, NULL for a load */
    int lock_fd;       /* the directory, flock'ed */
};

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = oar_xmalloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) { fsync(fd); close(fd); }
}

/* removes the plain files of dir, then dir (a staging directory is flat) */
static void remove_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(dir);
}

static bool is_stage_name(const char *name)
{
    size_t n = strlen(STAGE_PREFIX);
    if (strncmp(name, STAGE_PREFIX, n) != 0 || strlen(name) != n + 6) return false;
    for (const char *p = name + n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

/* ".NAME.tmp.XXXXXX": a temp file of oar_file_write_atomic whose writer died */
static bool is_temp_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] == '.' && n > 11 && strncmp(name + n - 11, ".tmp.", 5) == 0;
}

/* Moves every file of the committed staging directory into dir. Idempotent:
 * files already moved by an interrupted roll-forward are simply gone from
 * the staging directory. */
static int roll_forward(const char *dir, const char *stage_name)
{
    char *stage = join(dir, stage_name);
    if (!stage) return OAR_ERR_NOMEM;
    int rc = OAR_OK;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = opendir(stage);
    if (dfd < 0) rc = oar_error(OAR_ERR_IO, "cannot open '%s': %s", dir, strerror(errno));
    while (rc == OAR_OK && d) {
        struct dirent *e = readdir(d);
        if (!e) break;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || is_temp_name(e->d_name)) continue;
        if (renameat(dirfd(d), e->d_name, dfd, e->d_name) != 0)
            rc = oar_error(OAR_ERR_IO, "committing '%s/%s' into '%s': %s", stage, e->d_name, dir, strerror(errno));
    }
    if (d) closedir(d);
    if (dfd >= 0) { fsync(dfd); close(dfd); }
    if (rc == OAR_OK) {
        char *rec = join(dir, RECORD_NAME);
        if (!rec) rc = OAR_ERR_NOMEM;
        else if (unlink(rec) != 0 && errno != ENOENT)
            rc = oar_error(OAR_ERR_IO, "removing '%s': %s", rec, strerror(errno));
        free(rec);
        remove_flat_dir(stage);
        fsync_dir(dir);
    }
    free(stage);
    return rc;
}

/* Completes a committed save and removes what killed saves left behind.
 * Runs under the exclusive lock. */
static int recover(const char *dir)
{
    char *rec = join(dir, RECORD_NAME);
    if (!rec) return OAR_ERR_NOMEM;
    int rc = OAR_OK;
    uint8_t *data = NULL;
    size_t n = 0;
    if (access(rec, F_OK) == 0) {
        rc = oar_file_read_all(rec, 64, &data, &n);
        char name[65] = "";
        if (rc == OAR_OK) {
            memcpy(name, data, n);
            name[n] = '\0';
            if (!is_stage_name(name))
                rc = oar_error(OAR_ERR_FORMAT, "'%s' does not name a staging directory of an oar save", rec);
        }
        if (rc == OAR_OK) rc = roll_forward(dir, name);
        free(data);
    }
    free(rec);
    if (rc != OAR_OK) return rc;
    DIR *d = opendir(dir);
    if (!d) return OAR_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (is_stage_name(e->d_name)) {
            char *p = join(dir, e->d_name);
            if (p) remove_flat_dir(p);
            free(p);
        } else if (is_temp_name(e->d_name)) {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
    return OAR_OK;
}

/* flock on the directory itself (Linux allows it on a directory fd): no
 * lock file is left among the user's files, and a read-only directory can
 * be locked too */
static int lock_dir(const char *dir, int *fd_out)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return oar_error(OAR_ERR_IO, "cannot open directory '%s': %s", dir, strerror(errno));
    int r;
    do r = flock(fd, LOCK_EX); while (r != 0 && errno == EINTR);
    if (r != 0) {
        int err = errno;
        close(fd);
        return oar_error(OAR_ERR_IO, "cannot lock '%s': %s", dir, strerror(err));
    }
    *fd_out = fd;
    return OAR_OK;
}

static bool writable(const char *dir) { return access(dir, W_OK) == 0; }

static void ckpt_free(oar_ckpt_t *c)
{
    if (!c) return;
    if (c->lock_fd >= 0) close(c->lock_fd);   /* releases the flock */
    free(c->dir);
    free(c->stage);
    free(c);
}

int oar_ckpt_begin_save(const char *dir, oar_ckpt_t **out)
{
    if (!dir || !*dir || !out) return oar_error(OAR_ERR_INVALID, "oar_ckpt_begin_save: empty directory or NULL out");
    *out = NULL;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return oar_error(OAR_ERR_IO, "cannot create directory '%s': %s", dir, strerror(errno));
    oar_ckpt_t *c = oar_xcalloc(1, sizeof *c);
    if (!c) return OAR_ERR_NOMEM;
    c->lock_fd = -1;
    c->dir = oar_xstrdup(dir);
    int rc = c->dir ? lock_dir(dir, &c->lock_fd) : OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = recover(dir);
    if (rc == OAR_OK) {
        c->stage = join(dir, STAGE_PREFIX "XXXXXX");
        if (!c->stage) rc = OAR_ERR_NOMEM;
        else if (!mkdtemp(c->stage)) {
            rc = oar_error(OAR_ERR_IO, "cannot create a staging directory in '%s': %s", dir, strerror(errno));
            free(c->stage);
            c->stage = NULL;
        }
    }
    if (rc != OAR_OK) { ckpt_free(c); return rc; }
    *out = c;
    return OAR_OK;
}

const char *oar_ckpt_stage_dir(const oar_ckpt_t *c) { return c ? c->stage : NULL; }

int oar_ckpt_commit(oar_ckpt_t *c)
{
    if (!c || !c->stage) {
        ckpt_free(c);
        return oar_error(OAR_ERR_INVALID, "oar_ckpt_commit: not a save in progress");
    }
    fsync_dir(c->stage);
    const char *stage_name = strrchr(c->stage, '/') + 1;
    char *rec = join(c->dir, RECORD_NAME);
    int rc = rec ? oar_file_write_atomic(rec, stage_name, strlen(stage_name)) : OAR_ERR_NOMEM;
    free(rec);
    /* from here on the save counts: a crash leaves the record to roll forward */
    if (rc == OAR_OK) rc = roll_forward(c->dir, stage_name);
    else remove_flat_dir(c->stage);
    free(c->stage);
    c->stage = NULL;
    ckpt_free(c);
    return rc;
}

int oar_ckpt_begin_load(const char *dir, oar_ckpt_t **out)
{
    if (!dir || !*dir || !out) return oar_error(OAR_ERR_INVALID, "oar_ckpt_begin_load: empty directory or NULL out");
    *out = NULL;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return OAR_OK;   /* the load itself says what is missing */
    oar_ckpt_t *c = oar_xcalloc(1, sizeof *c);
    if (!c) return OAR_ERR_NOMEM;
    c->lock_fd = -1;
    c->dir = oar_xstrdup(dir);
    int rc = c->dir ? lock_dir(dir, &c->lock_fd) : OAR_ERR_NOMEM;
    if (rc == OAR_OK && writable(dir)) rc = recover(dir);
    else if (rc == OAR_OK) {
        char *rec = join(dir, RECORD_NAME);
        if (rec && access(rec, F_OK) == 0)
            rc = oar_error(OAR_ERR_IO, "'%s' holds a save that was interrupted while committing; it cannot be "
                           "completed because the directory is not writable", dir);
        free(rec);
    }
    if (rc != OAR_OK) { ckpt_free(c); return rc; }
    *out = c;
    return OAR_OK;
}

void oar_ckpt_end(oar_ckpt_t *c)
{
    if (!c) return;
    if (c->stage) remove_flat_dir(c->stage);
    ckpt_free(c);
}
