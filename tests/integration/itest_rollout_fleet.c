/* itest_rollout_fleet — issue 20 points 5, 6 and 7 on the local control plane, with the real
 * stand-in and godis-manager (itest_rollout.c has the 3-member rollout, the bad image and
 * the scale during a rollout).
 *
 * test_metrics_follow_rollout_and_scale (6): /metrics is scraped every 100 ms while a
 * 3-member cluster rolls an image out and then scales 3 -> 5 -> 4: its series move as they
 * should — rollout_in_progress 0 -> 1 -> 0, ready_members dips by one member at a time and
 * never below a quorum, quorum stays 1, replace +3, members 3 -> 4 -> 5 -> 4, add +2,
 * remove +1 — and the dashboard's every metric name is on the live /metrics.
 * test_series_follow_the_shard (6): a cluster whose shard moves to a new worker (SIGHUP,
 * workers 1 -> 2: worker 0 stays up and hands the shard back) is published by the new
 * worker only, never again by the old; a deleted cluster's series disappear.
 * test_five_members_roll_one_at_a_time (5): an image change on 5 members: one member at a
 * time (the watch sees every status), the RESP sampler proves the quorum at every sample and
 * at most one member away, same ids and volumes, the data readable on every member.
 * test_fleet_restart_with_changed_defaults (7): the manager restarted with changed defaults
 * that do not reach the template (--max-concurrent-rollouts, --max-concurrent-reconciles,
 * --workers): the audit log shows no write to a member ReplicaSet and no pod deleted; then
 * with a new --default-godis-image: the 4 clusters without spec.image roll (never more than
 * --max-concurrent-rollouts 2 at once, over every state the watch saw), the pinned one is
 * not touched.
 * test_leader_killed_mid_rollout_resumes (5): two managers with leader election; the leader
 * is killed (-9, with its children) while member 2 of 3 is in progress: the new leader
 * finishes it and member 3; member 1, already updated, keeps its pod; every member was
 * replaced exactly once; the quorum held throughout. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include "audit_log.h"
#include "e2e_lib.h"
#include "e2e_members.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "e2e_sampler.h"
#include "e2e_webhook.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "godis_client.h"
#include "godis_domain.h"
#include "../support/test_wait.h"

static k8s_client *c;
static pid_t manager;
static int metrics_port;
static char ns[128], rundir[256], logdir[256], mgr_log[512], cfg_path[512];

/* ---------- the manager, configured through its YAML file ---------- */

static void write_config(const char *yaml)
{
    FILE *f = fopen(cfg_path, "w");
    assert_non_null(f);
    fputs(yaml, f);
    fclose(f);
}

static pid_t start_manager(const char *yaml, const char *extra_flag, const char *extra_value)
{
    write_config(yaml);
    char port[64];
    snprintf(port, sizeof port, "127.0.0.1:%d", metrics_port);
    const char *argv[] = {"bin/godis-manager", "--kubeconfig", getenv("KUBECONFIG"), "--config", cfg_path,
                          "--leader-elect=false", "--runtime-dir", rundir, "--health-probe-bind-address", "0",
                          "--metrics-bind-address", port, "--heartbeat", "250ms",
                          extra_flag, extra_value, NULL};
    return e2e_spawn(argv, mgr_log);
}

/* ---------- /metrics ---------- */

