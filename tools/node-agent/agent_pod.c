/* agent_pod.c — the pod table, and what a kubelet's pod workers do for each pod.
 *
 * Life of a pod here: first seen bound to one of our nodes → an IP from the pool (or the one
 * in its status after an agent restart) → volume directories → each container started as a
 * process (image map, env, argv) → readiness probes → status PATCHed whenever it changes.
 * A process that exits is restarted per restartPolicy with exponential backoff. A pod with a
 * deletionTimestamp gets TERM, its grace period, KILL, and is then deleted with
 * gracePeriodSeconds=0, which is how kubelet finishes a graceful deletion.
 *
 * Volumes: a PVC is the directory <state>/volumes/<ns>/<claim> (so data survives the pod;
 * the PVC's uid is recorded beside it in <claim>.uid and a re-created PVC gets a fresh
 * directory, as a new PV would be empty); an emptyDir is <state>/pods/<pod>/volumes/<name>,
 * removed with the pod; a hostPath is the path itself. Other volume types are ignored.
 *
 * Threads: the main loop owns the table (events, IPs, reaping, termination); the work that
 * waits on the API server or a socket — volume setup, container start, probes, the status
 * PATCH — is sync_pod, run for one pod at a time on a pod worker (agent_workers.c) while the
 * pod is marked busy. While busy, the main loop does not touch the pod: watch events for it
 * wait in pending_obj / pending_deleted and exits of its processes in a->exits, and both are
 * applied once the worker is done. Without a pool (a->workers NULL, the unit tests) sync_pod
 * runs inline on every tick, as before. */
#include "agent.h"
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

#define NA_MAX_VOLUMES 32
#define NA_RETRY_MS 2000          /* setup/config errors are retried this often */

typedef struct {
    char name[NA_NAME_MAX];
    char image[512];
    pid_t pid;                    /* 0: not running */
    int restart_count;
    bool started_once;
    int64_t started_wall_ms, started_mono_ms;
    int64_t next_start_ms;        /* monotonic; when a stopped container may start */
    gd_backoff backoff;
    bool has_last;                /* lastState.terminated */
    int last_exit;
    int64_t last_started_wall_ms, last_finished_wall_ms;
    na_probe probe;
    int64_t next_probe_ms;
    int ok_streak, fail_streak;
    bool ready;
    char waiting_reason[48], waiting_message[300];
    bool finished;                /* exited and will not be restarted */
} na_ctr;

typedef struct {
    char name[NA_NAME_MAX];
    char host[NA_PATH_MAX];
} na_vol;

struct na_pod {
    struct na_pod *next;
    char ns[NA_NAME_MAX], name[NA_NAME_MAX], uid[64], node[NA_NAME_MAX];
    char ip[16];
    cJSON *obj;                   /* the latest object from the watch (owned) */
    na_ctr *c;
    int nc;
    char restart_policy[16];
    int64_t start_wall_ms;
    char dir[NA_PATH_MAX];        /* <state>/pods/<ns>_<name>_<uid> */
    na_vol vols[NA_MAX_VOLUMES];
    int nvols;
    bool volumes_ok;
    int64_t next_setup_ms;
    bool terminating, killed, gone_from_api, seen;
    int64_t kill_deadline_ms;
    char *last_status;            /* the last status body PATCHed successfully */
    int64_t next_status_ms;
    bool last_ready;
    int64_t ready_since_wall_ms;
    /* pod workers (see the top of the file) */
    atomic_bool busy;             /* a worker runs sync_pod for this pod */
    bool status_dirty;            /* something the status shows may have changed */
    cJSON *pending_obj;           /* the latest watched object while busy (owned) */
    bool pending_deleted;         /* a DELETED event (or a vanished pod) while busy */
    bool snap_running, snap_ready;/* for na_pods_visit, taken while not busy */
};

struct na_exit {
    pid_t pid;
    int wstatus;
};

static void fmt_time(int64_t wall_ms, char out[32])
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

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

