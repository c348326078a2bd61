/* k8s_resources.c — the resource types the project talks to, and REST paths for them.
 *
 * A static table instead of API discovery: the set is small and fixed, and the test API
 * server is Kubernetes 1.20 (hence policy/v1beta1 for PodDisruptionBudgets). */
#include "k8s_client.h"
#include "k8s_internal.h"
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define RES(sym, g, v, res, k, nsd) const k8s_resource sym = {g, v, res, k, nsd}
RES(K8S_RES_CONFIGMAPS, "", "v1", "configmaps", "ConfigMap", true);
RES(K8S_RES_PODS, "", "v1", "pods", "Pod", true);
RES(K8S_RES_SERVICES, "", "v1", "services", "Service", true);
RES(K8S_RES_PVCS, "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true);
RES(K8S_RES_PVS, "", "v1", "persistentvolumes", "PersistentVolume", false);
RES(K8S_RES_NODES, "", "v1", "nodes", "Node", false);
RES(K8S_RES_EVENTS, "", "v1", "events", "Event", true);
RES(K8S_RES_NAMESPACES, "", "v1", "namespaces", "Namespace", false);
RES(K8S_RES_SERVICEACCOUNTS, "", "v1", "serviceaccounts", "ServiceAccount", true);
RES(K8S_RES_SECRETS, "", "v1", "secrets", "Secret", true);
RES(K8S_RES_REPLICASETS, "apps", "v1", "replicasets", "ReplicaSet", true);
RES(K8S_RES_DEPLOYMENTS, "apps", "v1", "deployments", "Deployment", true);
RES(K8S_RES_LEASES, "coordination.k8s.io", "v1", "leases", "Lease", true);
RES(K8S_RES_GODISCLUSTERS, "kumkeehyun.github.com", "v1", "godisclusters", "GodisCluster",
    true);
RES(K8S_RES_GODISES, "kumkeehyun.github.com", "v1", "godises", "Godis", true);
RES(K8S_RES_STORAGECLASSES, "storage.k8s.io", "v1", "storageclasses", "StorageClass", false);
RES(K8S_RES_CRDS, "apiextensions.k8s.io", "v1", "customresourcedefinitions",
    "CustomResourceDefinition", false);
RES(K8S_RES_ROLES, "rbac.authorization.k8s.io", "v1", "roles", "Role", true);
RES(K8S_RES_ROLEBINDINGS, "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding",
    true);
RES(K8S_RES_CLUSTERROLES, "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
    false);
RES(K8S_RES_CLUSTERROLEBINDINGS, "rbac.authorization.k8s.io", "v1", "clusterrolebindings",
    "ClusterRoleBinding", false);
RES(K8S_RES_PDBS, "policy", "v1beta1", "poddisruptionbudgets", "PodDisruptionBudget", true);

static const struct {
    const k8s_resource *res;
    const char *shortnames;         /* space-separated, as kubectl knows them */
} TABLE[] = {
    {&K8S_RES_CONFIGMAPS, "cm"},
    {&K8S_RES_PODS, "po"},
    {&K8S_RES_SERVICES, "svc"},
    {&K8S_RES_PVCS, "pvc"},
    {&K8S_RES_PVS, "pv"},
    {&K8S_RES_NODES, "no"},
    {&K8S_RES_EVENTS, "ev"},
    {&K8S_RES_NAMESPACES, "ns"},
    {&K8S_RES_SERVICEACCOUNTS, "sa"},
    {&K8S_RES_SECRETS, ""},
    {&K8S_RES_REPLICASETS, "rs"},
    {&K8S_RES_DEPLOYMENTS, "deploy"},
    {&K8S_RES_LEASES, ""},
    {&K8S_RES_GODISCLUSTERS, "gc gdc"},   /* the CRDs' shortNames */
    {&K8S_RES_GODISES, "gd"},
    {&K8S_RES_STORAGECLASSES, "sc"},
    {&K8S_RES_CRDS, "crd crds"},
    {&K8S_RES_ROLES, ""},
    {&K8S_RES_ROLEBINDINGS, ""},
    {&K8S_RES_CLUSTERROLES, ""},
    {&K8S_RES_CLUSTERROLEBINDINGS, ""},
    {&K8S_RES_PDBS, "pdb"},
};

static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *sp = strchr(p, ' ');
        size_t len = sp ? (size_t)(sp - p) : strlen(p);
        if (len == n && strncasecmp(p, name, n) == 0)
            return true;
        p += len;
        while (*p == ' ')
            p++;
    }
    return false;
}

const k8s_resource *k8s_resource_lookup(const char *name)
{
    if (!name || !*name)
        return NULL;
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++) {
        const k8s_resource *r = TABLE[i].res;
        /* kind ("Pod", case-insensitive, which also covers the singular "pod"), plural,
         * short names */
        if (strcasecmp(name, r->kind) == 0 || strcasecmp(name, r->resource) == 0 ||
            in_list(TABLE[i].shortnames, name))
            return r;
    }
    return NULL;
}

int k8s_urlencode(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t j = 0;
    if (!out || cap == 0)
        return -1;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
                     *p == '~';
        if (plain) {
            if (j + 1 >= cap)
                return -1;
            out[j++] = (char)*p;
        } else {
            if (j + 3 >= cap)
                return -1;
            out[j++] = '%';
            out[j++] = hex[*p >> 4];
            out[j++] = hex[*p & 15];
        }
    }
    out[j] = '\0';
    return (int)j;
}

/* Appends "/" + the encoded segment. A segment of "." or ".." would be collapsed by URL
 * normalisation into another path, so it is refused rather than sent. */
static bool add_segment(char *buf, size_t cap, size_t *len, const char *seg, bool encode)
{
    if (encode && (strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0))
        return false;
    if (*len + 2 > cap)
        return false;
    buf[(*len)++] = '/';
    buf[*len] = '\0';
    if (!encode) {
        size_t n = strlen(seg);
        if (*len + n + 1 > cap)
            return false;
        memcpy(buf + *len, seg, n + 1);
        *len += n;
        return true;
    }
    int n = k8s_urlencode(buf + *len, cap - *len, seg);
    if (n < 0)
        return false;
    *len += (size_t)n;
    return true;
}

int k8s_path(char *buf, size_t cap, const k8s_resource *r, const char *ns, const char *name,
             const char *subresource)
{
    if (!buf || cap == 0 || !r || !r->version || !r->resource)
        return -1;
    buf[0] = '\0';
    size_t len = 0;
    bool ok;
    if (!r->group || !r->group[0])
        ok = add_segment(buf, cap, &len, "api", false);
    else
        ok = add_segment(buf, cap, &len, "apis", false) &&
             add_segment(buf, cap, &len, r->group, true);
    ok = ok && add_segment(buf, cap, &len, r->version, true);
    if (ok && r->namespaced && ns && ns[0])
        ok = add_segment(buf, cap, &len, "namespaces", false) &&
             add_segment(buf, cap, &len, ns, true);
    ok = ok && add_segment(buf, cap, &len, r->resource, true);
    if (ok && name && name[0])
        ok = add_segment(buf, cap, &len, name, true);
    if (ok && subresource && subresource[0]) {
        if (!name || !name[0])
            ok = false;                 /* a subresource belongs to a named object */
        else
            ok = add_segment(buf, cap, &len, subresource, true);
    }
    if (!ok) {
        buf[0] = '\0';
        return -1;
    }
    return (int)len;
}
