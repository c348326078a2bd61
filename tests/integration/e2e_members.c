/* e2e_members.c — see e2e_members.h. */
#include "e2e_members.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"

int e2e_members_now(k8s_client *c, const char *ns, const char *cluster, e2e_member *out, int cap)
{
    char sel[96];
    snprintf(sel, sizeof sel, "cluster-name=%s", cluster);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *pods = NULL;
    if (k8s_list(c, &K8S_RES_PODS, ns, &lo, &pods, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *p;
    size_t cl = strlen(cluster);
    cJSON_ArrayForEach(p, gd_json_path(pods, "items")) {
        const char *nn = gd_meta_label(p, "node-name");
        if (!nn || strncmp(nn, cluster, cl) || nn[cl] != '-' || gd_meta_deleting(p) || n >= cap)
            continue;
        e2e_member *m = &out[n++];
        memset(m, 0, sizeof *m);
        m->id = atoll(nn + cl + 1);
        snprintf(m->pod_uid, sizeof m->pod_uid, "%s", gd_meta_uid(p));
        snprintf(m->pod, sizeof m->pod, "%s", gd_meta_name(p));
        snprintf(m->ip, sizeof m->ip, "%s", gd_json_str_or(p, "status.podIP", ""));
        snprintf(m->node, sizeof m->node, "%s", gd_json_str_or(p, "spec.nodeName", ""));
        snprintf(m->image, sizeof m->image, "%s",
                 gd_json_str_or(cJSON_GetArrayItem(gd_json_path(p, "spec.containers"), 0), "image", ""));
        char claim[160];
        snprintf(claim, sizeof claim, "data-%s", nn);
        cJSON *pvc = NULL;
        if (k8s_get(c, &K8S_RES_PVCS, ns, claim, &pvc, NULL) == GD_OK)
            snprintf(m->pvc_uid, sizeof m->pvc_uid, "%s", gd_meta_uid(pvc));
        cJSON_Delete(pvc);
    }
    cJSON_Delete(pods);
    return n;
}

const e2e_member *e2e_member_by_id(const e2e_member *m, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (m[i].id == id) return &m[i];
    return NULL;
}

godis_client *e2e_member_dial(const char *ip)
{
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = 3000, .loopback_only = 1};
    return godis_client_new(ip, 6379, &o);
}
