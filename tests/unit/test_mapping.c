/* test_mapping.c — event → reconcile keys: For, Owns (owner reference and label fallbacks,
 * old and new owner), Pod → Godis and cluster, Node → clusters through the pods-by-node
 * index, and the predicates (status-only, resourceVersion-only, heartbeats). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>
#include "gd_json.h"
#include "cache.h"
#include "mapping.h"

typedef struct {
    char got[2048];
} sink;

static void emit(void *ud, const char *ctrl, const char *key)
{
    sink *s = ud;
    size_t n = strlen(s->got);
    snprintf(s->got + n, sizeof s->got - n, "%s:%s;", ctrl, key);
}

static cJSON *J(const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    return o;
}

/* Runs one event given as JSON strings (NULL for absent) and returns what it emitted. */
static const char *run(cache *c, const char *kind, const char *old_json, const char *new_json)
{
    static sink s;
    memset(&s, 0, sizeof s);
    cJSON *o = old_json ? J(old_json) : NULL, *n = new_json ? J(new_json) : NULL;
    mapping_event(c, kind, o, n, emit, &s);
    cJSON_Delete(o);
    cJSON_Delete(n);
    return s.got;
}

#define GC(gen, rv, extra)                                                                 \
    "{\"kind\":\"GodisCluster\",\"metadata\":{\"name\":\"ex\",\"namespace\":\"ns\","        \
    "\"generation\":" gen ",\"resourceVersion\":\"" rv "\"" extra "},\"spec\":{\"replicas\":3}," \
    "\"status\":{\"status\":\"Running\",\"rv\":\"" rv "\"}}"

static void test_for_godiscluster(void **state)
{
    assert_string_equal(run(NULL, "GodisCluster", NULL, GC("1", "10", "")),
                        "godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""), NULL),
                        "godiscluster:ns/ex;");
    /* status and resourceVersion only: skipped */
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""), GC("1", "11", "")), "");
    /* generation bumped: reconciled */
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""), GC("2", "11", "")),
                        "godiscluster:ns/ex;");
    /* deletion, finalizers, labels: metadata changes count */
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""),
                            GC("1", "11", ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"")),
                        "godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""),
                            GC("1", "11", ",\"finalizers\":[\"x\"]")),
                        "godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""),
                            GC("1", "11", ",\"managedFields\":[{\"manager\":\"kubectl\"}]")),
                        "");
}

#define GCR(rv, ready, readyReplicas)                                                      \
    "{\"kind\":\"GodisCluster\",\"metadata\":{\"name\":\"ex\",\"namespace\":\"ns\","       \
    "\"generation\":1,\"resourceVersion\":\"" rv "\"},\"spec\":{\"replicas\":5},"           \
    "\"status\":{\"status\":\"Running\",\"readyReplicas\":" readyReplicas ","               \
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\"}]}}"

/* The GodisCluster's own status write that turns Ready True (a write went through after a
 * scale) is what its waiting rollout needs: it wakes the key; other status-only writes do
 * not (test_scale_during_rollout waited for good without this, until a 2 s poll was added). */
