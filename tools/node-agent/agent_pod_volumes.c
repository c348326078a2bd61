/* agent_pod_volumes.c — where a pod's volumes live on this host, and the lookups a
 * container's environment needs from the API (configMapKeyRef).
 *
 * A PVC is the directory <state>/volumes/<ns>/<claim> (so data survives the pod; the PVC's
 * uid is recorded beside it in <claim>.uid and a re-created PVC gets a fresh directory, as a
 * new PV would be empty); an emptyDir is <state>/pods/<pod>/volumes/<name>, removed with the
 * pod; a hostPath is the path itself. Other volume types are ignored. These run on a pod
 * worker (they wait on the API server), never on the main loop. */
#include "agent_pod.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

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

gd_err na_pod_setup_volumes(na_agent *a, na_pod *p, char *err, size_t errlen)
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

gd_err na_pod_cm_lookup(void *ud, const char *ns, const char *name, const char *key, char **out,
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

size_t na_pod_mounts(const na_pod *p, const cJSON *ctr, na_mount *m, size_t cap)
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
