/* Tests of the node agent's pod table (agent_pod.c) against a scripted HTTP server standing
 * in for the API: pods become real local processes, status PATCHes say what kubelet would,
 * deletion goes TERM → grace → KILL → DELETE with gracePeriodSeconds=0, restarts count up
 * with backoff, configuration errors show as waiting reasons, readiness follows the probe. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "k8s_client.h"
#include "k8s_config.h"
#include "gd_json.h"
#include "gd_log.h"
#include "../../tools/node-agent/agent.h"
#include "httpd_helper.h"
#include "../support/test_wait.h"

typedef struct {
    httpd *h;
    na_agent a;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->h = httpd_start(NULL);
    assert_non_null(f->h);
    k8s_config *cfg = calloc(1, sizeof *cfg);
    cfg->server = strdup(httpd_url(f->h));
    cfg->namespace_ = strdup("default");
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.qps = -1;
    f->a.api = k8s_client_new(&cfg, &o);
    assert_non_null(f->a.api);
    char err[256];
    assert_int_equal(na_image_map_add(&f->a.images, "itest/shell=", err, sizeof err), GD_OK);
    assert_int_equal(na_ipam_init(&f->a.ipam, "127.0.1.0", 16, err, sizeof err), GD_OK);
    snprintf(f->a.state_dir, sizeof f->a.state_dir, "/tmp/test-na-pod-XXXXXX");
    assert_non_null(mkdtemp(f->a.state_dir));
    snprintf(f->a.nodes[0].name, sizeof f->a.nodes[0].name, "node-1");
    f->a.nnodes = 1;
    na_event ev = { .type = "SYNC_BEGIN" };
    na_pods_apply(&f->a, &ev);
    snprintf(ev.type, sizeof ev.type, "SYNC_END");
    na_pods_apply(&f->a, &ev);
    *state = f;
    return 0;
}

/* The same, with pod workers: each pod's sync runs on a pool thread, as in the agent. */
static int setup_workers(void **state)
{
    int rc = setup(state);
    fixture *f = *state;
    f->a.workers = na_pool_new(4);
    assert_non_null(f->a.workers);
    return rc;
}

static int teardown(void **state)
{
    fixture *f = *state;
    na_pods_stop_all(&f->a, 1);
    na_pool_destroy(&f->a.workers);
    na_pods_free_all(&f->a);
    k8s_client_destroy(&f->a.api);
    na_image_map_free(&f->a.images);
    na_ipam_free(&f->a.ipam);
    na_rmtree(f->a.state_dir);
    httpd_stop(&f->h);
    free(f);
    return 0;
}

/* A pod on node-1 with one container running `sh -c script` (image itest/shell). */
static cJSON *pod(const char *name, const char *script, const char *extra_spec, const char *extra_ctr)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\"},"
             "\"spec\":{\"nodeName\":\"node-1\",\"terminationGracePeriodSeconds\":1%s,"
             "\"containers\":[{\"name\":\"c\",\"image\":\"itest/shell:1\","
             "\"command\":[\"/bin/sh\",\"-c\",\"%s\"]%s}]}}",
             name, name, extra_spec ? extra_spec : "", script, extra_ctr ? extra_ctr : "");
    cJSON *p = cJSON_Parse(buf);
    if (!p) fail_msg("bad pod JSON: %s", buf);
    return p;
}

static void apply(fixture *f, const char *type, cJSON *p)
{
    na_event ev = { .pod = p };
    snprintf(ev.type, sizeof ev.type, "%s", type);
    na_pods_apply(&f->a, &ev);
    cJSON_Delete(p);
}

/* Ticks until a request with method and uri substring (and body substring) arrives after
 * request index `from`; returns it, or fails after timeout_ms. */
static const httpd_req *tick_until(fixture *f, int from, const char *method, const char *uri,
                                   const char *body, int timeout_ms)
{
    int64_t deadline = gd_mono_ms() + timeout_ms;
    for (;;) {
        na_pods_tick(&f->a);
        int n = httpd_request_count(f->h);
        for (int i = from; i < n; i++) {
            const httpd_req *r = httpd_request(f->h, i);
            if (strcmp(r->method, method) == 0 && strstr(r->uri, uri) &&
                (!body || (r->body && strstr(r->body, body))))
                return r;
        }
        if (gd_mono_ms() > deadline) fail_msg("no %s %s with body containing %s", method, uri, body ? body : "-");
        gd_sleep_ms(20);
    }
}

