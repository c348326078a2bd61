/* test_informer_store.c — the informer's store: transform, keys/shards, upsert/delete events,
 * relist diffing (DeltaFIFO Replace semantics), resync; and gd_map underneath it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_json.h"
#include "gd_map.h"
#include "gd_proto.h"
#include "../../informer/informer.h"

/* ---- recording change callback */
typedef struct {
    int n;
    gd_ev ev[64];
    char key[64][64];
    char old_rv[64][16], new_rv[64][16];
} rec;

static void record(void *ud, gd_ev ev, const inf_obj *old, const inf_obj *new_obj)
{
    rec *r = ud;
    assert_true(r->n < 64);
    r->ev[r->n] = ev;
    snprintf(r->key[r->n], 64, "%s", (new_obj ? new_obj : old)->key);
    snprintf(r->old_rv[r->n], 16, "%s", old ? old->rv : "-");
    snprintf(r->new_rv[r->n], 16, "%s", new_obj ? new_obj->rv : "-");
    r->n++;
}

static int find(const rec *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key))
            return i;
    return -1;
}

static inf_obj *mk(const char *key, const char *rv)
{
    char body[128];
    snprintf(body, sizeof body, "{\"k\":\"%s\",\"rv\":\"%s\"}", key, rv);
    inf_obj *o = inf_obj_new(key, rv, 7, body, strlen(body));
    assert_non_null(o);
    return o;
}

static void test_transform(void **state)
{
    const char *j = "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"x\":1}],"
                    "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"big\","
                    "\"keep\":\"1\"}},\"status\":{\"big\":[1,2,3],\"small\":1}}";
    cJSON *o = gd_json_parse(j, strlen(j));
    const char *drop[] = {"status.big",
                          "metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration",
                          "spec.not.there", "", "metadata.name.deeper"};
    inf_transform(o, drop, 5);
    assert_null(gd_json_path(o, "metadata.managedFields"));
    assert_null(gd_json_path(o, "status.big"));
    assert_non_null(gd_json_path(o, "status.small"));
    assert_string_equal(gd_meta_annotation(o, "keep"), "1");
    assert_null(gd_meta_annotation(o, "kubectl.kubernetes.io/last-applied-configuration"));
    assert_string_equal(gd_meta_name(o), "a");
    cJSON_Delete(o);
    /* hostile: not an object, NULL */
    cJSON *arr = cJSON_CreateArray();
    inf_transform(arr, drop, 5);
    inf_transform(NULL, drop, 5);
    cJSON_Delete(arr);
    /* a path segment longer than any key must not overflow */
    char longp[1024];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    const char *d2[] = {longp};
    o = gd_json_parse("{\"a\":1}", 7);
    inf_transform(o, d2, 1);
    assert_non_null(cJSON_GetObjectItem(o, "a"));
    cJSON_Delete(o);
}

static void test_obj_from_json(void **state)
{
    const char *j = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"ns\","
                    "\"resourceVersion\":\"42\",\"labels\":{\"cluster-name\":\"web\"},"
                    "\"managedFields\":[1]},\"data\":{\"x\":\"y\"}}";
    cJSON *o = gd_json_parse(j, strlen(j));
    const char *why = "x";
    inf_obj *io = inf_obj_from_json("ConfigMap", o, NULL, 0, &why);
    assert_non_null(io);
    assert_null(why);
    assert_string_equal(io->key, "ns/c1");
    assert_string_equal(io->rv, "42");
    assert_int_equal(io->shard, gd_shard_of_cluster("ns", "web"));
    assert_null(strstr(io->body, "managedFields"));
    assert_non_null(strstr(io->body, "\"data\":{\"x\":\"y\"}"));
    assert_int_equal(io->body_len, strlen(io->body));
    inf_obj_destroy(&io);
    assert_null(io);
    cJSON_Delete(o);

    /* Node: cluster-scoped key, broadcast */
    o = gd_json_parse("{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"5\"}}", 48);
    io = inf_obj_from_json("Node", o, NULL, 0, &why);
    assert_string_equal(io->key, "n1");
    assert_int_equal(io->shard, GD_SHARD_BROADCAST);
    inf_obj_destroy(&io);
    cJSON_Delete(o);

    /* no name → refused with a reason */
    o = gd_json_parse("{\"metadata\":{\"namespace\":\"x\"}}", 31);
    assert_null(inf_obj_from_json("Pod", o, NULL, 0, &why));
    assert_non_null(why);
    cJSON_Delete(o);
    o = cJSON_CreateString("x");
    assert_null(inf_obj_from_json("Pod", o, NULL, 0, &why));
    cJSON_Delete(o);
}

