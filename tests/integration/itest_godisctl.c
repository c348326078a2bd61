/* itest_godisctl.c — bin/godisctl (and bin/kubectl-godis) as a person uses it, on the local
 * control plane, against a dead API server and against a server that answers HTML:
 *  - the command and every number are checked before the kubeconfig is read, numbers against
 *    what the CRD allows (read from deploy/base/crds/godisclusters.yaml), so a typo never reaches
 *    a cluster: `scale x abc` leaves the object untouched;
 *  - apply/delete -f: files, directories, -R, empty and missing files, an unknown kind in one
 *    file means nothing of any file is applied;
 *  - scale, status, events, follow, and the API's refusals (404, 403) printed with status and
 *    message, exit 1; the kubectl plugin form;
 *  - a dead server and an HTML answer: every command says so at once, exit 1 (follow does not
 *    wait for its timeout). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli_run.h"
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "gd_json.h"

static char ns[64];
static k8s_client *api;

static void put(const char *name, const char *text) { assert_true(cli_put(cli_tmp(name), text, 0600)); }

/* godisctl ARGS… (CTL_ENV: with extra env, a NULL-terminated "K=V" list) */
static cli_result R;
#define CTL(...) cli_runl(&R, NULL, 60000, "bin/godisctl", __VA_ARGS__, NULL)
#define CTL_ENV(env, ...) cli_runl(&R, env, 60000, "bin/godisctl", __VA_ARGS__, NULL)

static void expect(int status, const char *in_err, const char *in_out)
{
    if (R.status != status || (in_err && !strstr(R.err, in_err)) || (in_out && !strstr(R.out, in_out)))
        fail_msg("exit %d (want %d)\nstderr: %s\nstdout: %s\nwant stderr: %s\nwant stdout: %s", R.status,
                 status, R.err, R.out, in_err ? in_err : "-", in_out ? in_out : "-");
}

static int setup(void **st)
{
    if (!(api = e2e_client()) || !e2e_install_crds(api) ||
        !e2e_ns_create(api, "godisctl", ns, sizeof ns))
        return -1;
    return 0;
}

static int teardown(void **st)
{
    e2e_ns_delete(api, ns);
    k8s_client_destroy(&api);
    return 0;
}

/* The CRD's bounds for spec.replicas, as the file says them. */
static void crd_replicas_bounds(int *min, int *max)
{
    FILE *f = fopen("deploy/base/crds/godisclusters.yaml", "r");
    assert_non_null(f);
    char line[512];
    bool in_replicas = false;
    *min = *max = -1;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "replicas:") && strstr(line, "                replicas:") == line) in_replicas = true;
        else if (in_replicas && sscanf(line, " minimum: %d", min) == 1) continue;
        else if (in_replicas && sscanf(line, " maximum: %d", max) == 1) break;
    }
    fclose(f);
    assert_true(*min >= 0 && *max > *min);
}

static void test_checked_before_kubeconfig(void **st)
{
    const char *no_kc[] = {"KUBECONFIG=/nonexistent/kubeconfig", NULL};
    CTL_ENV(no_kc, "bogus");
    expect(2, "godisctl: unknown command \"bogus\" (see godisctl --help)", NULL);
    int min, max;
    crd_replicas_bounds(&min, &max);
    char range[64];
    snprintf(range, sizeof range, "between %d and %d (what the GodisCluster CRD allows)", min, max);
    char below[16], above[16];
    snprintf(below, sizeof below, "%d", min - 1);
    snprintf(above, sizeof above, "%d", max + 1);
    const char *bad[] = {"abc", "3abc", "99999999999999999999", below, above, " 3", "3.0", "1e1", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CTL_ENV(no_kc, "scale", "x", bad[i]);
        expect(2, range, NULL);
        CTL_ENV(no_kc, "follow", "x", bad[i]);
        expect(2, range, NULL);
    }
    CTL_ENV(no_kc, "scale", "x", "--", "-1");
    expect(2, range, NULL);
    CTL_ENV(no_kc, "scale", "x", "-1");
    expect(2, "unknown shorthand flag -1 in \"-1\" (a number? put -- before it)", NULL);
    CTL_ENV(no_kc, "follow", "x", "3", "soon");
    expect(2, "follow: SECONDS: expected an integer between 1 and 86400, got \"soon\"", NULL);
    CTL_ENV(no_kc, "get", "Widget");
    expect(2, "get: unknown kind \"Widget\"", NULL);
    CTL_ENV(no_kc, "apply");
    expect(2, "apply needs -f FILE", NULL);
    CTL_ENV(no_kc, "scale", "x");
    expect(2, "scale takes NAME REPLICAS", NULL);
    CTL_ENV(no_kc, "status", "-f", "x.yaml");
    expect(2, "-f and -R are for apply and delete, not status", NULL);
    /* only once the command line is right does the kubeconfig matter */
    CTL_ENV(no_kc, "scale", "x", "3");
    expect(2, "godisctl: KUBECONFIG=/nonexistent/kubeconfig: none of these files exist", NULL);
}

