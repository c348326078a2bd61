/* e2e_operator.c — see e2e_operator.h. */
#include "e2e_operator.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

int64_t e2e_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the operator ---- */

void e2e_operator_spawn(e2e_operator *op, int i)
{
    e2e_remove_dir(op->rundir[i]);              /* a killed replica's leftovers */
    char log[512];
    snprintf(log, sizeof log, "%s/manager-%d.log", op->logdir, i);
    const char *argv[40] = {"bin/godis-manager", "--kubeconfig", getenv("KUBECONFIG"),
        "--leader-elect", "--leader-elect-resource-name", op->lease,
        "--leader-elect-resource-namespace", "default", "--leader-elect-identity", op->ident[i],
        "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
        "--leader-elect-retry-period", "1s", "--workers", "2", "--max-concurrent-reconciles", "4",
        "--runtime-dir", op->rundir[i], "--health-probe-bind-address", "0",
        "--metrics-bind-address", "0", "--log-level", "info"};
    int n = 0;
    while (argv[n]) n++;
    if (op->worker_arg) {
        argv[n++] = "--worker-arg";
        argv[n++] = op->worker_arg;
    }
    argv[n] = NULL;
    op->pid[i] = e2e_spawn(argv, log);
}

bool e2e_operator_start(e2e_operator *op, const char *name, const char *worker_arg)
{
    memset(op, 0, sizeof *op);
    op->worker_arg = worker_arg;
    snprintf(op->lease, sizeof op->lease, "%s-%d", name, (int)getpid());
    e2e_log_dir(op->logdir, sizeof op->logdir, name);
    for (int i = 0; i < 2; i++) {
        snprintf(op->ident[i], sizeof op->ident[i], "%s-%d-%d", name, (int)getpid(), i);
        snprintf(op->rundir[i], sizeof op->rundir[i], "/tmp/%s-%d-%d", name, (int)getpid(), i);
        e2e_operator_spawn(op, i);
    }
    fprintf(stderr, "%s: logs in %s\n", name, op->logdir);
    return op->pid[0] > 0 && op->pid[1] > 0;
}

void e2e_operator_stop(e2e_operator *op, k8s_client *c)
{
    for (int i = 0; i < 2; i++) {
        int st = e2e_stop(op->pid[i], 15000);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fprintf(stderr, "manager %d stopped with status 0x%x\n", i, st);
        e2e_remove_dir(op->rundir[i]);
    }
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_delete(c, &K8S_RES_LEASES, "default", op->lease, &o, NULL);
}

int e2e_operator_leader(e2e_operator *op, k8s_client *c)
{
    cJSON *l = NULL;
    if (k8s_get(c, &K8S_RES_LEASES, "default", op->lease, &l, NULL) != GD_OK) return -1;
    const char *holder = gd_json_str_or(l, "spec.holderIdentity", "");
    int who = !strcmp(holder, op->ident[0]) ? 0 : !strcmp(holder, op->ident[1]) ? 1 : -1;
    cJSON_Delete(l);
    return who;
}

void e2e_operator_kill(e2e_operator *op, int i)
{
    static const char *const kinds[] = {"godis-worker", "godis-informer"};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        pid_t kids[32];
        int n = e2e_children(op->pid[i], kinds[k], kids, 32);
        for (int j = 0; j < n; j++) kill(kids[j], SIGKILL);
    }
    kill(op->pid[i], SIGKILL);
    waitpid(op->pid[i], NULL, 0);
    op->pid[i] = 0;
}

/* ---- objects ---- */

int e2e_count_all(k8s_client *c, const k8s_resource *r, const char *ns, const char *sel)
{
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *list = NULL;
    if (k8s_list(c, r, ns, &lo, &list, NULL) != GD_OK) return -1;
    int n = cJSON_GetArraySize(gd_json_path(list, "items"));
    cJSON_Delete(list);
    return n;
}

bool e2e_delete(k8s_client *c, const k8s_resource *r, const char *ns, const char *name, long grace)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.propagation_policy = "Background";
    o.grace_period_seconds = grace;
    k8s_status st = {0};
    gd_err e = k8s_delete(c, r, ns, name, &o, &st);
    if (e) fprintf(stderr, "delete %s %s: %s %s\n", r->resource, name, gd_strerror(e), st.message);
    return e == GD_OK;
}