static char *scrape(void)
{
    size_t cap = 4 << 20, n = 0;
    char *buf = malloc(cap);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)metrics_port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {3, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (!buf || connect(s, (struct sockaddr *)&a, sizeof a) != 0) { close(s); free(buf); return NULL; }
    const char *req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    (void)!write(s, req, strlen(req));
    ssize_t r;
    while (n < cap - 1 && (r = read(s, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
    buf[n] = '\0';
    close(s);
    char *body = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.", 7) || !strstr(buf, " 200 ") || !body) { free(buf); return NULL; }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

/* The value of family{...namespace,cluster[,extra]...} (-1: no such series); *nseries gets
 * how many series match (one per worker that publishes it), *worker the last one's label. */
static double series(const char *text, const char *family, const char *cluster, const char *extra,
                     int *nseries, char *worker)
{
    char want_ns[200], want_cl[200];
    snprintf(want_ns, sizeof want_ns, "namespace=\"%s\"", ns);
    snprintf(want_cl, sizeof want_cl, "cluster=\"%s\"", cluster);
    size_t fl = strlen(family);
    double v = -1;
    int k = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (strncmp(p, family, fl) || p[fl] != '{') continue;
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        if (!strstr(line, want_ns) || !strstr(line, want_cl) || (extra && !strstr(line, extra))) continue;
        const char *close = strrchr(line, '}');
        v = close ? atof(close + 1) : -1;
        k++;
        const char *w = strstr(line, "worker=\"");
        if (worker && w) sscanf(w + 8, "%15[^\"]", worker);
    }
    if (nseries) *nseries = k;
    return v;
}

static double value_of(const char *family, const char *cluster, const char *extra)
{
    char *t = scrape();
    double v = t ? series(t, family, cluster, extra, NULL, NULL) : -1;
    free(t);
    return v;
}

/* Waits until family{cluster} == want on /metrics. */
static bool metric_is(const char *family, const char *cluster, const char *extra, double want, int ms)
{
    WAIT_UNTIL(value_of(family, cluster, extra) == want, ms);
    double v = value_of(family, cluster, extra);
    if (v != want) fprintf(stderr, "%s{cluster=%s%s%s} is %g, want %g\n", family, cluster,
                           extra ? "," : "", extra ? extra : "", v, want);
    return v == want;
}

/* A thread that scrapes every 100 ms and keeps what one cluster's series showed. */
typedef struct {
    pthread_t t;
    volatile int stop;
    const char *cluster;
    int samples, quorum0, rollout1;
    double ready_min, members_min, members_max;
    bool members_seen[10];
    int max_ready_drop;          /* members - ready, at most */
} scraper;

static void *scrape_loop(void *arg)
{
    scraper *s = arg;
    while (!s->stop) {
        char *t = scrape();
        double m = t ? series(t, "godis_cluster_members", s->cluster, NULL, NULL, NULL) : -1;
        double r = t ? series(t, "godis_cluster_ready_members", s->cluster, NULL, NULL, NULL) : -1;
        double q = t ? series(t, "godis_cluster_quorum", s->cluster, NULL, NULL, NULL) : -1;
        double ro = t ? series(t, "godis_cluster_rollout_in_progress", s->cluster, NULL, NULL, NULL) : -1;
        free(t);
        if (m >= 0 && r >= 0 && q >= 0 && ro >= 0) {
            s->samples++;
            s->quorum0 += q == 0;
            s->rollout1 += ro == 1;
            if (r < s->ready_min) s->ready_min = r;
            if (m < s->members_min) s->members_min = m;
            if (m > s->members_max) s->members_max = m;
            if (m >= 0 && m < 10) s->members_seen[(int)m] = true;
            if ((int)(m - r) > s->max_ready_drop) s->max_ready_drop = (int)(m - r);
        }
        usleep(100 * 1000);      /* the scrape interval */
    }
    return NULL;
}

static void scraper_start(scraper *s, const char *cluster)
{
    memset(s, 0, sizeof *s);
    s->cluster = cluster;
    s->ready_min = s->members_min = 1e9;
    assert_int_equal(pthread_create(&s->t, NULL, scrape_loop, s), 0);
}

static void scraper_stop(scraper *s, const char *what)
{
    s->stop = 1;
    pthread_join(s->t, NULL);
    fprintf(stderr, "fleet-figure: %s metrics samples=%d quorum0=%d rollout1=%d ready_min=%g "
            "members %g..%g max_not_ready=%d\n", what, s->samples, s->quorum0, s->rollout1,
            s->ready_min, s->members_min, s->members_max, s->max_ready_drop);
}

/* ---------- watching rollouts ---------- */

typedef struct {
    char old_rev[32];
    int want;                    /* members */
    int64_t order[16];           /* status.rollout.member values, in the order first seen */
    int norder;
    int64_t current;
    bool reentered, membership_changed;
    int64_t stop_at;             /* return as soon as this member is in progress (0: never) */
} roll_watch;

static bool rolled(const char *type, const cJSON *o, void *arg)
{
    (void)type;
    roll_watch *w = arg;
    int64_t ids[16];
    if (e2e_status_members(o, ids, 16) != w->want) w->membership_changed = true;
    int64_t m = gd_json_int_or(o, "status.rollout.member", 0);
    if (m && m != w->current) {
        for (int i = 0; i < w->norder; i++) w->reentered |= w->order[i] == m;
        if (w->norder < 16) w->order[w->norder++] = m;
    }
    w->current = m;
    if (w->stop_at && m == w->stop_at) return true;
    const char *upd = gd_json_str_or(o, "status.updateRevision", "");
    return !m && *upd && strcmp(upd, w->old_rev) && !cJSON_IsObject(gd_json_path(o, "status.rollout")) &&
           !strcmp(gd_json_str_or(o, "status.currentRevision", ""), upd) &&
           gd_json_int_or(o, "status.updatedReplicas", -1) == w->want &&
           gd_json_int_or(o, "status.readyReplicas", -1) == w->want;
}

static bool revision_settled(const char *type, const cJSON *o, void *arg)
{
    (void)type;
    roll_watch *w = arg;
    const char *cur = gd_json_str_or(o, "status.currentRevision", "");
    if (!*cur || strcmp(cur, gd_json_str_or(o, "status.updateRevision", "")) ||
        gd_json_int_or(o, "status.updatedReplicas", -1) != w->want)
        return false;
    snprintf(w->old_rev, sizeof w->old_rev, "%s", cur);
    return true;
}

static void settled(const char *cluster, int members, roll_watch *w)
{
    memset(w, 0, sizeof *w);
    w->want = members;
    char fs[160];
    snprintf(fs, sizeof fs, "metadata.name=%s", cluster);
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, fs, revision_settled, w, 90000));
}

static bool watch_cluster(const char *cluster, e2e_watch_pred pred, void *arg, int ms)
{
    char fs[160];
    snprintf(fs, sizeof fs, "metadata.name=%s", cluster);
    return e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, fs, pred, arg, ms);
}

