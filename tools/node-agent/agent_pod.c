/* agent_pod.c — the pod table, and what a kubelet's pod workers do for each pod.
 *
 * Life of a pod here: first seen bound to one of our nodes → an IP from the pool (or the one
 * in its status after an agent restart) → volume directories → each container started as a
 * process (image map, env, argv) → readiness probes → status PATCHed whenever it changes.
 * A process that exits is restarted per restartPolicy with exponential backoff. A pod with a
 * deletionTimestamp gets TERM, its grace period, KILL, and is then deleted with
 * gracePeriodSeconds=0, which is how kubelet finishes a graceful deletion.
 *
 * Volumes (agent_pod_volumes.c), container processes (agent_pod_ctr.c) and the status
 * (agent_pod_status.c) are files of their own; this one holds the table and the loop.
 *
 * Threads: the main loop owns the table (events, IPs, reaping, termination); the work that
 * waits on the API server or a socket — volume setup, container start, probes, the status
 * PATCH — is sync_pod, run for one pod at a time on a pod worker (agent_workers.c) while the
 * pod is marked busy. While busy, the main loop does not touch the pod: watch events for it
 * wait in pending_obj / pending_deleted and exits of its processes in a->exits, and both are
 * applied once the worker is done. Without a pool (a->workers NULL, the unit tests) sync_pod
 * runs inline on every tick, as before. */
#include "agent_pod.h"
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

struct na_exit {
    pid_t pid;
    int wstatus;
};

static na_pod *find_pod(na_agent *a, const char *uid)
{
    for (na_pod *p = a->pods; p; p = p->next)
        if (strcmp(p->uid, uid) == 0) return p;
    return NULL;
}

static void pod_free(na_pod *p)
{
    cJSON_Delete(p->obj);
    cJSON_Delete(p->pending_obj);
    free(p->c);
    free(p->last_status);
    free(p);
}

static void unlink_pod(na_agent *a, na_pod *victim)
{
    for (na_pod **pp = &a->pods; *pp; pp = &(*pp)->next)
        if (*pp == victim) { *pp = victim->next; break; }
    if (*victim->ip) na_ipam_release(&a->ipam, victim->ip);
    char vols[NA_PATH_MAX];
    if (snprintf(vols, sizeof vols, "%s/volumes", victim->dir) < (int)sizeof vols) na_rmtree(vols);
    gd_log(GD_LOG_INFO, "pod removed", "pod", victim->name, "namespace", victim->ns, NULL);
    pod_free(victim);
}

/* ------------------------------------------------------------------ creation */

/* Restart count and "was running" from the status a previous agent posted. */
static void adopt_container_status(const cJSON *pod, na_ctr *c)
{
    const cJSON *it, *list = gd_json_path(pod, "status.containerStatuses");
    cJSON_ArrayForEach(it, list) {
        if (strcmp(gd_json_str_or(it, "name", ""), c->name) != 0) continue;
        c->restart_count = (int)gd_json_int_or(it, "restartCount", 0);
        if (gd_json_path(it, "state.running")) c->restart_count++;  /* it died with the old agent */
    }
}