/* <state>/volumes/<ns>/<claim>, checked against the PVC's uid. */
static gd_err pvc_dir(na_agent *a, na_pod *p, const char *claim, char *out, size_t cap,
                      char *err, size_t errlen)
{
    cJSON *pvc = NULL;
    k8s_status st;
    gd_err e = k8s_get(a->api, &K8S_RES_PVCS, p->ns, claim, &pvc, &st);
    if (e != GD_OK) {
        snprintf(err, errlen, "persistentvolumeclaim %s: %s", claim, gd_strerror(e));
        return e;
    }
    char uid[64];
    snprintf(uid, sizeof uid, "%s", gd_meta_uid(pvc));
    cJSON_Delete(pvc);
    char nsdir[NA_PATH_MAX], vols[NA_PATH_MAX], uidfile[NA_PATH_MAX], uidname[NA_NAME_MAX + 8];
    if (snprintf(vols, sizeof vols, "%s/volumes", a->state_dir) >= (int)sizeof vols ||
        snprintf(uidname, sizeof uidname, "%s.uid", claim) >= (int)sizeof uidname ||
        !na_path_join(nsdir, sizeof nsdir, vols, p->ns) || !na_path_join(out, cap, nsdir, claim) ||
        !na_path_join(uidfile, sizeof uidfile, nsdir, uidname)) {
        snprintf(err, errlen, "persistentvolumeclaim %s: bad name", claim);
        return GD_ERR_INVALID;
    }
    char old[64] = "";
    FILE *f = fopen(uidfile, "r");
    if (f) {
        if (!fgets(old, sizeof old, f)) old[0] = '\0';
        old[strcspn(old, "\n")] = '\0';
        fclose(f);
    }
    if (*old && strcmp(old, uid) != 0) {
        /* A new PVC with an old name: a real PV would be empty, so move the old data aside. */
        char stale[NA_PATH_MAX];
        snprintf(stale, sizeof stale, "%s.stale-%s", out, old);
        if (rename(out, stale) != 0 && errno != ENOENT) na_rmtree(out);
        gd_log(GD_LOG_INFO, "persistentvolumeclaim re-created; old data moved aside", "claim", claim,
               "moved-to", stale, NULL);
    }
    if (!na_mkdirs(out)) {
        snprintf(err, errlen, "mkdir %s: %s", out, strerror(errno));
        return GD_ERR_IO;
    }
    if (strcmp(old, uid) != 0 && (f = fopen(uidfile, "w"))) {
        fprintf(f, "%s\n", uid);
        fclose(f);
    }
    return GD_OK;
}

static gd_err setup_volumes(na_agent *a, na_pod *p, char *err, size_t errlen)
{
    p->nvols = 0;
    const cJSON *it, *vols = gd_json_path(p->obj, "spec.volumes");
    cJSON_ArrayForEach(it, vols) {
        if (p->nvols == NA_MAX_VOLUMES) { snprintf(err, errlen, "too many volumes"); return GD_ERR_TOO_LARGE; }
        na_vol *v = &p->vols[p->nvols];
        snprintf(v->name, sizeof v->name, "%s", gd_json_str_or(it, "name", ""));
        const char *claim = gd_json_str_or(it, "persistentVolumeClaim.claimName", NULL);
        const char *host = gd_json_str_or(it, "hostPath.path", NULL);
        if (claim) {
            gd_err e = pvc_dir(a, p, claim, v->host, sizeof v->host, err, errlen);
            if (e != GD_OK) return e;
        } else if (gd_json_path(it, "emptyDir")) {
            char vd[NA_PATH_MAX];
            if (snprintf(vd, sizeof vd, "%s/volumes", p->dir) >= (int)sizeof vd ||
                !na_path_join(v->host, sizeof v->host, vd, v->name) || !na_mkdirs(v->host)) {
                snprintf(err, errlen, "emptyDir %s: cannot create directory", v->name);
                return GD_ERR_IO;
            }
        } else if (host) {
            snprintf(v->host, sizeof v->host, "%s", host);
        } else {
            continue;    /* secret/configMap/projected: not needed by the programs we run */
        }
        p->nvols++;
    }
    return GD_OK;
}

/* ------------------------------------------------------------------ containers */

static gd_err cm_lookup(void *ud, const char *ns, const char *name, const char *key, char **out,
                        char *err, size_t errlen)
{
    na_agent *a = ud;
    cJSON *cm = NULL;
    k8s_status st;
    gd_err e = k8s_get(a->api, &K8S_RES_CONFIGMAPS, ns, name, &cm, &st);
    if (e != GD_OK) {
        snprintf(err, errlen, "configmap %s/%s: %s", ns, name, gd_strerror(e));
        return e;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "data"), key);
    if (!cJSON_IsString(v)) {
        snprintf(err, errlen, "configmap %s/%s has no key %s", ns, name, key);
        cJSON_Delete(cm);
        return GD_ERR_NOT_FOUND;
    }
    *out = strdup(v->valuestring);
    cJSON_Delete(cm);
    return *out ? GD_OK : GD_ERR_NOMEM;
}