static void set_image(const char *cluster, const char *image)
{
    char body[200];
    snprintf(body, sizeof body, "{\"spec\":{\"image\":\"%s\"}}", image);
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, cluster, K8S_PATCH_MERGE, body, NULL,
                               NULL, NULL), GD_OK);
}

static void delete_cluster(const char *cluster)
{
    e2e_delete(c, &K8S_RES_GODISCLUSTERS, ns, cluster, 0);
    assert_true(e2e_wait_gone(c, &K8S_RES_GODISCLUSTERS, ns, cluster, 60000));
}

/* ---------- members (e2e_members.h) ---------- */

/* Operator writes (not reads) of the member ReplicaSets and pod deletions of cluster since. */
static int member_writes(const char *cluster, int64_t since_us, bool report)
{
    audit_event *ev = NULL;
    int n = e2e_operator_writes(since_us, &ev), bad = 0;
    assert_true(n >= 0);
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s-", cluster);
    for (int i = 0; i < n; i++) {
        bool rs = !strcmp(ev[i].resource, "replicasets") && strcmp(ev[i].verb, "get") &&
                  strcmp(ev[i].verb, "list") && strcmp(ev[i].verb, "watch") && strcmp(ev[i].verb, "create");
        bool pod = !strcmp(ev[i].resource, "pods") && !strcmp(ev[i].verb, "delete");
        if ((rs || pod) && !strncmp(ev[i].name, prefix, strlen(prefix))) {
            bad++;
            if (report) fprintf(stderr, "operator wrote %s %s (%s)\n", ev[i].resource, ev[i].name, ev[i].verb);
        }
    }
    free(ev);
    return bad;
}

/* ---------- setup ---------- */

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    c = e2e_client();
    if (!c || !e2e_install_crds(c) || !e2e_ns_create(c, "fleet", ns, sizeof ns)) return -1;
    e2e_log_dir(logdir, sizeof logdir, "rollout-fleet");
    snprintf(rundir, sizeof rundir, "/tmp/godis-itest-fleet-%d", (int)getpid());
    snprintf(mgr_log, sizeof mgr_log, "%s/manager.log", logdir);
    snprintf(cfg_path, sizeof cfg_path, "%s/manager.yaml", logdir);
    metrics_port = e2e_free_port();
    manager = start_manager("workers: 1\nmax-concurrent-rollouts: 1\n", NULL, NULL);
    fprintf(stderr, "rollout-fleet: logs in %s\n", logdir);
    return manager > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (manager > 0) e2e_stop(manager, 15000);
    e2e_ns_delete(c, ns);
    e2e_remove_dir(rundir);
    k8s_client_destroy(&c);
    return 0;
}

