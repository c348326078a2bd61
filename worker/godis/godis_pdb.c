/* godis_pdb.c — see godis_pdb.h. */
#include "godis_pdb.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"

#define SEEN_CAP 4096

static const k8s_resource PDB_V1 = {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true};
static const k8s_resource PDB_V1BETA1 = {"policy", "v1beta1", "poddisruptionbudgets",
                                         "PodDisruptionBudget", true};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_seen[SEEN_CAP][40];           /* cluster uids with a PDB, a ring */
static int g_next;
static int g_v1 = -1;                       /* policy/v1 served: -1 unknown, 0, 1 */

cJSON *godis_build_pdb(const char *api_version, const char *ns, const char *cluster,
                       const char *cluster_uid)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", "PodDisruptionBudget");
    cJSON *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", cluster);
    cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "labels"), "cluster-name", cluster);
    cJSON *ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", "kumkeehyun.github.com/v1");
    cJSON_AddStringToObject(ref, "kind", "GodisCluster");
    cJSON_AddStringToObject(ref, "name", cluster);
    cJSON_AddStringToObject(ref, "uid", cluster_uid);
    cJSON_AddBoolToObject(ref, "controller", 1);
    cJSON_AddBoolToObject(ref, "blockOwnerDeletion", 1);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "ownerReferences"), ref);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddNumberToObject(spec, "maxUnavailable", 1);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "selector"),
                                                    "matchLabels"), "cluster-name", cluster);
    return o;
}

static bool seen(const char *uid)
{
    bool yes = false;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < SEEN_CAP && !yes; i++) yes = !strcmp(g_seen[i], uid);
    pthread_mutex_unlock(&g_mu);
    return yes;
}

static void remember(const char *uid)
{
    pthread_mutex_lock(&g_mu);
    snprintf(g_seen[g_next], sizeof g_seen[g_next], "%s", uid);
    g_next = (g_next + 1) % SEEN_CAP;
    pthread_mutex_unlock(&g_mu);
}

/* API discovery for one group version, asked once per process: by one reconcile, the
 * others waiting for its answer (a 100-cluster burst had 30 reconciles ask at once). */
static pthread_mutex_t g_probe_mu = PTHREAD_MUTEX_INITIALIZER;

static const k8s_resource *pdb_resource(k8s_client *c)
{
    pthread_mutex_lock(&g_mu);
    int v1 = g_v1;
    pthread_mutex_unlock(&g_mu);
    if (v1 < 0) {
        pthread_mutex_lock(&g_probe_mu);
        pthread_mutex_lock(&g_mu);
        v1 = g_v1;                              /* answered while we waited? */
        pthread_mutex_unlock(&g_mu);
        if (v1 < 0) {
            k8s_status st = {0};
            gd_err e = k8s_request(c, "GET", "/apis/policy/v1", NULL, NULL, NULL, &st);
            if (e != GD_OK && e != GD_ERR_NOT_FOUND) {
                pthread_mutex_unlock(&g_probe_mu);
                return NULL;                    /* ask again next time */
            }
            v1 = e == GD_OK;
            pthread_mutex_lock(&g_mu);
            g_v1 = v1;
            pthread_mutex_unlock(&g_mu);
            gd_log(GD_LOG_INFO, "PodDisruptionBudgets as", "apiVersion",
                   v1 ? "policy/v1" : "policy/v1beta1", NULL);
        }
        pthread_mutex_unlock(&g_probe_mu);
    }
    return v1 ? &PDB_V1 : &PDB_V1BETA1;
}

/* Whether a quorum of the recorded members has a Ready pod, in the cache. Before that there
 * is nothing a budget would protect (no member serves, or too few to take a write: an
 * eviction costs no availability), and a budget created with the cluster made the
 * disruption controller rewrite its status for every member pod created, scheduled and
 * turning Ready: 479 writes for a 100 x 3 converge (4.8 a cluster), while the API server
 * was busiest. Created at quorum, it says disruptionsAllowed 0 until every member is Ready,
 * and it is never taken away again. */
static bool quorum_ready(godis_env *e, const char *ns, const char *name, const cJSON *gc)
{
    int members = cJSON_GetArraySize(gd_json_path(gc, "status.members"));
    if (members <= 0) return false;               /* not recorded yet: nothing runs */
    if (!e->list) return true;
    const cJSON *pods = e->list(e, "Pod", ns, "cluster-name", name);
    const char *seen_members[64];
    int ready = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        const char *m = gd_json_str_or(p, "metadata.labels.node-name", "");
        if (!*m || gd_meta_deleting(p) || !gd_meta_condition_true(p, "Ready")) continue;
        bool dup = false;                         /* (a rollout's pods: one member) */
        for (int i = 0; i < ready && !dup; i++) dup = !strcmp(seen_members[i], m);
        if (!dup && ready < (int)(sizeof seen_members / sizeof seen_members[0]))
            seen_members[ready++] = m;
    }
    godis_drop(pods);
    return ready >= members / 2 + 1;
}

void godis_ensure_pdb(godis_env *e, const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash || !e->client) return;
    char ns[256];
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    const cJSON *gc = e->get(e, "GodisCluster", ns, slash + 1);
    godis_ensure_pdb_of(e, gc);
    godis_drop(gc);
}

void godis_ensure_pdb_of(godis_env *e, const cJSON *gc)
{
    const char *uid = gc ? gd_meta_uid(gc) : "";
    const char *ns = gd_meta_namespace(gc), *name = gd_meta_name(gc);
    if (!gc || !e->client || gd_meta_deleting(gc) || !uid[0] || !*ns || !*name || seen(uid) ||
        !quorum_ready(e, ns, name, gc) || (e->may_write && e->may_write(e) != GD_OK))
        return;
    char key[600];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    const k8s_resource *r = pdb_resource(e->client);
    if (r) {
        cJSON *pdb = godis_build_pdb(r == &PDB_V1 ? "policy/v1" : "policy/v1beta1",
                                     ns, name, uid);
        k8s_status st = {0};
        gd_err err = k8s_create(e->client, r, ns, pdb, NULL, &st);
        cJSON_Delete(pdb);
        if (err == GD_OK || err == GD_ERR_ALREADY_EXISTS) remember(uid);
        else gd_log(GD_LOG_WARN, "cannot create the PodDisruptionBudget (retried on the next "
                    "reconcile)", "cluster", key, "error", gd_strerror(err), "message", st.message, NULL);
    }
}
