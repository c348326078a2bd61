/* supervisor.h — the manager's process table, in the manner of nginx's master process.
 *
 * Every child (one informer per kind, W workers) has a slot: role, index, argv, pid,
 * state, restarts, backoff, last start. The main loop drives it:
 *   - signal handlers only set flags (the manager's main.c); SIGCHLD just wakes the loop;
 *   - mgr_sup_reap() collects exits with waitpid(WNOHANG) and decides what happens next;
 *   - mgr_sup_tick() (re)starts wanted children whose backoff has passed and escalates
 *     stops (TERM after term_after_ms, KILL after kill_after_ms more).
 * Exit code GD_EXIT_FATAL_CONFIG (2) means "fatal configuration, do not restart": the slot
 * goes FATAL and mgr_sup_fatal() turns true, so the manager exits 2 as well. */
#ifndef MGR_SUPERVISOR_H
#define MGR_SUPERVISOR_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gd_time.h"

/* MGR_ROLE_WEBHOOK: the eviction webhook (godis-webhook), one per manager when enabled. */
typedef enum { MGR_ROLE_INFORMER = 0, MGR_ROLE_WORKER = 1, MGR_ROLE_WEBHOOK = 2 } mgr_role;

typedef enum {
    MGR_PROC_IDLE = 0,    /* not running, not wanted */
    MGR_PROC_RUNNING,
    MGR_PROC_STOPPING,    /* asked to stop; escalates to TERM then KILL */
    MGR_PROC_BACKOFF,     /* exited while wanted; restarts at next_start_ms */
    MGR_PROC_FATAL,       /* exited with code 2: never restarted */
} mgr_proc_state;

typedef struct {
    mgr_role role;
    int index;
    char name[64];              /* "informer/Pod", "worker/3" */
    char **argv;                /* owned, NULL-terminated; argv[0] is the program path */
    pid_t pid;                  /* 0 when not running */
    mgr_proc_state state;
    bool wanted;
    int restarts;               /* starts after the first */
    int starts;
    gd_backoff backoff;
    int64_t next_start_ms;      /* mono, for BACKOFF */
    int64_t last_start_ms;      /* mono */
    int64_t stop_since_ms;      /* mono, for STOPPING */
    int stop_signals;           /* 0: none sent yet, 1: TERM sent, 2: KILL sent */
    int last_status;            /* raw waitpid status of the last exit */
} mgr_proc;

typedef struct {
    int64_t backoff_initial_ms; /* 1000 */
    int64_t backoff_max_ms;     /* 30000 */
    int64_t healthy_after_ms;   /* 60000: a child that ran this long restarts at initial */
    int64_t term_after_ms;      /* 2000: after a soft stop request, send SIGTERM */
    int64_t kill_after_ms;      /* 2000: after SIGTERM, send SIGKILL */
} mgr_sup_opts;
void mgr_sup_opts_default(mgr_sup_opts *o);

/* Called for every reaped child of the table (after its slot was updated). */
typedef void (*mgr_sup_exit_fn)(void *ud, mgr_proc *p, int status);

typedef struct mgr_supervisor mgr_supervisor;

mgr_supervisor *mgr_sup_new(const mgr_sup_opts *o, mgr_sup_exit_fn on_exit, void *ud);
/* Frees the table. Does not signal children: stop them first. */
void mgr_sup_destroy(mgr_supervisor **s);

/* Adds a slot (argv is copied). Returns it, or NULL. Not started until wanted. */
mgr_proc *mgr_sup_add(mgr_supervisor *s, mgr_role role, int index, const char *name,
                    char *const argv[]);
int      mgr_sup_count(const mgr_supervisor *s);
mgr_proc *mgr_sup_at(mgr_supervisor *s, int i);
mgr_proc *mgr_sup_find(mgr_supervisor *s, mgr_role role, int index);
mgr_proc *mgr_sup_find_pid(mgr_supervisor *s, pid_t pid);

/* Wanted children start on the next tick; a running one stays running. */
void mgr_sup_want(mgr_supervisor *s, mgr_proc *p);
/* Unwanted: a soft stop (the caller already asked it, e.g. with a STOP message) waits
 * term_after_ms before SIGTERM; a hard stop sends SIGTERM now. KILL follows kill_after_ms
 * after TERM. A child not running just becomes IDLE. */
void mgr_sup_stop(mgr_supervisor *s, mgr_proc *p, bool soft);
/* Starts due children, escalates stops. Returns the ms until the next timed action
 * (capped at 1000) so the main loop can poll that long. */
int64_t mgr_sup_tick(mgr_supervisor *s);
/* Reaps every exited child (waitpid WNOHANG). Returns how many. */
int  mgr_sup_reap(mgr_supervisor *s);
/* The manager is stopping: from now on nothing is started or restarted, whatever is
 * wanted, and a child that exits (on its own, or from the terminal's Ctrl-C, which reaches
 * every process of the foreground group) is only logged as stopped. Irreversible. */
void mgr_sup_shutdown(mgr_supervisor *s);
bool mgr_sup_shutting_down(const mgr_supervisor *s);
/* Some child exited with the fatal configuration code. */
bool mgr_sup_fatal(const mgr_supervisor *s);
/* Number of children of a role with a live process (RUNNING or STOPPING). */
int  mgr_sup_alive(const mgr_supervisor *s, mgr_role role);
/* Signals every live child (e.g. SIGKILL at the very end). */
void mgr_sup_signal_all(mgr_supervisor *s, int sig);
/* Total restarts of a role (metrics). */
uint64_t mgr_sup_restarts(const mgr_supervisor *s, mgr_role role);

const char *mgr_proc_state_name(mgr_proc_state st);
const char *mgr_role_name(mgr_role r);

#endif
