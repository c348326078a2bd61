/* Tests of the Godis children builders: the pod contract of docs/reconcile.md and drift checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "godis_children.h"
#include "godis_reconcile.h"
#include "gd_json.h"

static godis_child_spec spec(bool preferred)
{
    godis_child_spec s = {.ns = "ns1", .cluster = "example-godis", .godis = "example-godis-4",
                          .godis_uid = "uid-4", .id = 4, .preferred = preferred};
    return s;
}

static const cJSON *env_named(const cJSON *rs, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, gd_json_path(cJSON_GetArrayItem(gd_json_path(rs, "spec.template.spec.containers"), 0), "env"))
        if (strcmp(gd_json_str_or(e, "name", ""), name) == 0) return e;
    return NULL;
}

static void test_id_from_name(void **st)
{
    (void)st;
    assert_int_equal(godis_id_from_name("a", "a-12"), 12);
    assert_int_equal(godis_id_from_name("a-b", "a-b-3"), 3);
    assert_int_equal(godis_id_from_name("a", "a-0"), 0);
    assert_int_equal(godis_id_from_name("a", "a-01"), 0);
    assert_int_equal(godis_id_from_name("a", "a-x"), 0);
    assert_int_equal(godis_id_from_name("a", "b-1"), 0);
    assert_int_equal(godis_id_from_name("a", "a-1x"), 0);
    assert_int_equal(godis_id_from_name("a", "a-99999999999999999999999"), 0);
}

static void test_replicaset_contract(void **st)
{
    (void)st;
    godis_child_spec s = spec(false);
    cJSON *rs = godis_build_replicaset(&s);
    assert_string_equal(gd_meta_name(rs), "example-godis-4");
    assert_string_equal(gd_meta_label(rs, "cluster-name"), "example-godis");
    assert_string_equal(gd_meta_label(rs, "node-name"), "example-godis-4");
    const cJSON *own = gd_meta_controller_owner(rs);
    assert_non_null(own);
    assert_string_equal(gd_json_str_or(own, "kind", ""), "Godis");
    assert_int_equal(gd_json_int_or(rs, "spec.replicas", 0), 1);
    assert_string_equal(gd_json_str_or(env_named(rs, "CLUSTER_ID"), "value", ""), "4");
    assert_string_equal(gd_json_str_or(env_named(rs, "CLUSTER_JOIN"), "value", ""), "true");
    assert_string_equal(gd_json_str_or(env_named(rs, "CLUSTER_WALDIR"), "value", ""), "/tmp/godis/wal");
    assert_string_equal(gd_json_str_or(env_named(rs, "CLUSTER_SNAPDIR"), "value", ""), "/tmp/godis/snap");
    const cJSON *ic = env_named(rs, "CLUSTER_INITIAL-CLUSTER");
    assert_string_equal(gd_json_str_or(ic, "valueFrom.configMapKeyRef.name", ""), "example-godis-config");
    assert_string_equal(gd_json_str_or(ic, "valueFrom.configMapKeyRef.key", ""), "initial-cluster");
    const cJSON *c = cJSON_GetArrayItem(gd_json_path(rs, "spec.template.spec.containers"), 0);
    assert_string_equal(gd_json_str_or(c, "image", ""), GODIS_DEFAULT_IMAGE);
    assert_int_equal(gd_json_int_or(c, "readinessProbe.tcpSocket.port", 0), 6379);
    assert_string_equal(gd_json_str_or(cJSON_GetArrayItem(gd_json_path(c, "volumeMounts"), 0), "mountPath", ""), "/tmp/godis");
    assert_string_equal(gd_json_str_or(cJSON_GetArrayItem(gd_json_path(rs, "spec.template.spec.volumes"), 0),
                                       "persistentVolumeClaim.claimName", ""), "data-example-godis-4");
    cJSON_Delete(rs);
    s = spec(true);
    rs = godis_build_replicaset(&s);
    assert_string_equal(gd_json_str_or(env_named(rs, "CLUSTER_JOIN"), "value", ""), "false");
    cJSON_Delete(rs);
}

static void test_service_and_pvc(void **st)
{
    (void)st;
    godis_child_spec s = spec(true);
    s.storage_size = "2Gi";
    s.storage_class = "fast";
    cJSON *svc = godis_build_service(&s);
    assert_string_equal(gd_meta_name(svc), "example-godis-4-endpoint");
    assert_int_equal(gd_json_int_or(cJSON_GetArrayItem(gd_json_path(svc, "spec.ports"), 0), "port", 0), 6379);
    assert_int_equal(gd_json_int_or(cJSON_GetArrayItem(gd_json_path(svc, "spec.ports"), 1), "port", 0), 6300);
    assert_string_equal(gd_json_str_or(svc, "spec.selector.node-name", ""), "example-godis-4");
    assert_string_equal(gd_json_str_or(svc, "spec.clusterIP", ""), "None");   /* headless */
    cJSON *pvc = godis_build_pvc(&s);
    assert_string_equal(gd_meta_name(pvc), "data-example-godis-4");
    assert_string_equal(gd_json_str_or(pvc, "spec.resources.requests.storage", ""), "2Gi");
    assert_string_equal(gd_json_str_or(pvc, "spec.storageClassName", ""), "fast");
    cJSON_Delete(svc);
    cJSON_Delete(pvc);
}

