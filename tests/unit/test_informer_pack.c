/* test_informer_pack.c — the store's compression (zstd with a dictionary trained on the
 * first objects) and its open-addressing index: round trips through every way an object
 * leaves the store, the dictionary trained once and never again, what stays uncompressed,
 * corrupt or mis-sized packed bodies giving a clear error, and the index against a
 * reference under random inserts and deletes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../../informer/store_internal.h"

/* A ConfigMap-like body: shared metadata, own name/uid/rv, 1 KiB of random config values. */
static char *cm_body(int i, int rv, uint64_t seed)
{
    char data[1100];
    size_t n = 0;
    uint64_t x = seed * 6364136223846793005ull + (uint64_t)i + 1;
    for (int line = 0; n < 1000; line++) {
        n += (size_t)snprintf(data + n, sizeof data - n, "key_%d = ", line);
        for (int k = 0; k < 32 && n < sizeof data - 4; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            data[n++] = "0123456789abcdef"[(x >> 33) & 15];
        }
        data[n++] = '\\';
        data[n++] = 'n';
    }
    data[n] = 0;
    char *b = malloc(2048);
    snprintf(b, 2048,
             "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cm-%d\","
             "\"namespace\":\"team-a\",\"uid\":\"%08x-1111-4222-8333-%012x\","
             "\"resourceVersion\":\"%d\",\"labels\":{\"app\":\"web\",\"cluster-name\":\"c1\"}},"
             "\"data\":{\"config.ini\":\"%s\"}}",
             i, (unsigned)(x >> 20), (unsigned)i * 7919u, rv, data);
    return b;
}

static inf_obj *cm(int i, int rv, uint64_t seed)
{
    char key[32], rvs[16];
    snprintf(key, sizeof key, "team-a/cm-%d", i);
    snprintf(rvs, sizeof rvs, "%d", rv);
    char *b = cm_body(i, rv, seed);
    inf_obj *o = inf_obj_new(key, rvs, 3, b, strlen(b));
    free(b);
    assert_non_null(o);
    return o;
}

static void fill(inf_store *s, int from, int to, int rv)
{
    for (int i = from; i < to; i++) {
        inf_obj *o = cm(i, rv, 1);
        assert_int_equal(inf_store_upsert(s, &o, NULL, NULL), GD_OK);
    }
}

static void assert_loads_as(inf_store *s, int i, int rv)
{
    char key[32];
    snprintf(key, sizeof key, "team-a/cm-%d", i);
    const char *why = NULL;
    inf_obj *o = inf_store_load(s, key, &why);
    assert_non_null(o);
    assert_null(why);
    char *want = cm_body(i, rv, 1);
    assert_int_equal(o->raw_len, 0);
    assert_int_equal(o->body_len, strlen(want));
    assert_string_equal(o->body, want);
    free(want);
    inf_obj_unref(o);
}

static void test_round_trip(void **state)
{
    inf_store *s = inf_store_new();
    inf_store_set_young(s, 0);                   /* every update packed at once */
    fill(s, 0, PACK_TRAIN_AT - 1, 1);
    inf_store_mem_stats m;
    inf_store_mem(s, &m);
    assert_int_equal(m.packed, 0);               /* below the threshold: kept as they are */
    fill(s, PACK_TRAIN_AT - 1, 600, 1);
    inf_store_mem(s, &m);
    assert_int_equal(m.objects, 600);
    assert_int_equal(m.packed, 600);             /* the first ones were packed at training */
    assert_true(m.dict_bytes > 0 && m.dict_bytes <= PACK_DICT_BYTES);
    /* random hex carries 4 bits a character: well under the JSON, but not "free"; split out
     * as tokens (gd_tokpack) it costs that, 0.36 of the JSON here, where zstd alone kept
     * 0.41 (a hex digit among the text's other literals costs it ~5 bits) */
    assert_true(m.stored_bytes < m.body_bytes * 38 / 100);
    assert_true(m.stored_bytes > m.body_bytes * 3 / 10);
    for (int i = 0; i < 600; i += 37)
        assert_loads_as(s, i, 1);
    const char *why = NULL;
    assert_null(inf_store_load(s, "team-a/nope", &why));
    assert_string_equal(why, "no such key");
    /* a cached entry stays addressable: key, rv, shard; its body is packed */
    const inf_obj *e = inf_store_get(s, "team-a/cm-5");
    assert_string_equal(e->rv, "1");
    assert_int_equal(e->shard, 3);
    assert_true(e->raw_len > e->body_len);
    inf_store_destroy(&s);
}