static bool exists(const k8s_resource *r, const char *name)
{
    cJSON *o = NULL;
    gd_err e = k8s_get(api, r, ns, name, &o, NULL);
    cJSON_Delete(o);
    return e == GD_OK;
}

static void test_manifests(void **st)
{
    put("empty.yaml", "");
    put("comments.yaml", "# nothing here\n---\n");
    put("none/README.txt", "not a manifest\n");
    put("d/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gc-a}\n---\n"
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gc-b}\n");
    put("d/b.json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gc-c\"}}");
    put("d/notes.txt", "ignored: not .yaml/.yml/.json\n");
    put("d/sub/c.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gc-d}\n");
    put("w/1.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gc-never}\n");
    put("w/2.yaml", "apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n");
    CTL("-n", ns, "apply", "-f", cli_tmp("empty.yaml"));
    expect(1, "empty.yaml: no objects in the file", NULL);
    CTL("-n", ns, "apply", "-f", cli_tmp("comments.yaml"));
    expect(1, "comments.yaml: no objects in the file", NULL);
    CTL("-n", ns, "apply", "-f", cli_tmp("missing.yaml"));
    expect(1, "missing.yaml: cannot read: No such file or directory", NULL);
    CTL("-n", ns, "apply", "-f", cli_tmp("none"));
    expect(1, "none: no .yaml, .yml or .json files in the directory", NULL);
    const char *no_kc[] = {"KUBECONFIG=/nonexistent", NULL};
    CTL_ENV(no_kc, "-n", ns, "apply", "-f", "-");
    expect(1, "-: no objects in the file", NULL);        /* stdin is /dev/null */
    /* an unknown kind anywhere: nothing of any file is applied */
    CTL("-n", ns, "apply", "-f", cli_tmp("w"));
    expect(1, "2.yaml: document 1 is an object of a kind godisctl does not know (kind \"Widget\")", NULL);
    assert_false(exists(&K8S_RES_CONFIGMAPS, "gc-never"));
    CTL("-n", ns, "apply", "-f", cli_tmp("d"));
    expect(0, NULL, "configmaps/gc-a created\nconfigmaps/gc-b created\nconfigmaps/gc-c created\n");
    assert_false(exists(&K8S_RES_CONFIGMAPS, "gc-d"));   /* below: only with -R */
    CTL("-n", ns, "apply", "-R", "-f", cli_tmp("d"));
    expect(0, NULL, "configmaps/gc-a configured\nconfigmaps/gc-b configured\nconfigmaps/gc-c configured\n"
                    "configmaps/gc-d created\n");
    CTL("-n", ns, "delete", "-R", "-f", cli_tmp("d"));
    expect(0, NULL, "configmaps/gc-d deleted\n");
    assert_false(exists(&K8S_RES_CONFIGMAPS, "gc-a"));
}