/* A member that has run is pinned to the node holding its data (status.volumeNode): its pod
 * template requires that node, and a ReplicaSet without the pin (made before it was known)
 * is drift, repaired. Before the node is known the pod may go anywhere. */
static void test_pinned_to_its_node(void **st)
{
    (void)st;
    godis_child_spec s = spec(false);
    cJSON *free_rs = godis_build_replicaset(&s);
    assert_null(gd_json_path(free_rs, "spec.template.spec.affinity.nodeAffinity"));
    s.node = "node-b";
    cJSON *want = godis_build_replicaset(&s);
    const cJSON *term = cJSON_GetArrayItem(gd_json_path(want, "spec.template.spec.affinity.nodeAffinity."
                                                        "requiredDuringSchedulingIgnoredDuringExecution."
                                                        "nodeSelectorTerms"), 0);
    const cJSON *f = cJSON_GetArrayItem(gd_json_path(term, "matchFields"), 0);
    assert_string_equal(gd_json_str_or(f, "key", ""), "metadata.name");
    assert_string_equal(gd_json_str_or(f, "operator", ""), "In");
    assert_string_equal(cJSON_GetArrayItem(gd_json_path(f, "values"), 0)->valuestring, "node-b");
    /* beside the spread over nodes, not instead of it */
    assert_non_null(gd_json_path(want, "spec.template.spec.affinity.podAntiAffinity"));
    assert_true(godis_child_drifted("ReplicaSet", want, free_rs));
    cJSON *fixed = godis_child_repair("ReplicaSet", want, free_rs);
    assert_false(godis_child_drifted("ReplicaSet", want, fixed));
    s.node = "node-c";
    cJSON *other = godis_build_replicaset(&s);
    assert_true(godis_child_drifted("ReplicaSet", other, fixed));
    cJSON_Delete(other);
    cJSON_Delete(fixed);
    cJSON_Delete(want);
    cJSON_Delete(free_rs);
}

static void test_drift(void **st)
{
    (void)st;
    godis_child_spec s = spec(false);
    cJSON *want = godis_build_replicaset(&s);
    cJSON *have = cJSON_Duplicate(want, 1);
    /* server-side defaults are not drift */
    cJSON *c = cJSON_GetArrayItem(gd_json_path(have, "spec.template.spec.containers"), 0);
    cJSON_AddStringToObject(c, "imagePullPolicy", "Always");
    cJSON_AddStringToObject(c, "terminationMessagePath", "/dev/termination-log");
    gd_json_set(have, "metadata.resourceVersion", cJSON_CreateString("77"));
    assert_false(godis_child_drifted("ReplicaSet", want, have));
    cJSON_ReplaceItemInObject(c, "image", cJSON_CreateString("evil/image"));
    assert_true(godis_child_drifted("ReplicaSet", want, have));
    cJSON *fixed = godis_child_repair("ReplicaSet", want, have);
    assert_false(godis_child_drifted("ReplicaSet", want, fixed));
    assert_string_equal(gd_meta_rv(fixed), "77");
    cJSON_Delete(fixed);
    gd_json_set(have, "spec.replicas", cJSON_CreateNumber(0));
    assert_true(godis_child_drifted("ReplicaSet", want, have));
    cJSON_Delete(want);
    cJSON_Delete(have);

    want = godis_build_service(&s);
    have = cJSON_Duplicate(want, 1);
    gd_json_set(have, "spec.clusterIP", cJSON_CreateString("10.96.0.12"));
    assert_false(godis_child_drifted("Service", want, have));
    gd_json_set(have, "spec.selector", cJSON_CreateObject());
    assert_true(godis_child_drifted("Service", want, have));
    fixed = godis_child_repair("Service", want, have);
    assert_false(godis_child_drifted("Service", want, fixed));
    assert_string_equal(gd_json_str_or(fixed, "spec.clusterIP", ""), "10.96.0.12");
    cJSON_Delete(fixed);
    cJSON_Delete(want);
    cJSON_Delete(have);
}

