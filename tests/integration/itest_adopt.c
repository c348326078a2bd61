/* Drop-in adoption (issue 15.3): the operator installed over clusters that seed 000's Go
 * controller made. The test makes, by hand, exactly the objects that controller makes for a
 * 3-member cluster (github.com/KumKeeHyun/godis pkg/controller: sync_cluster.go newGodis,
 * newConfigMapForInit; sync_godis.go newService, newVolumeClaim, newReplicaSet; names from
 * resource.go): the GodisCluster with the status it writes, the ConfigMap and the Godis
 * objects owned by the GodisCluster, and per Godis a Service, a PVC and a ReplicaSet owned by
 * it — none of them labelled the way this operator's informers select. Two clusters:
 *   go-exact   as the Go code makes them: the Godis carry cluster-name and the ReplicaSets
 *              cluster-name/node-name, the ConfigMap, Services and PVCs no labels at all;
 *   go-bare    no labels on any of them (only the pod template keeps the labels its
 *              ReplicaSet's selector needs), the worst case.
 * The stand-ins run as the Go controller's pods and hold a key each. Then the manager
 * starts and must adopt both: same member ids, same pods (same uid, no container restart),
 * same PVCs (uid) and data, our labels and status filled in, no AlreadyExists loop (the API
 * server's audit log: at most one refused create per adopted object) — and afterwards
 * scale 3 -> 4 -> 3 as any cluster of its own. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "audit_log.h"
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "godis_client.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

#define TIMEOUT_MS 120000
#define NMEMBERS 3

static k8s_client *kc;
static char ns[64], logdir[256], rundir[256], lease[64], identity[64];
static pid_t manager;

typedef struct {
    const char *name;
    bool go_labels;              /* the labels the Go code does set (Godis, ReplicaSet) */
    char uid[64];
    char godis_uid[NMEMBERS][64], pod_uid[NMEMBERS][64], pvc_uid[NMEMBERS][64];
    char svc_uid[NMEMBERS][64], rs_uid[NMEMBERS][64], cm_uid[64];
} go_cluster;

static go_cluster clusters[2] = {{.name = "go-exact", .go_labels = true},
                                 {.name = "go-bare", .go_labels = false}};

/* ---- the Go controller's objects ---- */