static na_pod *pod_new(na_agent *a, const cJSON *obj)
{
    const cJSON *ctrs = gd_json_path(obj, "spec.containers");
    int nc = cJSON_GetArraySize(ctrs);
    na_pod *p = calloc(1, sizeof *p);
    if (!p || nc <= 0 || !(p->c = calloc((size_t)nc, sizeof *p->c))) { free(p); return NULL; }
    snprintf(p->ns, sizeof p->ns, "%s", gd_meta_namespace(obj));
    snprintf(p->name, sizeof p->name, "%s", gd_meta_name(obj));
    snprintf(p->uid, sizeof p->uid, "%s", gd_meta_uid(obj));
    snprintf(p->node, sizeof p->node, "%s", gd_json_str_or(obj, "spec.nodeName", ""));
    snprintf(p->restart_policy, sizeof p->restart_policy, "%s",
             gd_json_str_or(obj, "spec.restartPolicy", "Always"));
    p->obj = cJSON_Duplicate(obj, 1);
    p->nc = nc;
    p->start_wall_ms = gd_wall_ms();
    p->ready_since_wall_ms = p->start_wall_ms;
    p->status_dirty = true;
    atomic_init(&p->busy, false);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ctrs) {
        na_ctr *c = &p->c[i++];
        snprintf(c->name, sizeof c->name, "%s", gd_json_str_or(it, "name", "main"));
        snprintf(c->image, sizeof c->image, "%s", gd_json_str_or(it, "image", ""));
        gd_backoff_init(&c->backoff, 1000, 30000, 2.0, 0.1, 600000);
        char err[256] = "";
        if (na_probe_parse(it, "readinessProbe", &c->probe, err, sizeof err) != GD_OK)
            gd_log(GD_LOG_WARN, "readiness probe ignored", "pod", p->name, "container", c->name, "error", err, NULL);
        if (c->probe.kind == NA_PROBE_UNSUPPORTED)
            gd_log(GD_LOG_WARN, "readiness probe type not supported (tcpSocket/httpGet only); treating as ready",
                   "pod", p->name, "container", c->name, NULL);
        adopt_container_status(obj, c);
    }
    /* An address the pod already had (agent restart) is kept when it is still free. New
     * addresses are handed out by tick_pod only after the first full list, so a new pod
     * cannot take the address of a running pod that comes later in that list. */
    const char *old_ip = gd_json_str_or(obj, "status.podIP", "");
    if (*old_ip && na_ipam_reserve(&a->ipam, old_ip) == GD_OK) snprintf(p->ip, sizeof p->ip, "%s", old_ip);
    char key[3 * NA_NAME_MAX];
    snprintf(key, sizeof key, "%s_%s_%s", p->ns, p->name, p->uid);
    char pods[NA_PATH_MAX];
    if (snprintf(pods, sizeof pods, "%s/pods", a->state_dir) >= (int)sizeof pods ||
        !na_path_join(p->dir, sizeof p->dir, pods, key) || !na_mkdirs(p->dir))
        gd_log(GD_LOG_ERROR, "cannot create pod directory", "pod", p->name, "dir", p->dir,
               "error", strerror(errno), NULL);
    if (cJSON_GetArraySize(gd_json_path(obj, "spec.initContainers")) > 0)
        gd_log(GD_LOG_WARN, "initContainers are not run by the node agent; starting the containers",
               "pod", p->name, NULL);
    gd_log(GD_LOG_INFO, "pod accepted", "pod", p->name, "namespace", p->ns, "node", p->node,
           "ip", *p->ip ? p->ip : "(new)", NULL);
    return p;
}


/* ------------------------------------------------------------------ termination */

static void signal_pod(na_pod *p, int sig)
{
    for (int i = 0; i < p->nc; i++)
        if (p->c[i].pid > 0) kill(-p->c[i].pid, sig);
}

static void begin_termination(na_pod *p, int64_t grace_ms)
{
    if (p->terminating) {
        /* A second delete may shorten the grace period, never extend it. */
        int64_t d = gd_mono_ms() + grace_ms;
        if (d < p->kill_deadline_ms) p->kill_deadline_ms = d;
        return;
    }
    p->terminating = true;
    p->kill_deadline_ms = gd_mono_ms() + grace_ms;
    char g[24];
    snprintf(g, sizeof g, "%lld", (long long)(grace_ms / 1000));
    gd_log(GD_LOG_INFO, "stopping pod", "pod", p->name, "namespace", p->ns, "grace-seconds", g, NULL);
    signal_pod(p, SIGTERM);
}

static int64_t grace_ms_of(const cJSON *pod)
{
    int64_t g = gd_json_int_or(pod, "metadata.deletionGracePeriodSeconds",
                               gd_json_int_or(pod, "spec.terminationGracePeriodSeconds", 30));
    return g < 0 ? 0 : g > 3600 ? 3600000 : g * 1000;
}

static bool any_running(const na_pod *p)
{
    for (int i = 0; i < p->nc; i++)
        if (p->c[i].pid > 0) return true;
    return false;
}

