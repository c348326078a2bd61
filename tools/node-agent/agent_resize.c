/* agent_resize.c — PersistentVolumeClaim expansion in the test cluster (issue 20.3).
 *
 * What the devcluster's control plane does with a larger request on a host-path PVC: the
 * API server's PersistentVolumeClaimResize admission lets it through when the claim is
 * Bound and its StorageClass says allowVolumeExpansion: true; then kube-controller-manager's
 * expand controller (1.20) finds no in-tree plugin able to expand a host-path volume and
 * only records the Event ExternalExpanding "Ignoring the PVC: didn't find a plugin capable
 * of expanding the volume; waiting for an external controller to process this PVC." Nothing
 * in it completes a resize: in a real cluster the storage driver's external-resizer (the
 * controller side) and the kubelet (the node side) do. Here the node agent plays both, each
 * as the real one does it, so the operator sees the same object changes it sees elsewhere:
 *
 *   controller side — a stand-in for a CSI driver's external-resizer sidecar, for
 *   kubernetes.io/host-path volumes only (a tool of the test environment, never part of
 *   the product): a Bound claim whose request exceeds its PV's capacity gets the condition
 *   Resizing, its PV spec.capacity is raised to the request, then the condition becomes
 *   FileSystemResizePending (a filesystem grows on the node that mounts it).
 *   node side — as the kubelet: a claim with FileSystemResizePending that a pod running on
 *   this agent mounts has its filesystem grown (a directory here: nothing to grow) and the
 *   resize marked finished like the kubelet's MarkFSResizeFinished does: status.capacity
 *   set to the PV's capacity, the resize conditions removed.
 *
 * An agent only handles claims whose selected node (volume.kubernetes.io/selected-node, set
 * by the scheduler under WaitForFirstConsumer) is one of its own Nodes, so several agents
 * never act on one claim. Runs on the main loop every few seconds (one list of PVCs). */
#include "agent.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_quantity.h"
#include "k8s_client.h"

#define SELECTED_NODE "volume.kubernetes.io/selected-node"
#define MAX_MOUNTED 512

typedef struct {
    char key[MAX_MOUNTED][2 * NA_NAME_MAX];   /* <ns>/<claim> mounted by a running pod here */
    int n;
} mounted;

static void visit(void *ud, const cJSON *pod, const char *ip, bool ready)
{
    (void)ip; (void)ready;
    mounted *m = ud;
    const cJSON *v;
    cJSON_ArrayForEach(v, gd_json_path(pod, "spec.volumes")) {
        const char *claim = gd_json_str_or(v, "persistentVolumeClaim.claimName", NULL);
        if (claim && m->n < MAX_MOUNTED)
            snprintf(m->key[m->n++], sizeof m->key[0], "%s/%s", gd_meta_namespace(pod), claim);
    }
}

static bool is_mounted(const mounted *m, const cJSON *pvc)
{
    char key[2 * NA_NAME_MAX];
    snprintf(key, sizeof key, "%s/%s", gd_meta_namespace(pvc), gd_meta_name(pvc));
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->key[i], key)) return true;
    return false;
}

static bool has_condition(const cJSON *pvc, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(pvc, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) return true;
    return false;
}

static bool less(const cJSON *a, const cJSON *b)
{
    long double x, y;
    return gd_quantity_parse(a, &x) && gd_quantity_parse(b, &y) && x < y;
}

/* PVC status: the conditions other than the resize ones, plus `type` (NULL: none), and the
 * capacity when given (merge patch: the list is replaced as a whole). */
static gd_err patch_status(na_agent *a, const cJSON *pvc, const char *type, const char *msg,
                           const cJSON *capacity)
{
    cJSON *patch = cJSON_CreateObject(), *st = cJSON_AddObjectToObject(patch, "status");
    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(pvc, "status.conditions")) {
        const char *t = gd_json_str_or(c, "type", "");
        if (strcmp(t, "Resizing") && strcmp(t, "FileSystemResizePending"))
            cJSON_AddItemToArray(conds, cJSON_Duplicate(c, 1));
    }
    if (type) {
        char now[32];
        time_t t = time(NULL);
        strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        cJSON *n = cJSON_CreateObject();
        cJSON_AddStringToObject(n, "type", type);
        cJSON_AddStringToObject(n, "status", "True");
        cJSON_AddStringToObject(n, "lastTransitionTime", now);
        cJSON_AddStringToObject(n, "message", msg);
        cJSON_AddItemToArray(conds, n);
    }
    if (capacity)
        cJSON_AddItemToObject(cJSON_AddObjectToObject(st, "capacity"), "storage", cJSON_Duplicate(capacity, 1));
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    gd_err e = body ? k8s_patch(a->api, &K8S_RES_PVCS, gd_meta_namespace(pvc), gd_meta_name(pvc),
                                K8S_PATCH_MERGE, body, "status", NULL, NULL) : GD_ERR_NOMEM;
    cJSON_free(body);
    return e;
}

