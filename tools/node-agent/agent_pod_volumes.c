/* agent_pod_volumes.c — where a pod's volumes live on this host, and the lookups a
 * container's environment needs from the API (configMapKeyRef).
 *
 * A PVC is the directory <state>/volumes/<ns>/<claim> (so data survives the pod; the PVC's
 * uid is recorded beside it in <claim>.uid and a re-created PVC gets a fresh directory, as a
 * new PV would be empty); an emptyDir is <state>/pods/<pod>/volumes/<name>, removed with the
 * pod; a hostPath is the path itself; a secret is <state>/pods/<pod>/volumes/<name> holding
 * one file per key (or per items entry) with the volume's mode, written when the pod starts
 * (kubelet also refreshes them later; nothing here needs that yet). Other volume types are
 * ignored. A pod that names a ServiceAccount of its own gets that account's credentials
 * (below, project_service_account). These run on a pod worker (they wait on the API
 * server), never on the main loop. */
#include "agent_pod.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"
#include "k8s_config.h"

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

/* Writes len bytes to dir/name with mode: a temporary file renamed over the old one, so a
 * program never reads half a key. name may hold '/' (a Secret item's path), never "..". */
static gd_err write_file_in(const char *dir, const char *name, const void *buf, size_t len,
                            int mode, char *err, size_t errlen)
{
    char path[NA_PATH_MAX], tmp[NA_PATH_MAX + 8];
    if (!*name || name[0] == '/' || strstr(name, "..") ||
        snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        snprintf(err, errlen, "bad file name %.100s", name);
        return GD_ERR_INVALID;
    }
    char *slash = strrchr(path, '/');
    *slash = '\0';
    bool made = na_mkdirs(path);
    *slash = '/';
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = made ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    bool ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len && fchmod(fd, (mode_t)mode & 0777) == 0;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "write %s: %s", path, strerror(errno));
        unlink(tmp);
        return GD_ERR_IO;
    }
    return GD_OK;
}

/* A secret volume: each key of the Secret (or each of the volume's items) becomes a file,
 * so a program reads a Secret-mounted key file as it would in a real pod; laid out and
 * replaced as the kubelet does (agent_atomic.c), at pod start and on every refresh. An
 * optional Secret that does not exist is an empty volume. *changed: a new version written. */
static gd_err secret_dir(na_agent *a, na_pod *p, const cJSON *vol, const char *dir, bool *changed,
                         char *err, size_t errlen)
{
    const char *name = gd_json_str_or(vol, "secret.secretName", "");
    bool optional = cJSON_IsTrue(gd_json_path(vol, "secret.optional"));
    int mode = (int)gd_json_int_or(vol, "secret.defaultMode", 0644);
    *changed = false;
    cJSON *sec = NULL;
    k8s_status st;
    gd_err e = k8s_get(a->api, &K8S_RES_SECRETS, p->ns, name, &sec, &st);
    if (e == GD_ERR_NOT_FOUND && optional) e = GD_OK;
    else if (e != GD_OK) {
        snprintf(err, errlen, "secret %s: %s", name, gd_strerror(e));
        return e;
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(sec, "data"), *items = gd_json_path(vol, "secret.items"), *it;
    bool listed = cJSON_GetArraySize(items) > 0;
    const cJSON *list = listed ? items : data;
    int cap = cJSON_GetArraySize(list), n = 0;
    na_payload_file *f = calloc((size_t)cap + 1, sizeof *f);
    if (!f) e = GD_ERR_NOMEM;
    if (f) cJSON_ArrayForEach(it, list) {
        const char *key = listed ? gd_json_str_or(it, "key", "") : it->string;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, key);
        if (!cJSON_IsString(v)) {
            if (optional) continue;
            snprintf(err, errlen, "secret %s has no key %s", name, key);
            e = GD_ERR_NOT_FOUND;
            break;
        }
        unsigned char *raw = NULL;
        size_t len = 0;
        if (gd_base64_decode(v->valuestring, strlen(v->valuestring), &raw, &len) != GD_OK) {
            snprintf(err, errlen, "secret %s key %s: bad base64", name, key);
            e = GD_ERR_PARSE;
            break;
        }
        f[n++] = (na_payload_file){.path = listed ? gd_json_str_or(it, "path", key) : key, .data = raw,
                                   .len = len, .mode = listed ? (int)gd_json_int_or(it, "mode", mode) : mode};
    }
    if (e == GD_OK) e = na_atomic_write(dir, f, (size_t)n, changed, err, errlen);
    for (int i = 0; i < n; i++) {
        explicit_bzero((void *)f[i].data, f[i].len);
        free((void *)f[i].data);
    }
    free(f);
    cJSON_Delete(sec);
    return e;
}

/* A pod that names a ServiceAccount of its own (not "default", token automount not turned
 * off) gets what kubelet would project at /var/run/secrets/kubernetes.io/serviceaccount: a
 * token bound to the pod (TokenRequest), the CA and the namespace. Processes here share one
 * filesystem, so they get them as <pod>/serviceaccount/kubeconfig through KUBECONFIG (set
 * by agent_pod_ctr.c): the program then runs with its account's RBAC, as in a cluster.
 * Pods on the default account (the godis members) talk to no API server and get nothing,
 * which spares the API server a TokenRequest per member. */