/* ---------- point 6: the series move with a rollout and a scale ---------- */

#define MTR "mtr"

static void test_metrics_follow_rollout_and_scale(void **state)
{
    (void)state;
    assert_true(e2e_cluster_create(c, ns, MTR, 3));
    assert_true(e2e_wait_converged(c, ns, MTR, 3, 180000));
    roll_watch w;
    settled(MTR, 3, &w);
    assert_true(metric_is("godis_cluster_members", MTR, NULL, 3, 30000));
    assert_true(metric_is("godis_cluster_ready_members", MTR, NULL, 3, 30000));
    assert_true(metric_is("godis_cluster_updated_members", MTR, NULL, 3, 30000));
    assert_true(metric_is("godis_cluster_quorum", MTR, NULL, 1, 30000));
    assert_true(metric_is("godis_cluster_rollout_in_progress", MTR, NULL, 0, 30000));
    double add0 = value_of("godis_cluster_membership_changes_total", MTR, "kind=\"add\"");
    assert_true(add0 >= 0);                       /* every kind exists from the start */
    assert_int_equal(value_of("godis_cluster_membership_changes_total", MTR, "kind=\"replace\""), 0);
    assert_int_equal(value_of("godis_cluster_membership_changes_total", MTR, "kind=\"remove\""), 0);
    char *t = scrape();                           /* what the dashboard reads is served */
    assert_non_null(t);
    static const char *fams[] = {"godis_cluster_members", "godis_cluster_ready_members",
        "godis_cluster_quorum", "godis_cluster_rollout_in_progress", "godis_cluster_updated_members",
        "godis_cluster_membership_changes_total", "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds",
        "workqueue_depth", "workqueue_retries_total", "leader_election_master_status"};
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "# TYPE %s ", fams[i]);
        if (!strstr(t, want)) fail_msg("/metrics has no %s", fams[i]);
    }
    free(t);

    scraper s;
    scraper_start(&s, MTR);
    set_image(MTR, "kbzjung359/godis:v2");
    bool done = watch_cluster(MTR, rolled, &w, 240000);
    assert_true(done);
    assert_true(metric_is("godis_cluster_membership_changes_total", MTR, "kind=\"replace\"", 3, 30000));
    assert_true(metric_is("godis_cluster_rollout_in_progress", MTR, NULL, 0, 30000));
    assert_true(metric_is("godis_cluster_updated_members", MTR, NULL, 3, 30000));
    assert_true(metric_is("godis_cluster_ready_members", MTR, NULL, 3, 30000));
    scraper_stop(&s, "rollout");
    assert_true(s.samples > 10);
    assert_true(s.rollout1 > 0);                  /* 0 -> 1 -> 0 */
    assert_int_equal(s.quorum0, 0);               /* never without quorum */
    assert_int_equal(s.max_ready_drop, 1);        /* one member down at a time, and it showed */
    assert_int_equal((int)s.members_min, 3);
    assert_int_equal((int)s.members_max, 3);

    scraper_start(&s, MTR);
    assert_true(e2e_cluster_scale(c, ns, MTR, 5));
    assert_true(e2e_wait_converged(c, ns, MTR, 5, 180000));
    assert_true(metric_is("godis_cluster_members", MTR, NULL, 5, 30000));
    assert_true(metric_is("godis_cluster_ready_members", MTR, NULL, 5, 30000));
    assert_true(metric_is("godis_cluster_membership_changes_total", MTR, "kind=\"add\"", add0 + 2, 30000));
    assert_true(e2e_cluster_scale(c, ns, MTR, 4));
    assert_true(e2e_wait_converged(c, ns, MTR, 4, 180000));
    assert_true(metric_is("godis_cluster_members", MTR, NULL, 4, 30000));
    assert_true(metric_is("godis_cluster_membership_changes_total", MTR, "kind=\"remove\"", 1, 30000));
    assert_true(metric_is("godis_cluster_quorum", MTR, NULL, 1, 30000));
    scraper_stop(&s, "scale 3-5-4");
    assert_true(s.members_seen[3] && s.members_seen[4] && s.members_seen[5]);   /* one at a time */
    assert_int_equal(s.quorum0, 0);
    assert_int_equal(value_of("godis_cluster_membership_changes_total", MTR, "kind=\"replace\""), 3);
    delete_cluster(MTR);
}

