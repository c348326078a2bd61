/* test_shard_agree.c — informer, worker and manager put every key on the same shard.
 *
 * For every kind the operator watches, in every shape its objects take (owned, labelled,
 * both; cluster names with dashes and digits), the informer publishes the object on
 * gd_shard_of_object's shard; the worker's mapping turns it into (controller, key) pairs,
 * which its controllers serve on gd_shard_of_key's shard; and the manager, handed those keys
 * back in a REVOKED of that one shard, keeps them (it drops a key of any other shard). All
 * three must agree, or a key would be served by a worker that never receives its objects.
 * Linked with the real manager/shards.o, worker/cache.o and worker/mapping.o (Makefile). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "godis_domain.h"
#include "gd_proto.h"
#include "../../manager/shards.h"
#include "mapping.h"

#define MAXK 4096
typedef struct {
    char ctrl[32], key[300];
    int shard;                  /* the informer's shard of the object that emitted it */
} emitted;
static emitted keys[MAXK];
static int nkeys, cur_shard;

static void emit(void *ud, const char *ctrl, const char *key)
{
    (void)ud;
    assert_true(nkeys < MAXK);
    emitted *e = &keys[nkeys++];
    snprintf(e->ctrl, sizeof e->ctrl, "%s", ctrl);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->shard = cur_shard;
}

/* One object as the API server would send it; owner_kind NULL: no ownerReference. */
static cJSON *obj(const char *kind, const char *ns, const char *name, const char *cluster_label,
                  const char *node_label, const char *owner_kind, const char *owner)
{
    cJSON *o = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddNumberToObject(m, "generation", 1);
    cJSON_AddStringToObject(m, "resourceVersion", "1");
    cJSON *l = cJSON_AddObjectToObject(m, "labels");
    if (cluster_label) cJSON_AddStringToObject(l, "cluster-name", cluster_label);
    if (node_label) cJSON_AddStringToObject(l, "node-name", node_label);
    if (owner_kind) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "kind", owner_kind);
        cJSON_AddStringToObject(r, "name", owner);
        cJSON_AddStringToObject(r, "uid", "u");
        cJSON_AddBoolToObject(r, "controller", 1);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "ownerReferences"), r);
    }
    return o;
}

/* The informer's side: publish on gd_shard_of_object's shard; the worker's: map the add. */
static void publish(cache *c, cJSON *o)
{
    const char *kind = cJSON_GetObjectItem(o, "kind")->valuestring;
    cur_shard = gd_shard_of_object(kind, o);
    assert_true(cur_shard >= 0 && cur_shard < GD_NSHARDS);   /* every one belongs to a cluster */
    int before = nkeys;
    mapping_event(c, kind, NULL, o, emit, NULL);
    assert_true(nkeys > before);                            /* and wakes someone */
    cJSON_Delete(o);
}

static void cluster_objects(cache *c, const char *ns, const char *cl)
{
    char m[128], pod[160], cm[128];
    publish(c, obj("GodisCluster", ns, cl, NULL, NULL, NULL, NULL));
    snprintf(cm, sizeof cm, "%s-config", cl);
    publish(c, obj("ConfigMap", ns, cm, cl, NULL, "GodisCluster", cl));
    publish(c, obj("ConfigMap", ns, cm, NULL, NULL, "GodisCluster", cl));
    publish(c, obj("ConfigMap", ns, cm, cl, NULL, NULL, NULL));
    for (int id = 0; id < 13; id += 6) {
        snprintf(m, sizeof m, "%s-%d", cl, id);
        snprintf(pod, sizeof pod, "%s-7d9f-x2k", m);
        publish(c, obj("Godis", ns, m, cl, NULL, "GodisCluster", cl));
        publish(c, obj("Godis", ns, m, NULL, NULL, "GodisCluster", cl));
        publish(c, obj("Godis", ns, m, cl, NULL, NULL, NULL));
        static const char *owned[] = {"ReplicaSet", "Service", "PersistentVolumeClaim"};
        for (int k = 0; k < 3; k++) {
            publish(c, obj(owned[k], ns, m, cl, m, "Godis", m));
            publish(c, obj(owned[k], ns, m, NULL, NULL, "Godis", m));   /* owner only */
            publish(c, obj(owned[k], ns, m, cl, m, NULL, NULL));         /* labels only */
        }
        publish(c, obj("Pod", ns, pod, cl, m, "ReplicaSet", m));
    }
}