/* ---- what callbacks and foreach see */
typedef struct {
    int n, json, empty_old;
    gd_ev last;
} seen;

static bool is_cm_json(const inf_obj *o)
{
    return o->raw_len == 0 && o->body_len > 1000 && o->body[0] == '{' &&
           o->body[o->body_len - 1] == '}' && strlen(o->body) == o->body_len;
}

static void on_change(void *ud, gd_ev ev, const inf_obj *old, const inf_obj *o)
{
    seen *v = ud;
    v->n++;
    v->last = ev;
    if (o)
        assert_true(is_cm_json(o));
    if (old && old->body_len == 0)
        v->empty_old++;
    else if (old)
        v->json += is_cm_json(old);
}

static int on_each(void *ud, const inf_obj *o)
{
    seen *v = ud;
    v->n++;
    v->json += is_cm_json(o);
    return 0;
}

static void test_callbacks_get_json(void **state)
{
    inf_store *s = inf_store_new();
    fill(s, 0, 400, 1);
    seen v = {0};
    inf_store_foreach(s, on_each, &v);
    assert_int_equal(v.n, 400);
    assert_int_equal(v.json, 400);
    v = (seen){0};
    inf_store_resync(s, on_change, &v);
    assert_int_equal(v.n, 400);
    assert_int_equal(v.json, 400);
    /* MODIFIED on the same shard: the old body is not inflated (nobody publishes it) */
    v = (seen){0};
    inf_obj *o = cm(7, 2, 1);
    inf_store_upsert(s, &o, on_change, &v);
    assert_int_equal(v.last, GD_EV_MODIFIED);
    assert_int_equal(v.empty_old, 1);
    /* to another shard: the old object is published as DELETED there, so it is JSON */
    v = (seen){0};
    o = cm(7, 3, 1);
    o->shard = 4;
    inf_store_upsert(s, &o, on_change, &v);
    assert_int_equal(v.json, 1);
    assert_int_equal(v.empty_old, 0);
    /* DELETED: JSON; by a relist too, with unchanged objects kept silently */
    v = (seen){0};
    inf_store_delete(s, "team-a/cm-8", on_change, &v);
    assert_int_equal(v.last, GD_EV_DELETED);
    assert_int_equal(v.json, 1);
    inf_obj *items[2] = {cm(1, 1, 1), cm(2, 9, 1)};
    v = (seen){0};
    inf_store_replace(s, items, 2, on_change, &v);
    assert_int_equal(v.n, 1 + 397);              /* cm-2 modified; 397 others deleted */
    assert_int_equal(v.json, 397);
    assert_int_equal(v.empty_old, 1);
    assert_loads_as(s, 1, 1);
    assert_loads_as(s, 2, 9);
    inf_store_destroy(&s);
}

static void test_trained_once(void **state)
{
    inf_store *s = inf_store_new();
    fill(s, 0, PACK_TRAIN_AT, 1);
    ZSTD_CDict *cd = s->pk.cdict;
    size_t dl = s->pk.dict_len;
    assert_non_null(cd);
    assert_string_equal(s->pk.dict_how, "trained");
    /* emptied and refilled, with new objects: the same dictionary */
    inf_store_replace(s, NULL, 0, NULL, NULL);
    assert_int_equal(inf_store_count(s), 0);
    fill(s, 1000, 1000 + 2 * PACK_TRAIN_AT, 5);
    assert_ptr_equal(s->pk.cdict, cd);
    assert_int_equal(s->pk.dict_len, dl);
    assert_loads_as(s, 1100, 5);
    inf_store_destroy(&s);

    /* off: never packed */
    s = inf_store_new();
    inf_store_set_packing(s, 0);
    fill(s, 0, PACK_TRAIN_AT * 2, 1);
    inf_store_mem_stats m;
    inf_store_mem(s, &m);
    assert_int_equal(m.packed, 0);
    assert_int_equal(m.dict_bytes, 0);
    assert_int_equal(m.stored_bytes, m.body_bytes);
    inf_store_destroy(&s);
}