/* Resources (defaults, spec.resources), probes and the securityContext of a member pod. */
static void test_member_pod_runtime(void **st)
{
    (void)st;
    godis_child_spec s = spec(true);
    cJSON *rs = godis_build_replicaset(&s);
    const cJSON *c = cJSON_GetArrayItem(gd_json_path(rs, "spec.template.spec.containers"), 0);
    assert_string_equal(gd_json_str_or(c, "resources.requests.cpu", ""), GODIS_DEFAULT_CPU_REQUEST);
    assert_string_equal(gd_json_str_or(c, "resources.requests.memory", ""), GODIS_DEFAULT_MEMORY_REQUEST);
    assert_string_equal(gd_json_str_or(c, "resources.limits.memory", ""), GODIS_DEFAULT_MEMORY_LIMIT);
    assert_null(gd_json_path(c, "resources.limits.cpu"));           /* no CPU throttling */
    assert_int_equal(gd_json_int_or(c, "livenessProbe.tcpSocket.port", 0), 6379);
    assert_true(gd_json_int_or(c, "livenessProbe.initialDelaySeconds", 0) >= 10);
    bool b = true;
    assert_int_equal(gd_json_bool(c, "securityContext.allowPrivilegeEscalation", &b), GD_OK);
    assert_false(b);
    assert_int_equal(gd_json_bool(c, "securityContext.readOnlyRootFilesystem", &b), GD_OK);
    assert_true(b);
    assert_string_equal(cJSON_GetArrayItem(gd_json_path(c, "securityContext.capabilities.drop"), 0)->valuestring, "ALL");
    assert_string_equal(gd_json_str_or(rs, "spec.template.spec.securityContext.seccompProfile.type", ""),
                        "RuntimeDefault");
    /* spec.resources replaces the defaults as a whole, as a container's resources do */
    cJSON *res = cJSON_Parse("{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Gi\"},\"limits\":{\"memory\":\"2Gi\"}}");
    s.resources = res;
    cJSON *rs2 = godis_build_replicaset(&s);
    c = cJSON_GetArrayItem(gd_json_path(rs2, "spec.template.spec.containers"), 0);
    assert_true(cJSON_Compare(gd_json_path(c, "resources"), res, 1));
    /* the stored form of the same amounts ("1Gi" sent as "1024Mi", "2" as "2000m") is no
     * drift; a different amount is, and so is the default against spec.resources */
    cJSON *stored = cJSON_Duplicate(rs2, 1);
    cJSON *sc = cJSON_GetArrayItem(gd_json_path(stored, "spec.template.spec.containers"), 0);
    gd_json_set(sc, "resources.requests.memory", cJSON_CreateString("1024Mi"));
    gd_json_set(sc, "resources.requests.cpu", cJSON_CreateString("2000m"));
    assert_false(godis_child_drifted("ReplicaSet", rs2, stored));
    gd_json_set(sc, "resources.limits.memory", cJSON_CreateString("3Gi"));
    assert_true(godis_child_drifted("ReplicaSet", rs2, stored));
    assert_true(godis_child_drifted("ReplicaSet", rs2, rs));
    cJSON *repaired = godis_child_repair("ReplicaSet", rs2, stored);
    assert_false(godis_child_drifted("ReplicaSet", rs2, repaired));
    /* a template without the hardening (the Go controller's) is drift, repaired in place */
    cJSON *old = cJSON_Duplicate(rs, 1);
    cJSON *oc = cJSON_GetArrayItem(gd_json_path(old, "spec.template.spec.containers"), 0);
    cJSON_DeleteItemFromObjectCaseSensitive(oc, "securityContext");
    assert_true(godis_child_drifted("ReplicaSet", rs, old));
    cJSON_Delete(old);
    cJSON_Delete(repaired);
    cJSON_Delete(stored);
    cJSON_Delete(rs2);
    cJSON_Delete(res);
    cJSON_Delete(rs);
}