static void test_run_and_delete(void **state)
{
    fixture *f = *state;
    apply(f, "ADDED", pod("p1", "echo \\\"$DATA $MY_IP $MY_NODE\\\" > \\\"$DATA/out\\\"; exec sleep 30",
                          ",\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{}}]",
                          ",\"env\":[{\"name\":\"DATA\",\"value\":\"/data\"},"
                          "{\"name\":\"MY_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
                          "{\"name\":\"MY_NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}}],"
                          "\"volumeMounts\":[{\"name\":\"scratch\",\"mountPath\":\"/data\"}]"));
    const httpd_req *r = tick_until(f, 0, "PATCH", "/api/v1/namespaces/ns/pods/p1/status", "\"phase\":\"Running\"", 3000);
    cJSON *body = cJSON_Parse(r->body);
    assert_non_null(body);
    assert_string_equal(gd_json_str_or(body, "status.podIP", ""), "127.0.1.1");
    assert_string_equal(gd_json_str_or(body, "status.hostIP", ""), "127.0.0.1");
    const cJSON *cs = cJSON_GetArrayItem(gd_json_path(body, "status.containerStatuses"), 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cs, "ready")));
    assert_int_equal(gd_json_int_or(cs, "restartCount", -1), 0);
    assert_non_null(gd_json_path(cs, "state.running.startedAt"));
    const cJSON *c;
    int ready = 0;
    cJSON_ArrayForEach(c, gd_json_path(body, "status.conditions"))
        ready += strcmp(gd_json_str_or(c, "status", ""), "True") == 0;
    assert_int_equal(ready, 4);              /* Initialized, Ready, ContainersReady, PodScheduled */
    cJSON_Delete(body);

    /* the emptyDir is a directory under the pod's state dir; the env rule pointed at it */
    char vol[NA_PATH_MAX + 64], out[NA_PATH_MAX + 128], want[NA_PATH_MAX + 128], got[NA_PATH_MAX + 128] = "";
    snprintf(vol, sizeof vol, "%s/pods/ns_p1_uid-p1/volumes/scratch", f->a.state_dir);
    snprintf(out, sizeof out, "%s/out", vol);
    snprintf(want, sizeof want, "%s 127.0.1.1 node-1\n", vol);
    for (int i = 0; i < 100 && !*got; i++) {
        FILE *fp = fopen(out, "r");
        if (fp) { if (!fgets(got, sizeof got, fp)) got[0] = '\0'; fclose(fp); }
        if (!*got) gd_sleep_ms(20);
    }
    assert_string_equal(got, want);

    /* graceful deletion: sleep dies on TERM, then the agent deletes with grace 0 */
    int from = httpd_request_count(f->h);
    cJSON *d = pod("p1", "x", NULL, NULL);
    gd_json_set(d, "metadata.deletionTimestamp", cJSON_CreateString("2026-01-01T00:00:00Z"));
    gd_json_set(d, "metadata.deletionGracePeriodSeconds", cJSON_CreateNumber(30));
    int64_t t0 = gd_mono_ms();
    apply(f, "MODIFIED", d);
    r = tick_until(f, from, "DELETE", "/api/v1/namespaces/ns/pods/p1", NULL, 3000);
    assert_true(gd_mono_ms() - t0 < 3000);   /* did not wait out the 30 s: the process was gone */
    assert_non_null(strstr(r->body, "\"gracePeriodSeconds\":0"));
    assert_non_null(strstr(r->body, "uid-p1"));
    assert_null(f->a.pods);
    assert_int_equal(access(vol, F_OK), -1);   /* emptyDir removed with the pod */
    char ip[16];
    assert_int_equal(na_ipam_alloc(&f->a.ipam, ip), GD_OK);
    assert_string_equal(ip, "127.0.1.2");       /* round-robin: the freed address waits */
}