static void test_for_godiscluster_ready(void **state)
{
    assert_string_equal(run(NULL, "GodisCluster", GCR("10", "False", "5"), GCR("11", "True", "5")),
                        "godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "GodisCluster", GCR("10", "True", "5"), GCR("11", "False", "5")),
                        "godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "GodisCluster", GCR("10", "True", "4"), GCR("11", "True", "5")), "");
    assert_string_equal(run(NULL, "GodisCluster", GCR("10", "False", "4"), GCR("11", "False", "5")), "");
    /* the first condition ever written counts as a change from none */
    assert_string_equal(run(NULL, "GodisCluster", GC("1", "10", ""), GCR("11", "True", "5")),
                        "godiscluster:ns/ex;");
}

#define GODIS(name, owner, label, state)                                                   \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"generation\":1,"           \
    "\"labels\":{\"cluster-name\":\"" label "\"},\"ownerReferences\":[{\"kind\":\"GodisCluster\"," \
    "\"name\":\"" owner "\",\"uid\":\"u1\",\"controller\":true}]},\"spec\":{\"preferred\":true}," \
    "\"status\":{\"state\":\"" state "\"}}"

static void test_godis(void **state)
{
    assert_string_equal(run(NULL, "Godis", NULL, GODIS("ex-1", "ex", "ex", "Pending")),
                        "godis:ns/ex-1;godiscluster:ns/ex;");
    /* status change: the godis controller does not care, its cluster does */
    assert_string_equal(run(NULL, "Godis", GODIS("ex-1", "ex", "ex", "Pending"),
                            GODIS("ex-1", "ex", "ex", "Running")),
                        "godiscluster:ns/ex;");
    /* owner changed: old and new owners */
    assert_string_equal(run(NULL, "Godis", GODIS("ex-1", "ex", "ex", "Running"),
                            GODIS("ex-1", "other", "ex", "Running")),
                        "godis:ns/ex-1;godiscluster:ns/other;godiscluster:ns/ex;");
    /* no owner reference: the cluster-name label */
    assert_string_equal(run(NULL, "Godis", NULL,
                            "{\"metadata\":{\"name\":\"ex-2\",\"namespace\":\"ns\","
                            "\"labels\":{\"cluster-name\":\"ex\"}}}"),
                        "godis:ns/ex-2;godiscluster:ns/ex;");
    /* neither: only itself */
    assert_string_equal(run(NULL, "Godis", NULL,
                            "{\"metadata\":{\"name\":\"lone\",\"namespace\":\"ns\"}}"),
                        "godis:ns/lone;");
}

static void test_configmap_and_children(void **state)
{
    const char *cm = "{\"metadata\":{\"name\":\"ex-config\",\"namespace\":\"ns\","
                     "\"ownerReferences\":[{\"kind\":\"GodisCluster\",\"name\":\"ex\","
                     "\"controller\":true}]},\"data\":{\"initial-cluster\":\"1@x\"}}";
    assert_string_equal(run(NULL, "ConfigMap", NULL, cm), "godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "ConfigMap", cm, cm), "");     /* nothing changed */
    assert_string_equal(run(NULL, "ConfigMap", cm, NULL), "godiscluster:ns/ex;");
    /* a non-controller owner is not followed; the label is */
    assert_string_equal(run(NULL, "ConfigMap", NULL,
                            "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\","
                            "\"labels\":{\"cluster-name\":\"ex\"},\"ownerReferences\":"
                            "[{\"kind\":\"GodisCluster\",\"name\":\"zz\"}]}}"),
                        "godiscluster:ns/ex;");
    const char *rs = "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\",\"resourceVersion\":\"1\","
                     "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"ex-1\",\"controller\":true}]},"
                     "\"status\":{\"readyReplicas\":0}}";
    const char *rs2 = "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\",\"resourceVersion\":\"2\","
                      "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"ex-1\",\"controller\":true}]},"
                      "\"status\":{\"readyReplicas\":1}}";
    const char *rs3 = "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\",\"resourceVersion\":\"3\","
                      "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"ex-1\",\"controller\":true}]},"
                      "\"status\":{\"readyReplicas\":1}}";
    /* its status (replica counts) is read by no reconcile: a status-only update wakes
     * nothing; its spec, labels, annotations, owners and deletion do */
    const char *rs4 = "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\",\"resourceVersion\":\"4\","
                      "\"generation\":2,\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"ex-1\","
                      "\"controller\":true}]},\"spec\":{\"replicas\":0},\"status\":{\"readyReplicas\":1}}";
    const char *rs5 = "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\",\"resourceVersion\":\"5\","
                      "\"generation\":2,\"annotations\":{\"a\":\"b\"},\"ownerReferences\":[{\"kind\":"
                      "\"Godis\",\"name\":\"ex-1\",\"controller\":true}]},\"spec\":{\"replicas\":0},"
                      "\"status\":{\"readyReplicas\":1}}";
    assert_string_equal(run(NULL, "ReplicaSet", NULL, rs), "godis:ns/ex-1;");
    assert_string_equal(run(NULL, "ReplicaSet", rs, rs2), "");   /* status only */
    assert_string_equal(run(NULL, "ReplicaSet", rs2, rs3), "");  /* resourceVersion only */
    assert_string_equal(run(NULL, "ReplicaSet", rs3, rs4), "godis:ns/ex-1;");   /* spec */
    assert_string_equal(run(NULL, "ReplicaSet", rs4, rs5), "godis:ns/ex-1;");   /* annotation */
    assert_string_equal(run(NULL, "ReplicaSet", rs5, NULL), "godis:ns/ex-1;");  /* deleted */
    assert_string_equal(run(NULL, "Service", NULL,
                            "{\"metadata\":{\"name\":\"ex-1-endpoint\",\"namespace\":\"ns\","
                            "\"labels\":{\"node-name\":\"ex-1\"}}}"),
                        "godis:ns/ex-1;");
    assert_string_equal(run(NULL, "PersistentVolumeClaim", NULL,
                            "{\"metadata\":{\"name\":\"data-ex-1\",\"namespace\":\"ns\","
                            "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"ex-1\",\"controller\":true}]}}"),
                        "godis:ns/ex-1;");
}

#define POD(name, node, godis, ready)                                                      \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"labels\":{\"cluster-name\":\"ex\"," \
    "\"node-name\":\"" godis "\"}},\"spec\":{\"nodeName\":\"" node "\"},\"status\":{\"conditions\":" \
    "[{\"type\":\"Ready\",\"status\":\"" ready "\"}]}}"

static void test_pod(void **state)
{
    assert_string_equal(run(NULL, "Pod", NULL, POD("ex-1-abc", "n1", "ex-1", "False")),
                        "godis:ns/ex-1;godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "Pod", POD("ex-1-abc", "n1", "ex-1", "False"),
                            POD("ex-1-abc", "n1", "ex-1", "True")),
                        "godis:ns/ex-1;godiscluster:ns/ex;");
    assert_string_equal(run(NULL, "Pod", POD("ex-1-abc", "n1", "ex-1", "True"),
                            POD("ex-1-abc", "n1", "ex-1", "True")),
                        "");
    /* relabelled to another Godis: both hear */
    assert_string_equal(run(NULL, "Pod", POD("p", "n1", "ex-1", "True"),
                            POD("p", "n1", "ex-2", "True")),
                        "godis:ns/ex-2;godis:ns/ex-1;godiscluster:ns/ex;");
    /* a foreign pod with no labels maps to nothing */
    assert_string_equal(run(NULL, "Pod", NULL, "{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\"}}"),
                        "");
}

#define NODE(unsched, ready, hb)                                                           \
    "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"unschedulable\":" unsched "},"              \
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\","             \
    "\"lastHeartbeatTime\":\"" hb "\"}]}}"

static void test_node(void **state)
{
    cache *c = cache_new();
    const char *pods[][2] = {{"a-1-x", POD("a-1-x", "n1", "a-1", "True")},
                             {"b-2-x", POD("b-2-x", "n1", "b-2", "True")},
                             {"c-1-x", POD("c-1-x", "n2", "c-1", "True")}};
    /* label cluster-name is "ex" in the macro: give each pod its own cluster */
    const char *clusters[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        cJSON *p = J(pods[i][1]);
        cJSON *labels = gd_json_path(p, "metadata.labels");
        cJSON_ReplaceItemInObject(labels, "cluster-name", cJSON_CreateString(clusters[i]));
        char key[64];
        snprintf(key, sizeof key, "ns/%s", pods[i][0]);
        assert_int_equal(cache_apply(c, CACHE_UPSERT, "Pod", key, 0, p), GD_OK);
        cJSON_Delete(p);
    }
    assert_string_equal(run(c, "Node", NULL, NODE("false", "True", "t1")),
                        "godiscluster:ns/a;godiscluster:ns/b;");
    assert_string_equal(run(c, "Node", NODE("false", "True", "t1"), NODE("false", "True", "t2")),
                        "");                                             /* heartbeat */
    assert_string_equal(run(c, "Node", NODE("false", "True", "t1"), NODE("true", "True", "t2")),
                        "godiscluster:ns/a;godiscluster:ns/b;");       /* cordon */
    assert_string_equal(run(c, "Node", NODE("false", "True", "t1"), NODE("false", "Unknown", "t1")),
                        "godiscluster:ns/a;godiscluster:ns/b;");       /* NotReady */
    assert_string_equal(run(c, "Node", NODE("false", "True", "t1"), NULL),
                        "godiscluster:ns/a;godiscluster:ns/b;");
    assert_string_equal(run(NULL, "Node", NULL, NODE("false", "True", "t1")), "");
    assert_string_equal(run(c, "Node", NULL, "{\"metadata\":{\"name\":\"empty\"}}"), "");
    cache_destroy(&c);
}

static void test_hostile(void **state)
{
    sink s = {0};
    cJSON *o = J("{}");
    assert_int_equal(mapping_event(NULL, NULL, o, o, emit, &s), 0);
    assert_int_equal(mapping_event(NULL, "Pod", NULL, NULL, emit, &s), 0);
    assert_int_equal(mapping_event(NULL, "Pod", o, o, NULL, &s), 0);
    assert_int_equal(mapping_event(NULL, "Secret", NULL, o, emit, &s), 0);
    cJSON_Delete(o);
    /* wrong types everywhere: nothing emitted, nothing crashes */
    assert_string_equal(run(NULL, "GodisCluster", NULL, "{\"metadata\":{\"name\":5}}"), "");
    assert_string_equal(run(NULL, "Godis", NULL, "{\"metadata\":[]}"), "");
    assert_string_equal(run(NULL, "ConfigMap", NULL,
                            "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\","
                            "\"ownerReferences\":[5,{\"controller\":true,\"kind\":\"GodisCluster\"}]}}"),
                        "");
    assert_string_equal(run(NULL, "Pod", NULL, "[]"), "");
    assert_string_equal(run(NULL, "Node", "{\"spec\":5}", "{\"status\":{\"conditions\":7}}"), "");
    /* a key too long for the cap is logged and dropped */
    char big[1200];
    int n = snprintf(big, sizeof big, "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"");
    memset(big + n, 'x', 600);
    snprintf(big + n + 600, sizeof big - (size_t)n - 600, "\"}}");
    assert_string_equal(run(NULL, "GodisCluster", NULL, big), "");
    /* no namespace: cluster-scoped objects never make keys for namespaced controllers */
    assert_string_equal(run(NULL, "GodisCluster", NULL, "{\"metadata\":{\"name\":\"x\"}}"), "");
}

static void test_predicates(void **state)
{
    cJSON *a = J(GC("1", "1", "")), *b = J(GC("1", "2", ""));
    assert_false(mapping_for_update_matters(a, b));
    assert_true(mapping_for_update_matters(a, NULL));
    assert_true(mapping_owned_update_matters(a, b));            /* status.rv differs */
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* no generation: anything but status counts */
    a = J("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"a\":1},\"status\":{\"s\":1}}");
    b = J("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"a\":1},\"status\":{\"s\":2}}");
    assert_false(mapping_for_update_matters(a, b));
    cJSON_Delete(b);
    b = J("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"a\":2},\"status\":{\"s\":1}}");
    assert_true(mapping_for_update_matters(a, b));
    cJSON_Delete(a);
    cJSON_Delete(b);
    assert_true(mapping_node_update_matters(NULL, NULL));
    /* members present on one side only count, in either direction */
    a = J("{\"metadata\":{\"name\":\"x\",\"generation\":1,\"labels\":{\"a\":\"1\"}},\"spec\":{}}");
    b = J("{\"metadata\":{\"name\":\"x\",\"generation\":1},\"spec\":{}}");
    assert_true(mapping_for_update_matters(a, b));
    assert_true(mapping_for_update_matters(b, a));
    assert_true(mapping_owned_update_matters(a, b));
    cJSON_Delete(b);
    b = J("{\"metadata\":{\"name\":\"x\",\"generation\":1,\"labels\":{\"a\":\"1\"},"
          "\"resourceVersion\":\"9\"},\"spec\":{},\"extra\":1}");
    assert_false(mapping_for_update_matters(a, b));   /* spec is generation's business */
    assert_true(mapping_owned_update_matters(a, b));   /* a new top-level member */
    assert_true(mapping_owned_update_matters(b, a));
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* an owned child's status is compared first; the answer is the same as a full walk */
    a = J("{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"1\",\"managedFields\":[1]},"
          "\"spec\":{\"c\":[1,2]},\"status\":{\"ready\":false}}");
    b = J("{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"2\",\"managedFields\":[2]},"
          "\"spec\":{\"c\":[1,2]},\"status\":{\"ready\":false}}");
    assert_false(mapping_owned_update_matters(a, b));   /* only rv and managedFields moved */
    cJSON_Delete(b);
    b = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"c\":[1,2]},\"status\":{\"ready\":true}}");
    assert_true(mapping_owned_update_matters(a, b));    /* status differs */
    cJSON_Delete(b);
    b = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"c\":[1,3]},\"status\":{\"ready\":false}}");
    assert_true(mapping_owned_update_matters(a, b));    /* equal status, spec differs */
    cJSON_Delete(b);
    b = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"c\":[1,2]}}");
    assert_true(mapping_owned_update_matters(a, b));    /* status on one side only */
    assert_true(mapping_owned_update_matters(b, a));
    cJSON_Delete(b);
    b = J("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"c\":[1,2]},\"status\":{\"ready\":false}}");
    assert_true(mapping_owned_update_matters(a, b));    /* equal status, metadata differs */
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* metadata of the wrong type compares as a value */
    a = J("{\"metadata\":5}");
    b = J("{\"metadata\":6}");
    assert_true(mapping_owned_update_matters(a, b));
    assert_false(mapping_owned_update_matters(a, a));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_for_godiscluster),
        cmocka_unit_test(test_for_godiscluster_ready),
        cmocka_unit_test(test_godis),
        cmocka_unit_test(test_configmap_and_children),
        cmocka_unit_test(test_pod),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_predicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