static void set_waiting(const na_pod *p, na_ctr *c, const char *reason, const char *msg)
{
    if (strcmp(c->waiting_reason, reason) != 0 || strcmp(c->waiting_message, msg) != 0)
        gd_log(GD_LOG_WARN, "container waiting", "pod", p->name, "container", c->name, "reason", reason,
               "message", msg, NULL);
    snprintf(c->waiting_reason, sizeof c->waiting_reason, "%s", reason);
    snprintf(c->waiting_message, sizeof c->waiting_message, "%s", msg);
}

static size_t container_mounts(const na_pod *p, const cJSON *ctr, na_mount *m, size_t cap)
{
    size_t n = 0;
    const cJSON *it, *vm = cJSON_GetObjectItemCaseSensitive(ctr, "volumeMounts");
    cJSON_ArrayForEach(it, vm) {
        const char *vname = gd_json_str_or(it, "name", "");
        const char *mp = gd_json_str_or(it, "mountPath", "");
        const char *sub = gd_json_str_or(it, "subPath", "");
        for (int i = 0; i < p->nvols && n < cap && *mp; i++) {
            if (strcmp(p->vols[i].name, vname) != 0) continue;
            snprintf(m[n].mount_path, sizeof m[n].mount_path, "%s", mp);
            if (*sub && !strstr(sub, "..")) {
                snprintf(m[n].host_path, sizeof m[n].host_path, "%.*s/%s", 700, p->vols[i].host, sub);
                na_mkdirs(m[n].host_path);
            } else {
                snprintf(m[n].host_path, sizeof m[n].host_path, "%s", p->vols[i].host);
            }
            n++;
        }
    }
    return n;
}

static void start_container(na_agent *a, na_pod *p, na_ctr *c, const cJSON *ctr)
{
    int64_t now = gd_mono_ms();
    const na_image_entry *img = na_image_map_find(&a->images, c->image);
    if (!img) {
        char msg[700];
        snprintf(msg, sizeof msg, "no program is mapped to image %s (see --image-map)", c->image);
        set_waiting(p, c, "ErrImagePull", msg);
        c->next_start_ms = now + 5 * NA_RETRY_MS;
        return;
    }
    char err[512] = "", path[NA_PATH_MAX];
    na_mount mounts[NA_MAX_VOLUMES];
    size_t nm = container_mounts(p, ctr, mounts, NA_MAX_VOLUMES);
    na_env env = { 0 };
    char **argv = NULL, **envp = NULL;
    const char *base_path = getenv("PATH");
    na_env_set(&env, "PATH", base_path ? base_path : "/usr/local/bin:/usr/bin:/bin");
    na_env_set(&env, "HOSTNAME", p->name);
    /* Programs that resolve Service names through our hosts block without it being
     * /etc/hosts (the godis stand-in and common/godis_client read GODIS_HOSTS_FILE). */
    if (a->hosts_file) na_env_set(&env, "GODIS_HOSTS_FILE", a->hosts_file);
    na_env_ctx ctx = { .pod_ip = p->ip, .host_ip = "127.0.0.1", .node_name = p->node,
                       .cm_lookup = cm_lookup, .ud = a };
    gd_err e = na_env_build(p->obj, ctr, c->image, &ctx, mounts, nm, &env, err, sizeof err);
    if (e == GD_OK) e = na_argv_build(ctr, img->program, &env, &argv, err, sizeof err);
    if (e != GD_OK) {
        set_waiting(p, c, "CreateContainerConfigError", err);
        c->next_start_ms = now + NA_RETRY_MS;
        goto out;
    }
    if (!na_resolve_program(argv[0], path, sizeof path)) {
        snprintf(err, sizeof err, "program %s not found or not executable", argv[0]);
        set_waiting(p, c, "CreateContainerError", err);
        c->next_start_ms = now + 5 * NA_RETRY_MS;
        goto out;
    }
    envp = na_env_to_envp(&env);
    char log_path[NA_PATH_MAX + 300];
    snprintf(log_path, sizeof log_path, "%s/%s.log", p->dir, c->name);
    pid_t pid = envp ? na_spawn(path, argv, envp, p->dir, log_path, err, sizeof err) : -1;
    if (pid < 0) {
        set_waiting(p, c, "RunContainerError", err);
        c->next_start_ms = now + NA_RETRY_MS;
        goto out;
    }
    c->pid = pid;
    c->started_once = true;
    c->started_wall_ms = gd_wall_ms();
    c->started_mono_ms = now;
    c->waiting_reason[0] = c->waiting_message[0] = '\0';
    c->ok_streak = c->fail_streak = 0;
    c->ready = c->probe.kind == NA_PROBE_NONE || c->probe.kind == NA_PROBE_UNSUPPORTED;
    c->next_probe_ms = now + (int64_t)c->probe.initial_delay_s * 1000;
    char spid[16], rc[16];
    snprintf(spid, sizeof spid, "%d", (int)pid);
    snprintf(rc, sizeof rc, "%d", c->restart_count);
    gd_log(GD_LOG_INFO, "container started", "pod", p->name, "container", c->name, "pid", spid,
           "program", path, "ip", p->ip, "restarts", rc, NULL);
out:
    na_env_free(&env);
    na_strv_free(&argv);
    na_strv_free(&envp);
}