static void test_what_stays_raw(void **state)
{
    inf_store *s = inf_store_new();
    inf_store_set_packing(s, 2);      /* too few samples to train: the samples as they are */
    inf_store_set_young(s, 0);
    fill(s, 0, 8, 1);
    assert_non_null(s->pk.cdict);
    assert_string_equal(s->pk.dict_how, "raw samples");
    assert_int_equal(inf_store_get(s, "team-a/cm-3")->raw_len != 0, 1);
    assert_loads_as(s, 3, 1);
    assert_loads_as(s, 0, 1);
    /* a tiny body, and one that does not compress (random bytes): kept as they are */
    inf_obj *t = inf_obj_new("team-a/tiny", "1", 0, "{}", 2);
    inf_store_upsert(s, &t, NULL, NULL);
    assert_int_equal(inf_store_get(s, "team-a/tiny")->raw_len, 0);
    char rnd[600];
    uint64_t x = 99;
    for (size_t i = 0; i < sizeof rnd; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        rnd[i] = (char)(x >> 56);
    }
    inf_obj *r = inf_obj_new("team-a/rnd", "1", 0, rnd, sizeof rnd);
    inf_store_upsert(s, &r, NULL, NULL);
    const inf_obj *e = inf_store_get(s, "team-a/rnd");
    assert_int_equal(e->raw_len, 0);
    assert_memory_equal(e->body, rnd, sizeof rnd);
    inf_store_destroy(&s);
}

static bool packed(inf_store *s, int i)
{
    char key[32];
    snprintf(key, sizeof key, "team-a/cm-%d", i);
    return inf_store_get(s, key)->raw_len != 0;
}

/* Young objects: watch updates stay JSON until `window` later updates went by; the one that
 * is still cached then is packed, replaced or deleted versions are only let go. */
static void test_young_window(void **state)
{
    inf_store *s = inf_store_new();
    inf_store_set_young(s, 8);
    fill(s, 0, PACK_TRAIN_AT, 1);                /* the dictionary packs these at once */
    assert_true(packed(s, 0) && packed(s, 7));
    fill(s, 0, 8, 2);                            /* 8 updates: the window is full */
    for (int i = 0; i < 8; i++) {
        assert_false(packed(s, i));
        assert_true(is_cm_json(inf_store_get(s, "team-a/cm-0")));
    }
    fill(s, 0, 1, 3);                            /* cm-0 again: its old version leaves */
    assert_false(packed(s, 0));
    assert_false(packed(s, 1));
    fill(s, 8, 9, 2);                            /* pushes cm-1 (rv 2, still cached) out */
    assert_true(packed(s, 1));
    assert_false(packed(s, 0));
    assert_loads_as(s, 1, 2);
    assert_loads_as(s, 0, 3);
    inf_store_delete(s, "team-a/cm-2", NULL, NULL);   /* young and deleted */
    fill(s, 9, 11, 2);                           /* its turn passes harmlessly; cm-3 packs */
    assert_null(inf_store_get(s, "team-a/cm-2"));
    assert_true(packed(s, 3));
    assert_loads_as(s, 3, 2);
    /* a relist packs at once, young objects included */
    inf_obj *items[2] = {cm(4, 2, 1), cm(5, 7, 1)};
    inf_store_replace(s, items, 2, NULL, NULL);
    assert_true(packed(s, 4) && packed(s, 5));
    assert_loads_as(s, 5, 7);
    assert_int_equal(inf_store_count(s), 2);
    fill(s, 20, 40, 1);                          /* the ring's stale entries drain */
    assert_true(packed(s, 20) && !packed(s, 39));
    inf_store_destroy(&s);                       /* ring references freed (ASan, valgrind) */
}

