/* itest_remote.c — workers in other pods (issue 22, docs/PROTOCOL.md §3) on the local
 * control plane: two godis-manager replicas with --workers 0 (only remote workers) and
 * --remote-port-base on their own 127.x addresses, two godis-worker processes started with
 * --leader-lease only (they find the leader in the Lease annotation and join it over
 * tcp:// with CURVE), and a third worker whose key is not on the allow-list.
 *
 *   - the remote workers share the 256 shards and converge GodisClusters by themselves;
 *   - a worker with a wrong key is refused (the manager logs its key) and never receives an
 *     event, while a subscriber with an allowed key receives the same one;
 *   - the leader is SIGKILLed: the remote workers join the new leader without a restart
 *     (same pids) and a new GodisCluster converges.
 *
 * Every address is on 127.0.0.0/8; waits are on conditions with deadlines. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>
#include "audit_log.h"
#include "e2e_lib.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "gd_curve.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_sub.h"
#include "gd_time.h"
#include "harness_manager.h"
#include "remote_pair.h"

#define NCLUSTERS 6

static struct {
    k8s_client *c;
    char ns[128];
    pid_t w[2], bad;
} R;
static remote_pair P;   /* the manager pair (remote_pair.h) */

static void keygen(const char *name) { assert_true(rp_keygen(&P, name)); }

static void read_key(const char *name, char *out)
{
    char path[300], why[300];
    gd_curve_keys k;
    snprintf(path, sizeof path, "%s/%s.key", P.dir, name);
    assert_int_equal(gd_curve_load_key(path, true, &k, why, sizeof why), GD_OK);
    memcpy(out, k.public_z85, GD_CURVE_Z85_LEN + 1);
}

static pid_t spawn_worker(const char *keyname)
{
    char lease[100], key[300], srv[300], log[300];
    snprintf(lease, sizeof lease, "default/%s", P.lease);
    snprintf(key, sizeof key, "%s/%s.key", P.dir, keyname);
    snprintf(srv, sizeof srv, "%s/server.pub", P.dir);
    snprintf(log, sizeof log, "%s/worker-%s.log", P.logdir, keyname);
    const char *argv[] = {"bin/godis-worker", "--leader-lease", lease, "--curve-key", key,
                          "--curve-server-public", srv, "--worker-name", keyname,
                          "--kubeconfig", getenv("KUBECONFIG"), "--max-concurrent-reconciles",
                          "4", "--heartbeat", "1s", NULL};
    pid_t p = e2e_spawn(argv, log);
    assert_true(p > 0);
    return p;
}

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    memset(&R, 0, sizeof R);
    if (!(R.c = e2e_client()) || !e2e_install_crds(R.c)) return -1;
    char lease[64];
    snprintf(lease, sizeof lease, "godis-remote-%d", (int)getpid());
    /* below the ephemeral range (32768-60999), RP_PORTS per run */
    if (!rp_init(&P, "remote", "default", lease, "allow", 20000 + (int)(getpid() % 500) * RP_PORTS)) return -1;
    keygen("server");
    keygen("remote-1");
    keygen("remote-2");
    keygen("intruder");
    char k1[41], k2[41], text[200];
    read_key("remote-1", k1);
    read_key("remote-2", k2);
    snprintf(text, sizeof text, "# remote workers\n%s remote-1\n%s remote-2\n", k1, k2);
    write_file(P.allow, text);
    for (int i = 0; i < 2; i++)
        if (!rp_spawn_manager(&P, i)) return -1;
    R.w[0] = spawn_worker("remote-1");
    R.w[1] = spawn_worker("remote-2");
    R.bad = spawn_worker("intruder");
    fprintf(stderr, "remote: logs in %s, ports %d..%d\n", P.logdir, P.base, P.base + RP_PORTS - 1);
    return 0;
}

static void stop_histories(void);

static int teardown(void **state)
{
    (void)state;
    stop_histories();
    pid_t all[] = {R.w[0], R.w[1], R.bad, P.mgr[0], P.mgr[1]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i] > 0) e2e_stop(all[i], 15000);
    if (R.ns[0]) e2e_ns_delete(R.c, R.ns);
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_delete(R.c, &K8S_RES_LEASES, "default", P.lease, &o, NULL);
    k8s_client_destroy(&R.c);
    e2e_remove_dir(P.dir);
    return 0;
}

static int leader(void) { return rp_leader(R.c, &P); }

