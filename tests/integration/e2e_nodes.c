/* e2e_nodes.c — see e2e_nodes.h. */
#include "e2e_nodes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_time.h"

static bool schedulable(const cJSON *node)
{
    bool cordoned = false;
    gd_json_bool(node, "spec.unschedulable", &cordoned);
    if (cordoned || gd_meta_deleting(node) || !gd_meta_condition_true(node, "Ready")) return false;
    const cJSON *t;
    cJSON_ArrayForEach(t, gd_json_path(node, "spec.taints")) {
        const char *eff = gd_json_str_or(t, "effect", "");
        if (!strcmp(eff, "NoSchedule") || !strcmp(eff, "NoExecute")) return false;
    }
    return true;
}

int e2e_schedulable_nodes(k8s_client *c)
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    if (k8s_list(c, &K8S_RES_NODES, NULL, &lo, &list, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *node;
    cJSON_ArrayForEach(node, gd_json_path(list, "items")) n += schedulable(node);
    cJSON_Delete(list);
    return n;
}

static bool own_nodes_ready(k8s_client *c, const e2e_extra_nodes *x)
{
    for (int i = 1; i <= x->n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%d", x->prefix, i);
        cJSON *node = NULL;
        bool ok = k8s_get(c, &K8S_RES_NODES, NULL, name, &node, NULL) == GD_OK && schedulable(node);
        cJSON_Delete(node);
        if (!ok) return false;
    }
    return true;
}

bool e2e_extra_nodes_start(k8s_client *c, e2e_extra_nodes *x, const char *prefix, int n,
                           const char *log_dir, int timeout_ms)
{
    memset(x, 0, sizeof *x);
    x->n = n;
    snprintf(x->prefix, sizeof x->prefix, "%s", prefix);
    /* the devcluster's pod block: 127.(16 + API port % 224).0.0/16 */
    const char *api = getenv("KUBE_APISERVER"), *colon = api ? strrchr(api, ':') : NULL;
    if (!colon || !getenv("GODIS_HOSTS_FILE")) {
        fprintf(stderr, "extra nodes: KUBE_APISERVER or GODIS_HOSTS_FILE unset (tools/devcluster env)\n");
        return false;
    }
    char ip[32], nodes[16], log[512], block[48];
    snprintf(ip, sizeof ip, "127.%d.192.0", 16 + atoi(colon + 1) % 224);
    snprintf(nodes, sizeof nodes, "%d", n);
    snprintf(log, sizeof log, "%s/%sagent.log", log_dir, prefix);
    snprintf(block, sizeof block, "%sagent", prefix);
    snprintf(x->state_dir, sizeof x->state_dir, "/tmp/itest-%sXXXXXX", prefix);
    if (!mkdtemp(x->state_dir)) {
        perror("extra nodes: mkdtemp");
        x->state_dir[0] = '\0';
        return false;
    }
    const char *argv[] = {"bin/node-agent", "--kubeconfig", getenv("KUBECONFIG"), "--nodes", nodes,
                          "--node-prefix", prefix, "--state-dir", x->state_dir, "--ip-base", ip,
                          "--hosts-file", getenv("GODIS_HOSTS_FILE"), "--hosts-block", block,
                          "--heartbeat", "2s", NULL};
    x->pid = e2e_spawn(argv, log);
    if (x->pid <= 0) {
        x->pid = 0;
        return false;
    }
    int64_t deadline = gd_mono_ms() + timeout_ms;
    while (!own_nodes_ready(c, x) && gd_mono_ms() < deadline) gd_sleep_ms(200);
    if (own_nodes_ready(c, x)) return true;
    fprintf(stderr, "extra nodes %s1..%d not Ready after %d ms (see %s)\n", prefix, n, timeout_ms, log);
    return false;
}

void e2e_extra_nodes_stop(k8s_client *c, e2e_extra_nodes *x)
{
    if (x->pid > 0) e2e_stop(x->pid, 40000);
    x->pid = 0;
    for (int i = 1; i <= x->n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%d", x->prefix, i);
        e2e_delete(c, &K8S_RES_NODES, NULL, name, -1);
        if (!e2e_wait_gone(c, &K8S_RES_NODES, NULL, name, 30000))
            fprintf(stderr, "extra node %s still there\n", name);
    }
    x->n = 0;
    if (x->state_dir[0]) e2e_remove_dir(x->state_dir);
    x->state_dir[0] = '\0';
}
