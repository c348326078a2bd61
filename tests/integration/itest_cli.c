/* itest_cli.c — the one command-line convention of the programs, run as a person runs them:
 *  - --help (and -h, the same text) in one layout, --version with version, git commit and
 *    build date (the same for all programs of one build), for godis-manager, godis-informer,
 *    godis-worker, godisctl, kubectl-godis and node-agent;
 *  - a bad flag, a bare number where a duration belongs, a non-number where a number
 *    belongs: one line naming the program and the flag, exit 2;
 *  - a port in use: one structured log line naming the flag, exit 2;
 *  - godis-worker with a missing or garbage kubeconfig (or none, for the production
 *    reconcilers): one line naming the file, exit 2;
 *  - Ctrl-C (SIGINT to the whole foreground process group, as a terminal sends it) stops the
 *    manager and its children with nothing restarted and no runtime file left behind;
 *  - informers blocked in a list (an "API server" that accepts and never answers) stop
 *    within the manager's shutdown grace: no SIGKILL, no files left.
 * The last two need the devcluster's KUBECONFIG only for the Ctrl-C run. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli_run.h"
#include "e2e_lib.h"
#include "harness_manager.h"

static const struct { const char *bin, *name, *usage; } PROGS[] = {
    {"bin/godis-manager", "godis-manager", "godis-manager [flags]"},
    {"bin/godis-informer", "godis-informer", "godis-informer --kind KIND [flags]"},
    {"bin/godis-worker", "godis-worker", "godis-worker [flags]"},
    {"bin/godisctl", "godisctl", "godisctl COMMAND [ARGS] [flags]"},
    {"bin/kubectl-godis", "kubectl godis", "kubectl godis COMMAND [ARGS] [flags]"},
    {"bin/node-agent", "node-agent", "node-agent [flags] [run]"},
};
#define NPROGS (sizeof PROGS / sizeof PROGS[0])

static void test_help_and_version(void **st)
{
    static cli_result help, h, ver;
    char first_ver[512] = "";
    for (size_t i = 0; i < NPROGS; i++) {
        cli_runl(&help, NULL, 10000, PROGS[i].bin, "--help", NULL);
        cli_runl(&h, NULL, 10000, PROGS[i].bin, "-h", NULL);
        cli_runl(&ver, NULL, 10000, PROGS[i].bin, "--version", NULL);
        if (help.status != 0 || h.status != 0 || ver.status != 0)
            fail_msg("%s: --help %d, -h %d, --version %d (want 0)", PROGS[i].bin, help.status,
                     h.status, ver.status);
        char head[200];
        snprintf(head, sizeof head, "Usage:\n  %s", PROGS[i].usage);
        if (strncmp(help.out, head, strlen(head)))
            fail_msg("%s --help does not start with \"%s\": %.200s", PROGS[i].bin, head, help.out);
        assert_non_null(strstr(help.out, "\n  -h, --help\n"));
        assert_non_null(strstr(help.out, "\n      --version\n"));
        assert_string_equal(help.err, "");
        assert_string_equal(help.out, h.out);          /* -h is --help everywhere */
        /* "<name> version=X git_commit=Y build_date=Z", one line, the same build for all */
        char want[64];
        snprintf(want, sizeof want, "%s version=", PROGS[i].name);
        if (strncmp(ver.out, want, strlen(want)) || cli_lines(ver.out) != 1 ||
            !strstr(ver.out, " git_commit=") || !strstr(ver.out, " build_date="))
            fail_msg("%s --version: \"%s\"", PROGS[i].bin, ver.out);
        const char *rest = ver.out + strlen(want);
        if (!first_ver[0]) snprintf(first_ver, sizeof first_ver, "%s", rest);
        else if (strcmp(first_ver, rest)) fail_msg("%s: %s differs from %s", PROGS[i].bin, rest, first_ver);
    }
}

