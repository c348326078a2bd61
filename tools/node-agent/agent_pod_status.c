/* agent_pod_status.c — the pod status this node reports, as kubelet's status manager
 * would: phase, conditions, IPs and each container's state, PATCHed only when it changed.
 *
 * Apart from the pod table because it is a pure rendering of a pod record plus one PATCH;
 * na_pod_status_drifted lets the table notice when someone else overwrote what we posted. */
#include "agent_pod.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

static void fmt_time(int64_t wall_ms, char out[32])
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

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

/* The container's last run, as parent.terminated (state, or lastState after a restart). */
static void add_terminated(cJSON *parent, const na_ctr *c)
{
    char t1[32], t2[32];
    cJSON *t = cJSON_AddObjectToObject(parent, "terminated");
    cJSON_AddNumberToObject(t, "exitCode", c->last_exit);
    cJSON_AddStringToObject(t, "reason", c->last_exit == 0 ? "Completed" : "Error");
    fmt_time(c->last_started_wall_ms, t1);
    fmt_time(c->last_finished_wall_ms, t2);
    cJSON_AddStringToObject(t, "startedAt", t1);
    cJSON_AddStringToObject(t, "finishedAt", t2);
}

static cJSON *container_status(const na_pod *p, const na_ctr *c)
{
    char t1[32];
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
        add_terminated(state, c);
    } else {
        cJSON *w = cJSON_AddObjectToObject(state, "waiting");
        cJSON_AddStringToObject(w, "reason", *c->waiting_reason ? c->waiting_reason : "ContainerCreating");
        if (*c->waiting_message) cJSON_AddStringToObject(w, "message", c->waiting_message);
    }
    cJSON *last = cJSON_AddObjectToObject(s, "lastState");
    if (c->has_last && !(c->finished && c->pid <= 0))
        add_terminated(last, c);
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

void na_pod_publish_status(na_agent *a, na_pod *p)
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

static const char *ready_of(const cJSON *status)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(status, "conditions"))
        if (strcmp(gd_json_str_or(c, "type", ""), "Ready") == 0) return gd_json_str_or(c, "status", "");
    return "";
}

/* True when the pod's status in the API differs from what we last posted in the fields that
 * matter to readers (phase, IP, Ready). */
bool na_pod_status_drifted(const cJSON *pod, const char *last_body)
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