static void test_quantities(void **st)
{
    (void)st;
    struct { const char *a, *b; bool eq; } t[] = {
        {"1Gi", "1024Mi", true}, {"0.5", "500m", true}, {"2", "2000m", true}, {"1k", "1000", true},
        {"1e3", "1k", true}, {"128Mi", "134217728", true}, {"1G", "1Gi", false},
        {"100m", "0.1", true}, {"1", "2", false}, {"1Mi", "x", false}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        cJSON *a = cJSON_CreateString(t[i].a), *b = cJSON_CreateString(t[i].b);
        if (godis_quantity_equal(a, b) != t[i].eq) fail_msg("%s vs %s", t[i].a, t[i].b);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    cJSON *n = cJSON_CreateNumber(2), *q = cJSON_CreateString("2");
    assert_true(godis_quantity_equal(n, q));
    cJSON_Delete(n);
    cJSON_Delete(q);
}

static void test_configmap_and_godis(void **st)
{
    (void)st;
    cJSON *cm = godis_build_configmap("ns1", "c", "uid-c", "1@http://c-1-endpoint.ns1.svc.cluster.local:6300");
    assert_string_equal(gd_meta_name(cm), "c-config");
    assert_string_equal(gd_json_str_or(cm, "data.initial-cluster", ""), "1@http://c-1-endpoint.ns1.svc.cluster.local:6300");
    assert_true(gd_meta_owned_by(cm, "GodisCluster", "uid-c"));
    cJSON_Delete(cm);
    godis_child_spec s = spec(true);
    cJSON *g = godis_build_godis(&s, "uid-c");
    assert_string_equal(gd_json_str_or(g, "kind", ""), "Godis");
    bool pref = false;
    assert_int_equal(gd_json_bool(g, "spec.preferred", &pref), GD_OK);
    assert_true(pref);
    assert_string_equal(gd_meta_label(g, "cluster-name"), "example-godis");
    cJSON_Delete(g);
}

/* Issue 20: the template hash is the spec's: the same for every member (id, name, join flag
 * and node pin are the member's own), different for every day-2 field. */
static void test_template_hash(void **st)
{
    (void)st;
    godis_child_spec a = spec(true), b = spec(false);
    b.godis = "example-godis-9";
    b.id = 9;
    b.node = "node-3";
    char ha[GODIS_HASH_LEN + 1], hb[GODIS_HASH_LEN + 1];
    godis_template_hash(&a, ha);
    godis_template_hash(&b, hb);
    assert_int_equal(strlen(ha), GODIS_HASH_LEN);
    assert_string_equal(ha, hb);
    cJSON *rs = godis_build_replicaset(&b);
    assert_string_equal(godis_object_hash(rs), ha);
    assert_string_equal(godis_object_hash(gd_json_path(rs, "spec.template")), ha);
    cJSON_Delete(rs);
    cJSON *res = cJSON_Parse("{\"requests\":{\"cpu\":\"1\"}}");
    cJSON *meta = cJSON_Parse("{\"labels\":{\"team\":\"a\"}}");
    cJSON *ann = cJSON_Parse("{\"annotations\":{\"x/y\":\"1\"}}");
    cJSON *set = cJSON_Parse("{\"goMaxProcs\":2}");
    godis_child_spec v[6] = {a, a, a, a, a, a};
    v[0].image = "kbzjung359/godis:v2";
    v[1].resources = res;
    v[2].pod_metadata = meta;
    v[3].pod_metadata = ann;
    v[4].settings = set;
    v[5].anti_affinity = "required";
    char h[6][GODIS_HASH_LEN + 1];
    for (int i = 0; i < 6; i++) {
        godis_template_hash(&v[i], h[i]);
        assert_string_not_equal(h[i], ha);
        for (int j = 0; j < i; j++) assert_string_not_equal(h[i], h[j]);
    }
    godis_child_spec storage = a;        /* not the template's: a PVC matter */
    storage.storage_size = "5Gi";
    godis_template_hash(&storage, h[0]);
    assert_string_equal(h[0], ha);
    cJSON_Delete(res);
    cJSON_Delete(meta);
    cJSON_Delete(ann);
    cJSON_Delete(set);
}

static void test_pod_metadata_and_settings(void **st)
{
    (void)st;
    godis_child_spec s = spec(false);
    cJSON *meta = cJSON_Parse("{\"labels\":{\"team\":\"db\",\"cluster-name\":\"x\",\"bad key\":\"v\","
                              "\"v\":\"not valid!\"},\"annotations\":{\"prometheus.io/scrape\":\"true\","
                              "\"" GODIS_ANN_TEMPLATE_HASH "\":\"forged\"}}");
    cJSON *set = cJSON_Parse("{\"goMaxProcs\":2,\"goGC\":50,\"goMemLimit\":\"400MiB\"}");
    s.pod_metadata = meta;
    s.settings = set;
    cJSON *rs = godis_build_replicaset(&s);
    const cJSON *l = gd_json_path(rs, "spec.template.metadata.labels");
    assert_string_equal(gd_json_str_or(l, "team", ""), "db");
    assert_string_equal(gd_json_str_or(l, "cluster-name", ""), "example-godis");   /* ours */
    assert_null(cJSON_GetObjectItem(l, "bad key"));
    assert_null(cJSON_GetObjectItem(l, "v"));
    const cJSON *an = gd_json_path(rs, "spec.template.metadata.annotations");
    assert_string_equal(cJSON_GetObjectItem(an, "prometheus.io/scrape")->valuestring, "true");
    assert_string_equal(cJSON_GetObjectItem(an, GODIS_ANN_TEMPLATE_HASH)->valuestring, godis_object_hash(rs));
    assert_string_equal(gd_json_str_or(env_named(rs, "GOMAXPROCS"), "value", ""), "2");
    assert_string_equal(gd_json_str_or(env_named(rs, "GOGC"), "value", ""), "50");
    assert_string_equal(gd_json_str_or(env_named(rs, "GOMEMLIMIT"), "value", ""), "400MiB");
    /* the selector stays ours alone: a user label never changes which pods are the member's */
    assert_int_equal(cJSON_GetArraySize(gd_json_path(rs, "spec.selector.matchLabels")), 2);
    cJSON_Delete(rs);
    cJSON_Delete(set);
    set = cJSON_Parse("{\"goMaxProcs\":\"two\",\"goMemLimit\":\"400M\"}");
    s.settings = set;
    rs = godis_build_replicaset(&s);
    assert_null(env_named(rs, "GOMAXPROCS"));
    assert_null(env_named(rs, "GOMEMLIMIT"));
    cJSON_Delete(rs);
    cJSON_Delete(set);
    cJSON_Delete(meta);
    assert_true(godis_metadata_key_valid("a.b/c-d_e"));
    assert_true(godis_metadata_key_valid("team"));
    assert_false(godis_metadata_key_valid("/x"));
    assert_false(godis_metadata_key_valid("A.B/x"));
    assert_false(godis_metadata_key_valid("x-"));
    assert_false(godis_metadata_key_valid(""));
    assert_true(godis_label_value_valid(""));
    assert_false(godis_label_value_valid("-a"));
}

/* What the Godis controller writes to an existing ReplicaSet. */
static void test_replicaset_fix(void **st)
{
    (void)st;
    godis_child_spec s = spec(false);
    s.node = "node-2";
    cJSON *want = godis_build_replicaset(&s);
    assert_null(godis_replicaset_fix(want, want));              /* same rendering: nothing */
    /* From before template hashes (even with another template, as the Go controller's):
     * adopted in place, and its pod without a hash counts as on that revision. */
    cJSON *legacy = cJSON_Duplicate(want, 1);
    cJSON_DeleteItemFromObject(gd_json_path(legacy, "metadata"), "annotations");
    cJSON_DeleteItemFromObject(gd_json_path(legacy, "spec.template.metadata"), "annotations");
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(gd_json_path(legacy, "spec.template.spec.containers"), 0),
                               "securityContext");
    cJSON *fixed = godis_replicaset_fix(want, legacy);
    assert_non_null(fixed);
    assert_string_equal(godis_object_hash(fixed), godis_object_hash(want));
    assert_string_equal(gd_meta_annotation(fixed, GODIS_ANN_UNHASHED_PODS), godis_object_hash(want));
    assert_false(godis_child_drifted("ReplicaSet", want, fixed));
    cJSON *pod = cJSON_CreateObject();
    gd_json_set(pod, "spec.containers", cJSON_Duplicate(gd_json_path(legacy, "spec.template.spec.containers"), 1));
    assert_false(godis_pod_on_template(pod, godis_object_hash(want), legacy));      /* not adopted yet: unknown */
    assert_true(godis_pod_on_template(pod, godis_object_hash(want), fixed));
    gd_json_set(pod, "metadata.annotations", cJSON_Parse("{\"" GODIS_ANN_TEMPLATE_HASH "\":\"0000000000\"}"));
    assert_false(godis_pod_on_template(pod, godis_object_hash(want), fixed)); /* its own wins */
    cJSON_Delete(pod);
    cJSON_Delete(fixed);
    /* On another revision (the spec changed): the rollout's. Only replicas and the pin. */
    godis_child_spec v2 = s;
    v2.image = "kbzjung359/godis:v2";
    cJSON *want2 = godis_build_replicaset(&v2);
    assert_null(godis_replicaset_fix(want2, want));             /* the template is left as it is */
    cJSON *scaled = cJSON_Duplicate(want, 1);
    gd_json_set(scaled, "spec.replicas", cJSON_CreateNumber(0));
    cJSON_DeleteItemFromObject(gd_json_path(scaled, "spec.template.spec"), "affinity");
    fixed = godis_replicaset_fix(want2, scaled);
    assert_non_null(fixed);
    assert_int_equal(gd_json_int_or(fixed, "spec.replicas", 0), 1);
    assert_non_null(gd_json_path(fixed, "spec.template.spec.affinity.nodeAffinity"));
    assert_string_equal(godis_object_hash(fixed), godis_object_hash(want));   /* old revision kept */
    assert_string_equal(gd_json_str_or(cJSON_GetArrayItem(gd_json_path(fixed, "spec.template.spec.containers"), 0),
                                       "image", ""), GODIS_DEFAULT_IMAGE);
    cJSON_Delete(fixed);
    cJSON_Delete(scaled);
    /* The rollout's own update: the whole template, and the hash with it. */
    fixed = godis_child_repair("ReplicaSet", want2, want);
    assert_string_equal(godis_object_hash(fixed), godis_object_hash(want2));
    assert_string_equal(godis_object_hash(gd_json_path(fixed, "spec.template")), godis_object_hash(want2));
    cJSON_Delete(fixed);
    cJSON_Delete(want2);
    cJSON_Delete(legacy);
    cJSON_Delete(want);
}