static void test_grace_then_kill(void **state)
{
    fixture *f = *state;
    /* the shell says when its trap is set (a file in its emptyDir): deleting it before would
     * test nothing */
    apply(f, "ADDED", pod("stubborn", "trap '' TERM; : > \\\"$DATA/trapped\\\"; while :; do sleep 1; done",
                          ",\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{}}]",
                          ",\"env\":[{\"name\":\"DATA\",\"value\":\"/data\"}],"
                          "\"volumeMounts\":[{\"name\":\"scratch\",\"mountPath\":\"/data\"}]"));
    tick_until(f, 0, "PATCH", "/pods/stubborn/status", "\"phase\":\"Running\"", 3000);
    char trapped[NA_PATH_MAX + 64];
    snprintf(trapped, sizeof trapped, "%s/pods/ns_stubborn_uid-stubborn/volumes/scratch/trapped",
             f->a.state_dir);
    WAIT_UNTIL(access(trapped, F_OK) == 0, 5000);
    assert_int_equal(access(trapped, F_OK), 0);
    int from = httpd_request_count(f->h);
    cJSON *d = pod("stubborn", "x", NULL, NULL);
    gd_json_set(d, "metadata.deletionTimestamp", cJSON_CreateString("2026-01-01T00:00:00Z"));
    gd_json_set(d, "metadata.deletionGracePeriodSeconds", cJSON_CreateNumber(1));
    int64_t t0 = gd_mono_ms();
    apply(f, "MODIFIED", d);
    tick_until(f, from, "DELETE", "/pods/stubborn", "\"gracePeriodSeconds\":0", 4000);
    int64_t took = gd_mono_ms() - t0;
    assert_true(took >= 900);                  /* TERM was ignored: it waited the grace period */
    assert_true(took < 3000);
    assert_null(f->a.pods);
}

static void test_crash_loop_and_deleted(void **state)
{
    fixture *f = *state;
    apply(f, "ADDED", pod("crash", "exit 3", NULL, NULL));
    /* restartCount counts restarts done (as kubelet's): 2 once it was started a third time;
     * then it exits again and waits in CrashLoopBackOff */
    tick_until(f, 0, "PATCH", "/pods/crash/status", "\"restartCount\":2", 6000);
    const httpd_req *r = tick_until(f, httpd_request_count(f->h) - 1, "PATCH", "/pods/crash/status",
                                    "CrashLoopBackOff", 6000);
    cJSON *body = cJSON_Parse(r->body);
    assert_int_equal(gd_json_int_or(cJSON_GetArrayItem(gd_json_path(body, "status.containerStatuses"), 0),
                                    "restartCount", -1), 2);
    const cJSON *cs = cJSON_GetArrayItem(gd_json_path(body, "status.containerStatuses"), 0);
    assert_int_equal(gd_json_int_or(cs, "lastState.terminated.exitCode", -1), 3);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cs, "ready")));
    cJSON_Delete(body);
    /* gone from the API (force delete): stop it, and send no DELETE of our own */
    int from = httpd_request_count(f->h);
    apply(f, "DELETED", pod("crash", "x", NULL, NULL));
    for (int i = 0; i < 50 && f->a.pods; i++) { na_pods_tick(&f->a); gd_sleep_ms(20); }
    assert_null(f->a.pods);
    for (int i = from; i < httpd_request_count(f->h); i++)
        assert_string_not_equal(httpd_request(f->h, i)->method, "DELETE");
}

static void test_restart_policy_never(void **state)
{
    fixture *f = *state;
    apply(f, "ADDED", pod("ok", "exit 0", ",\"restartPolicy\":\"Never\"", NULL));
    apply(f, "ADDED", pod("bad", "exit 4", ",\"restartPolicy\":\"Never\"", NULL));
    tick_until(f, 0, "PATCH", "/pods/ok/status", "\"phase\":\"Succeeded\"", 3000);
    const httpd_req *r = tick_until(f, 0, "PATCH", "/pods/bad/status", "\"phase\":\"Failed\"", 3000);
    assert_non_null(strstr(r->body, "\"exitCode\":4"));
}

