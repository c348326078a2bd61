/* test_supervisor.c — the process table with small real children (/bin/sh, sleep):
 * restart with growing backoff, exit 2 = fatal and not restarted, TERM, TERM-then-KILL,
 * a soft stop that the child honours on its own. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "gd_log.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../../manager/supervisor.h"
#include "../support/test_wait.h"

static int exits_seen;
static mgr_proc *last_exited;
static void on_exit_cb(void *ud, mgr_proc *p, int status)
{
    (void)ud; (void)status;
    exits_seen++;
    last_exited = p;
}

static mgr_supervisor *fast_sup(void)
{
    mgr_sup_opts o;
    mgr_sup_opts_default(&o);
    o.backoff_initial_ms = 50;
    o.backoff_max_ms = 400;
    o.term_after_ms = 150;
    o.kill_after_ms = 250;
    exits_seen = 0;
    last_exited = NULL;
    mgr_supervisor *s = mgr_sup_new(&o, on_exit_cb, NULL);
    assert_non_null(s);
    return s;
}

/* Runs the main-loop steps until cond holds or ms passed (the deadline is only a bound). */
#define RUN_UNTIL(s, cond, ms) WAIT_UNTIL((mgr_sup_reap(s), mgr_sup_tick(s), (cond)), ms)

/* Runs the main-loop steps for ms milliseconds: only where that nothing happens meanwhile is
 * what the test checks. */
static void run_for(mgr_supervisor *s, int ms)
{
    int64_t end = gd_mono_ms() + ms;
    while (gd_mono_ms() < end) {
        mgr_sup_reap(s);
        mgr_sup_tick(s);
        usleep(2000);
    }
    mgr_sup_reap(s);
}

static bool run_until_idle(mgr_supervisor *s, mgr_proc *p, int ms)
{
    RUN_UNTIL(s, p->pid == 0 && p->state != MGR_PROC_STOPPING, ms);
    return p->pid == 0 && p->state != MGR_PROC_STOPPING;
}

static int setup(void **st) { (void)st; gd_log_init("test", GD_LOG_ERROR + 1, 0, 2); return 0; }

static void test_restart_with_backoff(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *argv[] = {"/bin/sh", "-c", "exit 1", NULL};
    mgr_proc *p = mgr_sup_add(s, MGR_ROLE_WORKER, 0, "worker/0", argv);
    assert_non_null(p);
    assert_int_equal(p->state, MGR_PROC_IDLE);
    mgr_sup_want(s, p);
    int64_t starts[16];
    int nstarts = 0, last = 0;
    int64_t end = gd_mono_ms() + 900;
    while (gd_mono_ms() < end && nstarts < 16) {
        mgr_sup_reap(s);
        mgr_sup_tick(s);
        if (p->starts != last) { starts[nstarts++] = p->last_start_ms; last = p->starts; }
        usleep(1000);
    }
    /* 50, 100, 200, 400 ms (±20 %): 4 or 5 starts in 900 ms, gaps growing */
    assert_true(nstarts >= 3);
    assert_true(nstarts <= 6);
    /* each gap at least the nominal backoff minus the 20 % jitter: 40, 80, 160, 320 ms */
    for (int i = 1; i < nstarts; i++)
        assert_true(starts[i] - starts[i - 1] >= (40 << (i - 1 < 3 ? i - 1 : 3)));
    assert_int_equal(p->restarts, nstarts - 1);
    assert_int_equal(mgr_sup_restarts(s, MGR_ROLE_WORKER), (uint64_t)(nstarts - 1));
    assert_int_equal(mgr_sup_restarts(s, MGR_ROLE_INFORMER), 0);
    assert_true(exits_seen >= nstarts - 1);
    assert_ptr_equal(last_exited, p);
    assert_false(mgr_sup_fatal(s));
    mgr_sup_stop(s, p, false);
    assert_true(run_until_idle(s, p, 1000));
    assert_int_equal(p->state, MGR_PROC_IDLE);
    mgr_sup_destroy(&s);
    assert_null(s);
}