/* A token every object of the kind has (the cluster's CA certificate in each namespace's
 * kube-root-ca.crt) stays in the text, where the dictionary has it: split out, each copy
 * would cost its ~870 bytes of bits. */
static void test_common_tokens_stay(void **state)
{
    char cert[1400];
    size_t cl = 0;
    uint64_t x = 7;
    for (int line = 0; line < 17; line++) {
        for (int k = 0; k < 64; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            cert[cl++] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                [(x >> 33) & 63];
        }
        cert[cl++] = '\\';
        cert[cl++] = 'n';
    }
    cert[cl] = 0;
    inf_store *s = inf_store_new();
    inf_store_set_young(s, 0);
    for (int i = 0; i < 400; i++) {
        char key[32], body[2048];
        snprintf(key, sizeof key, "ns-%d/kube-root-ca.crt", i);
        int n = snprintf(body, sizeof body,
                         "{\"metadata\":{\"name\":\"kube-root-ca.crt\",\"namespace\":\"ns-%d\","
                         "\"uid\":\"%08x-1111-4222-8333-%012x\",\"resourceVersion\":\"%d\"},"
                         "\"data\":{\"ca.crt\":\"-----BEGIN CERTIFICATE-----\\n%s-----END "
                         "CERTIFICATE-----\\n\"}}", i, (unsigned)i * 2654435761u, (unsigned)i, 900 + i, cert);
        inf_obj *o = inf_obj_new(key, "1", 0, body, (size_t)n);
        assert_int_equal(inf_store_upsert(s, &o, NULL, NULL), GD_OK);
    }
    inf_store_mem_stats m;
    inf_store_mem(s, &m);
    assert_int_equal(m.packed, 400);
    assert_true(m.stored_bytes / 400 < 150);   /* 38; 870 with the certificate split out */
    const char *why = NULL;
    inf_obj *l = inf_store_load(s, "ns-77/kube-root-ca.crt", &why);
    assert_non_null(l);
    assert_non_null(memmem(l->body, l->body_len, cert, cl));
    inf_obj_unref(l);
    inf_store_destroy(&s);
}

static void test_corrupt_and_missized(void **state)
{
    inf_store *s = inf_store_new();
    fill(s, 0, PACK_TRAIN_AT, 1);
    const inf_obj *e = inf_store_get(s, "team-a/cm-9");
    assert_true(e->raw_len != 0);
    const char *why = NULL;
    /* claims a smaller JSON than it inflates to: refused, not overrun */
    inf_obj *bad = inf_obj_new(e->key, e->rv, e->shard, e->body, e->body_len);
    bad->raw_len = e->raw_len - 10;
    assert_null(inf_store_unpack(&s->pk, bad, &why));
    assert_non_null(why);
    /* claims a larger one */
    why = NULL;
    bad->raw_len = e->raw_len + 10;
    assert_null(inf_store_unpack(&s->pk, bad, &why));
    assert_non_null(why);
    inf_obj_unref(bad);
    /* truncated, and garbage */
    why = NULL;
    bad = inf_obj_new(e->key, e->rv, e->shard, e->body, e->body_len / 2);
    bad->raw_len = e->raw_len;
    assert_null(inf_store_unpack(&s->pk, bad, &why));
    assert_non_null(why);
    inf_obj_unref(bad);
    why = NULL;
    bad = inf_obj_new(e->key, e->rv, e->shard, "\x01\x02\x03garbage-garbage", 18);
    bad->raw_len = 500;
    assert_null(inf_store_unpack(&s->pk, bad, &why));
    assert_non_null(why);
    inf_obj_unref(bad);
    /* the side's length runs past the frame; a side that does not rebuild the text */
    why = NULL;
    bad = inf_obj_new(e->key, e->rv, e->shard, "\x7f{}", 3);
    bad->raw_len = 2;
    assert_null(inf_store_unpack(&s->pk, bad, &why));
    assert_string_equal(why, "packed body's token length is past its end");
    inf_obj_unref(bad);
    unsigned char frame[64] = {1, 0};          /* one side byte, a token length of 0 */
    size_t z = ZSTD_compress2(s->pk.cctx, frame + 2, sizeof frame - 2, "{\x01}", 3);
    assert_false(ZSTD_isError(z));
    bad = inf_obj_new(e->key, e->rv, e->shard, (const char *)frame, z + 2);
    bad->raw_len = 40;
    why = NULL;
    assert_null(inf_store_unpack(&s->pk, bad, &why));
    assert_string_equal(why, "packed body's tokens do not rebuild it");
    /* a packed object in a store with no dictionary */
    store_pack none = {0};
    why = NULL;
    assert_null(inf_store_unpack(&none, bad, &why));
    assert_string_equal(why, "packed object but no dictionary");
    inf_obj_unref(bad);
    /* a cached object that no longer inflates: load says why, foreach gets a stand-in */
    ((char *)e->body)[2] ^= 0x5a;
    ((char *)e->body)[e->body_len / 2] ^= 0x5a;
    why = NULL;
    inf_obj *l = inf_store_load(s, "team-a/cm-9", &why);
    if (l) {          /* a flip zstd cannot detect would still give raw_len bytes */
        assert_int_equal(l->body_len, e->raw_len);
        inf_obj_unref(l);
    } else {
        assert_non_null(why);
    }
    seen v = {0};
    inf_store_foreach(s, on_each, &v);
    assert_int_equal(v.n, PACK_TRAIN_AT);
    inf_store_destroy(&s);
}