static void probe_container(na_pod *p, na_ctr *c)
{
    int64_t now = gd_mono_ms();
    if (c->pid <= 0 || c->probe.kind == NA_PROBE_NONE || c->probe.kind == NA_PROBE_UNSUPPORTED ||
        now < c->next_probe_ms)
        return;
    c->next_probe_ms = now + (int64_t)c->probe.period_s * 1000;
    int tmo = c->probe.timeout_s * 1000;
    bool ok = c->probe.kind == NA_PROBE_TCP ? na_probe_tcp(p->ip, c->probe.port, tmo)
                                            : na_probe_http(p->ip, c->probe.port, c->probe.path, tmo);
    if (ok) { c->ok_streak++; c->fail_streak = 0; }
    else { c->fail_streak++; c->ok_streak = 0; }
    bool was = c->ready;
    if (!c->ready && c->ok_streak >= c->probe.success_threshold) c->ready = true;
    if (c->ready && c->fail_streak >= c->probe.failure_threshold) c->ready = false;
    if (was != c->ready)
        gd_log(GD_LOG_INFO, "readiness changed", "pod", p->name, "container", c->name,
               "ready", c->ready ? "true" : "false", NULL);
}

/* A container's process ended (reaped by na_pods_tick). */
static void container_exited(na_pod *p, na_ctr *c, int wstatus)
{
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + (WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
    c->pid = 0;
    c->ready = false;
    c->has_last = true;
    c->last_exit = code;
    c->last_started_wall_ms = c->started_wall_ms;
    c->last_finished_wall_ms = gd_wall_ms();
    char scode[16];
    snprintf(scode, sizeof scode, "%d", code);
    gd_log(p->terminating ? GD_LOG_INFO : GD_LOG_WARN, "container exited", "pod", p->name,
           "container", c->name, "exit-code", scode, NULL);
    if (p->terminating) { c->finished = true; return; }
    bool restart = strcmp(p->restart_policy, "Never") != 0 &&
                   (strcmp(p->restart_policy, "OnFailure") != 0 || code != 0);
    if (!restart) { c->finished = true; return; }
    c->restart_count++;
    if (gd_mono_ms() - c->started_mono_ms > 600000) gd_backoff_reset(&c->backoff);
    c->next_start_ms = gd_mono_ms() + gd_backoff_next(&c->backoff);
    set_waiting(p, c, "CrashLoopBackOff", "back-off restarting failed container");
}

/* ------------------------------------------------------------------ status */

static cJSON *cond(const char *type, bool ok, const char *since)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", ok ? "True" : "False");
    cJSON_AddNullToObject(c, "lastProbeTime");
    cJSON_AddStringToObject(c, "lastTransitionTime", since);
    if (!ok && strcmp(type, "PodScheduled") != 0 && strcmp(type, "Initialized") != 0)
        cJSON_AddStringToObject(c, "reason", "ContainersNotReady");
    return c;
}

