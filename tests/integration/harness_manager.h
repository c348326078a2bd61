/* harness_manager.h — shared by the manager's integration tests (itest_manager*.c): stand-in
 * children in the test binary itself, starting/stopping bin/godis-manager, its HTTP
 * endpoints and metrics. Include after <cmocka.h>. See harness_manager.c. */
#ifndef HARNESS_MANAGER_H
#define HARNESS_MANAGER_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* This test binary, bin/godis-manager, the real informer and the real worker built with the
 * test reconciler sets (bin/tests/godis-worker) — absolute, "" when missing — and the run's
 * scratch directory. Set by mgr_itest_init. */
extern char self_path[512], mgr_path[512], tmpdir[256];
extern char informer_path[PATH_MAX], worker_path[PATH_MAX];

/* First thing in main(): when the manager started this binary as a child, runs the
 * stand-in and returns its exit code; returns 1 when the binary cannot find itself;
 * otherwise sets the paths above (tmpdir from name: "/tmp/<name>-<pid>", '_' → '-') and
 * returns -1: go on with the tests. */
int mgr_itest_init(int argc, char **argv, const char *name);
/* Creates tmpdir, runs the group, removes tmpdir when all passed (else says where the
 * logs are). Returns cmocka's result. */
int mgr_itest_run(const struct CMUnitTest *tests, size_t n, const char *name);
#define MGR_ITEST_RUN(tests, name) mgr_itest_run(tests, sizeof(tests) / sizeof((tests)[0]), name)

long long now_ms(void);          /* monotonic */
long long fake_wall_ms(void);    /* wall clock, as the stand-in workers log it */

/* GET http://127.0.0.1:port/path → status (0 on connection failure), body into buf. */
int http_get(int port, const char *path, char *buf, size_t cap);
/* Value of the first sample line starting with `series` (e.g. "x{a=\"1\"}"); -1 if none. */
double metric(int port, const char *series);

typedef struct {
    pid_t pid;
    int health, metrics;
    char rundir[300], cfg[300], log[300];
} mgr_proc;

/* Per-test setup: a fresh FAKE_DIR (locks, pid files, violations) under tmpdir. */
int fresh_fake_dir(void **st);
/* Per-test teardown: SIGKILL every manager the test started (children follow). */
int kill_started(void **st);
void write_file(const char *path, const char *text);

/* Starts the manager with stand-in children and the extra flags given (NULL-terminated;
 * later flags win). */
void start_mgr_v(mgr_proc *m, int workers, const char *const *extra);
/* Leader election off, fast heartbeats, one extra flag (or NULL). */
void start_mgr(mgr_proc *m, int workers, const char *extra);
/* Sends sig (0: none), waits up to ms for the exit: exit code, 128+signal, or -1 (then
 * SIGKILLed). */
int stop_mgr(mgr_proc *m, int sig, int ms);
/* Polls cond every 20 ms until it holds or ms pass; its last answer. */
bool wait_for(bool (*cond)(mgr_proc *, void *), mgr_proc *m, void *arg, int ms);
bool is_ready(mgr_proc *m, void *arg);     /* /readyz answers 200 */

/* Running children of manager mgr whose command line contains prog and what (NULL: any),
 * e.g. ("godis-worker", "--index 1 "), into out (cap); returns how many. */
int mgr_children(pid_t mgr, const char *prog, const char *what, pid_t *out, int cap);

/* Pid in FAKE_DIR/name (the stand-ins write fake-w<i>.pid, fake-i-<Kind>.pid); 0 if none. */
pid_t read_pid(const char *name);
bool pid_alive(pid_t p);
#endif