static void test_config_errors(void **state)
{
    fixture *f = *state;
    cJSON *p = pod("noimg", "true", NULL, NULL);
    cJSON *ctr = cJSON_GetArrayItem(gd_json_path(p, "spec.containers"), 0);
    cJSON_ReplaceItemInObject(ctr, "image", cJSON_CreateString("unknown/image:1"));
    apply(f, "ADDED", p);
    const httpd_req *r = tick_until(f, 0, "PATCH", "/pods/noimg/status", "ErrImagePull", 3000);
    assert_non_null(strstr(r->body, "\"phase\":\"Pending\""));
    assert_non_null(strstr(r->body, "--image-map"));

    httpd_resp nf = { .status = 404, .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}" };
    httpd_push(f->h, &nf);
    int from = httpd_request_count(f->h);
    apply(f, "ADDED", pod("nocm", "true", NULL,
                          ",\"env\":[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"k\"}}}]"));
    r = tick_until(f, from, "PATCH", "/pods/nocm/status", "CreateContainerConfigError", 3000);
    assert_non_null(strstr(r->body, "configmap ns/cm"));
    r = tick_until(f, from, "GET", "/api/v1/namespaces/ns/configmaps/cm", NULL, 10);
    assert_non_null(r);
}

static void test_readiness_probe(void **state)
{
    fixture *f = *state;
    /* the pod will get 127.0.1.1 (fresh pool); listen there on a free port */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    inet_pton(AF_INET, "127.0.1.1", &sa.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 8), 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    char ctr[256];
    snprintf(ctr, sizeof ctr, ",\"readinessProbe\":{\"tcpSocket\":{\"port\":%d},\"periodSeconds\":1,\"failureThreshold\":1}",
             ntohs(sa.sin_port));
    apply(f, "ADDED", pod("probed", "exec sleep 30", NULL, ctr));
    tick_until(f, 0, "PATCH", "/pods/probed/status", "\"ready\":true", 3000);
    int from = httpd_request_count(f->h);
    close(fd);
    const httpd_req *r = tick_until(f, from, "PATCH", "/pods/probed/status", "\"ready\":false", 3000);
    assert_non_null(strstr(r->body, "\"phase\":\"Running\""));
    assert_non_null(strstr(r->body, "ContainersNotReady"));
}

/* What a remote worker pod needs (deploy/overlays/remote-workers): a Secret volume becomes
 * files with the volume's mode, an argument "--flag=<mountPath>/file" reaches the file, and a
 * pod naming its own ServiceAccount gets a token bound to it through KUBECONFIG. */
