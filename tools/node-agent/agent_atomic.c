/* agent_atomic.c — a Secret volume's files laid out and replaced as the kubelet's
 * AtomicWriter does (pkg/volume/util/atomic_writer.go), so a program here sees what it
 * sees in a real pod when the Secret is rotated:
 *
 *   DIR/..2026_11_27_12_00_00.AbCdEf/<files>   one directory per version
 *   DIR/..data -> ..2026_11_27_12_00_00.AbCdEf  swapped by rename(2): the one atomic step
 *   DIR/<name> -> ..data/<name>                 per top-level name of the payload
 *
 * A reader that opens DIR/<name> gets the whole old file or the whole new one, never a mix
 * of keys from two versions, and stat(DIR/<name>) shows a new inode after each update, which
 * is what the manager's allow-list reload looks for (gd_curve_zap.c). An unchanged payload
 * writes nothing (a reader polling mtimes sees no churn every sync). */
#include "agent.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A payload path: relative, no empty, "." or ".." component, not starting with ".." (the
 * names the writer keeps for itself). Same rules as the kubelet's validatePath. */
static bool path_ok(const char *p)
{
    if (!*p || *p == '/' || strncmp(p, "..", 2) == 0 || strlen(p) >= 512) return false;
    for (const char *c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) return false;
        c += n;
        if (*c == '/') c++;
    }
    return p[strlen(p) - 1] != '/';
}

/* Whether path holds exactly len bytes equal to data, with mode. */
static bool same_content(const char *path, const void *data, size_t len, int mode)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != len ||
        (int)(st.st_mode & 0777) != (mode & 0777)) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char *buf = malloc(len + 1);
    bool same = buf && fread(buf, 1, len + 1, f) == len && memcmp(buf, data, len) == 0;
    free(buf);
    fclose(f);
    return same;
}

/* Regular files below dir (recursively), -1 when unreadable. */
static long count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    long n = 0;
    struct dirent *e;
    while (n >= 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[NA_PATH_MAX];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &st) != 0) { n = -1; break; }
        if (S_ISREG(st.st_mode)) n++;
        else if (S_ISDIR(st.st_mode)) { long m = count_files(p); n = m < 0 ? -1 : n + m; }
    }
    closedir(d);
    return n;
}

static bool unchanged(const char *dir, const char *cur, const na_payload_file *f, size_t n)
{
    char vdir[NA_PATH_MAX], p[NA_PATH_MAX + 600];
    if (!*cur || snprintf(vdir, sizeof vdir, "%s/%s", dir, cur) >= (int)sizeof vdir) return false;
    for (size_t i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", vdir, f[i].path);
        if (!same_content(p, f[i].data, f[i].len, f[i].mode)) return false;
    }
    return count_files(vdir) == (long)n;
}

/* The top-level name of a payload path ("a/b" -> "a"), into out. */
static void first_component(const char *path, char *out, size_t cap)
{
    size_t n = strcspn(path, "/");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), path);
}

static bool in_payload(const char *name, const na_payload_file *f, size_t n)
{
    char c[512];
    for (size_t i = 0; i < n; i++) {
        first_component(f[i].path, c, sizeof c);
        if (!strcmp(c, name)) return true;
    }
    return false;
}

static gd_err fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return GD_ERR_IO;
}

gd_err na_atomic_write(const char *dir, const na_payload_file *f, size_t n, bool *changed,
                       char *err, size_t errlen)
{
    *changed = false;
    for (size_t i = 0; i < n; i++)
        if (!path_ok(f[i].path)) {
            snprintf(err, errlen, "bad file name %.100s", f[i].path);
            return GD_ERR_INVALID;
        }
    if (!na_mkdirs(dir)) return fail(err, errlen, "mkdir", dir);
    char data[NA_PATH_MAX], cur[256] = "";
    if (snprintf(data, sizeof data, "%s/..data", dir) >= (int)sizeof data) {
        snprintf(err, errlen, "path too long: %s", dir);
        return GD_ERR_INVALID;
    }
    ssize_t cl = readlink(data, cur, sizeof cur - 1);
    cur[cl > 0 ? cl : 0] = '\0';
    if (!unchanged(dir, cur, f, n)) {
        /* 1. the new version in a directory of its own */
        char ts[NA_PATH_MAX], stamp[64];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "..%Y_%m_%d_%H_%M_%S.XXXXXX", &tm);
        if (snprintf(ts, sizeof ts, "%s/%s", dir, stamp) >= (int)sizeof ts || !mkdtemp(ts))
            return fail(err, errlen, "mkdtemp in", dir);
        chmod(ts, 0755);
        const char *tsname = strrchr(ts, '/') + 1;
        for (size_t i = 0; i < n; i++) {
            char p[NA_PATH_MAX + 600];
            snprintf(p, sizeof p, "%s/%s", ts, f[i].path);
            char *slash = strrchr(p, '/');
            *slash = '\0';
            bool made = na_mkdirs(p);
            *slash = '/';
            int fd = made ? open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
            bool ok = fd >= 0 && write(fd, f[i].data, f[i].len) == (ssize_t)f[i].len &&
                      fchmod(fd, (mode_t)f[i].mode & 0777) == 0;
            if (fd >= 0 && close(fd) != 0) ok = false;
            if (!ok) {
                gd_err e = fail(err, errlen, "write", p);
                na_rmtree(ts);
                return e;
            }
        }
        /* 2. ..data swapped to it in one rename */
        char tmp[NA_PATH_MAX + 8];
        snprintf(tmp, sizeof tmp, "%s_tmp", data);
        unlink(tmp);
        if (symlink(tsname, tmp) != 0 || rename(tmp, data) != 0) {
            gd_err e = fail(err, errlen, "swap", data);
            unlink(tmp);
            na_rmtree(ts);
            return e;
        }
        *changed = true;
    }
    /* 3. a link per top-level name (new names appear only now, pointing into the new
     *    version); names the payload lost, and files of a layout without ..data (an agent
     *    before this one), go. */
    for (size_t i = 0; i < n; i++) {
        char name[512], link[NA_PATH_MAX + 600], want[600], got[600] = "";
        first_component(f[i].path, name, sizeof name);
        snprintf(link, sizeof link, "%s/%s", dir, name);
        snprintf(want, sizeof want, "..data/%s", name);
        ssize_t gl = readlink(link, got, sizeof got - 1);
        got[gl > 0 ? gl : 0] = '\0';
        if (!strcmp(got, want)) continue;
        struct stat st;
        if (lstat(link, &st) == 0) {
            if (S_ISDIR(st.st_mode)) na_rmtree(link);
            else unlink(link);
        }
        if (symlink(want, link) != 0) return fail(err, errlen, "symlink", link);
    }
    DIR *d = opendir(dir);
    if (!d) return fail(err, errlen, "opendir", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, "..", 2) || !strcmp(e->d_name, ".") || in_payload(e->d_name, f, n)) continue;
        char p[NA_PATH_MAX + 300];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) na_rmtree(p);
        else unlink(p);
    }
    closedir(d);
    /* 4. the old version, now unreachable (a reader that opened a file keeps it) */
    if (*changed && *cur && strncmp(cur, "..", 2) == 0 && !strchr(cur, '/')) {
        char old[NA_PATH_MAX + 300];
        snprintf(old, sizeof old, "%s/%s", dir, cur);
        na_rmtree(old);
    }
    return GD_OK;
}