/* Exactly `slots` remote workers own every shard between them. */
static bool remote_workers_own_all_n(int ldr, int slots, int timeout_ms)
{
    return rp_own_all(&P, ldr, slots, -1, timeout_ms);
}
static bool remote_workers_own_all(int ldr, int timeout_ms)
{
    return remote_workers_own_all_n(ldr, 2, timeout_ms);
}

static bool log_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
    if (f) fclose(f);
    return found;
}

static void test_remote_workers_converge(void **state)
{
    (void)state;
    int64_t end = gd_mono_ms() + 30000;
    int ldr;
    while ((ldr = leader()) < 0 && gd_mono_ms() < end) gd_sleep_ms(200);
    assert_true(ldr >= 0);
    assert_true(remote_workers_own_all(ldr, 60000));
    assert_true(e2e_ns_create(R.c, "remote", R.ns, sizeof R.ns));
    for (int i = 0; i < NCLUSTERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "rc-%d", i);
        assert_true(e2e_cluster_create(R.c, R.ns, name, 1 + i % 3));
    }
    for (int i = 0; i < NCLUSTERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "rc-%d", i);
        assert_true(e2e_wait_converged(R.c, R.ns, name, 1 + i % 3, 180000));
        assert_true(e2e_wait_consistent(R.c, R.ns, name, 60000));
    }
    /* no local worker exists: the remote ones did every reconcile */
    assert_true(metric(P.metrics[ldr], "godis_manager_children_running{role=\"worker\"}") == 0);
}

typedef struct { int events; char want[160]; bool seen; } sub_count;

static void count_event(void *ud, gd_ev ev, const char *key, int shard, const cJSON *old_obj,
                        const cJSON *new_obj, bool resync)
{
    sub_count *sc = ud;
    sc->events++;
    if (ev == GD_EV_ADDED && !strcmp(key, sc->want)) sc->seen = true;
}

static gd_sub *subscribe(void *zctx, cJSON *anno, const char *keyname, sub_count *sc)
{
    char path[300], why[300], srvpub[41];
    gd_curve_keys me;
    snprintf(path, sizeof path, "%s/%s.key", P.dir, keyname);
    assert_int_equal(gd_curve_load_key(path, true, &me, why, sizeof why), GD_OK);
    read_key("server", srvpub);
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    o.kind = "GodisCluster";
    o.pub_endpoint = gd_json_str_or(anno, "informers.GodisCluster.pub", "");
    o.snap_endpoint = gd_json_str_or(anno, "informers.GodisCluster.snap", "");
    o.snapshot_timeout_ms = 1000;
    o.on_event = count_event;
    o.ud = sc;
    o.curve = &me;
    o.server_public = srvpub;
    gd_sub *s = gd_sub_new(zctx, &o);
    assert_non_null(s);
    gd_sub_set_all(s);      /* the intruder's snapshot times out: refused */
    return s;
}

/* A worker whose key is not on the allow-list is refused and receives nothing, while an
 * allowed subscriber on the same endpoint receives the new GodisCluster. */
static void test_remote_wrong_key_receives_nothing(void **state)
{
    (void)state;
    int ldr = leader();
    assert_true(ldr >= 0);
    cJSON *l = NULL;
    assert_int_equal(k8s_get(R.c, &K8S_RES_LEASES, "default", P.lease, &l, NULL), GD_OK);
    cJSON *an = gd_json_path(l, "metadata.annotations");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(an, GD_REMOTE_ANNOTATION);
    assert_true(cJSON_IsString(a));
    cJSON *anno = cJSON_Parse(a->valuestring);
    assert_non_null(anno);
    assert_string_equal(gd_json_str_or(anno, "holder", ""), P.ident[ldr]);

    void *zctx = zmq_ctx_new();
    sub_count good = {0}, bad = {0};
    snprintf(good.want, sizeof good.want, "%s/rc-late", R.ns);
    snprintf(bad.want, sizeof bad.want, "%s/rc-late", R.ns);
    gd_sub *gs = subscribe(zctx, anno, "remote-1", &good);
    gd_sub *bs = subscribe(zctx, anno, "intruder", &bad);
    assert_true(e2e_cluster_create(R.c, R.ns, "rc-late", 1));
    int64_t end = gd_mono_ms() + 30000;
    while (!good.seen && gd_mono_ms() < end) {
        gd_sub_poll(gs, 100);
        gd_sub_poll(bs, 0);
    }
    assert_true(good.seen);
    gd_sub_poll(bs, 200);
    assert_int_equal(bad.events, 0);
    assert_int_equal(gd_sub_count(bs), 0);
    assert_false(gd_sub_synced(bs));
    gd_sub_destroy(&gs);
    gd_sub_destroy(&bs);
    zmq_ctx_term(zctx);
    cJSON_Delete(anno);
    cJSON_Delete(l);

    /* the intruder worker process: refused by ZAP (its key logged), never joined */
    char key[41], needle[80];
    read_key("intruder", key);
    snprintf(needle, sizeof needle, "client_public=%s", key);
    bool quoted = strpbrk(key, " \"=\\") != NULL;   /* logfmt quotes such values */
    if (!quoted) assert_true(log_has(P.mgrlog[ldr], needle));
    assert_true(log_has(P.mgrlog[ldr], "refused worker key"));
    assert_false(log_has(P.mgrlog[ldr], "name=intruder"));
    assert_true(e2e_wait_converged(R.c, R.ns, "rc-late", 1, 120000));
}