/* A subscriber's snapshot holds the inflated copies (as ZeroMQ does until they are sent):
 * they are counted, and the heap trim is due once the last of a large batch is gone. */
typedef struct {
    inf_obj **held;
    size_t n;
} holder;

static int hold(void *ud, const inf_obj *o)
{
    holder *h = ud;
    h->held[h->n++] = inf_obj_ref(o);
    return 0;
}

static void test_copies_trim(void **state)
{
    enum { N = 4000 };                          /* > TRIM_AFTER_BYTES of JSON */
    inf_store *s = inf_store_new();
    inf_store_set_young(s, 0);                  /* all packed: foreach hands out copies */
    fill(s, 0, N, 1);
    holder h = {.held = calloc(N, sizeof *h.held)};
    assert_int_equal(inf_store_loose_live(), 0);
    inf_store_foreach(s, hold, &h);
    assert_int_equal(h.n, N);
    assert_int_equal(inf_store_loose_live(), N);
    assert_int_equal(inf_store_trim_wanted(), 1);   /* not yet: copies still out */
    for (size_t i = 0; i < h.n; i++) {
        assert_int_equal(h.held[i]->mark, MARK_LOOSE);
        assert_true(is_cm_json(h.held[i]));
        inf_obj_unref(h.held[i]);
    }
    assert_int_equal(inf_store_loose_live(), 0);
    assert_int_equal(inf_store_trim_wanted(), 0);   /* the last release trimmed */
    /* a small batch does not ask for a trim */
    h.n = 0;
    inf_store_delete(s, "team-a/cm-1", NULL, NULL);
    inf_store_replace(s, NULL, 0, NULL, NULL);
    fill(s, 0, 10, 1);
    inf_store_foreach(s, hold, &h);
    assert_int_equal(inf_store_trim_wanted(), 0);
    for (size_t i = 0; i < h.n; i++)
        inf_obj_unref(h.held[i]);
    assert_int_equal(inf_store_loose_live(), 0);
    free(h.held);
    inf_store_destroy(&s);
}

/* The index against a reference array under random puts and deletes, collisions and
 * wrap-around included (a small table, many keys). */