static void test_cluster_commands(void **st)
{
    put("gc.yaml", "apiVersion: kumkeehyun.github.com/v1\nkind: GodisCluster\nmetadata: {name: db}\nspec: {replicas: 3}\n");
    CTL("-n", ns, "apply", "-f", cli_tmp("gc.yaml"));
    expect(0, NULL, "godisclusters/db created");
    cJSON *before = e2e_cluster_get(api, ns, "db");
    char rv[64];
    snprintf(rv, sizeof rv, "%s", gd_meta_rv(before));
    cJSON_Delete(before);
    CTL("-n", ns, "scale", "db", "abc");                  /* refused here: nothing sent */
    expect(2, "REPLICAS must be a whole number between", NULL);
    cJSON *after = e2e_cluster_get(api, ns, "db");
    assert_string_equal(gd_meta_rv(after), rv);
    cJSON_Delete(after);
    CTL("scale", "db", "4", "-n", ns);                    /* flags after the command too */
    expect(0, NULL, "godiscluster/db scaled to 4\n");
    after = e2e_cluster_get(api, ns, "db");
    assert_int_equal(gd_json_int_or(after, "spec.replicas", 0), 4);
    cJSON_Delete(after);
    CTL("-n", ns, "scale", "nope", "3");
    expect(1, "godisctl: scale ", "");
    expect(1, "/nope: 404 NotFound: godisclusters.kumkeehyun.github.com \"nope\" not found", NULL);
    CTL("-n", ns, "status", "db");
    char head[128];
    snprintf(head, sizeof head, "GodisCluster %s/db\n", ns);
    expect(0, NULL, head);
    expect(0, NULL, "  Replicas:   4 wanted, 0 members, 0 Ready; next id 0\n");
    expect(0, NULL, "  Members:\n    (none yet)\n");
    CTL("-n", ns, "status");
    expect(0, NULL, head);
    CTL("-n", ns, "status", "nope");
    expect(1, "404 NotFound", NULL);
    CTL("-n", ns, "events", "db");
    expect(0, NULL, "No events about db in ");
    CTL("-n", ns, "follow", "nope", "3", "--timeout", "1m");
    expect(1, "404 NotFound: godisclusters.kumkeehyun.github.com \"nope\" not found", NULL);
    assert_true(R.ms < 10000);                            /* said at once, not after 1 m */
    CTL("-n", ns, "follow", "db", "3", "--timeout", "2s");      /* no operator runs here */
    expect(1, "/db: did not reach 3 Ready members within 2s", "phase=-");
    /* the API's refusal, with its status and message: alice may not patch GodisClusters */
    const char *alice = getenv("DEVCLUSTER_ALICE_KUBECONFIG");
    assert_non_null(alice);
    CTL("--kubeconfig", alice, "-n", ns, "scale", "db", "3");
    expect(1, "403 Forbidden: godisclusters.kumkeehyun.github.com \"db\" is forbidden: User \"alice\"", NULL);
    assert_int_equal(cli_lines(R.err), 1);
    /* the kubectl plugin: same program, kubectl's name, four commands */
    /* kubectl runs a plugin by the path it found on $PATH (absolute, the link not resolved) */
    char plugin[4096];
    assert_non_null(getcwd(plugin, sizeof plugin - 32));
    strcat(plugin, "/bin/kubectl-godis");
    const char *pa[] = {plugin, "-n", ns, "status", "db", NULL};
    cli_run(&R, pa, NULL, 30000);
    expect(0, NULL, head);
    const char *pc[] = {plugin, "-n", ns, "scale", "db", "0", NULL};
    cli_run(&R, pc, NULL, 30000);
    expect(2, "kubectl godis: scale: REPLICAS must be between ", NULL);
    const char *pb[] = {"bin/kubectl-godis", "apply", "-f", cli_tmp("gc.yaml"), NULL};
    cli_run(&R, pb, NULL, 30000);
    expect(2, "kubectl godis: \"apply\" is godisctl's; kubectl godis has status, scale, events and follow", NULL);
    CTL("-n", ns, "delete", "-f", cli_tmp("gc.yaml"));
    expect(0, NULL, "godisclusters/db deleted");
}