static void delete_in_api(na_agent *a, const char *ns, const char *name, const char *uid)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.grace_period_seconds = 0;
    o.precondition_uid = uid;
    k8s_status st;
    gd_err e = k8s_delete(a->api, &K8S_RES_PODS, ns, name, &o, &st);
    if (e != GD_OK && e != GD_ERR_NOT_FOUND && e != GD_ERR_CONFLICT)
        gd_log(GD_LOG_WARN, "final pod delete failed", "pod", name, "err", gd_strerror(e), "message", st.message, NULL);
}

/* ------------------------------------------------------------------ events and the loop */

/* An event for a pod we already run; the pod is not busy. */
static void apply_to_pod(na_pod *p, bool deleted, const cJSON *obj)
{
    if (deleted) {
        p->gone_from_api = true;
        begin_termination(p, p->terminating ? 0 : 2000);
        return;
    }
    if (p->last_status && na_pod_status_drifted(obj, p->last_status)) {
        /* Someone else changed the status (the node lifecycle controller marks pods of a
         * NotReady node not Ready): post ours again, as kubelet's status sync does. */
        free(p->last_status);
        p->last_status = NULL;
    }
    cJSON_Delete(p->obj);
    p->obj = cJSON_Duplicate(obj, 1);
    p->status_dirty = true;
    if (gd_meta_deleting(obj)) begin_termination(p, grace_ms_of(obj));
}

static bool is_busy(na_pod *p) { return atomic_load_explicit(&p->busy, memory_order_acquire); }

/* What arrived while the pod's worker ran, in order: the latest object, then its deletion. */
static void apply_pending(na_pod *p)
{
    if (p->pending_obj) {
        apply_to_pod(p, false, p->pending_obj);
        cJSON_Delete(p->pending_obj);
        p->pending_obj = NULL;
    }
    if (p->pending_deleted) {
        p->pending_deleted = false;
        apply_to_pod(p, true, NULL);
    }
}

void na_pods_apply(na_agent *a, const na_event *ev)
{
    if (strcmp(ev->type, "SYNC_BEGIN") == 0) {
        for (na_pod *p = a->pods; p; p = p->next) p->seen = false;
        return;
    }
    if (strcmp(ev->type, "SYNC_END") == 0) {
        a->synced = true;
        for (na_pod *p = a->pods; p; p = p->next) {
            if (p->seen || p->pending_deleted) continue;
            /* deleted while no watch was open */
            if (is_busy(p)) p->pending_deleted = true;
            else if (!p->gone_from_api) apply_to_pod(p, true, NULL);
        }
        return;
    }
    const cJSON *obj = ev->pod;
    const char *uid = gd_meta_uid(obj);
    na_pod *p = find_pod(a, uid);
    if (p) p->seen = true;
    bool deleted = strcmp(ev->type, "DELETED") == 0;
    if (p && is_busy(p)) {                /* kept until its worker is done */
        if (deleted) p->pending_deleted = true;
        else {
            cJSON_Delete(p->pending_obj);
            p->pending_obj = cJSON_Duplicate(obj, 1);
        }
        return;
    }
    if (p) { apply_to_pod(p, deleted, obj); return; }
    if (deleted) return;
    const char *phase = gd_json_str_or(obj, "status.phase", "");
    if (gd_meta_deleting(obj)) {         /* nothing of it runs here: finish the deletion */
        delete_in_api(a, gd_meta_namespace(obj), gd_meta_name(obj), uid);
        return;
    }
    if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) return;
    p = pod_new(a, obj);
    if (!p) {
        gd_log(GD_LOG_ERROR, "cannot accept pod (no containers or out of memory)", "pod", gd_meta_name(obj), NULL);
        return;
    }
    p->seen = true;
    p->next = a->pods;
    a->pods = p;
}

/* Gives an exit to the container it belongs to; false when that is no idle pod's. */
static bool match_exit(na_agent *a, pid_t pid, int ws)
{
    for (na_pod *p = a->pods; p; p = p->next) {
        if (is_busy(p)) continue;        /* its worker may be writing c->pid right now */
        for (int i = 0; i < p->nc; i++)
            if (p->c[i].pid == pid) {
                na_ctr_exited(p, &p->c[i], ws);
                p->status_dirty = true;
                return true;
            }
    }
    return false;
}

