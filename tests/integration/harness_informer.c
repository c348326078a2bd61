/* harness_informer.c — what itest_informer.c builds its tests from (API in
 * harness_informer.h): ConfigMap writes that ride out API server restarts, the real
 * bin/godis-informer as a child process, a gd_sub subscriber that records every event, and
 * the replica-equals-a-fresh-list check. Linked into every itest; only itest_informer calls it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "harness_informer.h"


informer_itest IT;

static void track_pid(pid_t pid, bool add)
{
    for (int i = 0; i < 8; i++)
        if (add ? IT.pids[i] == 0 : IT.pids[i] == pid) {
            IT.pids[i] = add ? pid : 0;
            return;
        }
}

static void track_sub(gd_sub *s, bool add)
{
    for (int i = 0; i < 8; i++)
        if (add ? IT.subs[i] == NULL : IT.subs[i] == s) {
            IT.subs[i] = add ? s : NULL;
            return;
        }
}

/* ------------------------------------------------------------------ API helpers */

static const k8s_resource *CM = &K8S_RES_CONFIGMAPS;

void make_ns(char *ns, size_t cap, const char *what)
{
    snprintf(ns, cap, "itest-inf-%s-%d-%d", what, (int)getpid(), ++IT.seq);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "Namespace");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", ns);
    k8s_status st;
    gd_err e = k8s_create(IT.c, &K8S_RES_NAMESPACES, NULL, o, NULL, &st);
    cJSON_Delete(o);
    if (e != GD_OK)
        fail_msg("create namespace %s: %s %s", ns, gd_strerror(e), st.message);
}

void api_test_ns(char *ns, size_t cap, const char *what)
{
    if (!IT.c)
        skip();
    make_ns(ns, cap, what);
}

void del_ns(const char *ns)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_delete(IT.c, &K8S_RES_NAMESPACES, NULL, ns, &o, NULL);
}

static cJSON *cm_obj(const char *ns, const char *name, const char *label, const char *val)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "ConfigMap");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ns);
    if (label) {
        cJSON *l = cJSON_AddObjectToObject(md, "labels");
        cJSON_AddStringToObject(l, "cluster-name", label);
    }
    cJSON *d = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(d, "v", val);
    return o;
}

/* The loop condition of a write that may fail transiently (the API server restarting):
 * true, after 200 ms, to try again; at most 20 tries. */
static bool try_again(gd_err e, int *tries)
{
    if (e == GD_OK || !gd_err_retryable(e) || ++*tries >= 20)
        return false;
    gd_sleep_ms(200);
    return true;
}

/* Creates; rv of the result into rv (may be NULL). Retries transient failures. */
gd_err cm_create(const char *ns, const char *name, const char *label, const char *val,
                 char *rv, size_t cap)
{
    cJSON *o = cm_obj(ns, name, label, val), *out = NULL;
    k8s_status st;
    gd_err e;
    int tries = 0;
    do
        e = k8s_create(IT.c, CM, ns, o, &out, &st);
    while (try_again(e, &tries));
    if (e == GD_OK && rv)
        snprintf(rv, cap, "%s", gd_meta_rv(out));
    cJSON_Delete(out);
    cJSON_Delete(o);
    return e;
}

/* Merge-patches data.v (and the label when label is not NULL); rv of the result into rv. */
gd_err cm_patch(const char *ns, const char *name, const char *label, const char *val,
                char *rv, size_t cap)
{
    cJSON *p = cJSON_CreateObject(), *out = NULL;
    cJSON *d = cJSON_AddObjectToObject(p, "data");
    cJSON_AddStringToObject(d, "v", val);
    if (label) {
        cJSON *md = cJSON_AddObjectToObject(p, "metadata");
        cJSON *l = cJSON_AddObjectToObject(md, "labels");
        cJSON_AddStringToObject(l, "cluster-name", label);
    }
    char *body = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    gd_err e;
    int tries = 0;
    do
        e = k8s_patch(IT.c, CM, ns, name, K8S_PATCH_MERGE, body, NULL, &out, NULL);
    while (try_again(e, &tries));
    if (e == GD_OK && rv)
        snprintf(rv, cap, "%s", gd_meta_rv(out));
    cJSON_Delete(out);
    free(body);
    return e;
}

gd_err cm_delete(const char *ns, const char *name)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    gd_err e;
    int tries = 0;
    do
        e = k8s_delete(IT.c, CM, ns, name, &o, NULL);
    while (try_again(e, &tries));
    return e;
}