/* ---------- point 6: no stale series after a shard move or a deletion ---------- */

/* A cluster name in this namespace whose shard is (high) or is not (!high) in 128..255: with
 * two workers the manager deals shards in order, and a worker keeps the ones under its quota
 * (manager/shards.h), so going from 1 worker to 2 moves exactly 128..255 to worker 1. */
static void name_in_half(bool high, const char *prefix, char *out, size_t cap)
{
    for (int i = 0; i < 1000; i++) {
        char key[300];
        snprintf(out, cap, "%s%d", prefix, i);
        snprintf(key, sizeof key, "%s/%s", ns, out);
        int s = gd_shard_of_key(GODIS_CTRL_CLUSTER, key);
        if ((s >= GD_NSHARDS / 2) == high) return;
    }
    fail_msg("no name found");
}

typedef struct {
    const char *cluster;
    char want_worker[16];
} where_ctx;

/* Exactly one worker publishes the cluster's members series, and it is want_worker. */
static bool published_by(const where_ctx *w)
{
    char *t = scrape();
    int n = 0;
    char worker[16] = "";
    if (t) series(t, "godis_cluster_members", w->cluster, NULL, &n, worker);
    free(t);
    return n == 1 && !strcmp(worker, w->want_worker);
}

static bool unpublished(const char *cluster)
{
    char *t = scrape();
    char want[200];
    snprintf(want, sizeof want, "cluster=\"%s\"", cluster);
    bool gone = t && !strstr(t, want);
    free(t);
    return gone;
}

static void test_series_follow_the_shard(void **state)
{
    (void)state;
    char stay[32], move[32];
    name_in_half(false, "stay", stay, sizeof stay);
    name_in_half(true, "move", move, sizeof move);
    assert_true(e2e_cluster_create(c, ns, stay, 1));
    assert_true(e2e_cluster_create(c, ns, move, 1));
    assert_true(e2e_wait_converged(c, ns, stay, 1, 120000));
    assert_true(e2e_wait_converged(c, ns, move, 1, 120000));
    where_ctx ws = {stay, "0"}, wm = {move, "0"};
    WAIT_UNTIL(published_by(&ws) && published_by(&wm), 30000);
    assert_true(published_by(&ws) && published_by(&wm));
    write_config("workers: 2\nmax-concurrent-rollouts: 1\n");
    kill(manager, SIGHUP);                        /* worker 0 hands 128..255 to worker 1 */
    snprintf(wm.want_worker, sizeof wm.want_worker, "1");
    WAIT_UNTIL(published_by(&wm), 60000);
    assert_true(published_by(&wm));              /* the new owner only: none left on worker 0 */
    assert_true(published_by(&ws));
    /* Quiet period under test: the old owner must not publish it again later (its next
     * heartbeats come within it). */
    for (int i = 0; i < 8; i++) {
        usleep(250 * 1000);
        assert_true(published_by(&wm));
    }
    delete_cluster(move);
    WAIT_UNTIL(unpublished(move), 30000);
    assert_true(unpublished(move));
    assert_true(published_by(&ws));
    delete_cluster(stay);
    WAIT_UNTIL(unpublished(stay), 30000);
    assert_true(unpublished(stay));
}

/* ---------- point 5: five members, one at a time, data kept ---------- */

#define FIVE "five"

