/* agent_node.c — the Node side of a kubelet: registration, the Lease in kube-node-lease
 * renewed every heartbeat, and the Ready condition posted with the same period.
 *
 * NotReady on request (for tests): `node-agent set-ready NODE false` writes the marker file
 * <state-dir>/nodes/NODE.notready and patches the Ready condition to False; the running agent
 * polls the marker every tick and from then on posts Ready=False (reason NodeAgentNotReady)
 * in its heartbeats, while still renewing the Lease — the node is reachable but says it is not
 * ready, so the node lifecycle controller keeps it NotReady (not Unknown) and taints it.
 * `set-ready NODE true` removes the marker and posts Ready=True. */
#include "agent.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

#define NA_LEASE_NS "kube-node-lease"
#define NA_LEASE_DURATION_S 40

int na_node_index(const na_agent *a, const char *node)
{
    for (int i = 0; i < a->nnodes; i++)
        if (strcmp(a->nodes[i].name, node) == 0) return i;
    return -1;
}

static void fmt_time(int64_t wall_ms, char out[32])
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool marker_path(char *out, size_t cap, const char *state_dir, const char *node)
{
    char dir[NA_PATH_MAX], file[NA_NAME_MAX + 16];
    snprintf(file, sizeof file, "%s.notready", node);
    return snprintf(dir, sizeof dir, "%s/nodes", state_dir) < (int)sizeof dir &&
           na_path_join(out, cap, dir, file);
}

bool na_node_marked_notready(const na_agent *a, const char *node)
{
    char p[NA_PATH_MAX];
    return marker_path(p, sizeof p, a->state_dir, node) && access(p, F_OK) == 0;
}

static cJSON *condition(const char *type, bool status, const char *reason, const char *msg,
                        const char *now, const char *since)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", status ? "True" : "False");
    cJSON_AddStringToObject(c, "reason", reason);
    cJSON_AddStringToObject(c, "message", msg);
    cJSON_AddStringToObject(c, "lastHeartbeatTime", now);
    cJSON_AddStringToObject(c, "lastTransitionTime", since);
    return c;
}

static cJSON *resources(void)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "cpu", "8");
    cJSON_AddStringToObject(r, "memory", "16Gi");
    cJSON_AddStringToObject(r, "pods", "110");
    cJSON_AddStringToObject(r, "ephemeral-storage", "100Gi");
    return r;
}

/* The whole NodeStatus the agent owns; ready_since is when Ready last changed. */
static cJSON *node_status(const char *node, bool ready, int64_t ready_since_ms)
{
    char now[32], since[32];
    fmt_time(gd_wall_ms(), now);
    fmt_time(ready_since_ms, since);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToObject(s, "capacity", resources());
    cJSON_AddItemToObject(s, "allocatable", resources());
    cJSON *conds = cJSON_AddArrayToObject(s, "conditions");
    cJSON_AddItemToArray(conds, condition("MemoryPressure", false, "KubeletHasSufficientMemory",
                                          "kubelet has sufficient memory available", now, since));
    cJSON_AddItemToArray(conds, condition("DiskPressure", false, "KubeletHasNoDiskPressure",
                                          "kubelet has no disk pressure", now, since));
    cJSON_AddItemToArray(conds, condition("PIDPressure", false, "KubeletHasSufficientPID",
                                          "kubelet has sufficient PID available", now, since));
    cJSON_AddItemToArray(conds, ready
        ? condition("Ready", true, "KubeletReady", "godis node agent is posting ready status", now, since)
        : condition("Ready", false, "NodeAgentNotReady", "marked NotReady with node-agent set-ready", now, since));
    cJSON *addrs = cJSON_AddArrayToObject(s, "addresses");
    cJSON *ip = cJSON_CreateObject();
    cJSON_AddStringToObject(ip, "type", "InternalIP");
    cJSON_AddStringToObject(ip, "address", "127.0.0.1");
    cJSON_AddItemToArray(addrs, ip);
    cJSON *hn = cJSON_CreateObject();
    cJSON_AddStringToObject(hn, "type", "Hostname");
    cJSON_AddStringToObject(hn, "address", node);
    cJSON_AddItemToArray(addrs, hn);
    cJSON *ep = cJSON_AddObjectToObject(cJSON_AddObjectToObject(s, "daemonEndpoints"), "kubeletEndpoint");
    cJSON_AddNumberToObject(ep, "Port", 10250);
    cJSON *ni = cJSON_AddObjectToObject(s, "nodeInfo");
    const char *info[][2] = {
        { "machineID", "" }, { "systemUUID", "" }, { "bootID", "" }, { "kernelVersion", "" },
        { "osImage", "godis node agent" }, { "containerRuntimeVersion", "godis-node-agent://1" },
        { "kubeletVersion", "v1.20.2" }, { "kubeProxyVersion", "v1.20.2" },
        { "operatingSystem", "linux" }, { "architecture", "amd64" },
    };
    for (size_t i = 0; i < sizeof info / sizeof *info; i++)
        cJSON_AddStringToObject(ni, info[i][0], info[i][1]);
    return s;
}

