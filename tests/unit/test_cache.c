/* test_cache.c — the worker's cache replica: upsert/delete, the four indexes following
 * updates (and against a model of random changes), shard drops, sorted listings, copies,
 * hostile input, readers beside a writer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <cmocka.h>
#include "gd_json.h"
#include "cache.h"

static cJSON *obj(const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    return o;
}

static void put(cache *c, const char *kind, const char *key, int shard, const char *json)
{
    cJSON *o = obj(json);
    assert_int_equal(cache_apply(c, CACHE_UPSERT, kind, key, shard, o), GD_OK);
    cJSON_Delete(o);
}

#define POD(name, node, cl, rv)                                                            \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv  \
    "\",\"labels\":{\"cluster-name\":\"" cl "\"},\"ownerReferences\":[{\"kind\":\"ReplicaSet\"," \
    "\"name\":\"x\",\"uid\":\"rs-" name "\",\"controller\":true}]},\"spec\":{\"nodeName\":\"" node "\"}}"

static int count_cb(void *ud, const char *key, const cJSON *o)
{
    (*(int *)ud)++;
    return 0;
}

static void test_upsert_get_delete(void **state)
{
    cache *c = cache_new();
    assert_non_null(c);
    put(c, "Pod", "ns/p1", 3, POD("p1", "n1", "c1", "10"));
    assert_int_equal(cache_count(c, "Pod"), 1);
    assert_int_equal(cache_count(c, "Node"), 0);
    cJSON *g = cache_get(c, "Pod", "ns/p1");
    assert_non_null(g);
    assert_string_equal(gd_meta_rv(g), "10");
    cJSON_AddStringToObject(g, "scribble", "x");    /* a copy: the cache is unaffected */
    cJSON_Delete(g);
    g = cache_get_nsname(c, "Pod", "ns", "p1");
    assert_null(cJSON_GetObjectItem(g, "scribble"));
    cJSON_Delete(g);
    char rv[16];
    bool del = true;
    assert_true(cache_get_rv(c, "Pod", "ns/p1", rv, sizeof rv, &del));
    assert_string_equal(rv, "10");
    assert_false(del);
    assert_true(cache_rv_lookup(c, "Pod", "ns/p1", rv, sizeof rv, &del));
    assert_false(cache_get_rv(c, "Pod", "ns/nope", rv, sizeof rv, &del));
    assert_false(cache_get_rv(c, "Service", "ns/p1", rv, sizeof rv, &del));
    put(c, "Pod", "ns/p1", 3,
        "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\",\"resourceVersion\":\"11\","
        "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"}}");
    assert_true(cache_get_rv(c, "Pod", "ns/p1", rv, sizeof rv, &del));
    assert_string_equal(rv, "11");
    assert_true(del);
    assert_int_equal(cache_apply(c, CACHE_DELETE, "Pod", "ns/p1", 3, NULL), GD_OK);
    assert_false(cache_has(c, "Pod", "ns/p1"));
    assert_int_equal(cache_apply(c, CACHE_DELETE, "Pod", "ns/p1", 3, NULL), GD_OK);
    assert_int_equal(cache_apply(c, CACHE_DELETE, "Never", "ns/p1", 3, NULL), GD_OK);
    cache_destroy(&c);
    assert_null(c);
    cache_destroy(&c);
}

static void read_rv(void *ud, const cJSON *o) { snprintf(ud, 16, "%s", gd_meta_rv(o)); }