static cJSON *create_json(const k8s_resource *r, const char *fmt, ...)
{
    char body[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    cJSON *obj = cJSON_Parse(body);
    assert_non_null(obj);
    cJSON *out = NULL;
    k8s_status st = {0};
    gd_err e = k8s_create(kc, r, ns, obj, &out, &st);
    if (e) fprintf(stderr, "adopt: create %s: %s %s\n%s\n", r->resource, gd_strerror(e), st.message, body);
    assert_int_equal(e, GD_OK);
    cJSON_Delete(obj);
    return out;
}

/* metav1.NewControllerRef(owner, kind) */
static void owner_ref(char *buf, size_t cap, const char *kind, const char *name, const char *uid)
{
    snprintf(buf, cap, "[{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"%s\","
             "\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]",
             kind, name, uid);
}

static void make_go_cluster(go_cluster *g)
{
    /* example-godis.yml, then initializeCluster's two status writes (Initializing, then
     * Running with initialReplicas cleared; the Go struct has no omitempty, so the nil
     * pointers travel as null). */
    cJSON *gc = create_json(&K8S_RES_GODISCLUSTERS,
        "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"name\":\"%s\",\"replicas\":%d}}",
        g->name, g->name, NMEMBERS);
    snprintf(g->uid, sizeof g->uid, "%s", gd_meta_uid(gc));
    cJSON *status = cJSON_Parse("{\"replicas\":3,\"nextID\":4,\"status\":\"Running\","
                                "\"initialReplicas\":null,\"scaleOutID\":null,\"scaleInID\":null}");
    cJSON_ReplaceItemInObject(gc, "status", status);
    k8s_status st = {0};
    gd_err e = k8s_update_status(kc, &K8S_RES_GODISCLUSTERS, gc, NULL, &st);
    if (e) fprintf(stderr, "adopt: status of %s: %s %s\n", g->name, gd_strerror(e), st.message);
    assert_int_equal(e, GD_OK);
    cJSON_Delete(gc);

    char own[512], peers[1024] = "";
    owner_ref(own, sizeof own, "GodisCluster", g->name, g->uid);
    for (int id = 1; id <= NMEMBERS; id++) {
        size_t l = strlen(peers);
        snprintf(peers + l, sizeof peers - l, "%s%d@http://%s-%d-endpoint.%s.svc.cluster.local:6300",
                 id > 1 ? "," : "", id, g->name, id, ns);
    }
    cJSON *cm = create_json(&K8S_RES_CONFIGMAPS,
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s-config\","
        "\"namespace\":\"%s\",\"ownerReferences\":%s},\"data\":{\"initial-cluster\":\"%s\"}}",
        g->name, ns, own, peers);
    snprintf(g->cm_uid, sizeof g->cm_uid, "%s", gd_meta_uid(cm));
    cJSON_Delete(cm);

    for (int id = 1; id <= NMEMBERS; id++) {
        char godis[128], glabels[256] = "", rslabels[400] = "", sel[300];
        snprintf(godis, sizeof godis, "%s-%d", g->name, id);
        snprintf(sel, sizeof sel, "{\"cluster-name\":\"%s\",\"node-name\":\"%s\"}", g->name, godis);
        if (g->go_labels) {
            snprintf(glabels, sizeof glabels, "\"labels\":{\"cluster-name\":\"%s\"},", g->name);
            snprintf(rslabels, sizeof rslabels, "\"labels\":%s,", sel);
        }
        cJSON *gd = create_json(&K8S_RES_GODISES,
            "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"Godis\",\"metadata\":"
            "{\"name\":\"%s\",\"namespace\":\"%s\",%s\"ownerReferences\":%s},"
            "\"spec\":{\"preferred\":true}}", godis, ns, glabels, own);
        int i = id - 1;
        snprintf(g->godis_uid[i], sizeof g->godis_uid[i], "%s", gd_meta_uid(gd));
        char gown[512];
        owner_ref(gown, sizeof gown, "Godis", godis, g->godis_uid[i]);
        cJSON_Delete(gd);
        cJSON *svc = create_json(&K8S_RES_SERVICES,
            "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"%s-endpoint\","
            "\"namespace\":\"%s\",\"ownerReferences\":%s},\"spec\":{\"ports\":["
            "{\"name\":\"client\",\"port\":6379,\"targetPort\":6379},"
            "{\"name\":\"peer\",\"port\":6300,\"targetPort\":6300}],"
            "\"selector\":%s,\"type\":\"ClusterIP\"}}", godis, ns, gown, sel);
        snprintf(g->svc_uid[i], sizeof g->svc_uid[i], "%s", gd_meta_uid(svc));
        cJSON_Delete(svc);
        /* newVolumeClaim sets no namespace: the request's namespace is used */
        cJSON *pvc = create_json(&K8S_RES_PVCS,
            "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":"
            "{\"name\":\"data-%s\",\"ownerReferences\":%s},\"spec\":{\"accessModes\":"
            "[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"50Mi\"}}}}", godis, gown);
        snprintf(g->pvc_uid[i], sizeof g->pvc_uid[i], "%s", gd_meta_uid(pvc));
        cJSON_Delete(pvc);
        cJSON *rs = create_json(&K8S_RES_REPLICASETS,
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"%s\",%s\"ownerReferences\":%s},\"spec\":{\"replicas\":1,"
            "\"minReadySeconds\":3,\"selector\":{\"matchLabels\":%s},\"template\":{\"metadata\":"
            "{\"labels\":%s},\"spec\":{\"hostname\":\"%s\",\"subdomain\":\"%s\",\"volumes\":["
            "{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data-%s\"}}],"
            "\"containers\":[{\"name\":\"godis\",\"image\":\"kbzjung359/godis\",\"args\":[\"cluster\"],"
            "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/tmp/godis\"}],\"env\":["
            "{\"name\":\"CLUSTER_ID\",\"value\":\"%d\"},"
            "{\"name\":\"CLUSTER_INITIAL-CLUSTER\",\"valueFrom\":{\"configMapKeyRef\":"
            "{\"name\":\"%s-config\",\"key\":\"initial-cluster\"}}},"
            "{\"name\":\"CLUSTER_WALDIR\",\"value\":\"/tmp/godis/wal\"},"
            "{\"name\":\"CLUSTER_SNAPDIR\",\"value\":\"/tmp/godis/snap\"},"
            "{\"name\":\"CLUSTER_JOIN\",\"value\":\"false\"}]}]}}}}",
            godis, ns, rslabels, gown, sel, sel, godis, g->name, godis, id, g->name);
        snprintf(g->rs_uid[i], sizeof g->rs_uid[i], "%s", gd_meta_uid(rs));
        cJSON_Delete(rs);
    }
}

/* ---- looking at what runs ---- */

/* The member's one live pod: uid, IP, container restarts; false when there is none yet. */
static bool member_pod(const char *godis, char *uid, size_t ucap, char *ip, size_t icap,
                       int64_t *restarts, bool *ready)
{
    char sel[200];
    snprintf(sel, sizeof sel, "node-name=%s", godis);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *list = NULL;
    if (k8s_list(kc, &K8S_RES_PODS, ns, &lo, &list, NULL) != GD_OK) return false;
    bool found = false;
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(list, "items")) {
        if (gd_meta_deleting(p) || found) continue;
        found = true;
        snprintf(uid, ucap, "%s", gd_meta_uid(p));
        snprintf(ip, icap, "%s", gd_json_str_or(p, "status.podIP", ""));
        *restarts = 0;
        *ready = false;
        const cJSON *cs;
        cJSON_ArrayForEach(cs, gd_json_path(p, "status.containerStatuses")) {
            *restarts += gd_json_int_or(cs, "restartCount", 0);
            bool r = false;
            gd_json_bool(cs, "ready", &r);
            *ready = r;
        }
    }
    cJSON_Delete(list);
    return found;
}