/* Every command against something that is not an API server says so, at once. */
static void against(const char *server, const char *want)
{
    cli_kubeconfig(cli_tmp("bad.kubeconfig"), server);
    char kc[400];
    snprintf(kc, sizeof kc, "KUBECONFIG=%s", cli_tmp("bad.kubeconfig"));
    const char *env[] = {kc, NULL};
    put("one.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n");
    const char *cmds[][6] = {
        {"events"}, {"events", "x"}, {"status"}, {"status", "x"}, {"clusters"}, {"scale", "x", "3"},
        {"get", "pods"}, {"get", "pod", "x"}, {"follow", "x", "3", "60"},
        {"apply", "-f", cli_tmp("one.yaml")}, {"delete", "-f", cli_tmp("one.yaml")},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *argv[10] = {"bin/godisctl"};
        int n = 1;
        for (int j = 0; j < 6 && cmds[i][j]; j++) argv[n++] = cmds[i][j];
        argv[n] = NULL;
        cli_run(&R, argv, env, 30000);
        if (R.status != 1 || cli_lines(R.err) != 1 || !strstr(R.err, want) || R.ms > 15000 ||
            strstr(R.out, "deleted") || strstr(R.out, "created") || strstr(R.out, "scaled"))
            fail_msg("%s %s: exit %d after %lld ms\nstderr: %s\nstdout: %s\nwant: %s", cmds[i][0],
                     cmds[i][1] ? cmds[i][1] : "", R.status, (long long)R.ms, R.err, R.out, want);
    }
}

