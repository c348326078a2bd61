/* rundir.h — the manager's private runtime directory for the ZeroMQ ipc:// endpoints of its
 * informers and workers (private, 0700). */
#ifndef MGR_RUNDIR_H
#define MGR_RUNDIR_H
#include <stdbool.h>
#include <stddef.h>

#define MGR_RUNDIR_MAX_PATH 80   /* ipc:// paths must fit a sockaddr_un with "/<Kind>.snap" */

/* Chooses and prepares the directory into out (cap bytes):
 *  - configured NULL or "": $XDG_RUNTIME_DIR/godis-operator-<pid>, else
 *    /tmp/godis-operator-<uid>-<pid>, created 0700;
 *  - configured and ours (or missing: then created 0700): used as is, made 0700;
 *  - configured, existing and someone else's — a Kubernetes emptyDir arrives root-owned with
 *    mode 0777 and the Deployment runs us as uid 65532 without an fsGroup: it only hosts our
 *    private subdirectory <configured>/godis-operator-<uid>, created 0700; an existing one
 *    must be a real directory of ours (never a symlink, never another user's). Its name is
 *    fixed, so a restarted container reuses it.
 * *made tells whether this call created the directory (mgr_rundir_remove removes only then).
 * Returns false after logging one error that names the directory and the problem. */
bool mgr_rundir_make(const char *configured, char *out, size_t cap, bool *made);
/* Removes the control socket and the directory when mgr_rundir_make created it. */
void mgr_rundir_remove(const char *dir, bool made);

#endif