/* The wall-clock ms of the first line of the log at or after `after_ms` containing both
 * needles (its ts= field), 0 when none. */
static int64_t log_time(const char *path, const char *a, const char *b, int64_t after_ms)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int64_t t = 0;
    while (f && !t && fgets(line, sizeof line, f)) {
        char ts[40];
        if (!strstr(line, a) || !strstr(line, b) || sscanf(line, "ts=%39s", ts) != 1) continue;
        int64_t us = audit_time_us(ts);
        if (us >= 0 && us / 1000 >= after_ms) t = us / 1000;
    }
    if (f) fclose(f);
    return t;
}

static void create_clusters(const char *prefix, int n, int replicas)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        assert_true(e2e_cluster_create(R.c, R.ns, name, replicas));
    }
}

static void wait_clusters(const char *prefix, int n, int replicas)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        assert_true(e2e_wait_converged(R.c, R.ns, name, replicas, 180000));
        assert_true(e2e_wait_consistent(R.c, R.ns, name, 60000));
    }
}

/* SIGSTOP remote-1 beyond its heartbeat timeout while clusters are being created: its
 * shards move to remote-2 within the bound; after SIGCONT it writes nothing until it has
 * joined again as a new worker — proven from the API server's audit log. */
static void test_remote_sigstop_fenced(void **state)
{
    (void)state;
    int ldr = leader();
    assert_true(ldr >= 0);
    assert_true(remote_workers_own_all(ldr, 30000));
    int64_t t_stop = e2e_wall_us() / 1000;
    assert_int_equal(kill(R.w[0], SIGSTOP), 0);
    create_clusters("rs", 6, 1);            /* events its shards would have had */
    assert_true(remote_workers_own_all_n(ldr, 1, 30000));
    int64_t t_moved = e2e_wall_us() / 1000;
    fprintf(stderr, "remote: SIGSTOP: shards moved after %lld ms (heartbeat 1 s, bound 6 s)\n",
            (long long)(t_moved - t_stop));
    assert_true(t_moved - t_stop <= 10000);
    wait_clusters("rs", 6, 1);
    int64_t t_cont = e2e_wall_us() / 1000;
    assert_int_equal(kill(R.w[0], SIGCONT), 0);
    assert_true(remote_workers_own_all(ldr, 60000));
    int64_t t_join = log_time(P.mgrlog[ldr], "remote worker joined", "name=remote-1", t_cont);
    assert_true(t_join > 0);
    /* the audit log: no write of remote-1 received from shortly after its SIGSTOP (a request
     * already on the wire may land) until it joined again */
    audit_event *ev = NULL;
    int n = audit_events(getenv("DEVCLUSTER_AUDIT_LOG"), "remote-worker=remote-1", &ev, NULL);
    assert_true(n >= 0);
    int before = 0, inside = 0, after = 0;
    char run[48];
    snprintf(run, sizeof run, "manager=remote-mgr-%d-", (int)getpid());   /* this run only */
    for (int i = 0; i < n; i++) {
        if (!strstr(ev[i].user_agent, run)) continue;
        int64_t ms = ev[i].recv_us / 1000;
        if (ms <= t_stop + 200) before++;
        else if (ms < t_join) {
            inside++;
            fprintf(stderr, "remote: write by the stopped worker at %lld: %s %s %s\n",
                    (long long)ms, ev[i].verb, ev[i].resource, ev[i].name);
        } else after++;
    }
    free(ev);
    char wlog[300];
    snprintf(wlog, sizeof wlog, "%s/worker-remote-1.log", P.logdir);
    fprintf(stderr, "remote: remote-1 writes before SIGSTOP %d, while it had no lease %d, "
            "after it joined again %d; fenced attempts logged: %s\n", before, inside, after,
            log_has(wlog, "write refused: lease deadline passed") ? "yes" : "none");
    assert_int_equal(inside, 0);
}

