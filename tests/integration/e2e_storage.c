/* e2e_storage.c — see e2e_storage.h. */
#include "e2e_storage.h"
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "e2e_procs.h"
#include "gd_json.h"

bool e2e_storage_class_create(k8s_client *c, const char *name, const char *provisioner,
                              const char *reclaim, bool expand)
{
    char body[512], rp[64] = "";
    if (reclaim) snprintf(rp, sizeof rp, "\"reclaimPolicy\":\"%s\",", reclaim);
    snprintf(body, sizeof body, "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\","
             "\"metadata\":{\"name\":\"%s\"},\"provisioner\":\"%s\",%s"
             "\"volumeBindingMode\":\"WaitForFirstConsumer\"%s}", name, provisioner, rp,
             expand ? ",\"allowVolumeExpansion\":true" : "");
    cJSON *o = cJSON_Parse(body);
    gd_err e = k8s_create(c, &K8S_RES_STORAGECLASSES, NULL, o, NULL, NULL);
    cJSON_Delete(o);
    if (e != GD_OK && e != GD_ERR_ALREADY_EXISTS)
        fprintf(stderr, "storage: StorageClass %s: %s\n", name, gd_strerror(e));
    return e == GD_OK || e == GD_ERR_ALREADY_EXISTS;
}

static bool make_pv(k8s_client *c, e2e_local_pvs *v, const char *tag, const char *node, int k,
                    const char *capacity)
{
    if (v->n >= E2E_LOCAL_PVS_MAX) {
        fprintf(stderr, "storage: more than %d local PVs wanted\n", E2E_LOCAL_PVS_MAX);
        return false;
    }
    char *name = v->names[v->n], path[400], body[1400];
    snprintf(name, sizeof v->names[0], "itest-%s-%d-%s-%d", tag, (int)getpid(), node, k);
    snprintf(path, sizeof path, "%s/%s", v->dir, name);
    if (mkdir(path, 0700) != 0) {
        perror(path);
        return false;
    }
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\","
             "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"capacity\":{\"storage\":\"%s\"},"
             "\"accessModes\":[\"ReadWriteOnce\"],\"persistentVolumeReclaimPolicy\":\"Retain\","
             "\"storageClassName\":\"%s\",\"volumeMode\":\"Filesystem\",\"local\":{\"path\":\"%s\"},"
             "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
             "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}}",
             name, capacity, v->class_name, path, node);
    cJSON *o = cJSON_Parse(body);
    gd_err e = k8s_create(c, &K8S_RES_PVS, NULL, o, NULL, NULL);
    cJSON_Delete(o);
    if (e != GD_OK) {
        fprintf(stderr, "storage: PersistentVolume %s: %s\n", name, gd_strerror(e));
        return false;
    }
    v->n++;
    return true;
}

bool e2e_local_pvs_create(k8s_client *c, e2e_local_pvs *v, const char *tag, int per_node,
                          const char *capacity)
{
    snprintf(v->class_name, sizeof v->class_name, "local-static-%d", (int)getpid());
    snprintf(v->dir, sizeof v->dir, "/tmp/godis-itest-%s-vols-%d", tag, (int)getpid());
    v->n = v->nodes = 0;
    if (mkdir(v->dir, 0700) != 0) {
        perror(v->dir);
        v->dir[0] = '\0';           /* not ours: e2e_local_pvs_delete leaves it */
        return false;
    }
    if (!e2e_storage_class_create(c, v->class_name, "kubernetes.io/no-provisioner", NULL, false))
        return false;
    cJSON *list = NULL;
    if (k8s_list(c, &K8S_RES_NODES, NULL, NULL, &list, NULL) != GD_OK) return false;
    bool ok = true;
    const cJSON *n;
    cJSON_ArrayForEach(n, gd_json_path(list, "items")) {
        for (int k = 0; ok && k < per_node; k++) ok = make_pv(c, v, tag, gd_meta_name(n), k, capacity);
        if (!ok) break;
        v->nodes++;
    }
    cJSON_Delete(list);
    return ok;
}

void e2e_local_pvs_delete(k8s_client *c, e2e_local_pvs *v)
{
    for (int i = 0; i < v->n; i++) k8s_delete(c, &K8S_RES_PVS, NULL, v->names[i], NULL, NULL);
    if (v->class_name[0]) k8s_delete(c, &K8S_RES_STORAGECLASSES, NULL, v->class_name, NULL, NULL);
    if (v->dir[0]) e2e_remove_dir(v->dir);
    v->n = 0;
}