static cJSON *container_status(const na_pod *p, const na_ctr *c)
{
    char t1[32], t2[32];
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", c->name);
    cJSON_AddStringToObject(s, "image", c->image);
    char id[700];
    snprintf(id, sizeof id, "godis-node-agent://%s", c->image);
    cJSON_AddStringToObject(s, "imageID", id);
    snprintf(id, sizeof id, "godis-node-agent://%s-%s-%d", p->uid, c->name, c->restart_count);
    if (c->started_once) cJSON_AddStringToObject(s, "containerID", id);
    cJSON_AddBoolToObject(s, "ready", c->ready);
    cJSON_AddBoolToObject(s, "started", c->pid > 0);
    cJSON_AddNumberToObject(s, "restartCount", c->restart_count);
    cJSON *state = cJSON_AddObjectToObject(s, "state");
    if (c->pid > 0) {
        fmt_time(c->started_wall_ms, t1);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(state, "running"), "startedAt", t1);
    } else if (c->finished && c->has_last) {
        cJSON *t = cJSON_AddObjectToObject(state, "terminated");
        cJSON_AddNumberToObject(t, "exitCode", c->last_exit);
        cJSON_AddStringToObject(t, "reason", c->last_exit == 0 ? "Completed" : "Error");
        fmt_time(c->last_started_wall_ms, t1);
        fmt_time(c->last_finished_wall_ms, t2);
        cJSON_AddStringToObject(t, "startedAt", t1);
        cJSON_AddStringToObject(t, "finishedAt", t2);
    } else {
        cJSON *w = cJSON_AddObjectToObject(state, "waiting");
        cJSON_AddStringToObject(w, "reason", *c->waiting_reason ? c->waiting_reason : "ContainerCreating");
        if (*c->waiting_message) cJSON_AddStringToObject(w, "message", c->waiting_message);
    }
    cJSON *last = cJSON_AddObjectToObject(s, "lastState");
    if (c->has_last && !(c->finished && c->pid <= 0)) {
        cJSON *t = cJSON_AddObjectToObject(last, "terminated");
        cJSON_AddNumberToObject(t, "exitCode", c->last_exit);
        cJSON_AddStringToObject(t, "reason", c->last_exit == 0 ? "Completed" : "Error");
        fmt_time(c->last_started_wall_ms, t1);
        fmt_time(c->last_finished_wall_ms, t2);
        cJSON_AddStringToObject(t, "startedAt", t1);
        cJSON_AddStringToObject(t, "finishedAt", t2);
    }
    return s;
}

static cJSON *pod_status(na_pod *p)
{
    bool all_ready = true, any_started = false, all_finished = true, all_ok = true;
    for (int i = 0; i < p->nc; i++) {
        all_ready &= p->c[i].ready;
        any_started |= p->c[i].started_once;
        all_finished &= p->c[i].finished;
        all_ok &= p->c[i].last_exit == 0;
    }
    if (all_ready != p->last_ready) { p->last_ready = all_ready; p->ready_since_wall_ms = gd_wall_ms(); }
    char start[32], since[32], sched[32];
    fmt_time(p->start_wall_ms, start);
    fmt_time(p->ready_since_wall_ms, since);
    snprintf(sched, sizeof sched, "%s", start);
    const cJSON *it, *conds = gd_json_path(p->obj, "status.conditions");
    cJSON_ArrayForEach(it, conds)       /* keep the scheduler's PodScheduled time */
        if (strcmp(gd_json_str_or(it, "type", ""), "PodScheduled") == 0)
            snprintf(sched, sizeof sched, "%s", gd_json_str_or(it, "lastTransitionTime", start));
    cJSON *s = cJSON_CreateObject();
    const char *phase = all_finished ? (all_ok ? "Succeeded" : "Failed") : any_started ? "Running" : "Pending";
    cJSON_AddStringToObject(s, "phase", phase);
    cJSON *cl = cJSON_AddArrayToObject(s, "conditions");
    cJSON_AddItemToArray(cl, cond("Initialized", true, start));
    cJSON_AddItemToArray(cl, cond("Ready", all_ready, since));
    cJSON_AddItemToArray(cl, cond("ContainersReady", all_ready, since));
    cJSON_AddItemToArray(cl, cond("PodScheduled", true, sched));
    cJSON_AddStringToObject(s, "hostIP", "127.0.0.1");
    if (*p->ip) {
        cJSON_AddStringToObject(s, "podIP", p->ip);
        cJSON *ip = cJSON_CreateObject();
        cJSON_AddStringToObject(ip, "ip", p->ip);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "podIPs"), ip);
    }
    cJSON_AddStringToObject(s, "startTime", start);
    cJSON *cs = cJSON_AddArrayToObject(s, "containerStatuses");
    for (int i = 0; i < p->nc; i++) cJSON_AddItemToArray(cs, container_status(p, &p->c[i]));
    return s;
}