/* cache_apply_take moves objects in and hands the previous one back; cache_read borrows. */
static void test_take_and_read(void **state)
{
    cache *c = cache_new();
    cJSON *o = obj(POD("p1", "n1", "c1", "10")), *old = (cJSON *)1;
    cJSON *kept = o;
    assert_int_equal(cache_apply_take(c, CACHE_UPSERT, "Pod", "ns/p1", 1, &o, &old), GD_OK);
    assert_null(o);                                  /* taken */
    assert_null(old);                                /* nothing before */
    char rv[16] = "";
    assert_true(cache_read(c, "Pod", "ns/p1", read_rv, rv));
    assert_string_equal(rv, "10");
    assert_false(cache_read(c, "Pod", "ns/none", read_rv, rv));
    o = obj(POD("p1", "n2", "c1", "11"));
    assert_int_equal(cache_apply_take(c, CACHE_UPSERT, "Pod", "ns/p1", 1, &o, &old), GD_OK);
    assert_ptr_equal(old, kept);                     /* the previous object, now ours */
    assert_string_equal(gd_meta_rv(old), "10");
    cJSON_Delete(old);
    assert_int_equal(cache_each_indexed(c, "Pod", CACHE_IDX_NODE, "n1", count_cb, &(int){0}), 0);
    int n = 0;
    cache_each_indexed(c, "Pod", CACHE_IDX_NODE, "n2", count_cb, &n);
    assert_int_equal(n, 1);
    o = NULL;                                        /* hostile: no object */
    assert_int_equal(cache_apply_take(c, CACHE_UPSERT, "Pod", "ns/p2", 1, &o, &old), GD_ERR_ARG);
    assert_null(old);
    assert_int_equal(cache_apply_take(c, CACHE_UPSERT, "Pod", "ns/p2", 1, NULL, NULL), GD_ERR_ARG);
    assert_int_equal(cache_apply_take(c, CACHE_DELETE, "Pod", "ns/p1", 1, NULL, &old), GD_OK);
    assert_non_null(old);
    assert_string_equal(gd_meta_rv(old), "11");
    cJSON_Delete(old);
    assert_false(cache_has(c, "Pod", "ns/p1"));
    assert_int_equal(cache_apply_take(c, CACHE_DELETE, "Pod", "ns/p1", 1, NULL, &old), GD_OK);
    assert_null(old);
    cache_destroy(&c);
}

static void test_indexes_follow_updates(void **state)
{
    cache *c = cache_new();
    put(c, "Pod", "ns/p1", 3, POD("p1", "n1", "c1", "1"));
    put(c, "Pod", "ns/p2", 3, POD("p2", "n1", "c1", "1"));
    put(c, "Pod", "ns/p3", 4, POD("p3", "n2", "c2", "1"));
    int n = 0;
    cache_each_indexed(c, "Pod", CACHE_IDX_NODE, "n1", count_cb, &n);
    assert_int_equal(n, 2);
    n = 0;
    cache_each_indexed(c, "Pod", CACHE_IDX_CLUSTER, "ns/c2", count_cb, &n);
    assert_int_equal(n, 1);
    n = 0;
    cache_each_indexed(c, "Pod", CACHE_IDX_NAMESPACE, "ns", count_cb, &n);
    assert_int_equal(n, 3);
    n = 0;
    cache_each_indexed(c, "Pod", CACHE_IDX_OWNER, "rs-p2", count_cb, &n);
    assert_int_equal(n, 1);
    /* p2 moves to n2 and loses its label: both indexes follow */
    put(c, "Pod", "ns/p2", 3,
        "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":\"n2\"}}");
    cJSON *l = cache_list(c, "Pod", CACHE_IDX_NODE, "n2");
    assert_int_equal(cJSON_GetArraySize(l), 2);
    assert_string_equal(gd_meta_name(cJSON_GetArrayItem(l, 0)), "p2");   /* sorted by key */
    assert_string_equal(gd_meta_name(cJSON_GetArrayItem(l, 1)), "p3");
    cJSON_Delete(l);
    l = cache_list(c, "Pod", CACHE_IDX_CLUSTER, "ns/c1");
    assert_int_equal(cJSON_GetArraySize(l), 1);
    cJSON_Delete(l);
    l = cache_list(c, "Pod", CACHE_IDX_OWNER, "rs-p2");
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    /* the node index is for Pods only */
    put(c, "Service", "ns/s", 3, POD("s", "n1", "c1", "1"));
    l = cache_list(c, "Service", CACHE_IDX_NODE, "n1");
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    cache_apply(c, CACHE_DELETE, "Pod", "ns/p1", 3, NULL);
    l = cache_list(c, "Pod", CACHE_IDX_NODE, "n1");
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    /* the member index: label node-name, keyed "ns/<value>", follows relabelling */
    put(c, "Pod", "ns/m1", 5, "{\"metadata\":{\"name\":\"m1\",\"namespace\":\"ns\","
                              "\"labels\":{\"node-name\":\"c1-1\"}}}");
    put(c, "Pod", "ns/m2", 5, "{\"metadata\":{\"name\":\"m2\",\"namespace\":\"ns\","
                              "\"labels\":{\"node-name\":\"c1-10\"}}}");
    l = cache_list(c, "Pod", CACHE_IDX_MEMBER, "ns/c1-1");
    assert_int_equal(cJSON_GetArraySize(l), 1);
    assert_string_equal(gd_meta_name(cJSON_GetArrayItem(l, 0)), "m1");
    cJSON_Delete(l);
    put(c, "Pod", "ns/m2", 5, "{\"metadata\":{\"name\":\"m2\",\"namespace\":\"ns\","
                              "\"labels\":{\"node-name\":\"c1-1\"}}}");
    l = cache_list(c, "Pod", CACHE_IDX_MEMBER, "ns/c1-1");
    assert_int_equal(cJSON_GetArraySize(l), 2);
    cJSON_Delete(l);
    l = cache_list(c, "Pod", CACHE_IDX_MEMBER, "ns/c1-10");
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    l = cache_list(c, "Pod", CACHE_IDX_CLUSTER, "ns/nothing");
    assert_non_null(l);
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    l = cache_list(c, "Pod", (cache_index)99, "x");
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    n = 0;
    assert_int_equal(cache_each(c, "Pod", count_cb, &n), 4);   /* p2, p3, m1, m2 */
    cache_destroy(&c);
}