/* One line on stderr, "<prog>: <what>… (see <prog> --help)", exit 2. */
static void expect_usage_error(const char *prog, const char *want, const char *const *argv)
{
    static cli_result r;
    cli_run(&r, argv, NULL, 15000);
    char tail[120];
    snprintf(tail, sizeof tail, "(see %s --help)\n", prog);
    size_t el = strlen(r.err), tl = strlen(tail);
    if (r.status != 2 || cli_lines(r.err) != 1 || strncmp(r.err, prog, strlen(prog)) ||
        !strstr(r.err, want) || el < tl || strcmp(r.err + el - tl, tail))
        fail_msg("%s %s: exit %d, stderr \"%s\" (want exit 2, one line with \"%s\")", argv[0],
                 argv[1] ? argv[1] : "", r.status, r.err, want);
}

static void test_bad_flags(void **st)
{
    for (size_t i = 0; i < NPROGS; i++) {
        const char *argv[] = {PROGS[i].bin, "--bogus", NULL};
        expect_usage_error(PROGS[i].name, "unknown flag --bogus", argv);
    }
    struct { const char *prog, *want, *argv[10]; } cases[] = {
        {"godis-manager", "--heartbeat: expected a duration like 15s, 500ms or 2m, got \"15\" (a number needs a unit)",
         {"bin/godis-manager", "--heartbeat", "15", NULL}},
        {"godis-manager", "--workers: expected an integer, got \"3abc\"", {"bin/godis-manager", "--workers=3abc", NULL}},
        {"godis-manager", "--workers: must be between 1 and 64, got 0", {"bin/godis-manager", "--workers", "0", NULL}},
        {"godis-manager", "--informer-kinds: Pod is listed twice (\"pods\")",
         {"bin/godis-manager", "--informer-kinds", "Pod,pods", NULL}},
        {"godis-manager", "--leader-elect: expected true or false, got \"maybe\"", {"bin/godis-manager", "--leader-elect=maybe", NULL}},
        {"godis-manager", "unexpected argument \"stray\"", {"bin/godis-manager", "--leader-elect", "false", "stray", NULL}},
        {"godis-informer", "--min-watch-timeout: expected a duration like 15s, 500ms or 2m, got \"300\" (a number needs a unit)",
         {"bin/godis-informer", "--kind", "Pod", "--min-watch-timeout", "300", NULL}},
        {"godis-informer", "one of --kind or --resource is required", {"bin/godis-informer", NULL}},
        {"godis-worker", "--stop-grace: expected a duration like 15s, 500ms or 2m, got \"4\" (a number needs a unit)",
         {"bin/godis-worker", "--runtime-dir", "/tmp", "--stop-grace", "4", NULL}},
        {"godis-worker", "--kube-api-qps: expected 1..100000, or -1 for no client-side limit, got \"0\"",
         {"bin/godis-worker", "--runtime-dir", "/tmp", "--kube-api-qps", "0", NULL}},
        {"node-agent", "--heartbeat: expected a duration like 15s, 500ms or 2m, got \"10\" (a number needs a unit)",
         {"bin/node-agent", "--heartbeat", "10", NULL}},
        {"godisctl", "--timeout: expected a duration like 15s, 500ms or 2m, got \"30\" (a number needs a unit)",
         {"bin/godisctl", "follow", "x", "3", "--timeout", "30", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_usage_error(cases[i].prog, cases[i].want, cases[i].argv);
}

/* A port in use: one structured line naming the flag and the reason, nothing unstructured
 * (libmicrohttpd's own complaint used to come out raw). `--leader-elect false`: the value
 * after a boolean flag is taken, not left as a stray argument. */
static void test_port_in_use(void **st)
{
    int fd, port = cli_busy_port(&fd);
    assert_true(port > 0);
    char addr[64], want[200];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    static cli_result r;
    const char *argv[] = {"bin/godis-manager", "--leader-elect", "false", "--metrics-bind-address",
                          addr, "--health-probe-bind-address", "0", "--runtime-dir", cli_tmp("rt-port"), NULL};
    cli_run(&r, argv, NULL, 15000);
    close(fd);
    snprintf(want, sizeof want, "msg=\"cannot listen for HTTP\" flag=--metrics-bind-address address=%s "
             "error=\"Address already in use\"", addr);
    if (r.status != 2 || cli_lines(r.err) != 1 || strncmp(r.err, "ts=", 3) ||
        !strstr(r.err, "role=manager") || !strstr(r.err, want))
        fail_msg("exit %d, stderr \"%s\"", r.status, r.err);
    struct stat sb;
    assert_int_equal(stat(cli_tmp("rt-port"), &sb), -1);     /* nothing left behind */
}

static void test_worker_kubeconfig_exit_2(void **st)
{
    static cli_result r;
    const char *missing[] = {"bin/godis-worker", "--runtime-dir", cli_tmp(""), "--kubeconfig",
                             "/nonexistent/kubeconfig", NULL};
    cli_run(&r, missing, NULL, 15000);
    if (r.status != 2 || cli_lines(r.err) != 1 ||
        !strstr(r.err, "godis-worker: /nonexistent/kubeconfig: cannot read kubeconfig: No such file or directory"))
        fail_msg("missing: exit %d, \"%s\"", r.status, r.err);
    assert_true(cli_put(cli_tmp("garbage"), "clusters: [unclosed\n", 0600));
    char env_kc[400];
    snprintf(env_kc, sizeof env_kc, "KUBECONFIG=%s", cli_tmp("garbage"));
    const char *env[] = {env_kc, NULL};
    const char *garbage[] = {"bin/godis-worker", "--runtime-dir", cli_tmp(""), NULL};
    cli_run(&r, garbage, env, 15000);
    if (r.status != 2 || cli_lines(r.err) != 1 || !strstr(r.err, cli_tmp("garbage")) ||
        !strstr(r.err, "YAML syntax error"))
        fail_msg("garbage: exit %d, \"%s\"", r.status, r.err);
    /* nothing at all: the production reconcilers cannot run without an API server */
    const char *none_env[] = {"KUBECONFIG=", "HOME=/nonexistent", "KUBERNETES_SERVICE_HOST=", NULL};
    cli_run(&r, garbage, none_env, 15000);
    if (r.status != 2 || !strstr(r.err, "godis-worker: no kubeconfig"))
        fail_msg("none: exit %d, \"%s\"", r.status, r.err);
}

/* ---- the manager stopping ---- */

/* The manager a test started: whatever fails, the teardown kills its process group, so
 * no operator is left running on the shared control plane. */
static pid_t started;

static int kill_started_group(void **st)
{
    (void)st;
    if (started > 0) {
        kill(-started, SIGKILL);
        waitpid(started, NULL, 0);
        started = 0;
    }
    return 0;
}

static pid_t spawn_group(const char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        setsid();                     /* its own group, as a shell job has */
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600), nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    started = pid;
    return pid;
}

static int wait_exit(pid_t pid, int ms, int64_t *took)
{
    long long t0 = now_ms();
    int st;
    while (now_ms() - t0 < ms) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            started = 0;
            *took = now_ms() - t0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(20000);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &st, 0);
    started = 0;
    return -1;
}

static void test_ctrl_c_never_respawns(void **st)
{
    if (!getenv("KUBECONFIG")) fail_msg("needs the devcluster (KUBECONFIG)");
    k8s_client *api = e2e_client();            /* the informers need the CRDs to sync */
    assert_non_null(api);
    assert_true(e2e_install_crds(api));
    k8s_client_destroy(&api);
    int fd, hp = cli_busy_port(&fd);   /* a free port: taken, then given to the manager */
    close(fd);
    char ha[64];
    snprintf(ha, sizeof ha, "127.0.0.1:%d", hp);
    const char *argv[] = {"bin/godis-manager", "--leader-elect=false", "--workers", "2",
                          "--health-probe-bind-address", ha, "--metrics-bind-address", ha,
                          "--runtime-dir", cli_tmp("rt-int"),
                          /* supervision is under test: reconcile nobody's clusters
                           * (the worker with the test reconciler sets) */
                          "--worker-bin", "bin/tests/godis-worker",
                          "--worker-arg", "--reconciler noop", NULL};
    pid_t pid = spawn_group(argv, cli_tmp("ctrl-c.log"));
    char body[512];
    long long t0 = now_ms();
    while (http_get(hp, "/readyz", body, sizeof body) != 200 && now_ms() - t0 < 90000) usleep(100000);
    if (http_get(hp, "/readyz", body, sizeof body) != 200)
        fail_msg("not ready in 90 s: %s", cli_slurp(cli_tmp("ctrl-c.log")));
    /* what runs, as --version says it, is also a metric */
    static char metrics[1 << 20];
    static cli_result ver;
    const char *vargv[] = {"bin/godis-manager", "--version", NULL};
    cli_run(&ver, vargv, NULL, 10000);
    char want[600], v[128], c[128], d[128];
    assert_int_equal(sscanf(ver.out, "godis-manager version=%127s git_commit=%127s build_date=%127s", v, c, d), 3);
    snprintf(want, sizeof want, "\ngodis_operator_build_info{version=\"%s\",git_commit=\"%s\",build_date=\"%s\"} 1\n",
             v, c, d);
    assert_int_equal(http_get(hp, "/metrics", metrics, sizeof metrics), 200);
    if (!strstr(metrics, want)) fail_msg("no %s in /metrics", want);
    kill(-pid, SIGINT);                /* the terminal's Ctrl-C: every process of the group */
    int64_t took = 0;
    int code = wait_exit(pid, 30000, &took);
    const char *log = cli_slurp(cli_tmp("ctrl-c.log"));
    if (code != 0) fail_msg("exit %d after Ctrl-C: %s", code, log);
    assert_int_equal(cli_count(log, "restarting after backoff"), 0);
    const char *stop = strstr(log, "msg=\"shutting down");
    assert_non_null(stop);
    assert_null(strstr(stop, "started child"));          /* nothing started once stopping */
    assert_int_equal(cli_count(log, "msg=\"started child\""), 11);   /* 9 informers + 2 workers */
    assert_int_equal(cli_count(log, "msg=\"child stopped\""), 11);
    struct stat sb;
    assert_int_equal(stat(cli_tmp("rt-int"), &sb), -1);   /* the runtime dir is gone */
}

/* Lists the API server never answers: the informers must still stop at once (the list is
 * cancelled), well inside --shutdown-grace, so nobody is SIGKILLed and no socket file is
 * left for a SIGKILLed informer. */
static void test_informer_in_list_stops_within_grace(void **st)
{
    cli_server *bh = cli_server_start(CLI_SERVER_SILENT);
    assert_non_null(bh);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", cli_server_port(bh));
    cli_kubeconfig(cli_tmp("blackhole.kubeconfig"), url);
    const char *argv[] = {"bin/godis-manager", "--leader-elect=false", "--workers", "1",
                          "--kubeconfig", cli_tmp("blackhole.kubeconfig"), "--informer-kinds",
                          "GodisCluster,Pod,Node", "--shutdown-grace", "2s",
                          "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
                          "--runtime-dir", cli_tmp("rt-bh"), NULL};
    pid_t pid = spawn_group(argv, cli_tmp("blackhole.log"));
    long long t0 = now_ms();
    while (cli_server_accepted(bh) < 3 && now_ms() - t0 < 30000) usleep(20000);
    if (cli_server_accepted(bh) < 3) fail_msg("the informers never listed: %s", cli_slurp(cli_tmp("blackhole.log")));
    kill(pid, SIGTERM);
    int64_t took = 0;
    int code = wait_exit(pid, 20000, &took);
    const char *log = cli_slurp(cli_tmp("blackhole.log"));
    cli_server_stop(&bh);
    /* within the grace: the manager sends TERM at once and KILL 1 s later (half of it),
     * and says so in its log; the reflectors were cancelled and joined, not abandoned */
    if (code != 0) fail_msg("exit %d after %lld ms: %s", code, (long long)took, log);
    assert_null(strstr(log, "SIGKILL"));
    assert_null(strstr(log, "did not stop in time"));
    assert_int_equal(cli_count(log, "reflector=joined"), 3);
    struct stat sb;
    assert_int_equal(stat(cli_tmp("rt-bh"), &sb), -1);
}

int main(void)
{
    if (!cli_tmp_init("itest-cli")) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_bad_flags),
        cmocka_unit_test(test_port_in_use),
        cmocka_unit_test(test_worker_kubeconfig_exit_2),
        cmocka_unit_test_teardown(test_ctrl_c_never_respawns, kill_started_group),
        cmocka_unit_test_teardown(test_informer_in_list_stops_within_grace, kill_started_group),
    };
    return cli_tmp_done(cmocka_run_group_tests(tests, NULL, NULL));
}
