/* fuzz_gdw_worker.c — what the manager sends a worker (docs/PROTOCOL.md §2, GDW1): every
 * message into worker/runtime/control.c's gdw_parse (as worker/runtime/worker_link.c hands it the frames of
 * one ZeroMQ message), and the pending keys of an ASSIGN as the worker uses them: each key
 * mapped to its shard (worker/runtime/controller.c) and parsed by the reconcilers
 * (worker/godis_reconcile_*.c, with an empty cache: a key is read, nothing is found).
 *
 * Every record of the input is one message (fuzz_util.h). Checked: what gdw_parse accepts
 * is what PROTOCOL.md allows (shards ascending and unique, 0..255; pending keys an object
 * of arrays of non-empty strings), and a shard list survives format → parse unchanged. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godis_domain.h"
#include "fuzz_util.h"
#include "workqueue.c"
#include "workqueue_metrics.c"
#include "controller.c"
#include "fence.c"
#include "keymetrics.c"
#include "cache.c"
#include "control.c"
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

static const cJSON *env_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    if (!kind || !ns || !name) abort();
    return NULL;
}

static const cJSON *env_list(godis_env *e, const char *kind, const char *ns, const char *k,
                       const char *v)
{
    return cJSON_CreateArray();
}

static gd_err env_fenced(godis_env *e) { return GD_ERR_FENCED; }

static void check_shards(const gdw_msg *m)
{
    if (m->nshards < 0 || m->nshards > GD_NSHARDS) abort();
    for (int i = 0; i < m->nshards; i++)
        if (m->shards[i] < 0 || m->shards[i] >= GD_NSHARDS || (i && m->shards[i] <= m->shards[i - 1]))
            abort();
    char *txt = gdw_format_shards(m->shards, m->nshards);
    int again[GD_NSHARDS], n = 0;
    char why[160];
    if (!txt || gdw_parse_shards(txt, again, &n, why, sizeof why) != GD_OK || n != m->nshards ||
        memcmp(again, m->shards, sizeof(int) * (size_t)n))
        abort();
    free(txt);
}

static void use_pending(const cJSON *pending)
{
    godis_env e = {.get = env_get, .list = env_list, .may_write = env_fenced,
                   .godis_port = 6379, .godis_timeout_ms = 1};
    char why[160];
    if (gdw_check_pending(pending, why, sizeof why) != GD_OK) abort();
    const cJSON *ctrl, *key;
    cJSON_ArrayForEach(ctrl, pending) {
        cJSON_ArrayForEach(key, ctrl) {
            const char *k = key->valuestring;
            int a = gd_shard_of_key(GODIS_CTRL_CLUSTER, k), b = gd_shard_of_key(GODIS_CTRL_MEMBER, k);
            if (a < -1 || a >= GD_NSHARDS || b < -1 || b >= GD_NSHARDS) abort();
            godis_reconcile_cluster(&e, k);
            godis_reconcile_godis(&e, k);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    size_t pos = 0;
    fz_record r;
    while (fz_next_record(d, len, &pos, &r)) {
        gdw_frame f[FZ_MAX_FRAMES];
        for (int i = 0; i < r.n; i++) {
            f[i].data = r.p[i];
            f[i].len = r.len[i];
        }
        gdw_msg m;
        char why[200];
        if (gdw_parse(f, r.n > 8 ? 8 : r.n, &m, why, sizeof why) != GD_OK) {
            if (!memchr(why, '\0', sizeof why)) abort();
            continue;
        }
        switch (m.type) {
        case GDW_ASSIGN:
            check_shards(&m);
            if (m.pending) use_pending(m.pending);
            break;
        case GDW_REVOKE:
            check_shards(&m);
            break;
        case GDW_LEASE: case GDW_STOP:
            if (m.deadline_ms < 0) abort();
            break;
        case GDW_ERROR:
            if (!memchr(m.text, '\0', sizeof m.text)) abort();
            break;
        default:
            break;
        }
        gdw_msg_clear(&m);
    }
    return 0;
}
