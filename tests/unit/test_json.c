/* test_json.c — typed getters (missing vs mistyped), path escaping, set, metadata, rv. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_json.h"

static const char *OBJ =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    " \"metadata\":{\"name\":\"web-1\",\"namespace\":\"prod\",\"uid\":\"u-1\","
    "   \"resourceVersion\":\"4711\",\"generation\":3,"
    "   \"labels\":{\"cluster-name\":\"web\",\"app.kubernetes.io/name\":\"godis\"},"
    "   \"annotations\":{\"example.com/x\":\"yes\"},"
    "   \"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"r1\"},"
    "                        {\"kind\":\"Godis\",\"name\":\"web-1\",\"uid\":\"g1\",\"controller\":true}],"
    "   \"finalizers\":[\"a/b\",\"godis.io/cleanup\"],"
    "   \"deletionTimestamp\":\"2026-11-22T11:00:00Z\"},"
    " \"spec\":{\"replicas\":3,\"ratio\":1.5,\"big\":1e30,\"neg\":-7,\"flag\":true,"
    "   \"nothing\":null,\"list\":[1,2],\"str\":\"s\",\"sub\":{\"a.b\":{\"c\":\"dotted\"}},"
    "   \"back\\\\slash\":\"bs\"}}";

static cJSON *obj;

static int setup(void **state)
{
    obj = gd_json_parse(OBJ, strlen(OBJ));
    return obj ? 0 : -1;
}

static int teardown(void **state)
{
    cJSON_Delete(obj);
    return 0;
}

static void test_str(void **state)
{
    const char *s = NULL;
    assert_int_equal(gd_json_str(obj, "metadata.name", &s), GD_OK);
    assert_string_equal(s, "web-1");
    assert_int_equal(gd_json_str(obj, "metadata.nope", &s), GD_ERR_MISSING);
    assert_int_equal(gd_json_str(obj, "nope.deeper.still", &s), GD_ERR_MISSING);
    assert_int_equal(gd_json_str(obj, "spec.replicas", &s), GD_ERR_TYPE);
    assert_int_equal(gd_json_str(obj, "spec.sub", &s), GD_ERR_TYPE);      /* object for string */
    assert_int_equal(gd_json_str(obj, "spec.list", &s), GD_ERR_TYPE);     /* array for string */
    assert_int_equal(gd_json_str(obj, "spec.nothing", &s), GD_ERR_MISSING); /* null = missing */
    assert_int_equal(gd_json_str(obj, "spec.nothing.x", &s), GD_ERR_MISSING);
    assert_int_equal(gd_json_str(obj, "spec.str.x", &s), GD_ERR_TYPE);   /* through a string */
    assert_int_equal(gd_json_str(obj, "spec.list.x", &s), GD_ERR_TYPE);  /* through an array */
    assert_int_equal(gd_json_str(NULL, "a", &s), GD_ERR_MISSING);
    assert_int_equal(gd_json_str(obj, NULL, &s), GD_ERR_MISSING);
    /* case-sensitive keys */
    assert_int_equal(gd_json_str(obj, "Metadata.name", &s), GD_ERR_MISSING);
}

static void test_escaped_paths(void **state)
{
    const char *s = NULL;
    assert_int_equal(gd_json_str(obj, "metadata.annotations.example\\.com/x", &s), GD_OK);
    assert_string_equal(s, "yes");
    assert_int_equal(gd_json_str(obj, "metadata.labels.app\\.kubernetes\\.io/name", &s), GD_OK);
    assert_string_equal(s, "godis");
    assert_int_equal(gd_json_str(obj, "spec.sub.a\\.b.c", &s), GD_OK);
    assert_string_equal(s, "dotted");
    assert_int_equal(gd_json_str(obj, "spec.back\\\\slash", &s), GD_OK);
    assert_string_equal(s, "bs");
    /* unescaped: a.b is two keys */
    assert_int_equal(gd_json_str(obj, "spec.sub.a.b.c", &s), GD_ERR_MISSING);
    /* a very long segment is missing, not an overflow */
    char path[2000];
    memset(path, 'k', sizeof path - 1);
    path[sizeof path - 1] = 0;
    assert_int_equal(gd_json_str(obj, path, &s), GD_ERR_MISSING);
    assert_null(gd_json_path(obj, path));
    /* empty path is the root itself */
    assert_ptr_equal(gd_json_path(obj, ""), obj);
}