static gd_err project_service_account(na_agent *a, na_pod *p, char *err, size_t errlen)
{
    const char *sa = gd_json_str_or(p->obj, "spec.serviceAccountName", "");
    p->kubeconfig[0] = '\0';
    if (!*sa || strcmp(sa, "default") == 0 || cJSON_IsFalse(gd_json_path(p->obj, "spec.automountServiceAccountToken")))
        return GD_OK;
    char path[3 * NA_NAME_MAX + 64], body[3 * NA_NAME_MAX + 256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", p->ns, sa);
    snprintf(body, sizeof body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
             "\"spec\":{\"expirationSeconds\":86400,\"boundObjectRef\":{\"apiVersion\":\"v1\","
             "\"kind\":\"Pod\",\"name\":\"%s\",\"uid\":\"%s\"}}}", p->name, p->uid);
    cJSON *tr = NULL;
    k8s_status st;
    gd_err e = k8s_request(a->api, "POST", path, body, "application/json", &tr, &st);
    const char *tok = gd_json_str_or(tr, "status.token", "");
    const k8s_config *kc = k8s_client_config(a->api);
    char dir[NA_PATH_MAX], kcfg[3 * NA_PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s/serviceaccount", NA_PATH_MAX - 20, p->dir);
    if (e == GD_OK && !*tok) e = GD_ERR_PARSE;
    if (e != GD_OK) snprintf(err, errlen, "serviceaccount %s: token request: %s %s", sa, gd_strerror(e), st.message);
    if (e == GD_OK) e = write_file_in(dir, "token", tok, strlen(tok), 0600, err, errlen);
    if (e == GD_OK) e = write_file_in(dir, "namespace", p->ns, strlen(p->ns), 0644, err, errlen);
    if (e == GD_OK && kc->ca_pem) e = write_file_in(dir, "ca.crt", kc->ca_pem, kc->ca_pem_len, 0644, err, errlen);
    if (e == GD_OK) {
        int n = snprintf(kcfg, sizeof kcfg,
            "apiVersion: v1\nkind: Config\n"
            "clusters: [{name: cluster, cluster: {server: \"%s\"%s%s%s}}]\n"
            "users: [{name: %s, user: {tokenFile: \"%s/token\"}}]\n"
            "contexts: [{name: pod, context: {cluster: cluster, user: %s, namespace: \"%s\"}}]\n"
            "current-context: pod\n", kc->server, kc->ca_pem ? ", certificate-authority: \"" : "",
            kc->ca_pem ? dir : "", kc->ca_pem ? "/ca.crt\"" : "", sa, dir, sa, p->ns);
        e = n < (int)sizeof kcfg ? write_file_in(dir, "kubeconfig", kcfg, (size_t)n, 0600, err, errlen) : GD_ERR_TOO_LARGE;
    }
    if (e == GD_OK) snprintf(p->kubeconfig, sizeof p->kubeconfig, "%.*s/kubeconfig", NA_PATH_MAX - 20, dir);
    cJSON_Delete(tr);
    return e;
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
        } else if (gd_json_path(it, "secret")) {
            char vd[NA_PATH_MAX];
            if (snprintf(vd, sizeof vd, "%s/volumes", p->dir) >= (int)sizeof vd ||
                !na_path_join(v->host, sizeof v->host, vd, v->name)) {
                snprintf(err, errlen, "secret volume %s: bad name", v->name);
                return GD_ERR_INVALID;
            }
            bool changed;
            gd_err e = secret_dir(a, p, it, v->host, &changed, err, errlen);
            if (e != GD_OK) return e;
        } else {
            continue;    /* configMap/projected: not needed by the programs we run */
        }
        p->nvols++;
    }
    return project_service_account(a, p, err, errlen);
}

gd_err na_pod_refresh_volumes(na_agent *a, na_pod *p, char *err, size_t errlen)
{
    gd_err first = GD_OK;
    const cJSON *it, *vols = gd_json_path(p->obj, "spec.volumes");
    cJSON_ArrayForEach(it, vols) {
        if (!gd_json_path(it, "secret")) continue;
        const char *vname = gd_json_str_or(it, "name", "");
        for (int i = 0; i < p->nvols; i++) {
            if (strcmp(p->vols[i].name, vname) != 0) continue;
            char why[512] = "";
            bool changed = false;
            /* a Secret that cannot be read keeps the files as they are (the kubelet's choice
             * too: a deleted Secret does not empty a running pod's volume) */
            gd_err e = secret_dir(a, p, it, p->vols[i].host, &changed, why, sizeof why);
            if (e != GD_OK && first == GD_OK) { first = e; snprintf(err, errlen, "%s", why); }
            if (changed)
                gd_log(GD_LOG_INFO, "secret volume updated", "pod", p->name, "namespace", p->ns,
                       "volume", vname, "secret", gd_json_str_or(it, "secret.secretName", ""), NULL);
        }
    }
    return first;
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