static char *key_of(char *buf, size_t cap, const go_cluster *g, int id)
{
    snprintf(buf, cap, "adopt-%s-%d", g->name, id);
    return buf;
}

/* Waits for the Go cluster's pods to run, then writes one key into each member. */
static void go_cluster_serving(go_cluster *g)
{
    for (int id = 1; id <= NMEMBERS; id++) {
        char godis[128], uid[64] = "", ip[64] = "", key[128];
        snprintf(godis, sizeof godis, "%s-%d", g->name, id);
        int64_t restarts = 0, deadline = gd_mono_ms() + TIMEOUT_MS;
        bool ready = false, stored = false;
        while (!stored && gd_mono_ms() < deadline) {
            if (member_pod(godis, uid, sizeof uid, ip, sizeof ip, &restarts, &ready) && ready && *ip) {
                godis_client *c = godis_client_new(ip, 6379, NULL);
                stored = c && godis_set(c, key_of(key, sizeof key, g, id), godis) == GD_OK;
                godis_client_destroy(&c);
            }
            if (!stored) gd_sleep_ms(200);
        }
        if (!stored) fprintf(stderr, "adopt: %s never served (pod %s ip %s)\n", godis, uid, ip);
        assert_true(stored);
        snprintf(g->pod_uid[id - 1], sizeof g->pod_uid[id - 1], "%s", uid);
    }
}

static void assert_labels(const k8s_resource *r, const char *name, const char *cluster,
                          const char *node, const char *uid)
{
    cJSON *o = NULL;
    assert_int_equal(k8s_get(kc, r, ns, name, &o, NULL), GD_OK);
    const char *cl = gd_meta_label(o, "cluster-name"), *nn = gd_meta_label(o, "node-name");
    if (!cl || strcmp(cl, cluster) || (node && (!nn || strcmp(nn, node))) || strcmp(gd_meta_uid(o), uid))
        fprintf(stderr, "adopt: %s %s: cluster-name=%s node-name=%s uid %s (want %s)\n", r->resource,
                name, cl ? cl : "-", nn ? nn : "-", gd_meta_uid(o), uid);
    assert_string_equal(cl ? cl : "", cluster);
    if (node) assert_string_equal(nn ? nn : "", node);
    assert_string_equal(gd_meta_uid(o), uid);
    cJSON_Delete(o);
}

