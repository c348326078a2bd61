/* replicate_kv.c — data replication between stand-ins (a stand-in extension).
 *
 * godis replicates every write through Raft: a key set through one member is readable on
 * every member once it has applied the entry, and a member that was down (a pod replaced
 * during a rollout) catches up from the others when it is back. The stand-in imitates that
 * outcome: every applied `set` gets an id (origin member, sequence number of that origin),
 * is kept in an in-memory list in the order this member applied it (rebuilt from the kv log
 * at start-up), and a pusher thread sends each current member the entries it has not
 * acknowledged yet, over the peer port, as `standin kvsync <origin> <seq> <key> <value>`.
 * A receiver applies an entry whose sequence is newer than the last it applied from that
 * origin (so relayed duplicates are ignored) and logs it like its own. A member that was
 * down receives what it missed once it answers again, as a lagging Raft follower does.
 * Like the membership replication (replicate.c), concurrent writes of one key through two
 * members may end differently: there is no consensus here. */
#include "standin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gd_log.h"

#define KV_PUSH_PERIOD_MS 200
#define KV_MAX_ORIGINS 1024

typedef struct {
    long long origin, seq;
    char *k, *v;
    size_t kl, vl;
} kv_rec;

static kv_rec *g_log;
static size_t g_n, g_cap;
static struct {
    long long origin, seq;
} g_applied[KV_MAX_ORIGINS];
static int g_norigins;
static pthread_cond_t g_kv_cv = PTHREAD_COND_INITIALIZER;

static long long *applied_slot(long long origin)
{
    for (int i = 0; i < g_norigins; i++)
        if (g_applied[i].origin == origin)
            return &g_applied[i].seq;
    if (g_norigins == KV_MAX_ORIGINS)
        return NULL;
    g_applied[g_norigins].origin = origin;
    g_applied[g_norigins].seq = 0;
    return &g_applied[g_norigins++].seq;
}

int standin_kv_seen(long long origin, long long seq)
{
    long long *a = applied_slot(origin);
    return !a || seq <= *a;
}

long long standin_kv_next_seq(standin *s)
{
    long long *a = applied_slot(s->self_id);
    return a ? *a + 1 : 0;
}

int standin_kv_record(long long origin, long long seq, const char *k, size_t kl, const char *v,
                      size_t vl)
{
    long long *a = applied_slot(origin);
    if (!a)
        return -1;
    if (g_n == g_cap) {
        size_t nc = g_cap ? g_cap * 2 : 256;
        kv_rec *nl = realloc(g_log, nc * sizeof(*nl));
        if (!nl)
            return -1;
        g_log = nl;
        g_cap = nc;
    }
    kv_rec *r = &g_log[g_n];
    r->k = malloc(kl + 1);
    r->v = malloc(vl + 1);
    if (!r->k || !r->v) {
        free(r->k);
        free(r->v);
        return -1;
    }
    memcpy(r->k, k, kl);
    r->k[kl] = '\0';
    memcpy(r->v, v, vl);
    r->v[vl] = '\0';
    r->kl = kl;
    r->vl = vl;
    r->origin = origin;
    r->seq = seq;
    g_n++;
    if (seq > *a)
        *a = seq;
    pthread_cond_signal(&g_kv_cv);
    return 0;
}

/* `standin kvsync <origin> <seq> <key> <value>` from a peer. */
void standin_kv_receive(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    char *end1 = NULL, *end2 = NULL;
    long long origin = n == 6 ? strtoll(a[2]->str, &end1, 10) : 0;
    long long seq = n == 6 ? strtoll(a[3]->str, &end2, 10) : 0;
    if (n != 6 || !end1 || *end1 || !end2 || *end2 || origin <= 0 || seq <= 0) {
        sb_fmt(out, "-ERR malformed kvsync\r\n");
        return;
    }
    pthread_mutex_lock(&s->mu);
    int rc = standin_kv_seen(origin, seq) ? 0
           : standin_kv_apply(s, origin, seq, a[4]->str, a[4]->len, a[5]->str, a[5]->len);
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        sb_fmt(out, "-ERR out of memory\r\n");
    else
        sb_fmt(out, "+OK\r\n");
}

/* Sends entries [from, to) to url; returns how many were acknowledged. */
static size_t push_entries(standin *s, const char *url, size_t from, size_t to)
{
    godis_client *c = standin_peer_client(url, 1000);
    size_t done = 0;
    for (size_t i = from; c && i < to; i++) {
        pthread_mutex_lock(&s->mu);
        kv_rec r = g_log[i];
        char *k = malloc(r.kl + 1), *v = malloc(r.vl + 1);
        if (k && v) {
            memcpy(k, r.k, r.kl + 1);
            memcpy(v, r.v, r.vl + 1);
        }
        pthread_mutex_unlock(&s->mu);
        char o[24], q[24];
        snprintf(o, sizeof(o), "%lld", r.origin);
        snprintf(q, sizeof(q), "%lld", r.seq);
        const char *argv[] = {"standin", "kvsync", o, q, k, v};
        godis_reply *rep = NULL;       /* values are text: a set's value never holds a NUL */
        gd_err e = k && v ? godis_command(c, &rep, 6, argv) : GD_ERR_NOMEM;
        int ok = e == GD_OK && rep->type == GODIS_REPLY_STATUS;
        godis_reply_destroy(&rep);
        free(k);
        free(v);
        if (!ok)
            break;
        done++;
    }
    godis_client_destroy(&c);
    return done;
}

static void *kv_pusher(void *arg)
{
    standin *s = arg;
    static struct {
        long long id;
        size_t acked;
    } acks[STANDIN_MAX_MEMBERS];
    static standin_member snap[STANDIN_MAX_MEMBERS];
    for (;;) {
        pthread_mutex_lock(&s->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += KV_PUSH_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g_kv_cv, &s->mu, &until);
        size_t n = g_n;
        int nm = s->nmembers;
        memcpy(snap, s->members, sizeof(snap[0]) * (size_t)nm);
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < nm; i++) {
            if (snap[i].id == s->self_id)
                continue;
            int slot = -1;
            for (int k = 0; k < STANDIN_MAX_MEMBERS && slot < 0; k++)
                if (acks[k].id == snap[i].id)
                    slot = k;
            for (int k = 0; k < STANDIN_MAX_MEMBERS && slot < 0; k++)
                if (acks[k].id == 0)
                    slot = k, acks[k].id = snap[i].id, acks[k].acked = 0;
            if (slot < 0 || acks[slot].acked >= n)
                continue;
            acks[slot].acked += push_entries(s, snap[i].url, acks[slot].acked, n);
        }
    }
    return NULL;
}

int standin_kv_replicate_start(standin *s)
{
    return standin_spawn(kv_pusher, s);
}