static int stop_first(void *ud, const char *key, const cJSON *o) { return 1; }

/* The indexes against a model: thousands of random upserts (moving objects between nodes,
 * clusters, members, owners and namespaces, or keeping them), deletes and shard drops; after
 * each step every index value lists exactly the keys the model has under it, in key
 * order. (Sets are vectors with swap-removal: a stale place or a lost item shows here.) */
#define M_KEYS 64
typedef struct {
    bool live;
    int ns, node, cl, mem, owner, shard;
} m_obj;

static void m_json(char *buf, size_t cap, int k, const m_obj *o)
{
    snprintf(buf, cap,
             "{\"metadata\":{\"name\":\"p%02d\",\"namespace\":\"ns%d\",\"labels\":{"
             "\"cluster-name\":\"c%d\",\"node-name\":\"c%d-%d\"},\"ownerReferences\":[{"
             "\"uid\":\"u%d\",\"controller\":true}]},\"spec\":{\"nodeName\":\"n%d\"}}",
             k, o->ns, o->cl, o->cl, o->mem, o->owner, o->node);
}

typedef struct {
    char keys[M_KEYS][16];
    int n;
} m_seen;

static int m_collect(void *ud, const char *key, const cJSON *o)
{
    m_seen *s = ud;
    assert_true(s->n < M_KEYS);
    snprintf(s->keys[s->n++], 16, "%s", key);
    return 0;
}

/* the model's value of index idx for object o, as the cache files it */
static void m_value(int idx, const m_obj *o, char *out, size_t cap)
{
    switch (idx) {
    case CACHE_IDX_NAMESPACE: snprintf(out, cap, "ns%d", o->ns); break;
    case CACHE_IDX_CLUSTER: snprintf(out, cap, "ns%d/c%d", o->ns, o->cl); break;
    case CACHE_IDX_OWNER: snprintf(out, cap, "u%d", o->owner); break;
    case CACHE_IDX_NODE: snprintf(out, cap, "n%d", o->node); break;
    default: snprintf(out, cap, "ns%d/c%d-%d", o->ns, o->cl, o->mem); break;
    }
}

static void m_check(cache *c, const m_obj *m)
{
    static const int range[CACHE_IDX__COUNT][3] = {{3, 1, 1}, {3, 4, 1}, {6, 1, 1}, {5, 1, 1}, {3, 4, 3}};
    for (int idx = 0; idx < CACHE_IDX__COUNT; idx++) {
        /* every value the generator can produce, present in the model or not */
        for (int a = 0; a < range[idx][0]; a++)
            for (int b = 0; b < range[idx][1]; b++)
                for (int d = 0; d < range[idx][2]; d++) {
                    char want[64];
                    m_obj probe = {.ns = a, .cl = b, .mem = d, .owner = a, .node = a};
                    m_value(idx, &probe, want, sizeof want);
                    m_seen seen = {.n = 0};
                    cache_each_indexed(c, "Pod", (cache_index)idx, want, m_collect, &seen);
                    int j = 0;
                    for (int k = 0; k < M_KEYS; k++) {
                        char v[64], key[16];
                        if (!m[k].live) continue;
                        m_value(idx, &m[k], v, sizeof v);
                        if (strcmp(v, want) != 0) continue;
                        snprintf(key, sizeof key, "ns/p%02d", k);
                        assert_true(j < seen.n);
                        assert_string_equal(seen.keys[j], key);     /* in key order */
                        j++;
                    }
                    assert_int_equal(j, seen.n);
                }
    }
}

