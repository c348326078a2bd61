/* fleet.c — pipeline-replay --fleet K [--members M]: lists of every kind the operator
 * watches, as K GodisClusters of M members each leave them in a real cluster, for the scale
 * benchmark (tools/bench/scale.sh, issue 23 item 4). Per cluster: the GodisCluster, its
 * ConfigMap, and per member its Godis, ReplicaSet, Service, PVC and Pod; plus a few Nodes.
 * Shapes follow what the worker creates (worker/godis/godis_children.c) and what the API
 * server and controllers add (uids, timestamps, status, a Pod's defaulted spec and its
 * status), so the informers' stores and the worker's cache hold objects of realistic size
 * and field count. The list's kind is taken from the resource in the request path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet.h"

#define TS "\"2026-11-27T10:00:00Z\""
enum { NODES = 10 };

static void uid(char out[37], const char *kind, long i, long j)
{
    unsigned long long h = 1469598103934665603ull;
    for (const char *p = kind; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h ^= (unsigned long long)i * 0x9E3779B97F4A7C15ull + (unsigned long long)j;
    h *= 0xBF58476D1CE4E5B9ull;
    snprintf(out, 37, "%08llx-%04llx-4%03llx-a%03llx-%012llx", h >> 32, (h >> 16) & 0xffff,
             h & 0xfff, (h >> 20) & 0xfff, (h * 31) & 0xffffffffffffull);
}

static const char *ns = "bench";

/* The controller ownerReference to KIND/NAME. */
static int owner(char *b, size_t cap, const char *kind, const char *api, const char *name,
                 const char *ouid)
{
    return snprintf(b, cap, "\"ownerReferences\":[{\"apiVersion\":\"%s\",\"kind\":\"%s\","
                    "\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,"
                    "\"blockOwnerDeletion\":true}]", api, kind, name, ouid);
}

static int meta(char *b, size_t cap, const char *name, const char *kind, long i, long j,
                long rv, const char *extra)
{
    char u[37];
    uid(u, kind, i, j);
    return snprintf(b, cap, "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","
                    "\"resourceVersion\":\"%ld\",\"creationTimestamp\":" TS "%s%s}",
                    name, ns, u, rv, *extra ? "," : "", extra);
}

static const char *const ENV =
    "[{\"name\":\"CLUSTER_ID\",\"value\":\"%ld\"},{\"name\":\"CLUSTER_INITIAL-CLUSTER\","
    "\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"%s-config\",\"key\":\"initial-cluster\"}}},"
    "{\"name\":\"CLUSTER_JOIN\",\"value\":\"false\"},{\"name\":\"CLUSTER_WALDIR\",\"value\":"
    "\"/tmp/godis/wal\"},{\"name\":\"CLUSTER_SNAPDIR\",\"value\":\"/tmp/godis/snap\"}]";

/* The godis container of a member's pod template / pod. */
static int container(char *b, size_t cap, const char *cl, long id, bool pod)
{
    char env[768];
    snprintf(env, sizeof env, ENV, id, cl);
    return snprintf(b, cap,
        "\"containers\":[{\"name\":\"godis\",\"image\":\"kumkeehyun/godis:latest\","
        "\"args\":[\"cluster\"],\"ports\":[{\"name\":\"client\",\"containerPort\":6379,"
        "\"protocol\":\"TCP\"},{\"name\":\"peer\",\"containerPort\":6300,\"protocol\":\"TCP\"}],"
        "\"env\":%s,\"resources\":{},\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":"
        "\"/tmp/godis\"}%s],\"readinessProbe\":{\"tcpSocket\":{\"port\":6379},"
        "\"timeoutSeconds\":1,\"periodSeconds\":10,\"successThreshold\":1,\"failureThreshold\":3},"
        "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":"
        "\"File\",\"imagePullPolicy\":\"Always\"}],\"restartPolicy\":\"Always\","
        "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
        "\"securityContext\":{},\"schedulerName\":\"default-scheduler\",\"affinity\":"
        "{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":"
        "100,\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"cluster-name\":\"%s\"}},"
        "\"topologyKey\":\"kubernetes.io/hostname\"}}]}}",
        env, pod ? ",{\"name\":\"default-token-x\",\"readOnly\":true,\"mountPath\":"
                   "\"/var/run/secrets/kubernetes.io/serviceaccount\"}" : "", cl);
}