static void test_five_members_roll_one_at_a_time(void **state)
{
    (void)state;
    assert_true(e2e_cluster_create(c, ns, FIVE, 5));
    assert_true(e2e_wait_converged(c, ns, FIVE, 5, 240000));
    roll_watch w;
    settled(FIVE, 5, &w);
    e2e_member before[8];
    assert_int_equal(e2e_members_now(c, ns, FIVE, before, 8), 5);
    godis_client *g = e2e_member_dial(before[0].ip);
    for (int i = 0; i < 30; i++) {
        char k[32], v[32];
        snprintf(k, sizeof k, "five-key-%d", i);
        snprintf(v, sizeof v, "value-%d", i);
        assert_int_equal(godis_set(g, k, v), GD_OK);
    }
    godis_client_destroy(&g);
    e2e_sampler s;
    assert_true(e2e_sampler_start(&s, ns, FIVE));
    int64_t t0 = e2e_now_ms();
    set_image(FIVE, "kbzjung359/godis:v2");
    bool done = watch_cluster(FIVE, rolled, &w, 300000);
    int64_t ms = e2e_now_ms() - t0;
    e2e_sampler_stop(&s, "five-members");
    fprintf(stderr, "fleet-figure: image-5-members rollout_ms=%lld order=%lld,%lld,%lld,%lld,%lld samples=%d "
            "without_quorum=%d max_unavailable=%d\n", (long long)ms, (long long)w.order[0],
            (long long)w.order[1], (long long)w.order[2], (long long)w.order[3], (long long)w.order[4],
            s.samples, s.no_quorum, s.max_unavailable);
    assert_true(done);
    assert_int_equal(s.no_quorum, 0);
    assert_true(s.max_unavailable <= 1);
    assert_int_equal(w.norder, 5);
    assert_false(w.reentered);
    assert_false(w.membership_changed);
    e2e_member after[8];
    assert_int_equal(e2e_members_now(c, ns, FIVE, after, 8), 5);
    for (int i = 0; i < 5; i++) {
        const e2e_member *b = e2e_member_by_id(before, 5, after[i].id);
        assert_non_null(b);
        assert_string_not_equal(b->pod_uid, after[i].pod_uid);
        assert_string_equal(b->pvc_uid, after[i].pvc_uid);
        assert_string_equal(after[i].image, "kbzjung359/godis:v2");
        godis_client *m = e2e_member_dial(after[i].ip);
        for (int k = 0; k < 30; k++) {
            char key[32], want[32], *v = NULL;
            snprintf(key, sizeof key, "five-key-%d", k);
            snprintf(want, sizeof want, "value-%d", k);
            bool ok = m && godis_get(m, key, &v) == GD_OK && v && !strcmp(v, want);
            free(v);
            if (!ok) fail_msg("member %lld lost %s in the rollout", (long long)after[i].id, key);
        }
        godis_client_destroy(&m);
    }
    delete_cluster(FIVE);
}

/* ---------- point 7: restarts with changed defaults ---------- */

#define NFLEET 4
static const char *fleet[NFLEET] = {"fleet0", "fleet1", "fleet2", "fleet3"};
#define PINNED "pinned"

/* Every watched cluster published (reconciled by the restarted operator), and nothing queued
 * or in flight in any controller. */
static bool quiescent(void)
{
    char *t = scrape();
    bool ok = t != NULL;
    for (int i = 0; ok && i < NFLEET; i++)
        ok = series(t, "godis_cluster_members", fleet[i], NULL, NULL, NULL) == 2;
    ok = ok && series(t, "godis_cluster_members", PINNED, NULL, NULL, NULL) == 2;
    for (const char *p = t; ok && p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, "workqueue_depth{", 16) || !strncmp(p, "controller_runtime_active_workers{", 34))
            ok = atof(strchr(p, '}') + 1) == 0;
    free(t);
    return ok;
}

/* Every member's ReplicaSet pinned to its data's node: the Godis controller's last write
 * for a new member, which can land just after the cluster's status says converged (the
 * two controllers race). A restart before it would see the new manager make it. */
static bool members_pinned(const char *cluster, int members)
{
    bool ok = true;
    for (int id = 1; ok && id <= members; id++) {
        char name[96];
        snprintf(name, sizeof name, "%s-%d", cluster, id);
        cJSON *rs = NULL;
        ok = k8s_get(c, &K8S_RES_REPLICASETS, ns, name, &rs, NULL) == GD_OK &&
             gd_json_path(rs, "spec.template.spec.affinity.nodeAffinity") != NULL;
        cJSON_Delete(rs);
    }
    return ok;
}

static void restart_manager(const char *yaml, const char *flag, const char *value)
{
    assert_true(WIFEXITED(e2e_stop(manager, 15000)));
    manager = start_manager(yaml, flag, value);
    assert_true(manager > 0);
}

typedef struct {
    char old_rev[NFLEET][32];
    bool rolling[NFLEET], done[NFLEET];
    int now, max;                /* clusters holding a rollout (status.rollout) at once */
    bool pinned_rolled;
} fleet_watch;

static int fleet_index(const char *name)
{
    for (int i = 0; i < NFLEET; i++)
        if (!strcmp(name, fleet[i])) return i;
    return -1;
}

