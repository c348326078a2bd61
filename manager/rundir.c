/* rundir.c — see rundir.h. */
#include "rundir.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gd_log.h"

/* Makes dir (0700) or accepts it when it is a directory owned by us (follow false: lstat,
 * so a symlink is refused), made private if it is not. */
static bool own_private_dir(const char *dir, bool follow, bool *made)
{
    if (mkdir(dir, 0700) == 0) *made = true;
    else if (errno != EEXIST) {
        GD_ERROR("cannot create the runtime directory", "dir", dir, "error", strerror(errno));
        return false;
    }
    struct stat st;
    if ((follow ? stat(dir, &st) : lstat(dir, &st)) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != getuid()) {
        GD_ERROR("runtime directory must be a directory owned by us", "dir", dir);
        return false;
    }
    if ((st.st_mode & 077) && chmod(dir, 0700) != 0) {
        GD_ERROR("cannot make the runtime directory private (0700)", "dir", dir,
                 "error", strerror(errno));
        return false;
    }
    return true;
}

static bool fits(const char *dir)
{
    if (strlen(dir) <= MGR_RUNDIR_MAX_PATH) return true;
    GD_ERROR("runtime directory path too long for ipc:// endpoints (max 80)", "dir", dir);
    return false;
}

bool mgr_rundir_make(const char *configured, char *out, size_t cap, bool *made)
{
    *made = false;
    int n;
    if (!configured || !*configured) {
        const char *x = getenv("XDG_RUNTIME_DIR");
        if (x && *x && strlen(x) < 120)
            n = snprintf(out, cap, "%s/godis-operator-%d", x, (int)getpid());
        else
            n = snprintf(out, cap, "/tmp/godis-operator-%d-%d", (int)getuid(), (int)getpid());
        return n > 0 && (size_t)n < cap && fits(out) && own_private_dir(out, true, made);
    }
    n = snprintf(out, cap, "%s", configured);
    if (n < 0 || (size_t)n >= cap) {
        GD_ERROR("--runtime-dir too long", "dir", configured);
        return false;
    }
    struct stat st;
    if (stat(configured, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != getuid()) {
        n = snprintf(out, cap, "%s/godis-operator-%d", configured, (int)getuid());
        if (n < 0 || (size_t)n >= cap) {
            GD_ERROR("--runtime-dir too long", "dir", configured);
            return false;
        }
        GD_INFO("runtime directory belongs to another user: using a private subdirectory",
                "dir", configured, "subdirectory", out);
        return fits(out) && own_private_dir(out, false, made);
    }
    return fits(out) && own_private_dir(out, true, made);
}

void mgr_rundir_remove(const char *dir, bool made)
{
    if (!made) return;
    char p[300];
    snprintf(p, sizeof p, "%s/control", dir);
    unlink(p);
    rmdir(dir);   /* fails harmlessly if children left files behind */
}