/* kill -9 remote-2 in the middle of scaling: its shards move to remote-1 within the
 * bound, membership changes stay one at a time (never two reconcilers on one cluster),
 * and everything converges; then a new remote-2 process joins. */
static e2e_history H[3];   /* stopped by the teardown if a failed assertion left them */
static bool H_running;

static void test_remote_kill9_mid_scaling(void **state)
{
    (void)state;
    int ldr = leader();
    assert_true(ldr >= 0);
    e2e_history *h = H;
    /* 1 -> 3 (twice) and 3 -> 5: the kill lands in the 1 -> 2 steps, the one step that
     * needs the member being added for quorum the moment it is admitted (the operator
     * creates it before its meet: docs/reconcile.md rule 3) */
    const char *names[3] = {"rc-0", "rc-3", "rc-5"};
    const int want[3] = {3, 3, 5};
    for (int i = 0; i < 3; i++) assert_true(e2e_history_start(&h[i], R.c, R.ns, names[i]));
    H_running = true;
    for (int i = 0; i < 3; i++) assert_true(e2e_cluster_scale(R.c, R.ns, names[i], want[i]));
    for (int i = 0; i < 3; i++) assert_true(e2e_history_wait_scale_out(&h[i], 1, 60000) != 0);
    int64_t t_kill = e2e_wall_us() / 1000;
    assert_int_equal(kill(R.w[1], SIGKILL), 0);
    waitpid(R.w[1], NULL, 0);
    R.w[1] = 0;
    assert_true(remote_workers_own_all_n(ldr, 1, 30000));
    int64_t t_moved = e2e_wall_us() / 1000;
    fprintf(stderr, "remote: kill -9: shards moved after %lld ms (heartbeat 1 s, bound 6 s)\n",
            (long long)(t_moved - t_kill));
    assert_true(t_moved - t_kill <= 10000);
    for (int i = 0; i < 3; i++) {
        assert_true(e2e_wait_converged(R.c, R.ns, names[i], want[i], 180000));
        assert_true(e2e_wait_consistent(R.c, R.ns, names[i], 60000));
    }
    bool clean = true;
    for (int i = 0; i < 3; i++) clean &= e2e_history_stop(&h[i]);
    H_running = false;
    assert_true(clean);
    R.w[1] = spawn_worker("remote-2");
    assert_true(remote_workers_own_all(ldr, 60000));
}

static void stop_histories(void)
{
    for (int i = 0; H_running && i < 3; i++) e2e_history_stop(&H[i]);
    H_running = false;
}

/* SIGKILL the leader (with its informers): the remote workers find the new leader in the
 * Lease and join it without a restart; a new cluster converges. */
static void test_remote_leader_handover(void **state)
{
    (void)state;
    int old = leader();
    assert_true(old >= 0);
    pid_t kids[16];
    int n = e2e_children(P.mgr[old], "godis-informer", kids, 16);
    for (int i = 0; i < n; i++) kill(kids[i], SIGKILL);
    kill(P.mgr[old], SIGKILL);
    waitpid(P.mgr[old], NULL, 0);
    P.mgr[old] = 0;
    int64_t end = gd_mono_ms() + 30000;
    while (leader() != 1 - old && gd_mono_ms() < end) gd_sleep_ms(200);
    assert_int_equal(leader(), 1 - old);
    assert_true(remote_workers_own_all(1 - old, 60000));
    assert_int_equal(kill(R.w[0], 0), 0);           /* the same processes: no restart */
    assert_int_equal(kill(R.w[1], 0), 0);
    char log[300];
    snprintf(log, sizeof log, "%s/worker-remote-1.log", P.logdir);
    assert_true(log_has(log, P.ident[1 - old]));    /* it joined the new holder */
    assert_true(e2e_cluster_create(R.c, R.ns, "rc-after", 2));
    assert_true(e2e_wait_converged(R.c, R.ns, "rc-after", 2, 180000));
    assert_true(e2e_wait_consistent(R.c, R.ns, "rc-after", 60000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_workers_converge),
        cmocka_unit_test(test_remote_wrong_key_receives_nothing),
        cmocka_unit_test(test_remote_sigstop_fenced),
        cmocka_unit_test(test_remote_kill9_mid_scaling),
        cmocka_unit_test(test_remote_leader_handover),
    };
    return cmocka_run_group_tests_name("remote", tests, setup, teardown);
}
