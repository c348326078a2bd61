/* replicate.c — membership replication between stand-ins (a stand-in extension).
 *
 * godis replicates its membership through Raft; the stand-in imitates only the outcome the
 * operator can observe: a meet or forget applied on one member reaches the others. Every
 * applied change bumps a counter (`index`, like a Raft log index, persisted with the
 * membership); a pusher thread sends the whole membership to every *current* member whose
 * last acknowledged index is older, over the peer port, as `standin sync <index>
 * <id@url,...> <removed ids,...>`. A receiver adopts a strictly newer index.
 * As in godis, a forgotten follower does not learn it: it is no longer a current member, so
 * nobody sends it anything (and a sync that no longer lists the receiver is ignored), so it
 * keeps running — and campaigning, election.c — with its old membership until its process
 * is stopped. A removed *leader* does learn it (the leader applies the entry that removes
 * it), and exits 0 before saving anything, as godis's leader does. Only the leader applies
 * a change (a follower forwards it, commands.c), so members never apply two different
 * changes at the same index.
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

godis_client *standin_peer_client(const char *url, int timeout_ms)
{
    char host[256];
    int port = 0;
    if (!godis_valid_peer_url(url) || split_url(url, host, sizeof(host), &port) != 0)
        return NULL;
    godis_opts o = {.connect_timeout_ms = timeout_ms, .reply_timeout_ms = timeout_ms};
    return godis_client_new(host, port, &o);
}

static int push_one(const char *url, const char *idx, const char *members, const char *removed)
{
    godis_client *c = standin_peer_client(url, 1000);
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

void standin_replicate_final_push(standin *s)
{
    static standin_member others[STANDIN_MAX_MEMBERS];
    static char members[STANDIN_MAX_MEMBERS * (GODIS_MAX_URL + 24)];
    static char removed[STANDIN_MAX_REMOVED * 12 + 24];
    pthread_mutex_lock(&s->mu);
    int n = 0;
    for (int i = 0; i < s->nmembers; i++)
        if (s->members[i].id != s->self_id)
            others[n++] = s->members[i];
    join_members(others, n, members, sizeof(members));
    join_ids(s->removed, s->nremoved, removed, sizeof(removed));
    snprintf(removed + strlen(removed), sizeof(removed) - strlen(removed), "%s%lld",
             s->nremoved ? "," : "", s->self_id);
    char idx[24];
    snprintf(idx, sizeof(idx), "%lld", s->index + 1);
    standin_event(s, "applied-forget %lld", s->self_id);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++)
        push_one(others[i].url, idx, members, removed);
}

int standin_replicate_start(standin *s)
{
    return standin_spawn(pusher, s);
}

/* Records which ids a newer membership adds and drops (caller holds mu). */
static void note_changes(standin *s, const standin_member *m, int nm)
{
    for (int i = 0; i < s->nmembers; i++) {
        int kept = 0;
        for (int k = 0; k < nm; k++)
            kept |= m[k].id == s->members[i].id;
        if (!kept)
            standin_event(s, "applied-forget %lld", s->members[i].id);
    }
    for (int k = 0; k < nm; k++) {
        int known = 0;
        for (int i = 0; i < s->nmembers; i++)
            known |= m[k].id == s->members[i].id;
        if (!known)
            standin_event(s, "applied-meet %lld", m[k].id);
    }
}

/* `standin sync <index> <members> <removed>` from a peer. Answers +OK whether or not it
 * adopted the state (an older or equal index is simply not news); -ERR when malformed. */
void standin_replicate_receive(standin *s, godis_reply **a, size_t n, sbuf *out)
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
        sb_fmt(out, "-ERR malformed standin sync\r\n");
        return;
    }
    int lists_self = 0;
    for (int i = 0; i < nm; i++)
        lists_self |= m[i].id == s->self_id;
    pthread_mutex_lock(&s->mu);
    if (index > s->index && !lists_self && s->role == ROLE_LEADER) {
        /* The leader applies the entry that removes it, and stops before saving it. */
        GD_INFO("I've been removed from the cluster! Shutting down.");
        standin_request_exit(s, 'F');
    } else if (index > s->index && lists_self) {
        if (s->index == 0 && s->role != ROLE_LEADER)
            standin_first_contact(s);
        note_changes(s, m, nm);
        memcpy(s->members, m, sizeof(m[0]) * (size_t)nm);
        s->nmembers = nm;
        memcpy(s->removed, removed, sizeof(removed[0]) * (size_t)nr);
        s->nremoved = nr;
        s->index = index;
        standin_recheck_quorum(s);
        standin_state_save(s, NULL, NULL);
        pthread_cond_signal(&g_push_cv);
        GD_INFO("membership synced from a peer", "index", a[2]->str, "members", a[3]->str);
    }
    pthread_mutex_unlock(&s->mu);
    sb_fmt(out, "+OK\r\n");
}