static void test_index_random(void **state)
{
    enum { K = 3000, OPS = 40000 };
    inf_store *s = inf_store_new();
    inf_store_set_packing(s, 0);
    int *ref = calloc(K, sizeof *ref);           /* rv present, 0 = absent */
    uint64_t x = 7;
    for (int op = 0; op < OPS; op++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((x >> 33) % K);
        char key[24], rv[16];
        snprintf(key, sizeof key, "k%d", k);
        if ((x >> 20) % 3) {
            snprintf(rv, sizeof rv, "%d", op + 1);
            inf_obj *o = inf_obj_new(key, rv, 0, "{}", 2);
            assert_int_equal(inf_store_upsert(s, &o, NULL, NULL), GD_OK);
            ref[k] = op + 1;
        } else {
            inf_store_delete(s, key, NULL, NULL);
            ref[k] = 0;
        }
    }
    size_t n = 0;
    for (int k = 0; k < K; k++) {
        char key[24];
        snprintf(key, sizeof key, "k%d", k);
        const inf_obj *o = inf_store_get(s, key);
        if (!ref[k]) {
            assert_null(o);
            continue;
        }
        n++;
        assert_non_null(o);
        assert_int_equal(atoi(o->rv), ref[k]);
    }
    assert_int_equal(inf_store_count(s), n);
    /* a relist keeping every third key: the sweep deletes exactly the others */
    inf_obj **items = calloc(K, sizeof *items);
    size_t m = 0;
    for (int k = 0; k < K; k += 3)
        if (ref[k]) {
            char key[24], rv[16];
            snprintf(key, sizeof key, "k%d", k);
            snprintf(rv, sizeof rv, "%d", ref[k]);
            items[m++] = inf_obj_new(key, rv, 0, "{}", 2);
        }
    inf_store_replace(s, items, m, NULL, NULL);
    assert_int_equal(inf_store_count(s), m);
    for (int k = 0; k < K; k++) {
        char key[24];
        snprintf(key, sizeof key, "k%d", k);
        assert_int_equal(inf_store_get(s, key) != NULL, ref[k] && k % 3 == 0);
    }
    free(items);
    free(ref);
    inf_store_destroy(&s);
}

/* ---- packed records: namespaces kept once, slab space under churn */

/* cm-i in namespace ns ("" for a cluster-scoped key), on shard i % 3 - 1 (broadcast too). */
static inf_obj *cm_in(const char *ns, int i, int rv)
{
    char key[64], rvs[16];
    snprintf(key, sizeof key, "%s%scm-%d", ns, *ns ? "/" : "", i);
    snprintf(rvs, sizeof rvs, "%d", rv);
    char *b = cm_body(i, rv, 1);
    inf_obj *o = inf_obj_new(key, rvs, i % 3 - 1, b, strlen(b));
    free(b);
    assert_non_null(o);
    return o;
}

static void assert_cached(inf_store *s, const char *ns, int i, int rv)
{
    char key[64], rvs[16];
    snprintf(key, sizeof key, "%s%scm-%d", ns, *ns ? "/" : "", i);
    snprintf(rvs, sizeof rvs, "%d", rv);
    const inf_obj *e = inf_store_get(s, key);
    assert_non_null(e);
    assert_string_equal(e->key, key);
    assert_string_equal(e->rv, rvs);
    assert_int_equal(e->shard, i % 3 - 1);
    inf_obj *o = inf_store_load(s, key, NULL);
    assert_non_null(o);
    char *want = cm_body(i, rv, 1);
    assert_string_equal(o->key, key);
    assert_int_equal(o->body_len, strlen(want));
    assert_string_equal(o->body, want);
    free(want);
    inf_obj_unref(o);
}

static size_t ns_in_use(const inf_store *s)
{
    return s->ns.n - s->ns.nfree;
}