static gd_err patch_status(k8s_client *api, const char *node, bool ready, int64_t since_ms)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddItemToObject(p, "status", node_status(node, ready, since_ms));
    char *body = gd_json_print(p);
    cJSON_Delete(p);
    if (!body) return GD_ERR_NOMEM;
    k8s_status st;
    gd_err e = k8s_patch(api, &K8S_RES_NODES, NULL, node, K8S_PATCH_MERGE, body, "status", NULL, &st);
    free(body);
    if (e != GD_OK)
        gd_log(GD_LOG_WARN, "node status update failed", "node", node, "err", gd_strerror(e),
               "message", st.message, NULL);
    return e;
}

static gd_err register_node(na_agent *a, na_node *n)
{
    bool ready = !na_node_marked_notready(a, n->name);
    n->ready_since_wall_ms = gd_wall_ms();
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "apiVersion", "v1");
    cJSON_AddStringToObject(obj, "kind", "Node");
    cJSON *meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON_AddStringToObject(meta, "name", n->name);
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON_AddStringToObject(labels, "kubernetes.io/hostname", n->name);
    cJSON_AddStringToObject(labels, "kubernetes.io/os", "linux");
    cJSON_AddStringToObject(labels, "kubernetes.io/arch", "amd64");
    cJSON_AddStringToObject(labels, "node.kubernetes.io/instance-type", "godis-node-agent");
    cJSON *spec = cJSON_AddObjectToObject(obj, "spec");
    if (a->taints && cJSON_GetArraySize(a->taints) > 0)
        cJSON_AddItemToObject(spec, "taints", cJSON_Duplicate(a->taints, 1));
    cJSON_AddItemToObject(obj, "status", node_status(n->name, ready, n->ready_since_wall_ms));
    cJSON *out = NULL;
    k8s_status st;
    gd_err e = k8s_create(a->api, &K8S_RES_NODES, NULL, obj, &out, &st);
    cJSON_Delete(obj);
    if (e == GD_ERR_ALREADY_EXISTS) {
        /* Re-registration after an agent restart: keep spec (a cordon stays), refresh status. */
        e = k8s_get(a->api, &K8S_RES_NODES, NULL, n->name, &out, &st);
    }
    if (e != GD_OK) {
        gd_log(GD_LOG_ERROR, "registering node failed", "node", n->name, "err", gd_strerror(e),
               "message", st.message, NULL);
        cJSON_Delete(out);
        return e;
    }
    snprintf(n->uid, sizeof n->uid, "%s", gd_meta_uid(out));
    cJSON_Delete(out);
    /* The status of a create may be dropped by the API server; post it explicitly. */
    e = patch_status(a->api, n->name, ready, n->ready_since_wall_ms);
    if (e != GD_OK) return e;
    n->ready_reported = ready;
    n->registered = true;
    gd_log(GD_LOG_INFO, "node registered", "node", n->name, "ready", ready ? "true" : "false", NULL);
    return GD_OK;
}

gd_err na_node_register_all(na_agent *a)
{
    gd_err first = GD_OK;
    for (int i = 0; i < a->nnodes; i++) {
        gd_err e = register_node(a, &a->nodes[i]);
        if (e != GD_OK && first == GD_OK) first = e;
    }
    return first;
}