/* The Go controller never wrote a Godis status: this operator fills status.state in. */
static bool godis_running(const char *godis)
{
    cJSON *g = NULL;
    if (k8s_get(kc, &K8S_RES_GODISES, ns, godis, &g, NULL) != GD_OK) return false;
    bool ok = strcmp(gd_json_str_or(g, "status.state", ""), "Running") == 0;
    cJSON_Delete(g);
    return ok;
}

/* Same objects (uids), now labelled; same pods, never restarted; data still there. */
/* same_pods: the members' pods are the Go controller's own (false once a spec change was
 * rolled out to them: new pods, same ids, volumes and data). */
static void assert_adopted_pods(const go_cluster *g, bool same_pods);
static void assert_adopted(const go_cluster *g)
{
    assert_adopted_pods(g, true);
}

static void assert_adopted_pods(const go_cluster *g, bool same_pods)
{
    char name[160];
    snprintf(name, sizeof name, "%s-config", g->name);
    assert_labels(&K8S_RES_CONFIGMAPS, name, g->name, NULL, g->cm_uid);
    for (int id = 1; id <= NMEMBERS; id++) {
        int i = id - 1;
        char godis[128], uid[64], ip[64], key[128];
        snprintf(godis, sizeof godis, "%s-%d", g->name, id);
        assert_labels(&K8S_RES_GODISES, godis, g->name, NULL, g->godis_uid[i]);
        int64_t deadline = gd_mono_ms() + TIMEOUT_MS;
        while (!godis_running(godis) && gd_mono_ms() < deadline) gd_sleep_ms(200);
        assert_true(godis_running(godis));
        snprintf(name, sizeof name, "%s-endpoint", godis);
        assert_labels(&K8S_RES_SERVICES, name, g->name, godis, g->svc_uid[i]);
        snprintf(name, sizeof name, "data-%s", godis);
        assert_labels(&K8S_RES_PVCS, name, g->name, godis, g->pvc_uid[i]);
        assert_labels(&K8S_RES_REPLICASETS, godis, g->name, godis, g->rs_uid[i]);
        int64_t restarts = -1;
        bool ready = false;
        /* A rolled member's new pod (same_pods false) may still be starting: the cluster
         * reads converged (members and readiness) while the rollout finishes its last
         * member, which gets a new pod and then an IP. */
        deadline = gd_mono_ms() + TIMEOUT_MS;
        while (!(member_pod(godis, uid, sizeof uid, ip, sizeof ip, &restarts, &ready) && *ip && ready) &&
               gd_mono_ms() < deadline)
            gd_sleep_ms(200);
        assert_true(member_pod(godis, uid, sizeof uid, ip, sizeof ip, &restarts, &ready));
        assert_true(*ip && ready);
        if (same_pods) {
            assert_string_equal(uid, g->pod_uid[i]);
            assert_int_equal(restarts, 0);
        }
        godis_client *c = godis_client_new(ip, 6379, NULL);
        char *v = NULL;
        assert_int_equal(godis_get(c, key_of(key, sizeof key, g, id), &v), GD_OK);
        assert_string_equal(v, godis);
        free(v);
        godis_client_destroy(&c);
    }
    cJSON *gc = e2e_cluster_get(kc, ns, g->name);
    int64_t ids[16];
    assert_int_equal(e2e_status_members(gc, ids, 16), NMEMBERS);
    for (int i = 0; i < NMEMBERS; i++) assert_int_equal(ids[i], i + 1);
    assert_string_equal(gd_meta_uid(gc), g->uid);
    cJSON_Delete(gc);
}

/* The member's ReplicaSet as the API server stores it: the pod template this operator
 * writes (adopted ones repaired to it): resources, liveness and readiness on the client
 * port, the hardened securityContext. */