static bool deleted_event(const char *type, const cJSON *obj, void *arg)
{
    (void)obj;
    (void)arg;
    return strcmp(type, "DELETED") == 0;
}

bool e2e_ns_delete_wait(k8s_client *c, const char *ns, int timeout_ms)
{
    e2e_ns_delete(c, ns);
    return e2e_wait_gone(c, &K8S_RES_NAMESPACES, NULL, ns, timeout_ms);
}

bool e2e_wait_gone(k8s_client *c, const k8s_resource *r, const char *ns, const char *name, int timeout_ms)
{
    char fs[300];
    snprintf(fs, sizeof fs, "metadata.name=%s", name);
    int64_t deadline = gd_mono_ms() + timeout_ms;
    for (;;) {
        if (k8s_get(c, r, ns, name, NULL, NULL) == GD_ERR_NOT_FOUND) return true;
        int64_t left = deadline - gd_mono_ms();
        if (left <= 0) return false;
        /* a watch started after the object went would never see it go: look again then */
        if (e2e_watch_until(c, r, ns, NULL, fs, deleted_event, NULL, left < 5000 ? (int)left : 5000))
            return true;
    }
}

/* ---- pods, from a watch ---- */

static int record_pod(void *ud, const char *type, cJSON *pod)
{
    e2e_pod_recorder *r = ud;
    if (strcmp(type, "BOOKMARK") == 0 || strcmp(type, "ERROR") == 0) return r->stop;
    pthread_mutex_lock(&r->mu);
    e2e_pod_rec *p = NULL;
    for (int i = 0; i < r->n && !p; i++)
        if (strcmp(r->pods[i].uid, gd_meta_uid(pod)) == 0) p = &r->pods[i];
    if (!p && r->n < 128) {
        p = &r->pods[r->n++];
        memset(p, 0, sizeof *p);
        snprintf(p->uid, sizeof p->uid, "%s", gd_meta_uid(pod));
        const char *m = gd_meta_label(pod, "node-name");
        snprintf(p->member, sizeof p->member, "%s", m ? m : "");
    }
    if (p) {
        const cJSON *cs;
        cJSON_ArrayForEach(cs, gd_json_path(pod, "status.containerStatuses")) {
            int rc = (int)gd_json_int_or(cs, "restartCount", 0);
            if (rc > p->restarts) p->restarts = rc;
        }
        const cJSON *cond;
        cJSON_ArrayForEach(cond, gd_json_path(pod, "status.conditions"))
            if (!strcmp(gd_json_str_or(cond, "type", ""), "Ready") &&
                !strcmp(gd_json_str_or(cond, "status", ""), "True"))
                p->ready_seen = true;
        if (strcmp(type, "DELETED") == 0 && !p->deleted) {
            p->deleted = true;
            p->deleted_us = e2e_wall_us();
        }
    }
    pthread_mutex_unlock(&r->mu);
    return r->stop;
}

static void *recorder_main(void *arg)
{
    e2e_pod_recorder *r = arg;
    while (!r->stop) {
        k8s_watch_opts o = {0};
        o.list.label_selector = r->sel;
        o.list.timeout_seconds = 60;
        o.stop = &r->stop;
        k8s_watch(r->c, &K8S_RES_PODS, r->ns, &o, record_pod, r, NULL);
    }
    return NULL;
}

bool e2e_pod_recorder_start(e2e_pod_recorder *r, const char *ns, const char *cluster)
{
    memset(r, 0, sizeof *r);
    r->c = e2e_client();
    snprintf(r->ns, sizeof r->ns, "%s", ns);
    snprintf(r->sel, sizeof r->sel, "cluster-name=%s", cluster);
    pthread_mutex_init(&r->mu, NULL);
    return r->c && pthread_create(&r->th, NULL, recorder_main, r) == 0;
}

