/* supervisor.c — process table, fork/exec, reaping, restart with backoff, staged stop.
 *
 * Everything here runs on the manager's main thread, outside signal handlers: a handler
 * only sets a flag, and the main loop calls mgr_sup_reap() and mgr_sup_tick() (nginx's
 * ngx_reap_children / ngx_start_worker_processes in one loop). */
#include "supervisor.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gd_err.h"
#include "gd_log.h"

struct mgr_supervisor {
    mgr_sup_opts o;
    mgr_proc **procs;            /* pointers stay valid when the table grows */
    int n, cap;
    bool fatal;
    bool shutting_down;         /* never spawn again (mgr_sup_shutdown) */
    uint64_t restarts[3];
    mgr_sup_exit_fn on_exit;
    void *ud;
};

void mgr_sup_opts_default(mgr_sup_opts *o)
{
    o->backoff_initial_ms = 1000;
    o->backoff_max_ms = 30000;
    o->healthy_after_ms = 60000;
    o->term_after_ms = 2000;
    o->kill_after_ms = 2000;
}

const char *mgr_proc_state_name(mgr_proc_state st)
{
    static const char *n[] = {"idle", "running", "stopping", "backoff", "fatal"};
    return (unsigned)st < sizeof n / sizeof n[0] ? n[st] : "?";
}

const char *mgr_role_name(mgr_role r)
{
    return r == MGR_ROLE_WORKER ? "worker" : r == MGR_ROLE_WEBHOOK ? "webhook" : "informer";
}

mgr_supervisor *mgr_sup_new(const mgr_sup_opts *o, mgr_sup_exit_fn on_exit, void *ud)
{
    mgr_supervisor *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (o) s->o = *o; else mgr_sup_opts_default(&s->o);
    s->on_exit = on_exit;
    s->ud = ud;
    return s;
}

static void free_argv(char **argv)
{
    if (!argv) return;
    for (char **a = argv; *a; a++) free(*a);
    free(argv);
}

void mgr_sup_destroy(mgr_supervisor **sp)
{
    if (!sp || !*sp) return;
    mgr_supervisor *s = *sp;
    for (int i = 0; i < s->n; i++) {
        free_argv(s->procs[i]->argv);
        free(s->procs[i]);
    }
    free(s->procs);
    free(s);
    *sp = NULL;
}

static char **copy_argv(char *const argv[])
{
    int n = 0;
    while (argv[n]) n++;
    char **c = calloc((size_t)n + 1, sizeof *c);
    if (!c) return NULL;
    for (int i = 0; i < n; i++) {
        if (!(c[i] = strdup(argv[i]))) { free_argv(c); return NULL; }
    }
    return c;
}

mgr_proc *mgr_sup_add(mgr_supervisor *s, mgr_role role, int index, const char *name,
                    char *const argv[])
{
    if (!argv || !argv[0] || !name) return NULL;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        mgr_proc **np = realloc(s->procs, (size_t)cap * sizeof *np);
        if (!np) return NULL;
        s->procs = np;
        s->cap = cap;
    }
    mgr_proc *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (!(p->argv = copy_argv(argv))) { free(p); return NULL; }
    p->role = role;
    p->index = index;
    snprintf(p->name, sizeof p->name, "%s", name);
    gd_backoff_init(&p->backoff, s->o.backoff_initial_ms, s->o.backoff_max_ms, 2.0, 0.2, 0);
    s->procs[s->n++] = p;
    return p;
}

int mgr_sup_count(const mgr_supervisor *s) { return s->n; }
mgr_proc *mgr_sup_at(mgr_supervisor *s, int i) { return i >= 0 && i < s->n ? s->procs[i] : NULL; }

mgr_proc *mgr_sup_find(mgr_supervisor *s, mgr_role role, int index)
{
    for (int i = 0; i < s->n; i++)
        if (s->procs[i]->role == role && s->procs[i]->index == index) return s->procs[i];
    return NULL;
}

mgr_proc *mgr_sup_find_pid(mgr_supervisor *s, pid_t pid)
{
    for (int i = 0; i < s->n; i++)
        if (pid > 0 && s->procs[i]->pid == pid) return s->procs[i];
    return NULL;
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void child_exec(mgr_proc *p, pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    /* a manager killed with SIGKILL must not leave orphans writing */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(GD_EXIT_FAILURE);
    for (int fd = 3; fd < 1024; fd++) close(fd);   /* ZeroMQ/curl descriptors of the manager */
    execv(p->argv[0], p->argv);
    int e = errno;
    static const char msg[] = "godis-manager: exec failed: ";
    (void)!write(2, msg, sizeof msg - 1);
    (void)!write(2, p->argv[0], strlen(p->argv[0]));
    (void)!write(2, "\n", 1);
    /* a missing or non-executable program will not get better by restarting */
    _exit(e == ENOENT || e == EACCES || e == ENOEXEC ? GD_EXIT_FATAL_CONFIG : 127);
}

static void spawn(mgr_supervisor *s, mgr_proc *p)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        GD_ERROR("fork failed", "child", p->name, "error", strerror(errno));
        p->state = MGR_PROC_BACKOFF;
        p->next_start_ms = gd_mono_ms() + gd_backoff_next(&p->backoff);
        return;
    }
    if (pid == 0) child_exec(p, parent);
    p->pid = pid;
    p->state = MGR_PROC_RUNNING;
    p->last_start_ms = gd_mono_ms();
    p->stop_signals = 0;
    if (p->starts++ > 0) {
        p->restarts++;
        s->restarts[p->role]++;
    }
    char pids[24];
    snprintf(pids, sizeof pids, "%d", (int)pid);
    GD_INFO("started child", "child", p->name, "pid", pids, "program", p->argv[0]);
}