static void reap(na_agent *a)
{
    /* Exits kept from earlier ticks first, in order. One that matches no pod while none is
     * busy belongs to no pod we know (a pod already removed): dropped, as before. */
    bool any_busy = false;
    for (na_pod *p = a->pods; p && !any_busy; p = p->next) any_busy = is_busy(p);
    size_t keep = 0;
    for (size_t i = 0; i < a->nexits; i++)
        if (!match_exit(a, a->exits[i].pid, a->exits[i].wstatus) && any_busy) a->exits[keep++] = a->exits[i];
    a->nexits = keep;
    int ws;
    pid_t pid;
    while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
        if (match_exit(a, pid, ws) || !a->workers) continue;
        if (a->nexits == a->cap_exits) {
            size_t cap = a->cap_exits ? a->cap_exits * 2 : 16;
            na_exit *t = realloc(a->exits, cap * sizeof *t);
            if (!t) { gd_log(GD_LOG_ERROR, "out of memory keeping a process exit", NULL); continue; }
            a->exits = t;
            a->cap_exits = cap;
        }
        a->exits[a->nexits++] = (na_exit){.pid = pid, .wstatus = ws};
    }
}

/* When a pod's Secret volumes are next re-read: the kubelet resyncs a pod every
 * --sync-frequency, jittered by up to half of it (its pod workers' resync), so pods started
 * together do not all hit the API server at once. */
static int64_t next_volume_sync(const na_agent *a, int64_t now)
{
    int64_t period = a->sync_frequency_ms > 0 ? a->sync_frequency_ms : NA_SYNC_FREQUENCY_MS;
    return now + period + (int64_t)(gd_rand01() * (double)period / 2);
}

/* The waiting part of a pod's sync: volumes, container starts, probes, the status. Runs on a
 * pod worker (the pod marked busy) or inline. */
static void sync_pod(na_agent *a, na_pod *p)
{
    int64_t now = gd_mono_ms();
    p->status_dirty = false;
    if (p->volumes_ok && now >= p->next_volume_sync_ms) {
        char err[512] = "";
        if (na_pod_refresh_volumes(a, p, err, sizeof err) != GD_OK)
            gd_log(GD_LOG_WARN, "secret volume not refreshed; its files stay as they were", "pod", p->name,
                   "namespace", p->ns, "error", err, NULL);
        p->next_volume_sync_ms = next_volume_sync(a, now);
    }
    if (!p->volumes_ok && now >= p->next_setup_ms) {
        char err[512] = "";
        if (na_pod_setup_volumes(a, p, err, sizeof err) == GD_OK) {
            p->volumes_ok = true;
            p->next_volume_sync_ms = next_volume_sync(a, now);
        } else {
            p->next_setup_ms = now + NA_RETRY_MS;
            for (int i = 0; i < p->nc; i++) na_ctr_set_waiting(p, &p->c[i], "ContainerCreating", err);
        }
    }
    if (p->volumes_ok && *p->ip) {
        const cJSON *ctrs = gd_json_path(p->obj, "spec.containers");
        for (int i = 0; i < p->nc; i++) {
            na_ctr *c = &p->c[i];
            if (c->pid == 0 && !c->finished && now >= c->next_start_ms)
                na_ctr_start(a, p, c, cJSON_GetArrayItem(ctrs, i));
            na_ctr_probe(p, c);
        }
    }
    na_pod_publish_status(a, p);
    if (!p->gone_from_api && p->next_status_ms > gd_mono_ms()) p->status_dirty = true;  /* retry */
}

/* Whether sync_pod has anything to do now (a worker is only woken for that). */
static bool needs_sync(const na_pod *p, int64_t now)
{
    if (p->status_dirty && now >= p->next_status_ms) return true;
    if (!p->volumes_ok) return now >= p->next_setup_ms;
    if (now >= p->next_volume_sync_ms) return true;
    if (!*p->ip) return false;
    for (int i = 0; i < p->nc; i++) {
        const na_ctr *c = &p->c[i];
        if (c->pid == 0 && !c->finished && now >= c->next_start_ms) return true;
        if (c->pid > 0 && (c->probe.kind == NA_PROBE_TCP || c->probe.kind == NA_PROBE_HTTP) &&
            now >= c->next_probe_ms) return true;
    }
    return false;
}

