/* fuzz_gdw_manager.c — what workers (or anything that reaches the control socket) send the
 * manager (docs/PROTOCOL.md §2, GDW1): every message into manager/control.c's handler as
 * its ROUTER receives it (identity frame first), with handlers that do what
 * manager/manager.c's do — HELLO accepted for a worker it could have started, REVOKED's
 * shards and pending keys into the shard table (manager/shards.c) and dealt out again in
 * ASSIGN, PONG's metrics text merged into /metrics (manager/promtext.c).
 *
 * Every record of the input is one message: frame 0 the sender's identity, then its frames
 * (fuzz_util.h). At the start of each input every shard is owned by worker 0 or 1 (being
 * revoked), so a REVOKED can release them. Checked: the shard table's invariant (a shard
 * has at most one owner, owners are live workers) holds after every plan. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "fuzz_util.h"
#include "../../manager/control.c"
#include "../../manager/shards.c"
#include "../../manager/promtext.c"

typedef struct {
    mgr_shards shards;
    char *metrics[MGR_SHARDS_MAX_WORKERS];
} mgr;

static bool on_hello(void *ud, int index, int pid)
{
    mgr *m = ud;
    if (index < 0 || index >= MGR_SHARDS_MAX_WORKERS || pid <= 0) abort();
    if (index >= 8) return false;               /* not a worker it started */
    mgr_shards_worker_up(&m->shards, index);
    return true;
}

static void on_revoked(void *ud, int index, uint64_t seq, const int *shards, int n,
                       const char *pending)
{
    mgr *m = ud;
    if (n < 0 || n > GD_NSHARDS || !pending) abort();
    mgr_shards_revoked(&m->shards, index, shards, n, pending);
}

static void on_pong(void *ud, int index, uint64_t seq, const char *metrics, size_t len)
{
    mgr *m = ud;
    char *t = fz_strndup(metrics, len);
    if (!t) return;
    free(m->metrics[index]);
    m->metrics[index] = t;
}

static void check_table(const mgr_shards *s)
{
    for (int i = 0; i < GD_NSHARDS; i++) {
        int o = s->slot[i].owner;
        if (o < -1 || o >= MGR_SHARDS_MAX_WORKERS) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    static mgr_control *c;
    static mgr m;
    fz_quiet_logs();
    if (!c) {
        mgr_control_handlers h = {on_hello, on_revoked, on_pong, NULL};
        if (!(c = mgr_control_new(zmq_ctx_new(), "inproc://fz.control", &h, &m))) abort();
    }
    mgr_shards_init(&m.shards);
    mgr_shards_worker_up(&m.shards, 0);
    mgr_shards_worker_up(&m.shards, 1);
    for (int i = 0; i < GD_NSHARDS; i++) {
        m.shards.slot[i].owner = i % 2;
        m.shards.slot[i].revoking = true;
    }
    for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++) mgr_control_forget(c, i);

    size_t pos = 0;
    fz_record r;
    while (fz_next_record(d, len, &pos, &r)) {
        zmq_msg_t f[MAX_FRAMES];
        int n = r.n < MAX_FRAMES ? r.n : MAX_FRAMES;
        for (int i = 0; i < n; i++) {
            zmq_msg_init_size(&f[i], r.len[i]);
            memcpy(zmq_msg_data(&f[i]), r.p[i], r.len[i]);
        }
        handle(c, f, n);
        for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
        mgr_shards_action a[2 * MGR_SHARDS_MAX_WORKERS];
        int na = mgr_shards_plan(&m.shards, a, 2 * MGR_SHARDS_MAX_WORKERS);
        for (int i = 0; i < na; i++)
            if (a[i].verb == MGR_SHARDS_ASSIGN && !a[i].pending_json) abort();
        mgr_shards_actions_free(a, na);
        check_table(&m.shards);
    }
    mgr_promtext *pt = mgr_promtext_new();
    for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++) {
        if (!m.metrics[i]) continue;
        char idx[12];
        snprintf(idx, sizeof idx, "%d", i);
        mgr_promtext_add(pt, m.metrics[i], strlen(m.metrics[i]), "worker", idx);
        free(m.metrics[i]);
        m.metrics[i] = NULL;
    }
    char *text = mgr_promtext_render(pt);
    if (text && *text && text[strlen(text) - 1] != '\n') abort();
    free(text);
    mgr_promtext_destroy(&pt);
    mgr_shards_cleanup(&m.shards);
    return 0;
}