static void test_int_bool(void **state)
{
    int64_t v = 0;
    bool b = false;
    assert_int_equal(gd_json_int(obj, "spec.replicas", &v), GD_OK);
    assert_int_equal(v, 3);
    assert_int_equal(gd_json_int(obj, "spec.neg", &v), GD_OK);
    assert_int_equal(v, -7);
    assert_int_equal(gd_json_int(obj, "spec.ratio", &v), GD_ERR_TYPE);
    assert_int_equal(gd_json_int(obj, "spec.big", &v), GD_ERR_TYPE);
    assert_int_equal(gd_json_int(obj, "spec.str", &v), GD_ERR_TYPE);
    assert_int_equal(gd_json_int(obj, "spec.flag", &v), GD_ERR_TYPE);
    assert_int_equal(gd_json_int(obj, "spec.absent", &v), GD_ERR_MISSING);
    assert_int_equal(gd_json_bool(obj, "spec.flag", &b), GD_OK);
    assert_true(b);
    assert_int_equal(gd_json_bool(obj, "spec.replicas", &b), GD_ERR_TYPE);
    assert_int_equal(gd_json_bool(obj, "spec.str", &b), GD_ERR_TYPE);
    assert_int_equal(gd_json_bool(obj, "spec.nothing", &b), GD_ERR_MISSING);
}

static void test_obj_arr_defaults(void **state)
{
    cJSON *o = NULL, *a = NULL;
    assert_int_equal(gd_json_obj(obj, "spec.sub", &o), GD_OK);
    assert_true(cJSON_IsObject(o));
    assert_int_equal(gd_json_obj(obj, "spec.list", &o), GD_ERR_TYPE);
    assert_int_equal(gd_json_obj(obj, "spec.zzz", &o), GD_ERR_MISSING);
    assert_int_equal(gd_json_arr(obj, "spec.list", &a), GD_OK);
    assert_int_equal(cJSON_GetArraySize(a), 2);
    assert_int_equal(gd_json_arr(obj, "spec.sub", &a), GD_ERR_TYPE);
    assert_int_equal(gd_json_arr(obj, "spec.nothing", &a), GD_ERR_MISSING);
    assert_string_equal(gd_json_str_or(obj, "spec.str", "d"), "s");
    assert_string_equal(gd_json_str_or(obj, "spec.replicas", "d"), "d");
    assert_string_equal(gd_json_str_or(obj, "spec.missing", "d"), "d");
    assert_null(gd_json_str_or(obj, "spec.missing", NULL));
    assert_int_equal(gd_json_int_or(obj, "spec.replicas", 9), 3);
    assert_int_equal(gd_json_int_or(obj, "spec.ratio", 9), 9);
    assert_int_equal(gd_json_int_or(obj, "x.y", 9), 9);
}

static void test_set(void **state)
{
    cJSON *root = cJSON_CreateObject();
    assert_int_equal(gd_json_set(root, "status.conditions.ready", cJSON_CreateString("True")), GD_OK);
    assert_string_equal(gd_json_str_or(root, "status.conditions.ready", ""), "True");
    assert_int_equal(gd_json_set(root, "status.conditions.ready", cJSON_CreateString("False")), GD_OK);
    assert_string_equal(gd_json_str_or(root, "status.conditions.ready", ""), "False");
    assert_int_equal(cJSON_GetArraySize(gd_json_path(root, "status.conditions")), 1);
    assert_int_equal(gd_json_set(root, "metadata.annotations.a\\.b/c", cJSON_CreateString("v")), GD_OK);
    assert_string_equal(gd_json_str_or(root, "metadata.annotations.a\\.b/c", ""), "v");
    /* through a string: refused, and the item is freed (ASan would catch a leak) */
    assert_int_equal(gd_json_set(root, "status.conditions.ready.x", cJSON_CreateNumber(1)), GD_ERR_TYPE);
    /* a null intermediate becomes an object */
    cJSON_AddNullToObject(root, "n");
    assert_int_equal(gd_json_set(root, "n.x", cJSON_CreateNumber(5)), GD_OK);
    assert_int_equal(gd_json_int_or(root, "n.x", 0), 5);
    assert_int_equal(gd_json_set(root, "", cJSON_CreateNumber(1)), GD_ERR_ARG);
    assert_int_equal(gd_json_set(NULL, "a", cJSON_CreateNumber(1)), GD_ERR_ARG);
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(gd_json_set(arr, "a", cJSON_CreateNumber(1)), GD_ERR_ARG);
    cJSON_Delete(arr);
    assert_int_equal(gd_json_set(root, "a", NULL), GD_ERR_ARG);
    char *s = gd_json_print(root);
    assert_string_equal(s, "{\"status\":{\"conditions\":{\"ready\":\"False\"}},"
                           "\"metadata\":{\"annotations\":{\"a.b/c\":\"v\"}},\"n\":{\"x\":5}}");
    free(s);
    cJSON_Delete(root);
}