/* One object of `kind` (its plural) for cluster i, member j (1-based), into b. */
static int render(char *b, size_t cap, const char *plural, long i, long j, long rv)
{
    char cl[32], gd[48], m[2560], own[512], u[37], c[3072];
    snprintf(cl, sizeof cl, "gc-%05ld", i);
    snprintf(gd, sizeof gd, "%s-%ld", cl, j);
    if (!strcmp(plural, "godisclusters")) {
        meta(m, sizeof m, cl, "GodisCluster", i, 0, rv, "\"generation\":1,\"finalizers\":"
             "[\"kumkeehyun.github.com/members\"]");
        return snprintf(b, cap, "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":"
            "\"GodisCluster\",%s,\"spec\":{\"replicas\":%ld,\"image\":\"kumkeehyun/godis:latest\","
            "\"storage\":{\"size\":\"1Gi\"}},\"status\":{\"status\":\"Running\",\"replicas\":%ld,"
            "\"nextID\":%ld,\"initialReplicas\":%ld,\"members\":[1],\"readyReplicas\":%ld,"
            "\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
            "\"reason\":\"AllMembersReady\",\"message\":\"every member is Ready\","
            "\"lastTransitionTime\":" TS ",\"observedGeneration\":1},{\"type\":\"Progressing\","
            "\"status\":\"False\",\"reason\":\"Idle\",\"message\":\"\",\"lastTransitionTime\":" TS
            ",\"observedGeneration\":1},{\"type\":\"Degraded\",\"status\":\"False\",\"reason\":"
            "\"Healthy\",\"message\":\"\",\"lastTransitionTime\":" TS ",\"observedGeneration\":1}]}}",
            m, j, j, j + 1, j, j);
    }
    uid(u, "GodisCluster", i, 0);
    char lab[128];
    snprintf(lab, sizeof lab, "\"labels\":{\"cluster-name\":\"%s\",\"node-name\":\"%s\"}", cl, gd);
    if (!strcmp(plural, "configmaps")) {
        owner(own, sizeof own, "GodisCluster", "kumkeehyun.github.com/v1", cl, u);
        char nm[48], ex[640];
        snprintf(nm, sizeof nm, "%s-config", cl);
        snprintf(ex, sizeof ex, "\"labels\":{\"cluster-name\":\"%s\"},%s", cl, own);
        meta(m, sizeof m, nm, "ConfigMap", i, 0, rv, ex);
        return snprintf(b, cap, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",%s,\"data\":"
            "{\"initial-cluster\":\"1@http://%s-1-endpoint.%s.svc.cluster.local:6300\"}}", m, cl, ns);
    }
    if (!strcmp(plural, "godises")) {
        owner(own, sizeof own, "GodisCluster", "kumkeehyun.github.com/v1", cl, u);
        char ex[640];
        snprintf(ex, sizeof ex, "\"generation\":1,\"labels\":{\"cluster-name\":\"%s\"},%s", cl, own);
        meta(m, sizeof m, gd, "Godis", i, j, rv, ex);
        return snprintf(b, cap, "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"Godis\","
            "%s,\"spec\":{\"preferred\":true},\"status\":{\"state\":\"Running\"}}", m);
    }
    uid(u, "Godis", i, j);
    owner(own, sizeof own, "Godis", "kumkeehyun.github.com/v1", gd, u);
    char ex[1536];
    snprintf(ex, sizeof ex, "%s,%s", lab, own);
    if (!strcmp(plural, "services")) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s-endpoint", gd);
        meta(m, sizeof m, nm, "Service", i, j, rv, ex);
        return snprintf(b, cap, "{\"kind\":\"Service\",\"apiVersion\":\"v1\",%s,\"spec\":{\"ports\":"
            "[{\"name\":\"client\",\"protocol\":\"TCP\",\"port\":6379,\"targetPort\":6379},"
            "{\"name\":\"peer\",\"protocol\":\"TCP\",\"port\":6300,\"targetPort\":6300}],"
            "\"selector\":{\"node-name\":\"%s\"},\"clusterIP\":\"10.%ld.%ld.%ld\",\"clusterIPs\":"
            "[\"10.%ld.%ld.%ld\"],\"type\":\"ClusterIP\",\"sessionAffinity\":\"None\"},"
            "\"status\":{\"loadBalancer\":{}}}", m, gd, (i >> 16) & 255, (i >> 8) & 255, i & 255,
            (i >> 16) & 255, (i >> 8) & 255, i & 255);
    }
    if (!strcmp(plural, "persistentvolumeclaims")) {
        char nm[64], pv[37];
        snprintf(nm, sizeof nm, "data-%s", gd);
        snprintf(ex, sizeof ex, "%s,%s,\"annotations\":{\"pv.kubernetes.io/bind-completed\":\"yes\","
                 "\"pv.kubernetes.io/bound-by-controller\":\"yes\",\"volume.beta.kubernetes.io/"
                 "storage-provisioner\":\"kubernetes.io/host-path\"},\"finalizers\":"
                 "[\"kubernetes.io/pvc-protection\"]", lab, own);
        meta(m, sizeof m, nm, "PersistentVolumeClaim", i, j, rv, ex);
        uid(pv, "PersistentVolume", i, j);
        return snprintf(b, cap, "{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",%s,"
            "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":"
            "\"1Gi\"}},\"volumeName\":\"pvc-%s\",\"storageClassName\":\"standard\",\"volumeMode\":"
            "\"Filesystem\"},\"status\":{\"phase\":\"Bound\",\"accessModes\":[\"ReadWriteOnce\"],"
            "\"capacity\":{\"storage\":\"1Gi\"}}}", m, pv);
    }
    if (!strcmp(plural, "replicasets")) {
        meta(m, sizeof m, gd, "ReplicaSet", i, j, rv, ex);
        container(c, sizeof c, cl, j, false);
        return snprintf(b, cap, "{\"kind\":\"ReplicaSet\",\"apiVersion\":\"apps/v1\",%s,\"spec\":"
            "{\"replicas\":1,\"selector\":{\"matchLabels\":{\"node-name\":\"%s\"}},\"template\":"
            "{\"metadata\":{\"creationTimestamp\":null,%s},\"spec\":{\"volumes\":[{\"name\":\"data\","
            "\"persistentVolumeClaim\":{\"claimName\":\"data-%s\"}}],%s}}},\"status\":{\"replicas\":1,"
            "\"fullyLabeledReplicas\":1,\"readyReplicas\":1,\"availableReplicas\":1,"
            "\"observedGeneration\":1}}", m, gd, lab, gd, c);
    }
    if (!strcmp(plural, "pods")) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s-%05lx", gd, (i * 7919 + j) & 0xfffff);
        uid(u, "ReplicaSet", i, j);
        owner(own, sizeof own, "ReplicaSet", "apps/v1", gd, u);
        snprintf(ex, sizeof ex, "\"labels\":{\"cluster-name\":\"%s\",\"node-name\":\"%s\","
                 "\"pod-template-hash\":\"%05lx\"},%s", cl, gd, (i * 31 + j) & 0xfffff, own);
        meta(m, sizeof m, nm, "Pod", i, j, rv, ex);
        container(c, sizeof c, cl, j, true);
        long ip = 2 + i * 3 + j;
        return snprintf(b, cap, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",%s,\"spec\":{\"volumes\":"
            "[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data-%s\"}},{\"name\":"
            "\"default-token-x\",\"secret\":{\"secretName\":\"default-token-x\",\"defaultMode\":420}}],"
            "%s,\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\",\"nodeName\":"
            "\"node-%ld\",\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":"
            "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
            "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
            "\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true,"
            "\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{\"phase\":\"Running\","
            "\"conditions\":[{\"type\":\"Initialized\",\"status\":\"True\",\"lastProbeTime\":null,"
            "\"lastTransitionTime\":" TS "},{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":"
            "null,\"lastTransitionTime\":" TS "},{\"type\":\"ContainersReady\",\"status\":\"True\","
            "\"lastProbeTime\":null,\"lastTransitionTime\":" TS "},{\"type\":\"PodScheduled\","
            "\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":" TS "}],\"hostIP\":"
            "\"127.0.0.1\",\"podIP\":\"127.%ld.%ld.%ld\",\"podIPs\":[{\"ip\":\"127.%ld.%ld.%ld\"}],"
            "\"startTime\":" TS ",\"containerStatuses\":[{\"name\":\"godis\",\"state\":{\"running\":"
            "{\"startedAt\":" TS "}},\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":"
            "\"kumkeehyun/godis:latest\",\"imageID\":\"\",\"containerID\":\"standin://%s\","
            "\"started\":true}],\"qosClass\":\"BestEffort\"}}", m, gd, c, (i + j) % NODES,
            (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, (ip >> 16) & 255, (ip >> 8) & 255,
            ip & 255, u);
    }
    return -1;
}