void mgr_sup_want(mgr_supervisor *s, mgr_proc *p)
{
    if (s->shutting_down) return;
    p->wanted = true;
    if (p->state == MGR_PROC_IDLE) p->next_start_ms = 0;
}

static void send_sig(mgr_proc *p, int sig)
{
    if (p->pid > 0) kill(p->pid, sig);
}

void mgr_sup_stop(mgr_supervisor *s, mgr_proc *p, bool soft)
{
    p->wanted = false;
    if (p->state == MGR_PROC_BACKOFF) p->state = MGR_PROC_IDLE;
    if (p->state == MGR_PROC_RUNNING) {
        p->state = MGR_PROC_STOPPING;
        p->stop_since_ms = gd_mono_ms();
        p->stop_signals = 0;
    }
    if (p->state == MGR_PROC_STOPPING && !soft && p->stop_signals == 0) {
        send_sig(p, SIGTERM);
        p->stop_signals = 1;
        /* TERM sent now: KILL comes kill_after_ms from now */
        p->stop_since_ms = gd_mono_ms() - s->o.term_after_ms;
    }
}

int64_t mgr_sup_tick(mgr_supervisor *s)
{
    int64_t now = gd_mono_ms(), next = 1000;
    for (int i = 0; i < s->n; i++) {
        mgr_proc *p = s->procs[i];
        int64_t due = -1;
        if (p->wanted && !s->shutting_down &&
            (p->state == MGR_PROC_IDLE || p->state == MGR_PROC_BACKOFF)) {
            if (now >= p->next_start_ms) spawn(s, p);
            else due = p->next_start_ms;
        } else if (p->state == MGR_PROC_STOPPING) {
            int64_t term_at = p->stop_since_ms + s->o.term_after_ms;
            int64_t kill_at = term_at + s->o.kill_after_ms;
            if (p->stop_signals == 0 && now >= term_at) {
                send_sig(p, SIGTERM);
                p->stop_signals = 1;
                GD_INFO("child did not stop in time: SIGTERM", "child", p->name);
            }
            if (p->stop_signals == 1 && now >= kill_at) {
                send_sig(p, SIGKILL);
                p->stop_signals = 2;
                GD_WARN("child did not stop after SIGTERM: SIGKILL", "child", p->name);
            }
            due = p->stop_signals == 0 ? term_at : (p->stop_signals == 1 ? kill_at : -1);
        }
        if (due >= 0 && due - now < next) next = due - now;
    }
    return next < 0 ? 0 : next;
}

static void describe_exit(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status)) snprintf(buf, cap, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(buf, cap, "signal %d", WTERMSIG(status));
    else snprintf(buf, cap, "status %d", status);
}

static void on_reaped(mgr_supervisor *s, mgr_proc *p, int status)
{
    int64_t now = gd_mono_ms();
    char how[32];
    describe_exit(status, how, sizeof how);
    p->pid = 0;
    p->last_status = status;
    bool fatal = WIFEXITED(status) && WEXITSTATUS(status) == GD_EXIT_FATAL_CONFIG;
    if (fatal) {
        p->state = MGR_PROC_FATAL;
        p->wanted = false;
        s->fatal = true;
        GD_ERROR("child exited with a fatal configuration error: not restarting",
                 "child", p->name, "status", how);
    } else if (p->wanted && !s->shutting_down) {
        if (now - p->last_start_ms >= s->o.healthy_after_ms) gd_backoff_reset(&p->backoff);
        int64_t d = gd_backoff_next(&p->backoff);
        p->state = MGR_PROC_BACKOFF;
        p->next_start_ms = now + d;
        char ds[24];
        snprintf(ds, sizeof ds, "%lld", (long long)d);
        GD_WARN("child exited: restarting after backoff", "child", p->name, "status", how,
                "backoff_ms", ds);
    } else {
        p->state = MGR_PROC_IDLE;
        p->wanted = false;
        GD_INFO("child stopped", "child", p->name, "status", how);
    }
    if (s->on_exit) s->on_exit(s->ud, p, status);
}

/* Only our own children, by pid: waitpid(-1) would also reap processes other threads
 * started and wait for themselves (an exec credential plugin run by the API client),
 * leaving them without an exit status. */
int mgr_sup_reap(mgr_supervisor *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        mgr_proc *p = s->procs[i];
        int status = 0;
        if (p->pid <= 0 || waitpid(p->pid, &status, WNOHANG) != p->pid) continue;
        on_reaped(s, p, status);
        n++;
    }
    return n;
}

bool mgr_sup_fatal(const mgr_supervisor *s) { return s->fatal; }

void mgr_sup_shutdown(mgr_supervisor *s)
{
    s->shutting_down = true;
    for (int i = 0; i < s->n; i++) {
        mgr_proc *p = s->procs[i];
        if (p->state == MGR_PROC_BACKOFF) p->state = MGR_PROC_IDLE;   /* its restart is off */
    }
}

bool mgr_sup_shutting_down(const mgr_supervisor *s) { return s->shutting_down; }

int mgr_sup_alive(const mgr_supervisor *s, mgr_role role)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (s->procs[i]->role == role && s->procs[i]->pid > 0) n++;
    return n;
}

void mgr_sup_signal_all(mgr_supervisor *s, int sig)
{
    for (int i = 0; i < s->n; i++) send_sig(s->procs[i], sig);
}

uint64_t mgr_sup_restarts(const mgr_supervisor *s, mgr_role role)
{
    return s->restarts[role == MGR_ROLE_WORKER || role == MGR_ROLE_WEBHOOK ? role : 0];
}