/* The manager's side: the worker hands each shard's keys back in one REVOKED of that shard. */
static void manager_keeps_every_key(void)
{
    static mgr_shards s;
    static mgr_shards_action a[2 * MGR_SHARDS_MAX_WORKERS];
    mgr_shards_init(&s);
    assert_int_equal(mgr_shards_worker_up(&s, 0), GD_OK);
    mgr_shards_actions_free(a, mgr_shards_plan(&s, a, 2 * MGR_SHARDS_MAX_WORKERS));
    assert_int_equal(mgr_shards_owned_by(&s, 0, NULL), GD_NSHARDS);
    assert_int_equal(mgr_shards_worker_retire(&s, 0), GD_OK);
    mgr_shards_actions_free(a, mgr_shards_plan(&s, a, 2 * MGR_SHARDS_MAX_WORKERS));
    int per_shard[GD_NSHARDS] = {0};
    for (int sh = 0; sh < GD_NSHARDS; sh++) {
        cJSON *pending = cJSON_CreateObject();
        for (int i = 0; i < nkeys; i++) {
            if (keys[i].shard != sh) continue;
            cJSON *arr = cJSON_GetObjectItem(pending, keys[i].ctrl);
            if (!arr) arr = cJSON_AddArrayToObject(pending, keys[i].ctrl);
            cJSON_AddItemToArray(arr, cJSON_CreateString(keys[i].key));
            per_shard[sh]++;
        }
        char *txt = cJSON_PrintUnformatted(pending);
        assert_int_equal(mgr_shards_revoked(&s, 0, &sh, 1, txt), GD_OK);
        free(txt);
        cJSON_Delete(pending);
        int kept = 0;
        const cJSON *ctrl, *k;
        if (s.slot[sh].pending)
            cJSON_ArrayForEach(ctrl, s.slot[sh].pending) cJSON_ArrayForEach(k, ctrl) kept++;
        int distinct = 0;      /* the manager dedups a shard's keys */
        for (int i = 0; i < nkeys; i++) {
            if (keys[i].shard != sh) continue;
            int j = 0;
            while (j < i && !(keys[j].shard == sh && strcmp(keys[j].ctrl, keys[i].ctrl) == 0 &&
                              strcmp(keys[j].key, keys[i].key) == 0)) j++;
            distinct += j == i;
        }
        if (kept != distinct)
            fail_msg("shard %d: the manager kept %d of %d keys", sh, kept, distinct);
    }
    mgr_shards_cleanup(&s);
}

static void test_informer_worker_manager_agree(void **state)
{
    (void)state;
    cache *c = cache_new();
    assert_non_null(c);
    nkeys = 0;
    static const char *ns[] = {"default", "prod-2", "a"};
    static const char *cl[] = {"web", "a-b", "x-1", "db-12-3", "c", "godis-7x"};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < sizeof cl / sizeof cl[0]; j++)
            cluster_objects(c, ns[i], cl[j]);
    int shards_seen[GD_NSHARDS] = {0}, distinct_shards = 0;
    for (int i = 0; i < nkeys; i++) {
        int w = gd_shard_of_key(keys[i].ctrl, keys[i].key);   /* the worker's controllers */
        if (w != keys[i].shard)
            fail_msg("%s key %s: worker shard %d, informer shard %d", keys[i].ctrl, keys[i].key,
                     w, keys[i].shard);
        distinct_shards += !shards_seen[w]++;
    }
    assert_true(nkeys > 500);
    assert_true(distinct_shards > 10);           /* the keys really spread over shards */
    manager_keeps_every_key();
    cache_destroy(&c);
}

/* A key of another shard is dropped by the manager: the check above can fail. */
static void test_manager_drops_foreign_key(void **state)
{
    (void)state;
    static mgr_shards s;
    static mgr_shards_action a[2 * MGR_SHARDS_MAX_WORKERS];
    mgr_shards_init(&s);
    mgr_shards_worker_up(&s, 0);
    mgr_shards_actions_free(a, mgr_shards_plan(&s, a, 2 * MGR_SHARDS_MAX_WORKERS));
    mgr_shards_worker_retire(&s, 0);
    mgr_shards_actions_free(a, mgr_shards_plan(&s, a, 2 * MGR_SHARDS_MAX_WORKERS));
    int sh = gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/web-3");
    int other = (sh + 1) % GD_NSHARDS;
    assert_int_equal(mgr_shards_revoked(&s, 0, &other, 1, "{\"godis\":[\"ns/web-3\"]}"), GD_OK);
    assert_null(s.slot[other].pending ? cJSON_GetArrayItem(
                    cJSON_GetObjectItem(s.slot[other].pending, "godis"), 0) : NULL);
    mgr_shards_cleanup(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer_worker_manager_agree),
        cmocka_unit_test(test_manager_drops_foreign_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
