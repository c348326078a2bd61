/* supervisor.h — the manager's process table, in the manner of nginx's master process.
 *
 * Every child (one informer per kind, W workers) has a slot: role, index, argv, pid,
 * state, restarts, backoff, last start. The main loop drives it:
 *   - signal handlers only set flags (the manager's main.c); SIGCHLD just wakes the loop;
 *   - gd_sup_reap() collects exits with waitpid(WNOHANG) and decides what happens next;
 *   - gd_sup_tick() (re)starts wanted children whose backoff has passed and escalates
 *     stops (TERM after term_after_ms, KILL after kill_after_ms more).
 * Exit code GD_EXIT_FATAL_CONFIG (2) means "fatal configuration, do not restart": the slot
 * goes FATAL and gd_sup_fatal() turns true, so the manager exits 2 as well. */
#ifndef GD_SUPERVISOR_H
#define GD_SUPERVISOR_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gd_time.h"

/* GD_ROLE_WEBHOOK: the eviction webhook (godis-webhook), one per manager when enabled. */
typedef enum { GD_ROLE_INFORMER = 0, GD_ROLE_WORKER = 1, GD_ROLE_WEBHOOK = 2 } gd_role;

typedef enum {
    GD_PROC_IDLE = 0,    /* not running, not wanted */
    GD_PROC_RUNNING,
    GD_PROC_STOPPING,    /* asked to stop; escalates to TERM then KILL */
    GD_PROC_BACKOFF,     /* exited while wanted; restarts at next_start_ms */
    GD_PROC_FATAL,       /* exited with code 2: never restarted */
} gd_proc_state;

typedef struct {
    gd_role role;
    int index;
    char name[64];              /* "informer/Pod", "worker/3" */
    char **argv;                /* owned, NULL-terminated; argv[0] is the program path */
    pid_t pid;                  /* 0 when not running */
    gd_proc_state state;
    bool wanted;
    int restarts;               /* starts after the first */
    int starts;
    gd_backoff backoff;
    int64_t next_start_ms;      /* mono, for BACKOFF */
    int64_t last_start_ms;      /* mono */
    int64_t stop_since_ms;      /* mono, for STOPPING */
    int stop_signals;           /* 0: none sent yet, 1: TERM sent, 2: KILL sent */
    int last_status;            /* raw waitpid status of the last exit */
} gd_proc;

typedef struct {
    int64_t backoff_initial_ms; /* 1000 */
    int64_t backoff_max_ms;     /* 30000 */
    int64_t healthy_after_ms;   /* 60000: a child that ran this long restarts at initial */
    int64_t term_after_ms;      /* 2000: after a soft stop request, send SIGTERM */
    int64_t kill_after_ms;      /* 2000: after SIGTERM, send SIGKILL */
} gd_sup_opts;
void gd_sup_opts_default(gd_sup_opts *o);

/* Called for every reaped child of the table (after its slot was updated). */
typedef void (*gd_sup_exit_fn)(void *ud, gd_proc *p, int status);

typedef struct gd_supervisor gd_supervisor;

gd_supervisor *gd_sup_new(const gd_sup_opts *o, gd_sup_exit_fn on_exit, void *ud);
/* Frees the table. Does not signal children: stop them first. */
void gd_sup_destroy(gd_supervisor **s);

/* Adds a slot (argv is copied). Returns it, or NULL. Not started until wanted. */
gd_proc *gd_sup_add(gd_supervisor *s, gd_role role, int index, const char *name,
                    char *const argv[]);
int      gd_sup_count(const gd_supervisor *s);
gd_proc *gd_sup_at(gd_supervisor *s, int i);
gd_proc *gd_sup_find(gd_supervisor *s, gd_role role, int index);
gd_proc *gd_sup_find_pid(gd_supervisor *s, pid_t pid);

/* Wanted children start on the next tick; a running one stays running. */
void gd_sup_want(gd_supervisor *s, gd_proc *p);
/* Unwanted: a soft stop (the caller already asked it, e.g. with a STOP message) waits
 * term_after_ms before SIGTERM; a hard stop sends SIGTERM now. KILL follows kill_after_ms
 * after TERM. A child not running just becomes IDLE. */
void gd_sup_stop(gd_supervisor *s, gd_proc *p, bool soft);
/* Starts due children, escalates stops. Returns the ms until the next timed action
 * (capped at 1000) so the main loop can poll that long. */
int64_t gd_sup_tick(gd_supervisor *s);
/* Reaps every exited child (waitpid WNOHANG). Returns how many. */
int  gd_sup_reap(gd_supervisor *s);
/* The manager is stopping: from now on nothing is started or restarted, whatever is
 * wanted, and a child that exits (on its own, or from the terminal's Ctrl-C, which reaches
 * every process of the foreground group) is only logged as stopped. Irreversible. */
void gd_sup_shutdown(gd_supervisor *s);
bool gd_sup_shutting_down(const gd_supervisor *s);
/* Some child exited with the fatal configuration code. */
bool gd_sup_fatal(const gd_supervisor *s);
/* Number of children of a role with a live process (RUNNING or STOPPING). */
int  gd_sup_alive(const gd_supervisor *s, gd_role role);
/* Signals every live child (e.g. SIGKILL at the very end). */
void gd_sup_signal_all(gd_supervisor *s, int sig);
/* Total restarts of a role (metrics). */
uint64_t gd_sup_restarts(const gd_supervisor *s, gd_role role);

const char *gd_proc_state_name(gd_proc_state st);
const char *gd_role_name(gd_role r);

#endif