static void test_parse(void **state)
{
    const char buf[] = "{\"a\":1}garbage";
    cJSON *j = gd_json_parse(buf, 7);  /* not NUL-terminated at 7 */
    assert_non_null(j);
    assert_int_equal(gd_json_int_or(j, "a", 0), 1);
    cJSON_Delete(j);
    assert_null(gd_json_parse(buf, sizeof buf - 1));       /* trailing garbage */
    assert_null(gd_json_parse("{\"a\":", 5));
    assert_null(gd_json_parse("", 0));
    assert_null(gd_json_parse(NULL, 3));
    j = gd_json_parse("  [1] \n", 7);
    assert_non_null(j);
    cJSON_Delete(j);
    /* deep nesting is refused, not a stack overflow */
    char deep[20001];
    memset(deep, '[', 10000);
    memset(deep + 10000, ']', 10000);
    deep[20000] = 0;
    assert_null(gd_json_parse(deep, 20000));
    assert_null(gd_json_print(NULL));
}

static void test_meta(void **state)
{
    assert_string_equal(gd_meta_name(obj), "web-1");
    assert_string_equal(gd_meta_namespace(obj), "prod");
    assert_string_equal(gd_meta_uid(obj), "u-1");
    assert_string_equal(gd_meta_rv(obj), "4711");
    assert_int_equal(gd_meta_generation(obj), 3);
    char key[64];
    assert_int_equal(gd_meta_key(obj, key, sizeof key), 10);
    assert_string_equal(key, "prod/web-1");
    assert_int_equal(gd_meta_key(obj, key, 10), -1);  /* needs 11 with the NUL */
    assert_int_equal(gd_meta_key(obj, key, 11), 10);
    assert_string_equal(gd_meta_label(obj, "cluster-name"), "web");
    assert_string_equal(gd_meta_label(obj, "app.kubernetes.io/name"), "godis");
    assert_null(gd_meta_label(obj, "nope"));
    assert_string_equal(gd_meta_annotation(obj, "example.com/x"), "yes");
    assert_null(gd_meta_annotation(obj, NULL));
    const cJSON *owner = gd_meta_controller_owner(obj);
    assert_non_null(owner);
    assert_string_equal(gd_json_str_or(owner, "uid", ""), "g1");
    assert_true(gd_meta_owned_by(obj, "ReplicaSet", NULL));
    assert_true(gd_meta_owned_by(obj, "Godis", "g1"));
    assert_false(gd_meta_owned_by(obj, "Godis", "g2"));
    assert_false(gd_meta_owned_by(obj, "GodisCluster", NULL));
    assert_true(gd_meta_deleting(obj));
    assert_true(gd_meta_has_finalizer(obj, "godis.io/cleanup"));
    assert_false(gd_meta_has_finalizer(obj, "godis.io"));
}

static void test_meta_hostile(void **state)
{
    const char *docs[] = {
        "{}", "[]", "{\"metadata\":\"x\"}", "{\"metadata\":null}",
        ("{\"metadata\":{\"name\":5,\"namespace\":[],\"labels\":[1],\"ownerReferences\":{},"
         "\"finalizers\":\"f\",\"generation\":\"3\",\"deletionTimestamp\":null}}"),
        "{\"metadata\":{\"ownerReferences\":[1,null,{\"controller\":\"true\"}],\"finalizers\":[1,null]}}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        cJSON *j = gd_json_parse(docs[i], strlen(docs[i]));
        assert_non_null(j);
        char key[16];
        assert_string_equal(gd_meta_name(j), "");
        assert_string_equal(gd_meta_namespace(j), "");
        assert_string_equal(gd_meta_rv(j), "");
        assert_int_equal(gd_meta_generation(j), 0);
        assert_int_equal(gd_meta_key(j, key, sizeof key), -1);
        assert_null(gd_meta_label(j, "a"));
        assert_null(gd_meta_controller_owner(j));
        assert_false(gd_meta_owned_by(j, "Godis", NULL));
        assert_false(gd_meta_deleting(j));
        assert_false(gd_meta_has_finalizer(j, "f"));
        cJSON_Delete(j);
    }
    assert_string_equal(gd_meta_name(NULL), "");
    /* cluster-scoped key is just the name */
    cJSON *n = gd_json_parse("{\"metadata\":{\"name\":\"node1\"}}", 29);
    char key[16];
    assert_int_equal(gd_meta_key(n, key, sizeof key), 5);
    assert_string_equal(key, "node1");
    cJSON_Delete(n);
}