void e2e_pod_recorder_stop(e2e_pod_recorder *r)
{
    __atomic_store_n(&r->stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(r->th, NULL);
    k8s_client_destroy(&r->c);
    pthread_mutex_destroy(&r->mu);
}

int e2e_pod_recorder_restarts(e2e_pod_recorder *r, const char *godis)
{
    int max = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->pods[i].member, godis) && r->pods[i].restarts > max) max = r->pods[i].restarts;
    pthread_mutex_unlock(&r->mu);
    return max;
}

int64_t e2e_pod_recorder_gone_us(e2e_pod_recorder *r, const char *godis)
{
    int64_t last = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        if (strcmp(r->pods[i].member, godis) != 0) continue;
        if (!r->pods[i].deleted) { last = 0; break; }
        if (r->pods[i].deleted_us > last) last = r->pods[i].deleted_us;
    }
    pthread_mutex_unlock(&r->mu);
    return last;
}

int e2e_pod_recorder_new_ready(e2e_pod_recorder *r, const char *godis, char before[][64], int nb)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        if (strcmp(r->pods[i].member, godis) != 0 || !r->pods[i].ready_seen) continue;
        bool old = false;
        for (int k = 0; k < nb; k++) old |= !strcmp(before[k], r->pods[i].uid);
        n += !old;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

int e2e_member_pod_uids(k8s_client *c, const char *ns, const char *godis, char uids[][64], int cap)
{
    char sel[300];
    snprintf(sel, sizeof sel, "node-name=%s", godis);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *pods = NULL;
    if (k8s_list(c, &K8S_RES_PODS, ns, &lo, &pods, NULL) != GD_OK) return 0;
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(pods, "items"))
        if (n < cap) snprintf(uids[n++], 64, "%s", gd_meta_uid(p));
    cJSON_Delete(pods);
    return n;
}

/* ---- the audit log ---- */

int e2e_operator_writes(int64_t since_us, audit_event **out)
{
    return e2e_writes_by(since_us, "godis-operator", out);
}

int e2e_writes_by(int64_t since_us, const char *ua_part, audit_event **out)
{
    const char *path = getenv("DEVCLUSTER_AUDIT_LOG");
    audit_event *all = NULL;
    int n = path && *path ? audit_events(path, ua_part, &all, NULL) : -1;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (all[i].recv_us >= since_us) all[k++] = all[i];
    *out = all;
    return n < 0 ? -1 : k;
}

const audit_event *e2e_first_write(const audit_event *evs, int n, const char *verb,
                                   const char *resource, const char *name_prefix)
{
    for (int i = 0; i < n; i++) {
        if (*verb && strcmp(evs[i].verb, verb) != 0) continue;
        if (strcmp(evs[i].resource, resource) != 0) continue;
        if (strncmp(evs[i].name, name_prefix, strlen(name_prefix)) != 0) continue;
        return &evs[i];
    }
    return NULL;
}

/* ---- the figure ---- */

static int64_t g_longest_us, g_longest_id;
static int g_measured;

void e2e_note_forgotten_runtime(int64_t id, int64_t forget_us, int64_t end_us)
{
    int64_t ran = end_us > forget_us ? end_us - forget_us : 0;
    fprintf(stderr, "figure: member %lld ran %.3f s after its forget\n", (long long)id, ran / 1e6);
    g_measured++;
    if (ran >= g_longest_us) {
        g_longest_us = ran;
        g_longest_id = id;
    }
}

void e2e_print_forgotten_runtimes(const char *what)
{
    fprintf(stderr, "figure: %s: longest a forgotten member's process ran after its forget: "
            "%.3f s (member %lld), over %d forgotten members\n", what, g_longest_us / 1e6,
            (long long)g_longest_id, g_measured);
}

int e2e_operator_suite_setup(k8s_client **c, e2e_operator *op, const char *name,
                             const char *worker_arg)
{
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    *c = e2e_client();
    if (!*c || !e2e_install_crds(*c)) return -1;
    return e2e_operator_start(op, name, worker_arg) ? 0 : -1;
}

int e2e_operator_suite_teardown(k8s_client **c, e2e_operator *op, const char *figure_label)
{
    e2e_print_forgotten_runtimes(figure_label);
    e2e_operator_stop(op, *c);
    k8s_client_destroy(c);
    return 0;
}