static void test_upsert_delete(void **state)
{
    inf_store *s = inf_store_new();
    rec r = {0};
    inf_obj *o = mk("ns/a", "1");
    assert_int_equal(inf_store_upsert(s, &o, record, &r), GD_OK);
    assert_null(o);
    o = mk("ns/a", "2");
    inf_store_upsert(s, &o, record, &r);
    inf_store_delete(s, "ns/a", record, &r);
    inf_store_delete(s, "ns/a", record, &r);     /* absent: nothing */
    inf_store_delete(s, "ns/zzz", record, &r);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.ev[0], GD_EV_ADDED);
    assert_int_equal(r.ev[1], GD_EV_MODIFIED);
    assert_string_equal(r.old_rv[1], "1");
    assert_string_equal(r.new_rv[1], "2");
    assert_int_equal(r.ev[2], GD_EV_DELETED);
    assert_string_equal(r.old_rv[2], "2");
    assert_int_equal(inf_store_count(s), 0);
    assert_string_equal(gd_ev_name(GD_EV_DELETED), "DELETED");
    inf_store_destroy(&s);
    assert_null(s);
}

static void test_replace_diff(void **state)
{
    inf_store *s = inf_store_new();
    rec r = {0};
    inf_obj *l1[] = {mk("ns/a", "1"), mk("ns/b", "1"), mk("ns/c", "1")};
    assert_int_equal(inf_store_replace(s, l1, 3, record, &r), GD_OK);
    assert_int_equal(r.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r.ev[i], GD_EV_ADDED);
        assert_null(l1[i]);
    }
    /* while "disconnected": b changed, c deleted, d created; a unchanged */
    memset(&r, 0, sizeof r);
    inf_obj *l2[] = {mk("ns/a", "1"), mk("ns/b", "5"), mk("ns/d", "6")};
    inf_store_replace(s, l2, 3, record, &r);
    assert_int_equal(r.n, 3);
    assert_int_equal(find(&r, "ns/a"), -1);
    assert_int_equal(r.ev[find(&r, "ns/b")], GD_EV_MODIFIED);
    assert_string_equal(r.old_rv[find(&r, "ns/b")], "1");
    assert_int_equal(r.ev[find(&r, "ns/d")], GD_EV_ADDED);
    assert_int_equal(r.ev[find(&r, "ns/c")], GD_EV_DELETED);
    assert_string_equal(r.old_rv[find(&r, "ns/c")], "1");
    assert_int_equal(inf_store_count(s), 3);
    assert_non_null(inf_store_get(s, "ns/d"));
    assert_null(inf_store_get(s, "ns/c"));
    /* an empty list deletes everything */
    memset(&r, 0, sizeof r);
    inf_store_replace(s, NULL, 0, record, &r);
    assert_int_equal(r.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r.ev[i], GD_EV_DELETED);
    assert_int_equal(inf_store_count(s), 0);
    /* a shard move with the same rv is still a change */
    inf_obj *l3[] = {mk("ns/a", "1")};
    inf_store_replace(s, l3, 1, NULL, NULL);
    memset(&r, 0, sizeof r);
    inf_obj *l4[] = {mk("ns/a", "1")};
    l4[0]->shard = 9;
    inf_store_replace(s, l4, 1, record, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.ev[0], GD_EV_MODIFIED);
    /* duplicate keys in one list: the last wins, no spurious delete */
    memset(&r, 0, sizeof r);
    inf_obj *l5[] = {mk("ns/x", "1"), mk("ns/x", "2")};
    inf_store_replace(s, l5, 2, record, &r);
    assert_string_equal(inf_store_get(s, "ns/x")->rv, "2");
    assert_null(inf_store_get(s, "ns/a"));
    inf_store_destroy(&s);
}

