/* replicate.c — membership replication between stand-ins (a stand-in extension).
 *
 * godis replicates its membership through Raft; the stand-in imitates only the outcome the
 * operator can observe: a meet or forget applied on one member reaches the others. Every
 * applied change bumps a counter (`index`, like a Raft log index, persisted with the
 * membership); a pusher thread sends the whole membership to every *current* member whose
 * last acknowledged index is older, over the peer port, as `standin sync <index>
 * <id@url,...> <removed ids,...>`. A receiver adopts a strictly newer index.
 * As in godis, a member that was forgotten does not learn it: it is no longer a current
 * member, so nobody sends it anything (and a sync that no longer lists the receiver is
 * ignored), so it keeps running with its old membership until its pod is deleted.
 * Concurrent changes sent to two different members can diverge (no consensus here); the
 * operator makes one membership change at a time, which is what godis needs too.
 * Peers are reached by their peer URL; only loopback addresses are ever connected. */
#include "standin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gd_log.h"

#define PUSH_PERIOD_MS 500

static pthread_cond_t g_push_cv = PTHREAD_COND_INITIALIZER;

typedef struct {
    long long id, acked;
} peer_ack;

/* Caller holds s->mu. Something changed locally: bump the index and wake the pusher. */
void standin_replicate_changed(standin *s)
{
    s->index++;
    pthread_cond_signal(&g_push_cv);
}

static void join_members(const standin_member *m, int n, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%lld@%s", i ? "," : "", m[i].id,
                 m[i].url);
}

static void join_ids(const long long *ids, int n, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%lld", i ? "," : "", ids[i]);
}

/* http://host:port → host, port (validated by godis_valid_peer_url before). */
static int split_url(const char *url, char *host, size_t cap, int *port)
{
    const char *h = url + 7, *colon = strrchr(h, ':');
    if (!colon || (size_t)(colon - h) >= cap)
        return -1;
    memcpy(host, h, (size_t)(colon - h));
    host[colon - h] = '\0';
    *port = atoi(colon + 1);
    return 0;
}

static int push_one(const char *url, const char *idx, const char *members, const char *removed)
{
    char host[256];
    int port = 0;
    if (!godis_valid_peer_url(url) || split_url(url, host, sizeof(host), &port) != 0)
        return -1;
    godis_opts o = {.connect_timeout_ms = 300, .reply_timeout_ms = 1000};
    godis_client *c = godis_client_new(host, port, &o);
    if (!c)
        return -1;
    const char *argv[] = {"standin", "sync", idx, members, removed};
    godis_reply *r = NULL;
    gd_err e = godis_command(c, &r, 5, argv);
    int ok = e == GD_OK && r->type == GODIS_REPLY_STATUS;
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    return ok ? 0 : -1;
}

static void *pusher(void *arg)
{
    standin *s = arg;
    static peer_ack acks[STANDIN_MAX_MEMBERS];
    static char members[STANDIN_MAX_MEMBERS * (GODIS_MAX_URL + 24)];
    static char removed[STANDIN_MAX_REMOVED * 12];
    static standin_member snap[STANDIN_MAX_MEMBERS];
    for (;;) {
        pthread_mutex_lock(&s->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += PUSH_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g_push_cv, &s->mu, &until);
        long long index = s->index;
        int n = s->nmembers;
        memcpy(snap, s->members, sizeof(snap[0]) * (size_t)n);
        join_members(s->members, n, members, sizeof(members));
        join_ids(s->removed, s->nremoved, removed, sizeof(removed));
        pthread_mutex_unlock(&s->mu);
        if (index == 0)
            continue;                /* nothing applied here yet: nothing to tell */
        char idx[24];
        snprintf(idx, sizeof(idx), "%lld", index);
        for (int i = 0; i < n; i++) {
            if (snap[i].id == s->self_id)
                continue;
            peer_ack *a = NULL;
            for (int k = 0; k < STANDIN_MAX_MEMBERS && !a; k++)
                if (acks[k].id == snap[i].id)
                    a = &acks[k];
            for (int k = 0; k < STANDIN_MAX_MEMBERS && !a; k++)
                if (acks[k].id == 0)
                    a = &acks[k], a->id = snap[i].id, a->acked = 0;
            if (!a || a->acked >= index)
                continue;
            if (push_one(snap[i].url, idx, members, removed) == 0)
                a->acked = index;
        }
    }
    return NULL;
}

int standin_replicate_start(standin *s)
{
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, pusher, s);
    pthread_attr_destroy(&at);
    return rc == 0 ? 0 : -1;
}

/* `standin sync <index> <members> <removed>` from a peer. Answers +OK whether or not it
 * adopted the state (an older or equal index is simply not news); -ERR when malformed. */
void standin_replicate_receive(standin *s, godis_reply **a, size_t n, sbuf_fn reply, void *rarg)
{
    standin_member m[STANDIN_MAX_MEMBERS];
    long long removed[STANDIN_MAX_REMOVED];
    int nm = -1, nr = 0;
    long long index = n == 5 ? strtoll(a[2]->str, NULL, 10) : -1;
    if (index > 0)
        nm = a[3]->len ? standin_parse_members(a[3]->str, m, STANDIN_MAX_MEMBERS) : 0;
    if (nm >= 0 && a[4]->len) {
        char *copy = strdup(a[4]->str), *save = NULL;
        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && nm >= 0;
             t = strtok_r(NULL, ",", &save)) {
            long long id = godis_parse_id(t);
            if (!id || nr >= STANDIN_MAX_REMOVED)
                nm = -1;
            else
                removed[nr++] = id;
        }
        free(copy);
    }
    if (nm < 0) {
        reply(rarg, "-ERR malformed standin sync\r\n");
        return;
    }
    int lists_self = 0;
    for (int i = 0; i < nm; i++)
        lists_self |= m[i].id == s->self_id;
    pthread_mutex_lock(&s->mu);
    if (index > s->index && lists_self && !s->self_removed) {
        memcpy(s->members, m, sizeof(m[0]) * (size_t)nm);
        s->nmembers = nm;
        memcpy(s->removed, removed, sizeof(removed[0]) * (size_t)nr);
        s->nremoved = nr;
        s->index = index;
        standin_state_save(s, NULL, NULL);
        pthread_cond_signal(&g_push_cv);
        GD_INFO("membership synced from a peer", "index", a[2]->str, "members", a[3]->str);
    }
    pthread_mutex_unlock(&s->mu);
    reply(rarg, "+OK\r\n");
}