/* The external-resizer's part for a host-path PV: Resizing, PV capacity, FileSystemResizePending. */
static void resize_volume(na_agent *a, const cJSON *pvc, const cJSON *pv, const cJSON *want)
{
    if (!gd_json_path(pv, "spec.hostPath")) return;          /* not a host-path volume: not ours */
    if (patch_status(a, pvc, "Resizing", "External resizer is resizing volume", NULL) != GD_OK) return;
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddItemToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"), "capacity"),
                          "storage", cJSON_Duplicate(want, 1));
    char *body = cJSON_PrintUnformatted(patch);
    cJSON_Delete(patch);
    gd_err e = body ? k8s_patch(a->api, &K8S_RES_PVS, NULL, gd_meta_name(pv), K8S_PATCH_MERGE, body,
                                NULL, NULL, NULL) : GD_ERR_NOMEM;
    cJSON_free(body);
    gd_log(e ? GD_LOG_WARN : GD_LOG_INFO, "volume resized (controller side)", "claim", gd_meta_name(pvc),
           "namespace", gd_meta_namespace(pvc), "volume", gd_meta_name(pv), "error", e ? gd_strerror(e) : "", NULL);
    if (e == GD_OK)
        patch_status(a, pvc, "FileSystemResizePending",
                     "Waiting for user to (re-)start a pod to finish file system resize of volume on node.", NULL);
}

static void sync_claim(na_agent *a, const mounted *m, const cJSON *pvc)
{
    const char *node = gd_meta_annotation(pvc, SELECTED_NODE);
    const char *pv_name = gd_json_str_or(pvc, "spec.volumeName", "");
    if (!node || na_node_index(a, node) < 0 || !*pv_name ||
        strcmp(gd_json_str_or(pvc, "status.phase", ""), "Bound"))
        return;
    const cJSON *want = gd_json_path(pvc, "spec.resources.requests.storage");
    bool fs_pending = has_condition(pvc, "FileSystemResizePending");
    if (!fs_pending && !less(gd_json_path(pvc, "status.capacity.storage"), want)) return;
    cJSON *pv = NULL;
    if (k8s_get(a->api, &K8S_RES_PVS, NULL, pv_name, &pv, NULL) != GD_OK) return;
    const cJSON *pv_cap = gd_json_path(pv, "spec.capacity.storage");
    if (!fs_pending && less(pv_cap, want)) {
        resize_volume(a, pvc, pv, want);
    } else if (!fs_pending) {
        /* PV already large enough (a resize interrupted after its PV step): the node's turn */
        patch_status(a, pvc, "FileSystemResizePending",
                     "Waiting for user to (re-)start a pod to finish file system resize of volume on node.", NULL);
    } else if (is_mounted(m, pvc) && pv_cap) {
        /* The kubelet's part: grow the filesystem (a directory: nothing to grow), then finish. */
        gd_err e = patch_status(a, pvc, NULL, NULL, pv_cap);
        gd_log(e ? GD_LOG_WARN : GD_LOG_INFO, "volume resized (node side)", "claim", gd_meta_name(pvc),
               "namespace", gd_meta_namespace(pvc), "node", node, "error", e ? gd_strerror(e) : "", NULL);
    }
    cJSON_Delete(pv);
}

void na_resize_sync(na_agent *a)
{
    static mounted m;                 /* main loop only; too big for the stack */
    m.n = 0;
    na_pods_visit(a, visit, &m);
    k8s_list_opts lo = {.stop = &a->stop};   /* a quorum read: a stale copy would redo a step */
    cJSON *list = NULL;
    if (k8s_list(a->api, &K8S_RES_PVCS, NULL, &lo, &list, NULL) != GD_OK) return;
    const cJSON *pvc;
    cJSON_ArrayForEach(pvc, gd_json_path(list, "items")) sync_claim(a, &m, pvc);
    cJSON_Delete(list);
}