static void test_secret_volume_and_service_account(void **state)
{
    fixture *f = *state;
    httpd_resp sec = { .body = "{\"kind\":\"Secret\",\"data\":{\"worker.key\":\"c2VjcmV0LWtleQ==\",\"server.pub\":\"cHVi\"}}" };
    httpd_resp tok = { .status = 201, .body = "{\"kind\":\"TokenRequest\",\"status\":{\"token\":\"tok-123\"}}" };
    httpd_push(f->h, &sec);
    httpd_push(f->h, &tok);
    apply(f, "ADDED", pod("rw", "cat \\\"${1#--key=}\\\" > key.out; cat \\\"$KUBECONFIG\\\" > kc.out; exec sleep 30",
                          ",\"serviceAccountName\":\"godis-worker\","
                          "\"volumes\":[{\"name\":\"keys\",\"secret\":{\"secretName\":\"curve\",\"defaultMode\":256}}]",
                          ",\"args\":[\"sh\",\"--key=/etc/keys/worker.key\"],"
                          "\"volumeMounts\":[{\"name\":\"keys\",\"mountPath\":\"/etc/keys\",\"readOnly\":true}]"));
    tick_until(f, 0, "PATCH", "/pods/rw/status", "\"phase\":\"Running\"", 3000);
    const httpd_req *r = tick_until(f, 0, "GET", "/api/v1/namespaces/ns/secrets/curve", NULL, 10);
    r = tick_until(f, 0, "POST", "/api/v1/namespaces/ns/serviceaccounts/godis-worker/token", "\"uid\":\"uid-rw\"", 10);
    assert_non_null(strstr(r->body, "\"kind\":\"Pod\""));
    char dir[NA_PATH_MAX + 64], path[NA_PATH_MAX + 128], got[512] = "";
    snprintf(dir, sizeof dir, "%s/pods/ns_rw_uid-rw", f->a.state_dir);
    snprintf(path, sizeof path, "%s/volumes/keys/worker.key", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0400);            /* defaultMode 256 = 0400 */
    snprintf(path, sizeof path, "%s/key.out", dir);
    for (int i = 0; i < 100 && !*got; i++) {
        FILE *fp = fopen(path, "r");
        if (fp) { if (!fgets(got, sizeof got, fp)) got[0] = '\0'; fclose(fp); }
        if (!*got) gd_sleep_ms(20);
    }
    assert_string_equal(got, "secret-key");                /* the process read the file */
    snprintf(path, sizeof path, "%s/serviceaccount/token", dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(got, sizeof got, fp));
    fclose(fp);
    assert_string_equal(got, "tok-123");
    snprintf(path, sizeof path, "%s/kc.out", dir);
    char kc[2048] = "", want[NA_PATH_MAX + 128];
    for (int i = 0; i < 100 && !strstr(kc, "current-context"); i++) {
        fp = fopen(path, "r");
        size_t n = fp ? fread(kc, 1, sizeof kc - 1, fp) : 0;
        kc[n] = '\0';
        if (fp) fclose(fp);
        if (!strstr(kc, "current-context")) gd_sleep_ms(20);
    }
    snprintf(want, sizeof want, "tokenFile: \"%s/serviceaccount/token\"", dir);
    assert_non_null(strstr(kc, want));
    assert_non_null(strstr(kc, httpd_url(f->h)));
    assert_non_null(strstr(kc, "namespace: \"ns\""));
    k8s_config *cfg = NULL;
    char err[256];
    assert_int_equal(k8s_config_from_yaml(kc, strlen(kc), "kc", NULL, &cfg, err, sizeof err), GD_OK);
    assert_string_equal(cfg->token, "tok-123");
    k8s_config_destroy(&cfg);

    /* the default ServiceAccount gets no token: no TokenRequest */
    int from = httpd_request_count(f->h);
    apply(f, "ADDED", pod("plain", "exec sleep 30", ",\"serviceAccountName\":\"default\"", NULL));
    tick_until(f, from, "PATCH", "/pods/plain/status", "\"phase\":\"Running\"", 3000);
    for (int i = from; i < httpd_request_count(f->h); i++)
        assert_null(strstr(httpd_request(f->h, i)->uri, "/token"));
}