static void test_exit_2_is_fatal(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *argv[] = {"/bin/sh", "-c", "exit 2", NULL};
    mgr_proc *p = mgr_sup_add(s, MGR_ROLE_INFORMER, 3, "informer/Pod", argv);
    mgr_sup_want(s, p);
    RUN_UNTIL(s, p->state == MGR_PROC_FATAL, 5000);
    assert_int_equal(p->state, MGR_PROC_FATAL);
    run_for(s, 120);                                  /* quiet: more than the 50 ms backoff */
    assert_int_equal(p->state, MGR_PROC_FATAL);
    assert_int_equal(p->starts, 1);                   /* never restarted */
    assert_true(mgr_sup_fatal(s));
    assert_true(WIFEXITED(p->last_status) && WEXITSTATUS(p->last_status) == 2);
    mgr_sup_destroy(&s);
}

static void test_missing_program_is_fatal(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *argv[] = {"/nonexistent/godis-informer", "--kind", "Pod", NULL};
    mgr_proc *p = mgr_sup_add(s, MGR_ROLE_INFORMER, 0, "informer/Pod", argv);
    mgr_sup_want(s, p);
    RUN_UNTIL(s, p->state == MGR_PROC_FATAL, 5000);
    assert_int_equal(p->state, MGR_PROC_FATAL);
    assert_true(mgr_sup_fatal(s));
    mgr_sup_destroy(&s);
}

static void test_hard_stop_terms(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *argv[] = {"/bin/sleep", "30", NULL};
    mgr_proc *p = mgr_sup_add(s, MGR_ROLE_WORKER, 1, "worker/1", argv);
    mgr_sup_want(s, p);
    mgr_sup_tick(s);
    assert_int_equal(p->state, MGR_PROC_RUNNING);
    assert_true(p->pid > 0);
    assert_int_equal(mgr_sup_alive(s, MGR_ROLE_WORKER), 1);
    mgr_sup_stop(s, p, false);
    assert_true(run_until_idle(s, p, 1000));
    assert_true(WIFSIGNALED(p->last_status) && WTERMSIG(p->last_status) == SIGTERM);
    assert_int_equal(p->state, MGR_PROC_IDLE);
    run_for(s, 120);                                  /* quiet: more than the 50 ms backoff */
    assert_int_equal(p->starts, 1);                   /* unwanted: not restarted */
    assert_int_equal(mgr_sup_alive(s, MGR_ROLE_WORKER), 0);
    mgr_sup_destroy(&s);
}

/* Waits (ms at most) until process pid runs the program comm (it has exec'd). */
static bool exec_done(pid_t pid, const char *comm, int ms)
{
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    for (int i = 0; i < ms; i++) {
        FILE *f = fopen(path, "r");
        bool is = f && fgets(buf, sizeof buf, f) && strncmp(buf, comm, strlen(comm)) == 0;
        if (f)
            fclose(f);
        if (is)
            return true;
        usleep(1000);
    }
    return false;
}

static void test_term_then_kill(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    /* ignores TERM (an ignored disposition survives exec) */
    char *argv[] = {"/bin/sh", "-c", "trap '' TERM; exec sleep 30", NULL};
    mgr_proc *p = mgr_sup_add(s, MGR_ROLE_WORKER, 0, "worker/0", argv);
    mgr_sup_want(s, p);
    mgr_sup_tick(s);
    assert_true(exec_done(p->pid, "sleep", 2000));    /* the trap is set before the exec */
    int64_t t0 = gd_mono_ms();
    mgr_sup_stop(s, p, true);                          /* soft: the caller sent STOP */
    RUN_UNTIL(s, p->stop_signals > 0, 2000);          /* the first signal, observed */
    assert_true(p->stop_signals > 0);
    assert_true(gd_mono_ms() - t0 >= 150);            /* nothing before term_after */
    assert_true(run_until_idle(s, p, 2000));
    int64_t took = gd_mono_ms() - t0;
    assert_int_equal(p->stop_signals, 2);
    assert_true(WIFSIGNALED(p->last_status) && WTERMSIG(p->last_status) == SIGKILL);
    assert_true(took >= 150 + 250);
    assert_true(took < 1500);
    mgr_sup_destroy(&s);
}

static void test_soft_stop_honoured(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *argv[] = {"/bin/true", NULL};          /* exits on its own, well before TERM */
    mgr_proc *p = mgr_sup_add(s, MGR_ROLE_WORKER, 0, "worker/0", argv);
    mgr_sup_want(s, p);
    mgr_sup_tick(s);
    mgr_sup_stop(s, p, true);
    assert_int_equal(p->state, MGR_PROC_STOPPING);
    assert_true(run_until_idle(s, p, 1000));
    assert_int_equal(p->stop_signals, 0);             /* exited on its own */
    assert_true(WIFEXITED(p->last_status) && WEXITSTATUS(p->last_status) == 0);
    assert_int_equal(p->state, MGR_PROC_IDLE);
    /* wanted again: starts at once */
    mgr_sup_want(s, p);
    mgr_sup_tick(s);
    assert_int_equal(p->state, MGR_PROC_RUNNING);
    assert_int_equal(p->starts, 2);
    mgr_sup_stop(s, p, false);
    assert_true(run_until_idle(s, p, 1000));
    mgr_sup_destroy(&s);
}