static void test_indexes_match_a_model(void **state)
{
    cache *c = cache_new();
    m_obj m[M_KEYS] = {{0}};
    unsigned seed = 12345;
    for (int step = 0; step < 3000; step++) {
        int k = (int)(rand_r(&seed) % M_KEYS), r = (int)(rand_r(&seed) % 100);
        char key[16];
        snprintf(key, sizeof key, "ns/p%02d", k);      /* one key space: the key is not the ns */
        if (r < 65) {
            m_obj o = m[k];
            if (!o.live || r < 25) {      /* a new object, or one that moved: new values */
                o = (m_obj){.live = true, .ns = (int)(rand_r(&seed) % 3),
                            .node = (int)(rand_r(&seed) % 5), .cl = (int)(rand_r(&seed) % 4),
                            .mem = (int)(rand_r(&seed) % 3), .owner = (int)(rand_r(&seed) % 6),
                            .shard = (int)(rand_r(&seed) % 4)};
            }                             /* else: the same values (a status update) */
            char json[512];
            m_json(json, sizeof json, k, &o);
            put(c, "Pod", key, o.shard, json);
            m[k] = o;
        } else if (r < 97) {
            assert_int_equal(cache_apply(c, CACHE_DELETE, "Pod", key, 0, NULL), GD_OK);
            m[k].live = false;
        } else {
            int shard = (int)(rand_r(&seed) % 4), dropped = 0;
            for (int i = 0; i < M_KEYS; i++)
                if (m[i].live && m[i].shard == shard) {
                    m[i].live = false;
                    dropped++;
                }
            assert_int_equal(cache_drop_shards(c, "Pod", &shard, 1), dropped);
        }
        m_check(c, m);
    }
    int live = 0;
    for (int i = 0; i < M_KEYS; i++) live += m[i].live;
    assert_int_equal((int)cache_count(c, "Pod"), live);
    cache_destroy(&c);
}

static void test_drop_shards(void **state)
{
    cache *c = cache_new();
    put(c, "Pod", "ns/a", 1, POD("a", "n1", "c1", "1"));
    put(c, "Pod", "ns/b", 2, POD("b", "n1", "c2", "1"));
    put(c, "Godis", "ns/c1-1", 1, "{\"metadata\":{\"name\":\"c1-1\",\"namespace\":\"ns\"}}");
    put(c, "Node", "n1", -1, "{\"metadata\":{\"name\":\"n1\"}}");
    int one = 1, broadcast = -1;
    assert_int_equal(cache_drop_shards(c, "Pod", &one, 1), 1);
    assert_false(cache_has(c, "Pod", "ns/a"));
    assert_true(cache_has(c, "Godis", "ns/c1-1"));
    assert_int_equal(cache_drop_shards(c, NULL, &one, 1), 1);
    assert_false(cache_has(c, "Godis", "ns/c1-1"));
    assert_int_equal(cache_drop_shards(c, NULL, &broadcast, 1), 0);  /* Nodes stay */
    assert_true(cache_has(c, "Node", "n1"));
    cJSON *l = cache_list(c, "Pod", CACHE_IDX_NODE, "n1");
    assert_int_equal(cJSON_GetArraySize(l), 1);                    /* index unfiled */
    cJSON_Delete(l);
    assert_int_equal(cache_each(c, "Pod", stop_first, NULL), 1);
    cache_destroy(&c);
}

static void count_stamp(void *ud, const char *key, const cache_stamp *st)
{
    (*(int *)ud) += st->shard;
}

/* The feed's stamp lives in the entry with the object: written by cache_put_stamped, kept
 * until the key is replaced or taken, indexed like any object; cache_apply leaves none. */