/* ---- the pin only where the volume does not say its node itself ---- */

/* A PV whose spec.nodeAffinity.required has the given nodeSelectorTerms (JSON), or none. */
static cJSON *pv_with(const char *terms)
{
    char buf[1024];
    if (!terms) return cJSON_Parse("{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"hostPath\":{\"path\":\"/x\"}}}");
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"local\":{\"path\":\"/x\"},"
             "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":%s}}}}", terms);
    cJSON *pv = cJSON_Parse(buf);
    assert_non_null(pv);
    return pv;
}

static bool confines(const char *terms, const char *node)
{
    cJSON *pv = pv_with(terms);
    bool yes = godis_pv_confines_to_node(pv, node);
    cJSON_Delete(pv);
    return yes;
}

#define HOST_IN(vals) "{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[" vals "]}"
#define NAME_IN(vals) "{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[" vals "]}"
#define ZONE_IN(vals) "{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[" vals "]}"

/* Confined: every term requires exactly that node, by its hostname label (local-path, local
 * PVs) or by its name (matchFields). Anything wider, or not known, is not. */
static void test_pv_confinement(void **st)
{
    (void)st;
    /* both forms, and several terms that all say the same node */
    assert_true(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]}]", "n1"));
    assert_true(confines("[{\"matchFields\":[" NAME_IN("\"n1\"") "]}]", "n1"));
    assert_true(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]},"
                         "{\"matchFields\":[" NAME_IN("\"n1\"") "]}]", "n1"));
    /* a further requirement in the same term only narrows it (requirements are ANDed) */
    assert_true(confines("[{\"matchExpressions\":[" ZONE_IN("\"z1\"") "," HOST_IN("\"n1\"") "]}]", "n1"));
    /* another node, several nodes, a zone, or a term for another node (terms are ORed) */
    assert_false(confines("[{\"matchExpressions\":[" HOST_IN("\"n2\"") "]}]", "n1"));
    assert_false(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\",\"n2\"") "]}]", "n1"));
    assert_false(confines("[{\"matchFields\":[" NAME_IN("\"n1\",\"n2\"") "]}]", "n1"));
    assert_false(confines("[{\"matchExpressions\":[" ZONE_IN("\"z1\"") "]}]", "n1"));
    assert_false(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]},"
                          "{\"matchExpressions\":[" HOST_IN("\"n2\"") "]}]", "n1"));
    assert_false(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]},"
                          "{\"matchExpressions\":[" ZONE_IN("\"z1\"") "]}]", "n1"));
    /* other operators, a hostname key in matchFields, the name key as a label */
    assert_false(confines("[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":"
                          "\"NotIn\",\"values\":[\"n1\"]}]}]", "n1"));
    assert_false(confines("[{\"matchFields\":[" HOST_IN("\"n1\"") "]}]", "n1"));
    assert_false(confines("[{\"matchExpressions\":[" NAME_IN("\"n1\"") "]}]", "n1"));
    /* no terms, an empty term, no nodeAffinity (hostPath), no PV, no node */
    assert_false(confines("[]", "n1"));
    assert_false(confines("[{}]", "n1"));
    assert_false(confines(NULL, "n1"));
    assert_false(godis_pv_confines_to_node(NULL, "n1"));
    assert_false(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]}]", NULL));
    assert_false(confines("[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]}]", ""));
}