static bool template_has(const char *godis, const char *cpu_req, const char *mem_limit)
{
    cJSON *rs = NULL;
    if (k8s_get(kc, &K8S_RES_REPLICASETS, ns, godis, &rs, NULL) != GD_OK) return false;
    const cJSON *c = cJSON_GetArrayItem(gd_json_path(rs, "spec.template.spec.containers"), 0);
    bool ok = !strcmp(gd_json_str_or(c, "resources.requests.cpu", ""), cpu_req) &&
              !strcmp(gd_json_str_or(c, "resources.limits.memory", ""), mem_limit) &&
              gd_json_path(c, "livenessProbe") != NULL;
    cJSON_Delete(rs);
    return ok;
}

/* Waits (the repair follows the adoption; a new member's template follows the cache's
 * view of spec.resources) until the template has them, then checks it all. */
static void assert_member_template(const char *godis, const char *cpu_req, const char *mem_limit)
{
    int64_t deadline = gd_mono_ms() + TIMEOUT_MS;
    while (!template_has(godis, cpu_req, mem_limit) && gd_mono_ms() < deadline) gd_sleep_ms(200);
    cJSON *rs = NULL;
    assert_int_equal(k8s_get(kc, &K8S_RES_REPLICASETS, ns, godis, &rs, NULL), GD_OK);
    const cJSON *c = cJSON_GetArrayItem(gd_json_path(rs, "spec.template.spec.containers"), 0);
    if (strcmp(gd_json_str_or(c, "resources.requests.cpu", ""), cpu_req) ||
        strcmp(gd_json_str_or(c, "resources.limits.memory", ""), mem_limit)) {
        char *s = cJSON_PrintUnformatted(gd_json_path(c, "resources"));
        fprintf(stderr, "adopt: %s resources %s\n", godis, s ? s : "-");
        free(s);
    }
    assert_string_equal(gd_json_str_or(c, "resources.requests.cpu", ""), cpu_req);
    assert_string_equal(gd_json_str_or(c, "resources.limits.memory", ""), mem_limit);
    assert_int_equal(gd_json_int_or(c, "livenessProbe.tcpSocket.port", 0), 6379);
    assert_int_equal(gd_json_int_or(c, "readinessProbe.tcpSocket.port", 0), 6379);
    bool ro = false, esc = true;
    assert_int_equal(gd_json_bool(c, "securityContext.readOnlyRootFilesystem", &ro), GD_OK);
    assert_int_equal(gd_json_bool(c, "securityContext.allowPrivilegeEscalation", &esc), GD_OK);
    assert_true(ro && !esc);
    assert_string_equal(gd_json_str_or(rs, "spec.template.spec.securityContext.seccompProfile.type", ""),
                        "RuntimeDefault");
    cJSON_Delete(rs);
}

/* No AlreadyExists loop: the operator's refused creates, per object, from the API server's
 * own record. An adoption costs one (the create that finds the unlabelled object). */
static void assert_no_create_loop(void)
{
    const char *path = getenv("DEVCLUSTER_AUDIT_LOG");
    assert_non_null(path);
    audit_event *ev = NULL;
    char ua[128];
    snprintf(ua, sizeof ua, "manager=%s", identity);
    int n = audit_events(path, ua, &ev, NULL);
    assert_true(n > 0);
    int refused = 0, worst = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(ev[i].verb, "create") || ev[i].code != 409) continue;
        refused++;
        int same = 0;
        for (int j = 0; j < n; j++)
            same += !strcmp(ev[j].verb, "create") && ev[j].code == 409 &&
                    !strcmp(ev[j].resource, ev[i].resource) && !strcmp(ev[j].name, ev[i].name);
        if (same > worst) worst = same;
        if (same > 1) fprintf(stderr, "adopt: %d refused creates of %s %s\n", same, ev[i].resource, ev[i].name);
    }
    free(ev);
    fprintf(stderr, "adopt: %d writes by the operator, %d refused creates (at most %d per object)\n",
            n, refused, worst);
    /* ConfigMap + 3 x (Service, PVC, ReplicaSet) per cluster at most */
    assert_true(refused <= 2 * (1 + 3 * NMEMBERS));
    assert_true(worst <= 1);
}

/* ---- the test ---- */