static bool fleet_rolled(const char *type, const cJSON *o, void *arg)
{
    (void)type;
    fleet_watch *w = arg;
    bool rolling = cJSON_IsObject(gd_json_path(o, "status.rollout"));
    if (!strcmp(gd_meta_name(o), PINNED)) w->pinned_rolled |= rolling;
    int i = fleet_index(gd_meta_name(o));
    if (i < 0) return false;
    w->now += (int)rolling - (int)w->rolling[i];
    w->rolling[i] = rolling;
    if (w->now > w->max) w->max = w->now;
    const char *upd = gd_json_str_or(o, "status.updateRevision", "");
    w->done[i] = !rolling && *upd && strcmp(upd, w->old_rev[i]) &&
                 !strcmp(gd_json_str_or(o, "status.currentRevision", ""), upd) &&
                 gd_json_int_or(o, "status.updatedReplicas", -1) == 2;
    bool all = true;
    for (int k = 0; k < NFLEET; k++) all &= w->done[k];
    return all;
}

static void test_fleet_restart_with_changed_defaults(void **state)
{
    (void)state;
    for (int i = 0; i < NFLEET; i++) assert_true(e2e_cluster_create(c, ns, fleet[i], 2));
    assert_true(e2e_cluster_create_spec(c, ns, PINNED, "{\"replicas\":2,\"image\":\"kbzjung359/godis\"}"));
    fleet_watch fw = {0};
    roll_watch w;
    for (int i = 0; i < NFLEET; i++) {
        assert_true(e2e_wait_converged(c, ns, fleet[i], 2, 180000));
        settled(fleet[i], 2, &w);
        snprintf(fw.old_rev[i], sizeof fw.old_rev[i], "%s", w.old_rev);
    }
    assert_true(e2e_wait_converged(c, ns, PINNED, 2, 180000));
    settled(PINNED, 2, &w);
    char pinned_rev[32];
    snprintf(pinned_rev, sizeof pinned_rev, "%s", w.old_rev);

    for (int i = 0; i < NFLEET; i++) {
        WAIT_UNTIL(members_pinned(fleet[i], 2), 30000);
        assert_true(members_pinned(fleet[i], 2));
    }
    WAIT_UNTIL(members_pinned(PINNED, 2), 30000);
    assert_true(members_pinned(PINNED, 2));

    /* Defaults changed that do not reach the template: nothing rolls, nothing is written. */
    int64_t since = e2e_wall_us();
    restart_manager("workers: 2\nmax-concurrent-rollouts: 3\n", "--max-concurrent-reconciles", "2");
    WAIT_UNTIL(quiescent(), 60000);
    assert_true(quiescent());
    int writes = 0;
    for (int i = 0; i < NFLEET; i++) writes += member_writes(fleet[i], since, true);
    writes += member_writes(PINNED, since, true);
    assert_int_equal(writes, 0);
    for (int i = 0; i < NFLEET; i++) {
        cJSON *gc = e2e_cluster_get(c, ns, fleet[i]);
        assert_string_equal(gd_json_str_or(gc, "status.updateRevision", ""), fw.old_rev[i]);
        assert_null(gd_json_path(gc, "status.rollout"));
        cJSON_Delete(gc);
    }

    /* A new default image: the four clusters without spec.image roll, two at a time at
     * most; the pinned one renders the same and is not touched. */
    since = e2e_wall_us();
    int64_t t0 = e2e_now_ms();
    restart_manager("workers: 1\nmax-concurrent-rollouts: 2\ndefault-godis-image: kbzjung359/godis:v5\n",
                    NULL, NULL);
    bool done = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, NULL, fleet_rolled, &fw, 360000);
    fprintf(stderr, "fleet-figure: default image changed: %d clusters rolled in %lld ms, at most %d at once "
            "(limit 2), pinned rolled=%d\n", NFLEET, (long long)(e2e_now_ms() - t0), fw.max, fw.pinned_rolled);
    assert_true(done);
    assert_int_equal(fw.max, 2);                  /* the limit, and it was used */
    assert_false(fw.pinned_rolled);
    assert_int_equal(member_writes(PINNED, since, true), 0);
    for (int i = 0; i < NFLEET; i++) {
        e2e_member m[4];
        assert_int_equal(e2e_members_now(c, ns, fleet[i], m, 4), 2);
        for (int k = 0; k < 2; k++) assert_string_equal(m[k].image, "kbzjung359/godis:v5");
    }
    e2e_member p[4];
    assert_int_equal(e2e_members_now(c, ns, PINNED, p, 4), 2);
    for (int k = 0; k < 2; k++) assert_string_equal(p[k].image, "kbzjung359/godis");
    cJSON *gc = e2e_cluster_get(c, ns, PINNED);
    assert_string_equal(gd_json_str_or(gc, "status.updateRevision", ""), pinned_rev);
    cJSON_Delete(gc);
    for (int i = 0; i < NFLEET; i++) delete_cluster(fleet[i]);
    delete_cluster(PINNED);
}