/* The cache as godis_pin_node reads it: the member's claim (bound to volume, or not) and
 * PersistentVolume pv-1, each present or not; every read is counted. */
typedef struct {
    const char *volume;     /* the claim's spec.volumeName; NULL: no claim in the cache */
    const char *pv_terms;   /* pv-1's nodeSelectorTerms; NULL: no affinity */
    bool pv_cached;
    int reads;
} pin_cache;

static const cJSON *pin_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    pin_cache *pc = e->ud;
    pc->reads++;
    if (!strcmp(kind, "PersistentVolumeClaim") && !strcmp(ns, "ns1") &&
        !strcmp(name, "data-example-godis-4") && pc->volume) {
        cJSON *pvc = cJSON_Parse("{\"metadata\":{\"name\":\"data-example-godis-4\"},\"spec\":{}}");
        if (*pc->volume) gd_json_set(pvc, "spec.volumeName", cJSON_CreateString(pc->volume));
        return pvc;
    }
    if (!strcmp(kind, "PersistentVolume") && !*ns && !strcmp(name, "pv-1") && pc->pv_cached)
        return pv_with(pc->pv_terms);
    return NULL;
}

static const char *pin_node(pin_cache *pc, const char *volume_node)
{
    godis_env e = {.get = pin_get, .ud = pc};
    return godis_pin_node(&e, "ns1", "example-godis-4", volume_node);
}

