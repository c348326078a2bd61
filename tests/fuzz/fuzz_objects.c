/* fuzz_objects.c — the JSON→object paths of the worker: objects of the eight kinds as the
 * informers deliver them (anything that passed the API server: CRD schemas are loose and
 * labels, annotations, owners and statuses are whatever someone wrote) go into the worker's
 * cache (worker/runtime/cache.c: keys and indexes), are mapped to reconcile keys (worker/runtime/mapping.c)
 * and reconciled by the production reconciler set (worker/godis/reconcile_godis.c over the
 * GodisCluster and Godis reconcilers: spec validation, status, members, ConfigMap parsing,
 * children, Pods and Nodes). Also the manager's reading of its Lease (manager/leaselock.c).
 *
 * No write leaves the process: byte 0 selects the fenced mode (every write refused, as
 * after a lost lease) or the open mode, where writes are built and then fail at a NULL API
 * client, and godis meet/forget dial a port reserved by this process and never listened on
 * (loopback only, GODIS_LOOPBACK_ONLY). Then records (fuzz_util.h): frame 0 an object; a
 * record "DELETE",object removes it. Checked: every emitted key names a controller the set
 * has, the cache holds exactly the objects upserted and not deleted. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "godis_domain.h"
#include "fuzz_util.h"
#include "gd_proto.h"
#include "workqueue.c"
#include "workqueue_metrics.c"
#include "controller.c"
#include "fence.c"
#include "keymetrics.c"
#include "cache.c"
#include "reconciler.c"
#include "mapping.c"
#include "godis_children.c"
#include "godis_plan.c"
#include "godis_status.c"
#include "godis_write.c"
#include "godis_status_check.c"
#include "godis_input.c"
#include "godis_place.c"
#include "godis_storage.c"
#include "godis_rollout.c"
#include "godis_slots.c"
#include "godis_metrics.c"
#include "godis_cluster_observe.c"
#include "godis_reconcile_cluster.c"
#include "godis_retire.c"
#include "godis_reconcile_godis.c"
/* its set variable is named like godis_client.h's godis_set(), which the reconcilers
 * above bring in: renamed here only */
#define godis_set fuzz_godis_reconciler_set
#include "godis_pdb.c"
#include "reconcile_godis.c"
#undef godis_set
#include "../../manager/leaderelection.c"
#include "../../manager/leaselock.c"

#define MAX_KEYS 24

typedef struct {
    char ctrl[16];
    char key[300];
} emitted;

typedef struct {
    emitted k[MAX_KEYS];
    int n;
} keyset;

static void emit(void *ud, const char *ctrl, const char *key)
{
    keyset *ks = ud;
    if (strcmp(ctrl, GODIS_CTRL_CLUSTER) && strcmp(ctrl, GODIS_CTRL_MEMBER)) abort();
    if (!key || !*key) abort();
    for (int i = 0; i < ks->n; i++)
        if (!strcmp(ks->k[i].ctrl, ctrl) && !strcmp(ks->k[i].key, key)) return;
    if (ks->n == MAX_KEYS || strlen(key) >= sizeof ks->k[0].key) return;
    snprintf(ks->k[ks->n].ctrl, sizeof ks->k[0].ctrl, "%s", ctrl);
    snprintf(ks->k[ks->n].key, sizeof ks->k[0].key, "%s", key);
    ks->n++;
}

/* A port nobody listens on: bound (so nobody else can listen on it) but never listening. */
static int dead_port(void)
{
    static int port;
    if (port) return port;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t al = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &al))
        abort();
    return port = ntohs(a.sin_port);
}

static void apply(cache *c, keyset *ks, const fz_record *r)
{
    bool del = r->n >= 2 && r->len[0] == 6 && !memcmp(r->p[0], "DELETE", 6);
    const fz_record one = *r;
    cJSON *obj = gd_json_parse(one.p[del ? 1 : 0], one.len[del ? 1 : 0]);
    const char *kind = gd_json_str_or(obj, "kind", "");
    char key[512];
    if (!cJSON_IsObject(obj) || !*kind || gd_meta_key(obj, key, sizeof key) < 0) {
        cJSON_Delete(obj);
        return;
    }
    if (!strcmp(kind, "Lease")) {
        mgr_le_record rec;
        if (mgr_leaselock_record_from_lease(obj, &rec) == GD_OK) {
            cJSON *back = cJSON_CreateObject();
            mgr_leaselock_record_to_lease(back, &rec);
            cJSON_Delete(back);
        }
    }
    cJSON *old = NULL;
    int shard = gd_shard_of_object(kind, obj);
    if (shard != GD_SHARD_BROADCAST && (shard < 0 || shard >= GD_NSHARDS)) abort();
    if (del) {
        cache_apply_take(c, CACHE_DELETE, kind, key, shard, NULL, &old);
        if (old) mapping_event(c, kind, old, NULL, emit, ks);
        cJSON_Delete(obj);
    } else {
        cJSON *keep = obj;
        if (cache_apply_take(c, CACHE_UPSERT, kind, key, shard, &keep, &old) != GD_OK) {
            cJSON_Delete(keep);
            return;
        }
        mapping_event(c, kind, old, obj, emit, ks);   /* obj now belongs to the cache */
        if (!cache_has(c, kind, key)) abort();
    }
    cJSON_Delete(old);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    if (len < 1) return 0;
    bool open = d[0] & 1;
    cache *c = cache_new();
    keyset ks = {.n = 0};
    size_t pos = 1;
    fz_record r;
    while (fz_next_record(d, len, &pos, &r)) apply(c, &ks, &r);

    gd_fence fence;
    gd_fence_init(&fence, open ? INT64_MAX : 0);
    gd_worker_env env = {.fence = &fence, .cache = c};
    godis_set_opts o = {.node_notready_grace_ms = 40000, .godis_timeout_ms = 1,
                        .godis_port = dead_port()};
    for (int i = 0; i < ks.n; i++) {
        rec_ctx ctx = {.controller_name = ks.k[i].ctrl, .key = ks.k[i].key, .env = &env, .ud = &o};
        gd_result res = !strcmp(ks.k[i].ctrl, GODIS_CTRL_CLUSTER) ? reconcile_cluster(&ctx, ks.k[i].key)
                                                                : reconcile_member(&ctx, ks.k[i].key);
        if (res.kind == GD_RESULT_REQUEUE_AFTER && res.after_ms < 0) abort();
        if (!open && ctx.writes) abort();           /* a fenced reconcile wrote */
    }
    gd_fence_destroy(&fence);
    cache_destroy(&c);
    return 0;
}