/* One helper answers "is condition X True" for Nodes, Pods and GodisClusters. */
static void test_conditions(void **state)
{
    cJSON *o = cJSON_Parse("{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\","
                           "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"False\"}]}}");
    assert_non_null(o);
    assert_string_equal(gd_json_str_or(gd_meta_condition(o, "Ready"), "status", ""), "False");
    assert_false(gd_meta_condition_true(o, "Ready"));
    assert_true(gd_meta_condition_true(o, "PodScheduled"));
    assert_null(gd_meta_condition(o, "Progressing"));
    assert_false(gd_meta_condition_true(o, "Progressing"));   /* absent: not True */
    cJSON *not_array = cJSON_Parse("{\"status\":{\"conditions\":{\"type\":\"Ready\"}}}");
    assert_null(gd_meta_condition(not_array, "Ready"));
    assert_false(gd_meta_condition_true(NULL, "Ready"));
    cJSON_Delete(not_array);
    cJSON_Delete(o);
}

static void test_rv_compare(void **state)
{
    assert_int_equal(gd_rv_compare("10", "9"), 1);
    assert_int_equal(gd_rv_compare("9", "10"), -1);
    assert_int_equal(gd_rv_compare("42", "42"), 0);
    assert_int_equal(gd_rv_compare("007", "7"), 0);
    assert_int_equal(gd_rv_compare("0", "0000"), 0);
    assert_int_equal(gd_rv_compare("123456789012345678901234567890", "123456789012345678901234567891"), -1);
    assert_int_equal(gd_rv_compare("", "1"), -2);
    assert_int_equal(gd_rv_compare("1", NULL), -2);
    assert_int_equal(gd_rv_compare("-1", "1"), -2);
    assert_int_equal(gd_rv_compare("1a", "1"), -2);
    assert_int_equal(gd_rv_compare(" 1", "1"), -2);
}

/* gd_json_equal answers as cJSON_Compare does, in member order or not. */
static void test_equal_cases(void **state)
{
    (void)state;
    struct { const char *a, *b; bool eq; } c[] = {
        {"{\"a\":1,\"b\":{\"c\":[1,2,{\"d\":\"x\"}]}}", "{\"a\":1,\"b\":{\"c\":[1,2,{\"d\":\"x\"}]}}", true},
        {"{\"a\":1,\"b\":{\"c\":[1,2],\"e\":null}}", "{\"b\":{\"e\":null,\"c\":[1,2]},\"a\":1}", true},
        {"{\"a\":1,\"b\":{\"c\":[1,2,{\"d\":\"x\"}]}}", "{\"a\":1,\"b\":{\"c\":[1,2,{\"d\":\"y\"}]}}", false},
        {"{\"a\":1,\"b\":2}", "{\"a\":1}", false},
        {"{\"a\":1}", "{\"a\":1,\"b\":2}", false},
        {"{\"a\":1,\"b\":2}", "{\"b\":2,\"c\":1}", false},
        {"[1,2,3]", "[1,2]", false},
        {"[1,2]", "[2,1]", false},
        {"{\"n\":1}", "{\"n\":1.0}", true},
        {"{\"n\":1}", "{\"n\":\"1\"}", false},
        {"{\"t\":true}", "{\"t\":false}", false},
        {"{}", "[]", false},
        {"{}", "{}", true},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cJSON *a = cJSON_Parse(c[i].a), *b = cJSON_Parse(c[i].b);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(cJSON_Compare(a, b, true), c[i].eq);   /* the case itself is right */
        assert_int_equal(gd_json_equal(a, b), c[i].eq);
        assert_int_equal(gd_json_equal(b, a), c[i].eq);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    cJSON *a = cJSON_Parse("{\"a\":1}");
    assert_false(gd_json_equal(a, NULL));
    assert_false(gd_json_equal(NULL, a));
    assert_false(gd_json_equal(NULL, NULL));
    assert_true(gd_json_equal(a, a));
    cJSON_Delete(a);
}

/* A random tree (unique member names), a copy, and one change: a leaf's value, a member
 * added or removed, or an object's members reordered (no change at all to equality). */
static cJSON *random_tree(unsigned *seed, int depth)
{
    int kind = depth <= 0 ? (int)(rand_r(seed) % 3) : (int)(rand_r(seed) % 5);
    switch (kind) {
    case 0: return cJSON_CreateNumber(rand_r(seed) % 4);
    case 1: return cJSON_CreateString((rand_r(seed) % 2) ? "x" : "y");
    case 2: return cJSON_CreateBool(rand_r(seed) % 2);
    case 3: {
        cJSON *arr = cJSON_CreateArray();
        int n = (int)(rand_r(seed) % 4);
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, random_tree(seed, depth - 1));
        return arr;
    }
    default: {
        cJSON *obj = cJSON_CreateObject();
        int n = (int)(rand_r(seed) % 5);
        for (int i = 0; i < n; i++) {
            char k[16];
            snprintf(k, sizeof k, "k%d", i);
            cJSON_AddItemToObject(obj, k, random_tree(seed, depth - 1));
        }
        return obj;
    }
    }
}