static void test_adopt_go_controller_clusters(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) make_go_cluster(&clusters[i]);
    for (int i = 0; i < 2; i++) go_cluster_serving(&clusters[i]);
    fprintf(stderr, "adopt: the Go controller's clusters serve; starting the manager\n");
    const char *argv[] = {"bin/godis-manager", "--kubeconfig", getenv("KUBECONFIG"),
                          "--leader-elect", "--leader-elect-resource-name", lease,
                          "--leader-elect-resource-namespace", ns, "--leader-elect-identity",
                          identity, "--workers", "2", "--runtime-dir", rundir,
                          "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
                          "--log-level", "info", NULL};
    char log[512];
    snprintf(log, sizeof log, "%s/manager.log", logdir);
    manager = e2e_spawn(argv, log);
    assert_true(manager > 0);
    e2e_history h[2];
    for (int i = 0; i < 2; i++) {
        assert_true(e2e_history_start(&h[i], kc, ns, clusters[i].name));
    }
    for (int i = 0; i < 2; i++) {
        assert_true(e2e_wait_converged(kc, ns, clusters[i].name, NMEMBERS, TIMEOUT_MS));
        assert_true(e2e_wait_consistent(kc, ns, clusters[i].name, TIMEOUT_MS));
    }
    for (int i = 0; i < 2; i++) assert_adopted(&clusters[i]);
    /* the adopted ReplicaSets were repaired to this operator's pod template (the pods stay:
     * a ReplicaSet does not replace running pods when its template changes) */
    assert_member_template("go-bare-1", "100m", "512Mi");
    /* spec.resources overrides the defaults for go-exact's members, new ones included */
    assert_int_equal(k8s_patch(kc, &K8S_RES_GODISCLUSTERS, ns, "go-exact", K8S_PATCH_MERGE,
                               "{\"spec\":{\"resources\":{\"requests\":{\"cpu\":\"0.25\","
                               "\"memory\":\"256Mi\"},\"limits\":{\"memory\":\"1024Mi\"}}}}",
                               NULL, NULL, NULL), GD_OK);
    /* scale 3 -> 4 -> 3, both clusters at once */
    int steps[] = {4, 3};
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 2; i++) assert_true(e2e_cluster_scale(kc, ns, clusters[i].name, steps[s]));
        for (int i = 0; i < 2; i++) {
            assert_true(e2e_wait_converged(kc, ns, clusters[i].name, steps[s], TIMEOUT_MS));
            assert_true(e2e_wait_consistent(kc, ns, clusters[i].name, TIMEOUT_MS));
        }
        if (s == 0) {   /* the quantities as the API server stores them */
            assert_member_template("go-exact-4", "250m", "1Gi");
            assert_member_template("go-bare-4", "100m", "512Mi");
        }
    }
    for (int i = 0; i < 2; i++) {
        assert_true(e2e_history_stop(&h[i]));
        cJSON *gc = e2e_cluster_get(kc, ns, clusters[i].name);
        assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 5);   /* 4 handed out once */
        cJSON_Delete(gc);
        /* 4 was the one removed: 1-3 kept; go-exact's resources change was rolled out to
         * them (issue 20: new pods, same ids, volumes and data), go-bare's pods untouched */
        assert_adopted_pods(&clusters[i], strcmp(clusters[i].name, "go-exact") != 0);
    }
    assert_no_create_loop();
}

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    kc = e2e_client();
    if (!kc || !e2e_install_crds(kc) || !e2e_ns_create(kc, "adopt", ns, sizeof ns)) return -1;
    snprintf(lease, sizeof lease, "godis-adopt-%d", (int)getpid());
    snprintf(identity, sizeof identity, "adopt-%d", (int)getpid());
    snprintf(rundir, sizeof rundir, "/tmp/godis-adopt-%d", (int)getpid());
    e2e_log_dir(logdir, sizeof logdir, "adopt");
    fprintf(stderr, "adopt: namespace %s, logs in %s\n", ns, logdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (manager > 0) {
        int st = e2e_stop(manager, 15000);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fprintf(stderr, "adopt: manager stopped with status 0x%x\n", st);
    }
    e2e_remove_dir(rundir);
    e2e_ns_delete(kc, ns);
    k8s_client_destroy(&kc);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adopt_go_controller_clusters),
    };
    return cmocka_run_group_tests_name("adopt", tests, setup, teardown);
}