/* Pinned unless the member's bound PV is in the cache and confines it to status.volumeNode. */
static void test_pin_node_decision(void **st)
{
    (void)st;
    const char *here = "[{\"matchExpressions\":[" HOST_IN("\"n1\"") "]}]";
    pin_cache confined = {"pv-1", here, true, 0};
    assert_null(pin_node(&confined, "n1"));
    assert_null(pin_node(&(pin_cache){"pv-1", "[{\"matchFields\":[" NAME_IN("\"n1\"") "]}]", true, 0}, "n1"));
    /* the PV names another node than the one recorded: keep the pin */
    assert_string_equal(pin_node(&confined, "n2"), "n2");
    /* not known, so conservative: no claim, claim unbound, PV not cached (or the cache
     * failing: a read that returns nothing), PV without affinity, a zone, several nodes */
    assert_string_equal(pin_node(&(pin_cache){NULL, here, true, 0}, "n1"), "n1");
    assert_string_equal(pin_node(&(pin_cache){"", here, true, 0}, "n1"), "n1");
    assert_string_equal(pin_node(&(pin_cache){"pv-1", here, false, 0}, "n1"), "n1");
    assert_string_equal(pin_node(&(pin_cache){"pv-1", NULL, true, 0}, "n1"), "n1");
    assert_string_equal(pin_node(&(pin_cache){"pv-1", "[{\"matchExpressions\":[" ZONE_IN("\"z1\"") "]}]",
                                              true, 0}, "n1"), "n1");
    assert_string_equal(pin_node(&(pin_cache){"pv-1", "[{\"matchExpressions\":[" HOST_IN("\"n1\",\"n2\"") "]}]",
                                              true, 0}, "n1"), "n1");
    /* no volumeNode yet: nothing to pin to, and nothing read */
    pin_cache untouched = {"pv-1", here, true, 0};
    assert_null(pin_node(&untouched, NULL));
    assert_null(pin_node(&untouched, ""));
    assert_int_equal(untouched.reads, 0);
}

/* A ReplicaSet pinned before (by an earlier version, or while its PV was not yet cached)
 * stays pinned when the desired one has no pin: no drift, no fix, and every repair (drift
 * of something else, the rollout's new template, an adoption) carries the pin over. A
 * nodeAffinity that is not our pin is drift as before. */