/* Every node of t, depth first, into out (up to cap). */
static int nodes_of(cJSON *t, cJSON **out, int n, int cap)
{
    if (n < cap) out[n++] = t;
    for (cJSON *c = t->child; c && (cJSON_IsObject(t) || cJSON_IsArray(t)); c = c->next)
        n = nodes_of(c, out, n, cap);
    return n;
}

static void mutate(cJSON *t, unsigned *seed)
{
    cJSON *nodes[256], *multi[256];
    int n = nodes_of(t, nodes, 0, 256), m = 0;
    for (int i = 0; i < n; i++)
        if (cJSON_IsObject(nodes[i]) && nodes[i]->child && nodes[i]->child->next) multi[m++] = nodes[i];
    if (m > 0 && rand_r(seed) % 2) {   /* reorder an object: its first member goes last */
        cJSON *x = multi[rand_r(seed) % (unsigned)m];
        cJSON *first = cJSON_DetachItemViaPointer(x, x->child);
        cJSON_AddItemToObject(x, first->string, first);
        return;
    }
    cJSON *x = nodes[rand_r(seed) % (unsigned)n];
    if (cJSON_IsObject(x) && rand_r(seed) % 2)
        cJSON_AddItemToObject(x, "added", cJSON_CreateNull());
    else if ((cJSON_IsObject(x) || cJSON_IsArray(x)) && x->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(x, x->child));
    else if (cJSON_IsNumber(x))
        cJSON_SetNumberValue(x, x->valuedouble + (rand_r(seed) % 2));   /* may stay equal */
}

static void test_equal_matches_cjson_compare(void **state)
{
    (void)state;
    unsigned seed = 4711;
    int differed = 0, equal_in_another_order = 0;
    for (int i = 0; i < 3000; i++) {
        cJSON *a = random_tree(&seed, 4);
        cJSON *b = cJSON_Duplicate(a, true);
        int steps = 1 + (int)(rand_r(&seed) % 2);
        for (int s = 0; s < steps; s++) mutate(b, &seed);
        bool want = cJSON_Compare(a, b, true);
        assert_int_equal(gd_json_equal(a, b), want);
        assert_int_equal(gd_json_equal(b, a), want);
        differed += !want;
        if (want) {   /* equal, yet printed differently: members in another order */
            char *pa = cJSON_PrintUnformatted(a), *pb = cJSON_PrintUnformatted(b);
            equal_in_another_order += strcmp(pa, pb) != 0;
            free(pa);
            free(pb);
        }
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    assert_true(differed > 500);                 /* both answers, and the by-name fallback, */
    assert_true(differed < 2900);                /* were exercised */
    assert_true(equal_in_another_order > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_str),
        cmocka_unit_test(test_escaped_paths),
        cmocka_unit_test(test_int_bool),
        cmocka_unit_test(test_obj_arr_defaults),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_meta_hostile),
        cmocka_unit_test(test_rv_compare),
        cmocka_unit_test(test_conditions),
        cmocka_unit_test(test_equal_cases),
        cmocka_unit_test(test_equal_matches_cjson_compare),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