static const char *const PLURALS[] = {"godisclusters", "configmaps", "godises", "replicasets",
                                      "services", "persistentvolumeclaims", "pods", "nodes"};

/* The plural named in the request line's path ("GET /api/v1/pods?..."), or NULL. */
static const char *plural_of(const char *req)
{
    const char *q = strchr(req, '?'), *end = q ? q : req + strlen(req);
    const char *sp = memchr(req, ' ', (size_t)(end - req));
    if (sp)
        end = sp + 1 + strcspn(sp + 1, " ?");
    for (size_t k = 0; k < sizeof PLURALS / sizeof *PLURALS; k++) {
        size_t n = strlen(PLURALS[k]);
        if ((size_t)(end - req) > n && !memcmp(end - n, PLURALS[k], n) && end[-(long)n - 1] == '/')
            return PLURALS[k];
    }
    return NULL;
}

char *fleet_list(const char *req, long clusters, long members, size_t *len)
{
    const char *plural = plural_of(req);
    if (!plural)
        return NULL;
    bool per_member = strcmp(plural, "godisclusters") && strcmp(plural, "configmaps") &&
                      strcmp(plural, "nodes");
    long n = !strcmp(plural, "nodes") ? NODES : clusters * (per_member ? members : 1);
    size_t cap = 256 + (size_t)n * 6144;
    char *b = malloc(cap), one[6144];
    if (!b)
        return NULL;
    size_t o = (size_t)snprintf(b, cap, "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":"
                                        "{\"resourceVersion\":\"%ld\"},\"items\":[", 1000000L);
    long rv = 100;
    for (long k = 0; k < n; k++) {
        int w;
        if (!strcmp(plural, "nodes")) {
            char nm[32], m[512];
            snprintf(nm, sizeof nm, "node-%ld", k);
            meta(m, sizeof m, nm, "Node", k, 0, rv + k, "\"labels\":{\"kubernetes.io/hostname\":"
                 "\"node\"}");
            /* nodes are cluster-scoped: the namespace the helper writes is harmless here */
            w = snprintf(one, sizeof one, "{\"kind\":\"Node\",\"apiVersion\":\"v1\",%s,\"spec\":{},"
                         "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", m);
        } else {
            long i = per_member ? k / members : k, j = per_member ? k % members + 1 : members;
            w = render(one, sizeof one, plural, i, j, rv + k);
        }
        if (w < 0 || (size_t)w >= sizeof one)
            continue;
        if (k)
            b[o++] = ',';
        memcpy(b + o, one, (size_t)w);
        o += (size_t)w;
    }
    o += (size_t)snprintf(b + o, cap - o, "]}");
    *len = o;
    return b;
}