static void test_pinned_replicaset_stays_pinned(void **st)
{
    (void)st;
    godis_child_spec s = spec(false);
    cJSON *free_rs = godis_build_replicaset(&s);
    s.node = "n1";
    cJSON *pinned = godis_build_replicaset(&s);
    const cJSON *pin = gd_json_path(pinned, "spec.template.spec.affinity.nodeAffinity");
    assert_non_null(pin);
    assert_false(godis_child_drifted("ReplicaSet", free_rs, pinned));
    assert_null(godis_replicaset_fix(free_rs, pinned));
    assert_false(godis_replicaset_pin_only(free_rs, pinned));
    /* real drift: repaired, the pin kept */
    cJSON *drifted = cJSON_Duplicate(pinned, 1);
    gd_json_set(cJSON_GetArrayItem(gd_json_path(drifted, "spec.template.spec.containers"), 0), "image",
                cJSON_CreateString("someone/else"));
    cJSON *fixed = godis_replicaset_fix(free_rs, drifted);
    assert_non_null(fixed);
    assert_true(cJSON_Compare(gd_json_path(fixed, "spec.template.spec.affinity.nodeAffinity"), pin, 1));
    assert_string_equal(gd_json_str_or(cJSON_GetArrayItem(gd_json_path(fixed, "spec.template.spec.containers"), 0),
                                       "image", ""), GODIS_DEFAULT_IMAGE);
    assert_false(godis_child_drifted("ReplicaSet", free_rs, fixed));
    cJSON_Delete(fixed);
    /* the rollout's update to a new revision, and the adoption of one without a hash */
    godis_child_spec v2 = spec(false);
    v2.image = "kbzjung359/godis:v2";
    cJSON *free_v2 = godis_build_replicaset(&v2);
    assert_null(godis_replicaset_fix(free_v2, pinned));       /* the rollout's: left alone */
    fixed = godis_child_repair("ReplicaSet", free_v2, pinned);
    assert_true(cJSON_Compare(gd_json_path(fixed, "spec.template.spec.affinity.nodeAffinity"), pin, 1));
    assert_string_equal(godis_object_hash(fixed), godis_object_hash(free_v2));
    cJSON_Delete(fixed);
    cJSON *legacy = cJSON_Duplicate(pinned, 1);
    cJSON_DeleteItemFromObject(gd_json_path(legacy, "metadata"), "annotations");
    fixed = godis_replicaset_fix(free_rs, legacy);
    assert_non_null(fixed);
    assert_true(cJSON_Compare(gd_json_path(fixed, "spec.template.spec.affinity.nodeAffinity"), pin, 1));
    cJSON_Delete(fixed);
    /* a nodeAffinity that is not the pin (someone's zone) is drift, and goes */
    cJSON *zoned = cJSON_Duplicate(free_rs, 1);
    gd_json_set(zoned, "spec.template.spec.affinity.nodeAffinity",
                cJSON_Parse("{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
                            "[{\"matchExpressions\":[" ZONE_IN("\"z1\"") "]}]}}"));
    assert_true(godis_child_drifted("ReplicaSet", free_rs, zoned));
    fixed = godis_replicaset_fix(free_rs, zoned);
    assert_non_null(fixed);
    assert_null(gd_json_path(fixed, "spec.template.spec.affinity.nodeAffinity"));
    cJSON_Delete(fixed);
    /* and a desired pin to another node still wins over the one there */
    s.node = "n2";
    cJSON *other = godis_build_replicaset(&s);
    assert_true(godis_child_drifted("ReplicaSet", other, pinned));
    cJSON_Delete(other);
    cJSON_Delete(zoned);
    cJSON_Delete(legacy);
    cJSON_Delete(free_v2);
    cJSON_Delete(drifted);
    cJSON_Delete(pinned);
    cJSON_Delete(free_rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_from_name),
        cmocka_unit_test(test_replicaset_contract),
        cmocka_unit_test(test_service_and_pvc),
        cmocka_unit_test(test_drift),
        cmocka_unit_test(test_pinned_to_its_node),
        cmocka_unit_test(test_configmap_and_godis),
        cmocka_unit_test(test_member_pod_runtime),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_template_hash),
        cmocka_unit_test(test_pod_metadata_and_settings),
        cmocka_unit_test(test_replicaset_fix),
        cmocka_unit_test(test_pv_confinement),
        cmocka_unit_test(test_pin_node_decision),
        cmocka_unit_test(test_pinned_replicaset_stays_pinned),
    };
    return cmocka_run_group_tests_name("godis_children", tests, NULL, NULL);
}