static void test_stamps(void **state)
{
    cache *c = cache_new();
    cache_stamp st = {.shard = 7, .seq = 42}, got;
    snprintf(st.rv, sizeof st.rv, "%s", "5");
    cJSON *o = obj(POD("a", "n1", "c1", "5")), *old = NULL;
    assert_int_equal(cache_put_stamped(c, "Pod", "ns/a", &st, &o, &old), GD_OK);
    assert_null(o);                                   /* taken */
    assert_null(old);
    assert_true(cache_get_stamp(c, "Pod", "ns/a", &got));
    assert_int_equal(got.shard, 7);
    assert_int_equal(got.seq, 42);
    assert_string_equal(got.rv, "5");
    cJSON *l = cache_list(c, "Pod", CACHE_IDX_NODE, "n1");
    assert_int_equal(cJSON_GetArraySize(l), 1);
    cJSON_Delete(l);
    st.seq = 43;
    snprintf(st.rv, sizeof st.rv, "%s", "6");
    o = obj(POD("a", "n2", "c1", "6"));
    assert_int_equal(cache_put_stamped(c, "Pod", "ns/a", &st, &o, &old), GD_OK);
    assert_non_null(old);                             /* the object it replaced */
    assert_string_equal(gd_meta_rv(old), "5");
    cJSON_Delete(old);
    put(c, "Pod", "ns/b", 3, POD("b", "n1", "c1", "1"));
    assert_true(cache_get_stamp(c, "Pod", "ns/b", &got));
    assert_int_equal(got.seq, 0);
    assert_string_equal(got.rv, "");
    int shards = 0;
    cache_each_stamp(c, "Pod", count_stamp, &shards);
    assert_int_equal(shards, 7 + 3);
    assert_true(cache_take(c, "Pod", "ns/a", &old, &got));
    assert_int_equal(got.seq, 43);
    assert_string_equal(gd_meta_rv(old), "6");
    cJSON_Delete(old);
    assert_false(cache_take(c, "Pod", "ns/a", &old, &got));
    assert_null(old);
    assert_false(cache_get_stamp(c, "Pod", "ns/a", &got));
    l = cache_list(c, "Pod", CACHE_IDX_NODE, "n2");
    assert_int_equal(cJSON_GetArraySize(l), 0);       /* unfiled with it */
    cJSON_Delete(l);
    cache_destroy(&c);
}

static void test_hostile(void **state)
{
    cache *c = cache_new();
    cJSON *o = obj("{\"metadata\":{\"name\":\"x\"}}");
    assert_int_equal(cache_apply(c, CACHE_UPSERT, NULL, "k", 0, o), GD_ERR_ARG);
    assert_int_equal(cache_apply(c, CACHE_UPSERT, "Pod", NULL, 0, o), GD_ERR_ARG);
    assert_int_equal(cache_apply(c, CACHE_UPSERT, "Pod", "", 0, o), GD_ERR_ARG);
    assert_int_equal(cache_apply(c, CACHE_UPSERT, "Pod", "k", 0, NULL), GD_ERR_ARG);
    assert_int_equal(cache_apply(c, (cache_op)7, "Pod", "k", 0, o), GD_ERR_ARG);
    assert_int_equal(cache_apply(NULL, CACHE_UPSERT, "Pod", "k", 0, o), GD_ERR_ARG);
    cJSON_Delete(o);
    /* objects without metadata, with wrong types, are stored but not indexed */
    put(c, "Pod", "ns/weird", 0, "{\"metadata\":{\"labels\":{\"cluster-name\":5},"
                                 "\"ownerReferences\":\"no\"},\"spec\":{\"nodeName\":[]}}");
    put(c, "Pod", "ns/arr", 0, "[1,2,3]");
    put(c, "Pod", "ns/str", 0, "\"s\"");
    assert_int_equal(cache_count(c, "Pod"), 3);
    char rv[4];
    assert_true(cache_get_rv(c, "Pod", "ns/weird", rv, sizeof rv, NULL));
    assert_string_equal(rv, "");
    assert_null(cache_get(c, NULL, "x"));
    assert_null(cache_get(c, "Pod", NULL));
    char longname[600];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_null(cache_get_nsname(c, "Pod", "ns", longname));
    cache_destroy(&c);
}

static cache *shared;
static void *reader(void *arg)
{
    for (int i = 0; i < 2000; i++) {
        cJSON *l = cache_list(shared, "Pod", CACHE_IDX_NODE, "n1");
        assert_non_null(l);
        cJSON_Delete(l);
        cJSON *g = cache_get(shared, "Pod", "ns/p1");
        cJSON_Delete(g);
    }
    return NULL;
}

static void test_readers_beside_writer(void **state)
{
    shared = cache_new();
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, reader, NULL);
    for (int i = 0; i < 2000; i++) {
        char rv[16];
        snprintf(rv, sizeof rv, "%d", i);
        cJSON *o = obj(i % 2 ? POD("p1", "n1", "c1", "1") : POD("p1", "n2", "c1", "2"));
        assert_int_equal(cache_apply(shared, CACHE_UPSERT, "Pod", "ns/p1", 0, o), GD_OK);
        cJSON_Delete(o);
        if (i % 7 == 0)
            cache_apply(shared, CACHE_DELETE, "Pod", "ns/p1", 0, NULL);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    cache_destroy(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsert_get_delete),
        cmocka_unit_test(test_indexes_follow_updates),
        cmocka_unit_test(test_take_and_read),
        cmocka_unit_test(test_indexes_match_a_model),
        cmocka_unit_test(test_drop_shards),
        cmocka_unit_test(test_stamps),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_readers_beside_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