/* ---------- point 5: the leader killed mid-rollout ---------- */

#define KILLED "killed"

static void test_leader_killed_mid_rollout_resumes(void **state)
{
    (void)state;
    e2e_stop(manager, 15000);                     /* two managers with leader election now */
    manager = 0;
    e2e_operator op;
    assert_true(e2e_operator_start(&op, "fleet-kill", NULL));
    assert_true(e2e_cluster_create(c, ns, KILLED, 3));
    assert_true(e2e_wait_converged(c, ns, KILLED, 3, 180000));
    roll_watch w;
    settled(KILLED, 3, &w);
    e2e_member before[4];
    assert_int_equal(e2e_members_now(c, ns, KILLED, before, 4), 3);
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, KILLED));
    e2e_sampler s;
    assert_true(e2e_sampler_start(&s, ns, KILLED));
    set_image(KILLED, "kbzjung359/godis:v2");
    w.stop_at = 2;                                /* member 1 done, member 2 in progress */
    assert_true(watch_cluster(KILLED, rolled, &w, 180000));
    e2e_member mid[4];
    assert_int_equal(e2e_members_now(c, ns, KILLED, mid, 4), 3);
    const e2e_member *one = e2e_member_by_id(mid, 3, 1);
    assert_non_null(one);
    assert_string_equal(one->image, "kbzjung359/godis:v2");     /* member 1 is updated */
    char one_uid[64];
    snprintf(one_uid, sizeof one_uid, "%s", one->pod_uid);
    int leader = e2e_operator_leader(&op, c);
    assert_true(leader == 0 || leader == 1);
    e2e_operator_kill(&op, leader);
    int64_t t_kill = e2e_now_ms();
    w.stop_at = 0;
    bool done = watch_cluster(KILLED, rolled, &w, 240000);
    e2e_sampler_stop(&s, "leader-killed");
    e2e_pod_recorder_stop(&rec);
    fprintf(stderr, "fleet-figure: leader killed with member 2 in progress; rollout done %lld ms later, "
            "order %lld,%lld,%lld, %d samples, without_quorum=%d, max_unavailable=%d\n",
            (long long)(e2e_now_ms() - t_kill), (long long)w.order[0], (long long)w.order[1],
            (long long)w.order[2], s.samples, s.no_quorum, s.max_unavailable);
    assert_true(done);
    assert_int_equal(w.norder, 3);
    assert_false(w.reentered);
    assert_int_equal(s.no_quorum, 0);
    assert_true(s.max_unavailable <= 1);
    e2e_member after[4];
    assert_int_equal(e2e_members_now(c, ns, KILLED, after, 4), 3);
    assert_string_equal(e2e_member_by_id(after, 3, 1)->pod_uid, one_uid);  /* not restarted again */
    for (int i = 0; i < 3; i++) {
        char godis[64], old[1][64];
        snprintf(godis, sizeof godis, "%s-%lld", KILLED, (long long)before[i].id);
        snprintf(old[0], sizeof old[0], "%s", before[i].pod_uid);
        assert_string_equal(e2e_member_by_id(after, 3, before[i].id)->image, "kbzjung359/godis:v2");
        int fresh = e2e_pod_recorder_new_ready(&rec, godis, old, 1);
        if (fresh != 1) fail_msg("member %s had %d new Ready pods, want exactly 1", godis, fresh);
    }
    delete_cluster(KILLED);
    e2e_operator_stop(&op, c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_follow_rollout_and_scale),
        cmocka_unit_test(test_series_follow_the_shard),
        cmocka_unit_test(test_five_members_roll_one_at_a_time),
        cmocka_unit_test(test_fleet_restart_with_changed_defaults),
        cmocka_unit_test(test_leader_killed_mid_rollout_resumes),
    };
    return cmocka_run_group_tests_name("itest_rollout_fleet", tests, setup, teardown);
}