static void test_replace_large(void **state)
{
    inf_store *s = inf_store_new();
    enum { N = 5000 };
    inf_obj **l = calloc(N, sizeof *l);
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/o%d", i);
        l[i] = mk(key, "1");
    }
    inf_store_replace(s, l, N, NULL, NULL);
    assert_int_equal(inf_store_count(s), N);
    /* keep the even ones */
    size_t n = 0;
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "ns/o%d", i);
        l[n++] = mk(key, "1");
    }
    inf_store_replace(s, l, n, NULL, NULL);
    assert_int_equal(inf_store_count(s), N / 2);
    assert_null(inf_store_get(s, "ns/o1"));
    assert_non_null(inf_store_get(s, "ns/o4998"));
    free(l);
    inf_store_destroy(&s);
}

static int count_cb(void *ud, const inf_obj *o)
{
    (*(int *)ud)++;
    return 0;
}

static void test_resync_foreach(void **state)
{
    inf_store *s = inf_store_new();
    inf_obj *l[] = {mk("a", "1"), mk("b", "2")};
    inf_store_replace(s, l, 2, NULL, NULL);
    rec r = {0};
    inf_store_resync(s, record, &r);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.ev[0], GD_EV_MODIFIED);
    assert_string_equal(r.old_rv[0], r.new_rv[0]);
    int n = 0;
    inf_store_foreach(s, count_cb, &n);
    assert_int_equal(n, 2);
    inf_store_destroy(&s);
}

static void test_map(void **state)
{
    gd_map *m = gd_map_new(free);
    char key[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(gd_map_put(m, key, strdup(key), NULL), GD_OK);
    }
    assert_int_equal(gd_map_count(m), 3000);
    assert_string_equal(gd_map_get(m, "k1234"), "k1234");
    assert_null(gd_map_get(m, "nope"));
    /* replace with old handed back */
    void *old = NULL;
    gd_map_put(m, "k1", strdup("new"), &old);
    assert_string_equal(old, "k1");
    free(old);
    assert_string_equal(gd_map_get(m, "k1"), "new");
    /* iterate, taking every odd key */
    gd_map_iter it;
    const char *k;
    void *v;
    int seen = 0;
    gd_map_iter_init(&it, m);
    while (gd_map_next(&it, &k, &v)) {
        seen++;
        if (atoi(k + 1) % 2)
            free(gd_map_iter_take(&it));
    }
    assert_int_equal(seen, 3000);
    assert_int_equal(gd_map_count(m), 1500);
    assert_false(gd_map_next(&it, &k, &v));     /* finished iterators stay finished */
    assert_null(gd_map_get(m, "k3"));
    assert_non_null(gd_map_get(m, "k4"));
    assert_true(gd_map_del(m, "k4"));
    assert_false(gd_map_del(m, "k4"));
    char *t = gd_map_take(m, "k6");
    assert_string_equal(t, "k6");
    free(t);
    assert_null(gd_map_take(m, "k6"));
    /* empty key is a key */
    gd_map_put(m, "", strdup("empty"), NULL);
    assert_string_equal(gd_map_get(m, ""), "empty");
    gd_map_destroy(&m);
    assert_null(m);
    gd_map_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transform),     cmocka_unit_test(test_obj_from_json),
        cmocka_unit_test(test_upsert_delete), cmocka_unit_test(test_replace_diff),
        cmocka_unit_test(test_replace_large), cmocka_unit_test(test_resync_foreach),
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