/* A fresh list (consistent read) as key → rv. */
static gd_map *fresh_list(const char *ns, const char *selector)
{
    gd_map *m = gd_map_new(free);
    char cont[4096] = "";
    do {
        k8s_list_opts lo = {.label_selector = selector, .limit = 500,
                            .continue_token = cont[0] ? cont : NULL};
        cJSON *page = NULL;
        k8s_status st;
        gd_err e = k8s_list(IT.c, CM, ns, &lo, &page, &st);
        if (e != GD_OK)
            fail_msg("list: %s %s", gd_strerror(e), st.message);
        cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(page, "items")) {
            char key[300];
            gd_meta_key(it, key, sizeof key);
            gd_map_put(m, key, strdup(gd_meta_rv(it)), NULL);
        }
        snprintf(cont, sizeof cont, "%s", gd_json_str_or(page, "metadata.continue", ""));
        cJSON_Delete(page);
    } while (cont[0]);
    return m;
}

/* Runs fn over [0, n) split into `threads` ranges in parallel; asserts every range's writes
 * succeeded. */
void run_ranges(void *(*fn)(void *), const char *ns, int n, int threads)
{
    creator c[16];
    pthread_t th[16];
    assert_true(threads > 0 && threads <= 16);
    for (int i = 0; i < threads; i++) {
        c[i] = (creator){.ns = ns, .from = i * n / threads, .to = (i + 1) * n / threads};
        pthread_create(&th[i], NULL, fn, &c[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(c[i].err, GD_OK);
    }
}

/* ------------------------------------------------------------------ the informer process */

void start_informer(informer *inf, const char *ns, const char *kubeconfig,
                    const char *const *extra)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/inf%d", IT.tmp, ++IT.seq);
    mkdir(dir, 0700);
    snprintf(inf->pub, sizeof inf->pub, "ipc://%s/cm.pub", dir);
    snprintf(inf->snap, sizeof inf->snap, "ipc://%s/cm.snap", dir);
    snprintf(inf->log, sizeof inf->log, "%s/informer.log", dir);
    char bin[PATH_MAX + 32];
    snprintf(bin, sizeof bin, "%s/bin/godis-informer", IT.root);
    const char *argv[40] = {bin, "--kind", "ConfigMap", "--namespace", ns, "--pub-endpoint",
                            inf->pub, "--snap-endpoint", inf->snap, "--heartbeat", "200ms"};
    int n = 11;
    if (kubeconfig) {
        argv[n++] = "--kubeconfig";
        argv[n++] = kubeconfig;
    }
    for (int i = 0; extra && extra[i] && n < 38; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    inf->pid = fork();
    assert_true(inf->pid >= 0);
    if (inf->pid == 0) {
        int fd = open(inf->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    track_pid(inf->pid, true);
}

void stop_informer(informer *inf)
{
    if (inf->pid <= 0)
        return;
    track_pid(inf->pid, false);
    kill(inf->pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; i++) {
        if (waitpid(inf->pid, &status, WNOHANG) == inf->pid) {
            inf->pid = 0;
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), 0);
            return;
        }
        gd_sleep_ms(100);
    }
    kill(inf->pid, SIGKILL);
    waitpid(inf->pid, &status, 0);
    inf->pid = 0;
    fail_msg("informer did not stop on SIGTERM");
}

bool log_contains(const informer *inf, const char *needle)
{
    FILE *f = fopen(inf->log, "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* One request on the ROUTER; collects OBJ key → rv into m (if given); returns the last
 * reply's frame 2 (STATS text or END seq) malloc'd. */
char *router_request(const informer *inf, const char *cmd, const char *arg, gd_map *m)
{
    void *d = zmq_socket(IT.zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_connect(d, inf->snap), 0);
    zmq_send(d, "GDI1", 4, ZMQ_SNDMORE);
    zmq_send(d, cmd, strlen(cmd), arg ? ZMQ_SNDMORE : 0);
    if (arg)
        zmq_send(d, arg, strlen(arg), 0);
    char *result = NULL;
    for (;;) {
        zmq_pollitem_t pi = {.socket = d, .events = ZMQ_POLLIN};
        if (zmq_poll(&pi, 1, 10000) <= 0)
            fail_msg("no answer to %s", cmd);
        zmq_msg_t f[6];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t x;
            zmq_msg_init(&x);
            zmq_msg_recv(&x, d, 0);
            more = zmq_msg_more(&x);
            if (n < 6)
                f[n++] = x;
            else
                zmq_msg_close(&x);
        }
        char c[8] = "";
        memcpy(c, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]) < 7 ? zmq_msg_size(&f[1]) : 7);
        bool done = strcmp(c, "OBJ") != 0;
        if (!done && m) {
            char key[512];
            snprintf(key, sizeof key, "%.*s", (int)zmq_msg_size(&f[2]), (char *)zmq_msg_data(&f[2]));
            gd_map_put(m, key, strndup(zmq_msg_data(&f[3]), zmq_msg_size(&f[3])), NULL);
        }
        if (done && n > 2)
            result = strndup(zmq_msg_data(&f[2]), zmq_msg_size(&f[2]));
        for (int i = 0; i < n; i++)
            zmq_msg_close(&f[i]);
        if (done)
            break;
    }
    zmq_close(d);
    return result;
}

long long stat_value(const informer *inf, const char *metric)
{
    char *t = router_request(inf, "STATS", NULL, NULL);
    assert_non_null(t);
    char *p = strstr(t, metric);
    long long v = -1;
    while (p && p[strlen(metric)] != '{')
        p = strstr(p + 1, metric);
    if (p)
        p = strchr(p, '}');
    if (p)
        v = atoll(p + 1);
    free(t);
    return v;
}

/* ------------------------------------------------------------------ following it */

static void record_event(void *ud, gd_ev ev, const char *key, int shard, const cJSON *old,
                   const cJSON *new_obj, bool resync)
{
    recorder *r = ud;
    if (ev == GD_EV_SYNCED)
        return;
    char add[96];
    if (ev == GD_EV_DELETED)
        snprintf(add, sizeof add, "D,");
    else
        snprintf(add, sizeof add, "%s:%s,", ev == GD_EV_ADDED ? "A" : "M", gd_meta_rv(new_obj));
    pthread_mutex_lock(&r->mu);
    if (ev == GD_EV_DELETED)
        r->deleted++;
    char *prev = gd_map_get(r->log, key);
    size_t pl = prev ? strlen(prev) : 0;
    char *s = malloc(pl + strlen(add) + 1);
    memcpy(s, prev ? prev : "", pl);
    strcpy(s + pl, add);
    gd_map_put(r->log, key, s, NULL);
    pthread_mutex_unlock(&r->mu);
}

gd_sub *follow(const informer *inf, recorder *r, int rcvhwm)
{
    if (r) {
        pthread_mutex_init(&r->mu, NULL);
        r->log = gd_map_new(free);
        r->deleted = 0;
    }
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    o.kind = "ConfigMap";
    o.pub_endpoint = inf->pub;
    o.snap_endpoint = inf->snap;
    o.on_event = r ? record_event : NULL;
    o.ud = r;
    o.snapshot_timeout_ms = 3000;
    if (rcvhwm)
        o.rcvhwm = rcvhwm;
    gd_sub *s = gd_sub_new(IT.zctx, &o);
    assert_non_null(s);
    track_sub(s, true);
    gd_sub_set_all(s);   /* may time out while the informer starts: dispatch retries */
    return s;
}

void unfollow(gd_sub **s)
{
    track_sub(*s, false);
    gd_sub_destroy(s);
}

void recorder_free(recorder *r)
{
    gd_map_destroy(&r->log);
    pthread_mutex_destroy(&r->mu);
}

/* Is the replica exactly the map (key → rv)? */
bool replica_equals(gd_sub *s, gd_map *want, bool verbose)
{
    if (gd_sub_count(s) != gd_map_count(want)) {
        if (verbose)
            print_message("replica has %zu objects, expected %zu\n", gd_sub_count(s),
                          gd_map_count(want));
        return false;
    }
    gd_map_iter it;
    const char *key;
    void *rv;
    gd_map_iter_init(&it, want);
    while (gd_map_next(&it, &key, &rv)) {
        char have[64];
        if (!gd_sub_get_rv(s, key, have, sizeof have) || strcmp(have, rv) != 0) {
            if (verbose)
                print_message("%s: replica %s, expected %s\n", key, have, (char *)rv);
            return false;
        }
    }
    return true;
}

/* Polls until the replica equals a fresh list (re-listed every second). */
void converge(gd_sub *s, const char *ns, const char *selector, int timeout_ms)
{
    int64_t until = gd_mono_ms() + timeout_ms;
    gd_map *want = fresh_list(ns, selector);
    int64_t relist_at = gd_mono_ms() + 1000;
    while (gd_mono_ms() < until) {
        gd_sub_poll(s, 50);
        if (gd_sub_synced(s) && replica_equals(s, want, false)) {
            gd_map_destroy(&want);
            return;
        }
        if (gd_mono_ms() > relist_at) {
            gd_map_destroy(&want);
            want = fresh_list(ns, selector);
            relist_at = gd_mono_ms() + 1000;
        }
    }
    replica_equals(s, want, true);
    gd_map_destroy(&want);
    fail_msg("replica did not converge to a fresh list in %d ms", timeout_ms);
}

void wait_synced(gd_sub *s, int timeout_ms)
{
    int64_t until = gd_mono_ms() + timeout_ms;
    while (!gd_sub_synced(s) && gd_mono_ms() < until)
        gd_sub_poll(s, 50);
    assert_true(gd_sub_synced(s));
}

/* Runs cmd; its stdout into out (when given); its exit status, -1 when it did not exit. */
int run_cmd(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = out ? fread(out, 1, cap - 1, p) : 0;
    if (out)
        out[n] = 0;
    else {
        char junk[256];
        while (fread(junk, 1, sizeof junk, p) > 0)
            ;
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A free port below the ephemeral range (where outgoing connections never land), bound
 * with SO_REUSEPORT and kept bound: see apiserver() in harness_informer.h. */
static int hold_port(void)
{
    for (int tries = 0; tries < 200; tries++) {
        int port = 20000 + (int)(gd_rand01() * 12000);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) == 0 &&
            bind(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            IT.port_hold_fd = fd;
            return port;
        }
        if (fd >= 0) close(fd);
    }
    fail_msg("no free port for the private API server");
    return 0;
}

int apiserver(const char *verb)
{
    char cmd[PATH_MAX * 3], out[64] = "";
    if (!IT.apiserver_port && strcmp(verb, "start") == 0) {
        IT.apiserver_port = hold_port();
        snprintf(cmd, sizeof cmd, "%s/apiserver", IT.tmp);
        mkdir(cmd, 0700);
        snprintf(cmd, sizeof cmd, "%s/apiserver/port", IT.tmp);
        FILE *f = fopen(cmd, "w");
        if (!f || fprintf(f, "%d\n", IT.apiserver_port) < 0 || fclose(f) != 0)
            fail_msg("cannot write %s", cmd);
    }
    snprintf(cmd, sizeof cmd, "%s/tests/integration/informer-apiserver.sh %s %s/apiserver",
             IT.root, verb, IT.tmp);
    int rc = run_cmd(cmd, out, sizeof out);
    IT.private_apiserver = strcmp(verb, "start") == 0;
    if (rc != 0)
        fail_msg("informer-apiserver.sh %s failed (%d)", verb, rc);
    return atoi(out);
}

/* ------------------------------------------------------------------ setup */

/* After every test, passed or failed: nothing of it may outlive it. */
int test_teardown(void **state)
{
    for (int i = 0; i < 8; i++) {
        if (IT.subs[i])
            gd_sub_destroy(&IT.subs[i]);
        if (IT.pids[i] > 0) {
            kill(IT.pids[i], SIGKILL);
            waitpid(IT.pids[i], NULL, 0);
            IT.pids[i] = 0;
        }
    }
    if (IT.private_apiserver) {
        char cmd[PATH_MAX * 2];
        snprintf(cmd, sizeof cmd, "%s/tests/integration/informer-apiserver.sh stop %s/apiserver",
                 IT.root, IT.tmp);
        run_cmd(cmd, NULL, 0);
        IT.private_apiserver = false;
    }
    return 0;
}

int group_setup(void **state)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    /* <root>/bin/tests/itest_informer */
    snprintf(IT.root, sizeof IT.root, "%s", dirname(dirname(dirname(exe))));
    snprintf(IT.tmp, sizeof IT.tmp, "/tmp/itest-informer-XXXXXX");
    assert_non_null(mkdtemp(IT.tmp));
    IT.zctx = zmq_ctx_new();
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    if (!getenv("KUBECONFIG") || !getenv("DEVCLUSTER_DIR")) {
        print_message("no devcluster (eval \"$(tools/devcluster env)\"): API tests skipped\n");
        return 0;
    }
    k8s_config_opts co = {.kubeconfig = getenv("KUBECONFIG")};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        print_message("kubeconfig: %s\n", err);
        return -1;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.qps = -1;
    IT.c = k8s_client_new(&cfg, &ko);
    return IT.c ? 0 : -1;
}

int group_teardown(void **state)
{
    k8s_client_destroy(&IT.c);
    zmq_ctx_term(IT.zctx);
    return e2e_remove_dir(IT.tmp) ? 0 : -1;
}