typedef struct {
    na_agent *a;
    na_pod *p;
} pod_job;

static void pod_job_run(void *arg)
{
    pod_job *j = arg;
    sync_pod(j->a, j->p);
    atomic_store_explicit(&j->p->busy, false, memory_order_release);
    free(j);
}

static void tick_pod(na_agent *a, na_pod *p)
{
    if (!*p->ip && a->synced) {
        if (na_ipam_alloc(&a->ipam, p->ip) == GD_OK) p->status_dirty = true;
        else {
            p->ip[0] = '\0';
            for (int i = 0; i < p->nc; i++) na_ctr_set_waiting(p, &p->c[i], "ContainerCreating", "no free pod IP (--ip-base pool exhausted)");
        }
    }
    if (!a->workers) { sync_pod(a, p); return; }
    if (!needs_sync(p, gd_mono_ms())) return;
    pod_job *j = malloc(sizeof *j);
    if (!j) return;                      /* tried again on the next tick */
    *j = (pod_job){.a = a, .p = p};
    atomic_store_explicit(&p->busy, true, memory_order_relaxed);
    if (!na_pool_submit(a->workers, pod_job_run, j)) {
        atomic_store_explicit(&p->busy, false, memory_order_relaxed);
        free(j);
    }
}

void na_pods_tick(na_agent *a)
{
    reap(a);
    int64_t now = gd_mono_ms();
    for (na_pod *p = a->pods, *next; p; p = next) {
        next = p->next;
        if (is_busy(p)) continue;
        apply_pending(p);
        p->snap_running = any_running(p);
        p->snap_ready = p->last_ready;
        if (!p->terminating) { tick_pod(a, p); continue; }
        if (any_running(p)) {
            if (now >= p->kill_deadline_ms && !p->killed) {
                gd_log(GD_LOG_INFO, "grace period over; killing", "pod", p->name, NULL);
                signal_pod(p, SIGKILL);
                p->killed = true;
            }
            continue;
        }
        if (!p->gone_from_api) delete_in_api(a, p->ns, p->name, p->uid);
        unlink_pod(a, p);
    }
}

void na_pods_stop_all(na_agent *a, int grace_s)
{
    na_pool_wait_idle(a->workers);       /* no pod busy from here on */
    reap(a);
    for (na_pod *p = a->pods; p; p = p->next) {
        apply_pending(p);
        p->terminating = true;
        signal_pod(p, SIGTERM);
    }
    int64_t deadline = gd_mono_ms() + (int64_t)grace_s * 1000;
    for (;;) {
        reap(a);
        bool running = false;
        for (na_pod *p = a->pods; p; p = p->next) running |= any_running(p);
        if (!running) break;
        if (gd_mono_ms() >= deadline) {
            for (na_pod *p = a->pods; p; p = p->next) signal_pod(p, SIGKILL);
            deadline = INT64_MAX;
        }
        gd_sleep_ms(50);
    }
}

void na_pods_free_all(na_agent *a)
{
    while (a->pods) {
        na_pod *p = a->pods;
        a->pods = p->next;
        if (*p->ip) na_ipam_release(&a->ipam, p->ip);
        pod_free(p);
    }
    free(a->exits);
    a->exits = NULL;
    a->nexits = a->cap_exits = 0;
}

/* From the main thread (the hosts file): what each pod looked like when last not busy. */
void na_pods_visit(na_agent *a, na_pod_visit_fn fn, void *ud)
{
    for (na_pod *p = a->pods; p; p = p->next) {
        bool running = a->workers ? p->snap_running : any_running(p);
        bool ready = a->workers ? p->snap_ready : p->last_ready;
        if (!p->terminating && *p->ip && running) fn(ud, p->obj, p->ip, ready);
    }
}