static void test_namespaces_shared(void **state)
{
    inf_store *s = inf_store_new();
    inf_store_set_young(s, 0);
    fill(s, 0, PACK_TRAIN_AT, 1);                /* trained; every record in team-a */
    assert_int_equal(ns_in_use(s), 1);
    const char *nss[] = {"a", "team-b", "", "kube-system"};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 20; i++) {
            inf_obj *o = cm_in(nss[k], i, 5 + k);
            assert_int_equal(inf_store_upsert(s, &o, NULL, NULL), GD_OK);
        }
    assert_int_equal(ns_in_use(s), 4);           /* team-a, a, team-b, kube-system */
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 20; i += 7)
            assert_cached(s, nss[k], i, 5 + k);
    /* keys that differ only around the slash are told apart */
    assert_null(inf_store_get(s, "a/cm-1x"));
    assert_null(inf_store_get(s, "a/cm-"));
    assert_null(inf_store_get(s, "ab/cm-1"));
    assert_null(inf_store_get(s, "a"));
    assert_null(inf_store_get(s, "team-b"));
    assert_null(inf_store_get(s, "/cm-1"));
    /* team-b's last record gone: its id is free, and the next namespace takes it */
    size_t n = s->ns.n;
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof key, "team-b/cm-%d", i);
        inf_store_delete(s, key, NULL, NULL);
    }
    assert_int_equal(ns_in_use(s), 3);
    inf_obj *o = cm_in("team-c", 1, 9);
    inf_store_upsert(s, &o, NULL, NULL);
    assert_int_equal(s->ns.n, n);
    assert_int_equal(ns_in_use(s), 4);
    assert_cached(s, "team-c", 1, 9);
    assert_cached(s, "a", 14, 5);
    /* foreach and DELETED callbacks see whole keys */
    seen v = {0};
    inf_store_foreach(s, on_each, &v);
    assert_int_equal(v.n, (int)inf_store_count(s));
    assert_int_equal(v.json, v.n);
    inf_store_destroy(&s);
}

/* The owner's view of a store under churn: rv by (namespace, i), 0 when absent. */
static void test_churn_keeps_slab_bounded(void **state)
{
    enum { NS = 4, K = 300, OPS = 12000 };
    static const char *nss[NS] = {"team-a", "b", "", "ns-long-name-for-a-namespace"};
    inf_store *s = inf_store_new();
    inf_store_set_young(s, 4);                   /* young ring and packing at its turn */
    int (*rv)[K] = calloc(NS, sizeof *rv);
    uint64_t x = 5;
    for (int op = 0; op < OPS; op++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((x >> 33) % NS), i = (int)((x >> 40) % K);
        if ((x >> 20) % 5) {
            inf_obj *o = cm_in(nss[k], i, op + 1);
            assert_int_equal(inf_store_upsert(s, &o, NULL, NULL), GD_OK);
            rv[k][i] = op + 1;
        } else {
            char key[64];
            snprintf(key, sizeof key, "%s%scm-%d", nss[k], *nss[k] ? "/" : "", i);
            inf_store_delete(s, key, NULL, NULL);
            rv[k][i] = 0;
        }
        if (op % 500 == 499) {
            assert_true(s->slab.live > 0);
            assert_true(s->slab.mapped <= 3 * s->slab.live + 2 * SLAB_BLOCK);
        }
    }
    size_t n = 0;
    for (int k = 0; k < NS; k++)
        for (int i = 0; i < K; i++)
            if (rv[k][i]) {
                n++;
                assert_cached(s, nss[k], i, rv[k][i]);
            }
    assert_int_equal(inf_store_count(s), n);
    /* a relist that keeps nothing: no record, no namespace, at most the current block */
    inf_store_replace(s, NULL, 0, NULL, NULL);
    assert_int_equal(inf_store_count(s), 0);
    assert_int_equal(s->slab.live, 0);
    assert_true(s->slab.blocks <= 1);
    assert_int_equal(ns_in_use(s), 0);
    free(rv);
    inf_store_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_callbacks_get_json),
        cmocka_unit_test(test_trained_once),    cmocka_unit_test(test_what_stays_raw),
        cmocka_unit_test(test_corrupt_and_missized), cmocka_unit_test(test_common_tokens_stay), cmocka_unit_test(test_index_random),
        cmocka_unit_test(test_copies_trim),     cmocka_unit_test(test_young_window),
        cmocka_unit_test(test_namespaces_shared),
        cmocka_unit_test(test_churn_keeps_slab_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