/* The file a Secret volume shows for key (through its ..data link), "" when absent. */
static void vol_read(const char *vol, const char *key, char *out, size_t cap)
{
    char path[NA_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", vol, key);
    out[0] = '\0';
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    size_t n = fread(out, 1, cap - 1, fp);
    out[n] = '\0';
    fclose(fp);
}

static void vol_data(const char *vol, char *out, size_t cap)
{
    char path[NA_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/..data", vol);
    ssize_t n = readlink(path, out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
}

/* Queues the Secret body several times (status PATCHes may take some: their answer is not
 * read) and ticks until the agent has read the Secret twice more: a pod syncs one pass at a
 * time, so the first of those passes (the one that saw this body) is then complete. */
static void resync_with(fixture *f, const char *secret_body)
{
    httpd_resp sec = { .body = secret_body };
    for (int i = 0; i < 10; i++) httpd_push(f->h, &sec);
    int from = httpd_request_count(f->h), seen = 0;
    int64_t deadline = gd_mono_ms() + 3000;
    while (seen < 2) {
        na_pods_tick(&f->a);
        for (int n = httpd_request_count(f->h); from < n; from++) {
            const httpd_req *r = httpd_request(f->h, from);
            if (!strcmp(r->method, "GET") && strstr(r->uri, "/api/v1/namespaces/ns/secrets/curve")) seen++;
        }
        if (gd_mono_ms() > deadline) fail_msg("the Secret was read %d times in 3 s, not twice", seen);
        gd_sleep_ms(20);
    }
}

/* Rotated keys reach a running pod as on a real kubelet: every --sync-frequency the Secret is
 * read again and, when it changed, the volume swaps to the new version through its ..data
 * link (keys added and removed, the old version gone, a new inode behind the same path, which
 * the manager's allow-list reload keys on); an unchanged Secret writes nothing. Files of an
 * older layout in the directory are replaced at the start. */
static void test_secret_volume_refreshed(void **state)
{
    fixture *f = *state;
    f->a.sync_frequency_ms = 100;
    char vol[NA_PATH_MAX + 64], path[NA_PATH_MAX + 256], got[256], data1[128], data2[128];
    snprintf(vol, sizeof vol, "%s/pods/ns_rot_uid-rot/volumes/keys", f->a.state_dir);
    assert_true(na_mkdirs(vol));
    snprintf(path, sizeof path, "%s/allow", vol);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("left by an older agent", fp);
    fclose(fp);
    httpd_resp sec = { .body = "{\"kind\":\"Secret\",\"data\":{\"allow\":\"a2V5LTE=\",\"server.pub\":\"cHVi\"}}" };
    httpd_push(f->h, &sec);                       /* allow: key-1 */
    apply(f, "ADDED", pod("rot", "exec sleep 30",
                          ",\"volumes\":[{\"name\":\"keys\",\"secret\":{\"secretName\":\"curve\",\"defaultMode\":288}}]",
                          ",\"volumeMounts\":[{\"name\":\"keys\",\"mountPath\":\"/etc/keys\",\"readOnly\":true}]"));
    tick_until(f, 0, "PATCH", "/pods/rot/status", "\"phase\":\"Running\"", 3000);
    vol_read(vol, "allow", got, sizeof got);
    assert_string_equal(got, "key-1");
    char link[256];
    ssize_t n = readlink(path, link, sizeof link - 1);
    assert_true(n > 0);
    link[n] = '\0';
    assert_string_equal(link, "..data/allow");    /* the kubelet's layout */
    vol_data(vol, data1, sizeof data1);
    assert_int_equal(strncmp(data1, "..20", 4), 0);
    struct stat st1, st2;
    assert_int_equal(stat(path, &st1), 0);
    assert_int_equal(st1.st_mode & 0777, 0440);   /* defaultMode 288 */

    /* rotated: allow changes, server.pub goes, worker.key comes */
    resync_with(f, "{\"kind\":\"Secret\",\"data\":{\"allow\":\"a2V5LTEKa2V5LTI=\",\"worker.key\":\"d2s=\"}}");
    vol_read(vol, "allow", got, sizeof got);
    assert_string_equal(got, "key-1\nkey-2");
    vol_read(vol, "worker.key", got, sizeof got);
    assert_string_equal(got, "wk");
    snprintf(path, sizeof path, "%s/server.pub", vol);
    assert_int_equal(lstat(path, &st2), -1);      /* a key the Secret lost is gone */
    vol_data(vol, data2, sizeof data2);
    assert_string_not_equal(data2, data1);
    snprintf(path, sizeof path, "%s/%s", vol, data1);
    assert_int_equal(lstat(path, &st2), -1);      /* the old version removed */
    snprintf(path, sizeof path, "%s/allow", vol);
    assert_int_equal(stat(path, &st2), 0);
    assert_true(st2.st_ino != st1.st_ino);        /* what the allow-list reload looks at */
    assert_int_equal(st2.st_mode & 0777, 0440);

    /* the same Secret again: nothing is written */
    resync_with(f, "{\"kind\":\"Secret\",\"data\":{\"allow\":\"a2V5LTEKa2V5LTI=\",\"worker.key\":\"d2s=\"}}");
    vol_data(vol, data1, sizeof data1);
    assert_string_equal(data1, data2);
    assert_int_equal(stat(path, &st1), 0);
    assert_true(st1.st_ino == st2.st_ino);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_run_and_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_then_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_loop_and_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_policy_never, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readiness_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_and_delete, setup_workers, teardown),
        cmocka_unit_test_setup_teardown(test_grace_then_kill, setup_workers, teardown),
        cmocka_unit_test_setup_teardown(test_crash_loop_and_deleted, setup_workers, teardown),
        cmocka_unit_test_setup_teardown(test_restart_policy_never, setup_workers, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors, setup_workers, teardown),
        cmocka_unit_test_setup_teardown(test_readiness_probe, setup_workers, teardown),
        cmocka_unit_test_setup_teardown(test_secret_volume_and_service_account, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_volume_refreshed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_volume_refreshed, setup_workers, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