static void publish_status(na_agent *a, na_pod *p)
{
    if (p->gone_from_api || gd_mono_ms() < p->next_status_ms) return;
    cJSON *body = cJSON_CreateObject();
    cJSON_AddItemToObject(body, "status", pod_status(p));
    char *s = gd_json_print(body);
    cJSON_Delete(body);
    if (!s || (p->last_status && strcmp(s, p->last_status) == 0)) { free(s); return; }
    k8s_status st;
    gd_err e = k8s_patch(a->api, &K8S_RES_PODS, p->ns, p->name, K8S_PATCH_MERGE, s, "status", NULL, &st);
    if (e == GD_OK) {
        free(p->last_status);
        p->last_status = s;
        return;
    }
    free(s);
    if (e == GD_ERR_NOT_FOUND) { p->gone_from_api = true; return; }   /* the DELETED event follows */
    gd_log(GD_LOG_WARN, "pod status update failed", "pod", p->name, "err", gd_strerror(e), "message", st.message, NULL);
    p->next_status_ms = gd_mono_ms() + 1000;
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

static const char *ready_of(const cJSON *status)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(status, "conditions"))
        if (strcmp(gd_json_str_or(c, "type", ""), "Ready") == 0) return gd_json_str_or(c, "status", "");
    return "";
}

/* True when the pod's status in the API differs from what we last posted in the fields that
 * matter to readers (phase, IP, Ready). */
static bool status_drifted(const cJSON *pod, const char *last_body)
{
    cJSON *mine = gd_json_parse(last_body, strlen(last_body));
    if (!mine) return true;
    const cJSON *a = gd_json_path(pod, "status"), *b = gd_json_path(mine, "status");
    bool drift = strcmp(gd_json_str_or(a, "phase", ""), gd_json_str_or(b, "phase", "")) != 0 ||
                 strcmp(gd_json_str_or(a, "podIP", ""), gd_json_str_or(b, "podIP", "")) != 0 ||
                 strcmp(ready_of(a), ready_of(b)) != 0;
    cJSON_Delete(mine);
    return drift;
}

/* An event for a pod we already run; the pod is not busy. */
static void apply_to_pod(na_pod *p, bool deleted, const cJSON *obj)
{
    if (deleted) {
        p->gone_from_api = true;
        begin_termination(p, p->terminating ? 0 : 2000);
        return;
    }
    if (p->last_status && status_drifted(obj, p->last_status)) {
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
                container_exited(p, &p->c[i], ws);
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

/* The waiting part of a pod's sync: volumes, container starts, probes, the status. Runs on a
 * pod worker (the pod marked busy) or inline. */
static void sync_pod(na_agent *a, na_pod *p)
{
    int64_t now = gd_mono_ms();
    p->status_dirty = false;
    if (!p->volumes_ok && now >= p->next_setup_ms) {
        char err[512] = "";
        if (setup_volumes(a, p, err, sizeof err) == GD_OK) p->volumes_ok = true;
        else {
            p->next_setup_ms = now + NA_RETRY_MS;
            for (int i = 0; i < p->nc; i++) set_waiting(p, &p->c[i], "ContainerCreating", err);
        }
    }
    if (p->volumes_ok && *p->ip) {
        const cJSON *ctrs = gd_json_path(p->obj, "spec.containers");
        for (int i = 0; i < p->nc; i++) {
            na_ctr *c = &p->c[i];
            if (c->pid == 0 && !c->finished && now >= c->next_start_ms)
                start_container(a, p, c, cJSON_GetArrayItem(ctrs, i));
            probe_container(p, c);
        }
    }
    publish_status(a, p);
    if (!p->gone_from_api && p->next_status_ms > gd_mono_ms()) p->status_dirty = true;  /* retry */
}

/* Whether sync_pod has anything to do now (a worker is only woken for that). */
static bool needs_sync(const na_pod *p, int64_t now)
{
    if (p->status_dirty && now >= p->next_status_ms) return true;
    if (!p->volumes_ok) return now >= p->next_setup_ms;
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
            for (int i = 0; i < p->nc; i++) set_waiting(p, &p->c[i], "ContainerCreating", "no free pod IP (--ip-base pool exhausted)");
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