static void renew_lease(na_agent *a, na_node *n)
{
    char now[32];
    gd_format_rfc3339_micro(gd_wall_ms() * 1000, now);
    k8s_status st;
    gd_err e = GD_ERR_NOT_FOUND;
    if (n->lease_created) {
        char body[512];
        (void)snprintf(body, sizeof body,
                 "{\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":%d,\"renewTime\":\"%s\"}}",
                 n->name, NA_LEASE_DURATION_S, now);
        e = k8s_patch(a->api, &K8S_RES_LEASES, NA_LEASE_NS, n->name, K8S_PATCH_MERGE, body, NULL, NULL, &st);
    }
    if (e == GD_ERR_NOT_FOUND) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "apiVersion", "coordination.k8s.io/v1");
        cJSON_AddStringToObject(l, "kind", "Lease");
        cJSON *meta = cJSON_AddObjectToObject(l, "metadata");
        cJSON_AddStringToObject(meta, "name", n->name);
        cJSON_AddStringToObject(meta, "namespace", NA_LEASE_NS);
        if (*n->uid) {   /* owned by the Node, as kubelet does, so deleting the Node removes it */
            cJSON *ref = cJSON_CreateObject();
            cJSON_AddStringToObject(ref, "apiVersion", "v1");
            cJSON_AddStringToObject(ref, "kind", "Node");
            cJSON_AddStringToObject(ref, "name", n->name);
            cJSON_AddStringToObject(ref, "uid", n->uid);
            cJSON_AddItemToArray(cJSON_AddArrayToObject(meta, "ownerReferences"), ref);
        }
        cJSON *spec = cJSON_AddObjectToObject(l, "spec");
        cJSON_AddStringToObject(spec, "holderIdentity", n->name);
        cJSON_AddNumberToObject(spec, "leaseDurationSeconds", NA_LEASE_DURATION_S);
        cJSON_AddStringToObject(spec, "renewTime", now);
        e = k8s_create(a->api, &K8S_RES_LEASES, NA_LEASE_NS, l, NULL, &st);
        cJSON_Delete(l);
        if (e == GD_ERR_ALREADY_EXISTS) { n->lease_created = true; renew_lease(a, n); return; }
    }
    if (e == GD_OK) n->lease_created = true;
    else gd_log(GD_LOG_WARN, "lease renewal failed", "node", n->name, "err", gd_strerror(e),
                "message", st.message, NULL);
}

void na_node_heartbeat_all(na_agent *a)
{
    for (int i = 0; i < a->nnodes; i++) {
        na_node *n = &a->nodes[i];
        if (!n->registered && register_node(a, n) != GD_OK) continue;
        renew_lease(a, n);
        bool ready = !na_node_marked_notready(a, n->name);
        if (ready != n->ready_reported) {
            n->ready_since_wall_ms = gd_wall_ms();
            gd_log(GD_LOG_INFO, "node readiness changed", "node", n->name, "ready", ready ? "true" : "false", NULL);
        }
        gd_err e = patch_status(a->api, n->name, ready, n->ready_since_wall_ms);
        if (e == GD_OK) n->ready_reported = ready;
        else if (e == GD_ERR_NOT_FOUND) n->registered = n->lease_created = false; /* deleted: re-register */
    }
}

gd_err na_node_set_ready(k8s_client *api, const char *state_dir, const char *node, bool ready)
{
    char dir[NA_PATH_MAX], path[NA_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/nodes", state_dir);
    if (!marker_path(path, sizeof path, state_dir, node)) return GD_ERR_ARG;
    if (ready) {
        if (unlink(path) != 0 && errno != ENOENT) return GD_ERR_IO;
    } else {
        if (!na_mkdirs(dir)) return GD_ERR_IO;
        FILE *f = fopen(path, "w");
        if (!f) return GD_ERR_IO;
        fputs("notready\n", f);
        if (fclose(f) != 0) return GD_ERR_IO;
    }
    return patch_status(api, node, ready, gd_wall_ms());
}