/* Ctrl-C reaches every process of the terminal's group: children exit on their own while
 * the manager is stopping. A stopping supervisor restarts none of them, not even one that
 * is still "wanted" or already waiting in backoff. */
static void test_shutdown_never_respawns(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *quick[] = {"/bin/sh", "-c", "exit 1", NULL};
    char *sleeper[] = {"/bin/sh", "-c", "sleep 0.2", NULL};
    mgr_proc *a = mgr_sup_add(s, MGR_ROLE_INFORMER, 0, "informer/Pod", quick);
    mgr_proc *b = mgr_sup_add(s, MGR_ROLE_INFORMER, 1, "informer/Node", sleeper);
    mgr_sup_want(s, a);
    mgr_sup_want(s, b);
    /* a exits and waits in backoff; b is running */
    RUN_UNTIL(s, a->state == MGR_PROC_BACKOFF && b->pid > 0, 2000);
    assert_int_equal(a->state, MGR_PROC_BACKOFF);
    assert_true(b->pid > 0);
    int starts_a = a->starts, starts_b = b->starts;
    mgr_sup_shutdown(s);
    assert_true(mgr_sup_shutting_down(s));
    mgr_sup_want(s, a);                         /* a late want changes nothing */
    /* b's exit, and a's backoff over: that a is not restarted then is what is tested */
    int64_t a_due = a->next_start_ms;
    RUN_UNTIL(s, b->state == MGR_PROC_IDLE && gd_mono_ms() > a_due + 100, 5000);
    assert_int_equal(a->starts, starts_a);
    assert_int_equal(b->starts, starts_b);
    assert_int_equal(a->state, MGR_PROC_IDLE);
    assert_int_equal(b->state, MGR_PROC_IDLE);
    assert_int_equal(b->pid, 0);
    assert_int_equal(mgr_sup_alive(s, MGR_ROLE_INFORMER), 0);
    assert_int_equal(mgr_sup_restarts(s, MGR_ROLE_INFORMER), (uint64_t)(starts_a - 1 + starts_b - 1));
    mgr_sup_destroy(&s);
}

static void test_table_lookup_and_bad_args(void **st)
{
    (void)st;
    mgr_supervisor *s = fast_sup();
    char *argv[] = {"/bin/true", NULL};
    char *empty[] = {NULL};
    assert_null(mgr_sup_add(s, MGR_ROLE_WORKER, 0, "w", empty));
    assert_null(mgr_sup_add(s, MGR_ROLE_WORKER, 0, NULL, argv));
    for (int i = 0; i < 40; i++) {                    /* grows past the initial capacity */
        char name[32];
        snprintf(name, sizeof name, "worker/%d", i);
        assert_non_null(mgr_sup_add(s, MGR_ROLE_WORKER, i, name, argv));
    }
    assert_int_equal(mgr_sup_count(s), 40);
    assert_string_equal(mgr_sup_find(s, MGR_ROLE_WORKER, 33)->name, "worker/33");
    assert_null(mgr_sup_find(s, MGR_ROLE_INFORMER, 0));
    assert_null(mgr_sup_find_pid(s, 0));
    assert_null(mgr_sup_at(s, 40));
    assert_string_equal(mgr_proc_state_name(MGR_PROC_FATAL), "fatal");
    mgr_sup_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_restart_with_backoff, setup),
        cmocka_unit_test_setup(test_exit_2_is_fatal, setup),
        cmocka_unit_test_setup(test_missing_program_is_fatal, setup),
        cmocka_unit_test_setup(test_hard_stop_terms, setup),
        cmocka_unit_test_setup(test_term_then_kill, setup),
        cmocka_unit_test_setup(test_soft_stop_honoured, setup),
        cmocka_unit_test_setup(test_shutdown_never_respawns, setup),
        cmocka_unit_test_setup(test_table_lookup_and_bad_args, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