static void test_dead_server(void **st)
{
    int fd, port = cli_busy_port(&fd);
    close(fd);                                /* nothing listens there now */
    char url[64], want[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d", port);
    snprintf(want, sizeof want, "cannot reach the API server at %s: ", url);
    against(url, want);
}

/* An HTML page, as a login page (200) or a proxy's error (502): said as not an API server. */
static void test_html_server(void **st)
{
    /* a 200 says what it asked and that the body was no JSON; an error answer shows the page */
    const struct { int mode; long code; const char *then; } pages[] = {
        {CLI_SERVER_HTML, 200, ""}, {CLI_SERVER_HTML_ERROR, 502, "<!DOCTYPE html><html><head><title>Sign in"}};
    for (size_t i = 0; i < 2; i++) {
        cli_server *h = cli_server_start(pages[i].mode);
        assert_non_null(h);
        char url[64], want[200];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", cli_server_port(h));
        snprintf(want, sizeof want, "%s answered HTTP %ld but not with Kubernetes JSON (is it an API server? "
                 "a proxy or login page?): %s", url, pages[i].code, pages[i].then);
        against(url, want);
        assert_true(cli_server_accepted(h) >= 11);
        cli_server_stop(&h);
    }
}

/* ---- follow against a running operator ---- */

static pid_t operator_pid;

static int stop_operator(void **st)
{
    if (operator_pid > 0) e2e_stop(operator_pid, 10000);
    operator_pid = 0;
    return 0;
}

/* The states follow printed ("phase=… members=[…] ready=a/b …" after the time), in order. */
static int follow_lines(const char *out, char lines[][160], int cap)
{
    int n = 0;
    for (const char *p = out; p && *p && n < cap; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *ph = strstr(p, "phase="), *nl = strchr(p, '\n');
        if (!ph || (nl && ph > nl) || strncmp(p, "    event", 9) == 0) continue;
        int len = nl ? (int)(nl - ph) : (int)strlen(ph);
        char raw[160], *w = lines[n];
        snprintf(raw, sizeof raw, "%.*s", len, ph);
        for (const char *r = raw; *r; r++)          /* without the column padding */
            if (*r != ' ' || (w > lines[n] && w[-1] != ' ')) *w++ = *r;
        *w = '\0';
        n++;
    }
    return n;
}

typedef struct { char lines[64][160]; int n; char until[64]; } replay;

static int on_replayed(void *ud, const char *type, cJSON *gc)
{
    replay *r = ud;
    if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED")) return 0;
    char members[128] = "", line[160];
    size_t off = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members"))
        off += (size_t)snprintf(members + off, sizeof members - off, "%s%lld", off ? "," : "", (long long)m->valuedouble);
    snprintf(line, sizeof line, "phase=%s members=[%s] ready=%lld/%lld scaleOut=%lld scaleIn=%lld",
             gd_json_str_or(gc, "status.status", "-"), members, (long long)gd_json_int_or(gc, "status.readyReplicas", 0),
             (long long)gd_json_int_or(gc, "spec.replicas", 0), (long long)gd_json_int_or(gc, "status.scaleOutID", 0),
             (long long)gd_json_int_or(gc, "status.scaleInID", 0));
    if (r->n < 64 && (!r->n || strcmp(r->lines[r->n - 1], line))) snprintf(r->lines[r->n++], 160, "%s", line);
    return !strcmp(gd_meta_rv(gc), r->until);
}

/* follow prints every state the API server stored, in order: what it printed is compared
 * with a replay of the same object's history (a watch from its creation's
 * resourceVersion) while a real operator brings a new cluster to 3 Ready members. */
static void test_follow_sees_every_state(void **st)
{
    put("f.yaml", "apiVersion: kumkeehyun.github.com/v1\nkind: GodisCluster\nmetadata: {name: f}\nspec: {replicas: 3}\n");
    CTL("-n", ns, "apply", "-f", cli_tmp("f.yaml"));
    expect(0, NULL, "godisclusters/f created");
    static replay r;
    cJSON *created = e2e_cluster_get(api, ns, "f");
    char from[64];
    snprintf(from, sizeof from, "%s", gd_meta_rv(created));
    on_replayed(&r, "ADDED", created);       /* the watch from here replays what came after */
    cJSON_Delete(created);
    const char *argv[] = {"bin/godis-manager", "--leader-elect=false", "--workers", "1",
                          "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
                          "--runtime-dir", cli_tmp("rt"), NULL};
    operator_pid = e2e_spawn(argv, cli_tmp("operator.log"));
    CTL("-n", ns, "follow", "f", "3", "--timeout", "120s");
    if (R.status != 0) fail_msg("follow: exit %d\n%s%s\n%s", R.status, R.out, R.err, cli_slurp(cli_tmp("operator.log")));
    static char printed[64][160];
    int n = follow_lines(R.out, printed, 64);
    cJSON *now = e2e_cluster_get(api, ns, "f");
    snprintf(r.until, sizeof r.until, "%s", gd_meta_rv(now));
    cJSON_Delete(now);
    k8s_watch_opts o = {0};
    char sel[64];
    snprintf(sel, sizeof sel, "metadata.name=f");
    o.list.field_selector = sel;
    o.list.resource_version = from;
    o.list.timeout_seconds = 10;
    k8s_watch(api, &K8S_RES_GODISCLUSTERS, ns, &o, on_replayed, &r, NULL);
    /* follow starts from the state it first read; from there on, every state and no other */
    int k = 0;
    while (k < r.n && strcmp(r.lines[k], printed[0])) k++;
    bool same = n > 1 && r.n - k == n;
    for (int i = 0; same && i < n; i++) same = !strcmp(printed[i], r.lines[k + i]);
    if (!same) {
        fprintf(stderr, "follow printed:\n");
        for (int i = 0; i < n; i++) fprintf(stderr, "  %s\n", printed[i]);
        fprintf(stderr, "the API server stored:\n");
        for (int i = 0; i < r.n; i++) fprintf(stderr, "  %s\n", r.lines[i]);
        fail_msg("follow did not print every state");
    }
    assert_int_equal(e2e_stop(operator_pid, 20000), 0);
    operator_pid = 0;
    CTL("-n", ns, "delete", "-f", cli_tmp("f.yaml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checked_before_kubeconfig),
        cmocka_unit_test(test_manifests),
        cmocka_unit_test(test_cluster_commands),
        cmocka_unit_test(test_dead_server),
        cmocka_unit_test(test_html_server),
        cmocka_unit_test_teardown(test_follow_sees_every_state, stop_operator),
    };
    if (!cli_tmp_init("itest-godisctl")) return 1;
    return cli_tmp_done(cmocka_run_group_tests(tests, setup, teardown));
}
