/* e2e_procs.h — starting and stopping the operator's processes from a test. */
#ifndef E2E_PROCS_H
#define E2E_PROCS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* fork/exec argv (NULL-terminated) with stdout/stderr appended to log_path (NULL: inherit). */
pid_t e2e_spawn(const char *const *argv, const char *log_path);
/* TERM, wait up to grace_ms, then KILL; reaps. Returns the exit status (or -1). */
int e2e_stop(pid_t pid, int grace_ms);
/* Starts one informer per watched kind in runtime_dir (children by the cluster-name
 * label), the way the manager does. pids must hold 8. Returns how many were started. */
int e2e_start_informers(const char *runtime_dir, const char *log_dir, pid_t *pids);

/* The live (not zombie) children of parent whose command name is comm, into out (at most
 * cap); returns how many. */
int e2e_children(pid_t parent, const char *comm, pid_t *out, int cap);

/* Makes build/itest-logs/<name>-<pid> (logs kept after the run for a person to read) into buf. */
void e2e_log_dir(char *buf, size_t cap, const char *name);
/* Removes a test's scratch directory tree; false (and a message) when that failed. */
bool e2e_remove_dir(const char *dir);

#endif
