/* election.c — leader election between stand-ins: the part of Raft an operator can feel.
 *
 * godis is etcd's raftexample underneath (100 ms tick, heartbeat every tick, election
 * timeout 10-20 ticks, no PreVote, no CheckQuorum), and what the operator sees of it is:
 *  - a write needs a leader; while there is none (after the leader died, or while an
 *    election runs) proposals are answered `-propose canceled by context` after ~1 s;
 *  - a member that hears no leader for its election timeout starts an election with a higher
 *    term, and every member that receives its vote request adopts that term and drops its
 *    leader, even a healthy leader — without PreVote nothing protects it;
 *  - a vote is granted once per term, only to a candidate whose log is at least as long;
 *  - an entry commits only when a majority of the members has it: a leader that cannot
 *    reach a majority (two members, one stopped) stays leader but commits nothing.
 * The stand-in keeps exactly that: terms, one vote per term (both persisted), heartbeats
 * from the leader to the members of its own membership (each answered heartbeat counts
 * towards the quorum, which the heartbeats pass on so a follower knows whether a write it
 * takes could commit), and the log length approximated by `index` (the membership changes
 * applied, replicate.c). A forgotten follower is no longer
 * in the leader's membership, so it gets no heartbeats and campaigns; its log is behind, so it
 * never wins, but each of its campaigns costs the survivors their leader. That is the
 * disruption the operator has to end by stopping it.
 *
 * Threads: one ticker per process (heartbeats as leader, campaigns on timeout), the peer
 * handlers run on connection threads; all state is under s->mu, and no network call is made
 * while holding it. Each member records what it saw (elections, leaders, membership) in a
 * ring of events with wall-clock times (`standin events`), so tests can measure from the
 * survivors' side how long a forgotten member kept disturbing them. */
#include "standin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gd_log.h"

#define HEARTBEAT_MS       100
#define ELECTION_MIN_MS    1000
#define ELECTION_SPREAD_MS 1000
#define LEADER_WAIT_MS     1000
#define PEER_TIMEOUT_MS    300
#define EVENTS_CAP         4096

static pthread_cond_t g_tick_cv;
static struct {
    int64_t wall_us;
    char text[96];
} g_events[EVENTS_CAP];
static long long g_nevents;                 /* total recorded; the ring keeps the last CAP */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t election_timeout_ms(void)
{
    static __thread unsigned int seed;
    if (!seed)
        seed = (unsigned int)(wall_us() ^ (int64_t)(uintptr_t)&seed);
    return ELECTION_MIN_MS + rand_r(&seed) % ELECTION_SPREAD_MS;
}

void standin_event(standin *s, const char *fmt, ...)
{
    (void)s;
    long long i = g_nevents++ % EVENTS_CAP;
    g_events[i].wall_us = wall_us();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_events[i].text, sizeof(g_events[i].text), fmt, ap);
    va_end(ap);
}

static const char *role_name(standin_role r)
{
    return r == ROLE_LEADER ? "leader" : r == ROLE_CANDIDATE ? "candidate" : "follower";
}

static int majority(int n)
{
    return n / 2 + 1;
}

static int is_member(const standin *s, long long id)
{
    for (int i = 0; i < s->nmembers; i++)
        if (s->members[i].id == id)
            return 1;
    return 0;
}

/* Raft campaigns only from a node that is a voter in its own configuration; a node started
 * with join=true has none until the leader's first message (here: the first sync). */
static int promotable(const standin *s)
{
    return is_member(s, s->self_id) && !(strcmp(s->origin, "join") == 0 && s->index == 0);
}

/* Caller holds mu. */
static void drop_leader(standin *s)
{
    if (s->leader || s->role == ROLE_LEADER) {
        s->leader_lost++;
        standin_event(s, "leader-lost %lld term %lld", s->leader, s->term);
        GD_INFO("lost the leader", "role", role_name(s->role));
    }
    s->leader = 0;
    s->quorum = 0;
}

/* A higher term from anyone: follow it, with no leader and no vote yet (caller holds mu). */
static void adopt_term(standin *s, long long term)
{
    if (term <= s->term)
        return;
    drop_leader(s);
    s->term = term;
    s->voted_for = 0;
    s->role = ROLE_FOLLOWER;
    standin_state_save(s, NULL, NULL);
}

/* Whether the leader at url still leads `term` with a majority behind it (a follower
 * forwards its proposals there; a leader that died or was removed takes them with it):
 * 1 yes, 0 no, -1 it is gone (its peer port refuses or drops the connection). */
static int leader_confirms(const char *url, long long term)
{
    godis_client *c = standin_peer_client(url, PEER_TIMEOUT_MS);
    if (!c)
        return 0;
    char t[24];
    snprintf(t, sizeof(t), "%lld", term);
    const char *argv[] = {"standin", "leading", t};
    godis_reply *r = NULL;
    gd_err e = godis_command(c, &r, 3, argv);
    int ok = e == GD_OK && r->type == GODIS_REPLY_STATUS;
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    return ok ? 1 : e == GD_ERR_TRANSPORT || e == GD_ERR_CLOSED ? -1 : 0;
}

/* A proposal commits only through a leader that hears a majority: on the leader itself, or
 * forwarded by a follower to its leader. Waits up to about a second for one. A follower
 * forwards the proposal to the leader it knows; when that leader is gone the proposal is
 * lost with it (raft drops a message to an unreachable peer, and neither raft nor godis
 * proposes it again), so it fails after the second even if the survivors elect a new leader
 * meanwhile. (With no leader known, raft holds the proposal until one is: that wait is the
 * loop below.) */
int standin_wait_leader(standin *s)
{
    int64_t until = mono_ms() + LEADER_WAIT_MS;
    int lost = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int ok = s->role == ROLE_LEADER && s->quorum;
        char url[GODIS_MAX_URL + 1] = "";
        long long term = s->term;
        for (int i = 0; !ok && s->role == ROLE_FOLLOWER && s->leader && i < s->nmembers; i++)
            if (s->members[i].id == s->leader)
                snprintf(url, sizeof(url), "%s", s->members[i].url);
        pthread_mutex_unlock(&s->mu);
        int confirmed = !ok && url[0] && !lost ? leader_confirms(url, term) : 0;
        if (!lost && (ok || confirmed == 1))
            return 1;
        lost |= confirmed < 0;
        if (mono_ms() >= until)
            return 0;
        struct timespec ts = {.tv_nsec = 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int standin_leader_url(standin *s, char *url, size_t cap)
{
    pthread_mutex_lock(&s->mu);
    int who = s->role == ROLE_LEADER ? 0 : -1;
    for (int i = 0; who < 0 && s->leader && i < s->nmembers; i++)
        if (s->members[i].id == s->leader) {
            snprintf(url, cap, "%s", s->members[i].url);
            who = 1;
        }
    pthread_mutex_unlock(&s->mu);
    return who;
}

/* `standin leading <term>` from a follower forwarding a proposal. */
void standin_peer_leading(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    long long term = n == 3 ? strtoll(a[2]->str, NULL, 10) : -1;
    pthread_mutex_lock(&s->mu);
    int ok = s->role == ROLE_LEADER && s->quorum && s->term == term;
    pthread_mutex_unlock(&s->mu);
    sb_fmt(out, ok ? "+OK\r\n" : "-ERR not leading\r\n");
}

/* ------------------------------------------------------------------------------------------
 * Talking to peers (ticker thread only: the clients are its own). */

typedef struct {
    long long id;
    char url[GODIS_MAX_URL + 1];
    godis_client *c;
} peer_conn;

static peer_conn g_peers[STANDIN_MAX_MEMBERS];

/* When each peer last answered a heartbeat or granted a vote (under s->mu). */
static struct {
    long long id;
    int64_t ms;
} g_acks[STANDIN_MAX_MEMBERS];

static int64_t *ack_slot(long long id)
{
    for (int i = 0; i < STANDIN_MAX_MEMBERS; i++)
        if (g_acks[i].id == id)
            return &g_acks[i].ms;
    for (int i = 0; i < STANDIN_MAX_MEMBERS; i++)
        if (g_acks[i].id == 0) {
            g_acks[i].id = id;
            g_acks[i].ms = 0;
            return &g_acks[i].ms;
        }
    memset(g_acks, 0, sizeof(g_acks));      /* full of departed members: start over */
    g_acks[0].id = id;
    return &g_acks[0].ms;
}

static godis_client *peer(long long id, const char *url)
{
    peer_conn *free_slot = NULL;
    for (int i = 0; i < STANDIN_MAX_MEMBERS; i++) {
        peer_conn *p = &g_peers[i];
        if (p->id == id) {
            if (strcmp(p->url, url) != 0) {
                godis_client_destroy(&p->c);
                snprintf(p->url, sizeof(p->url), "%s", url);
            }
            if (!p->c)
                p->c = standin_peer_client(url, PEER_TIMEOUT_MS);
            return p->c;
        }
        if (!p->id && !free_slot)
            free_slot = p;
    }
    if (!free_slot) {                       /* full of departed members: start over */
        for (int i = 0; i < STANDIN_MAX_MEMBERS; i++) {
            godis_client_destroy(&g_peers[i].c);
            g_peers[i].id = 0;
        }
        free_slot = &g_peers[0];
    }
    free_slot->id = id;
    snprintf(free_slot->url, sizeof(free_slot->url), "%s", url);
    free_slot->c = standin_peer_client(url, PEER_TIMEOUT_MS);
    return free_slot->c;
}

/* Sends `standin <verb> <term> <self> <index>` to a peer; the answer is [term, granted].
 * Returns 1 granted, 0 refused, -1 no answer; *their_term gets the peer's term. */
/* Sends `standin <verb> <term> <self> <index> [<quorum>]` to a peer; the answer is
 * [term, granted]. Returns 1 granted, 0 refused, -1 no answer; *their_term gets the peer's
 * term. quorum < 0: not sent (votes). */
static int ask_peer(standin *s, long long id, const char *url, const char *verb,
                    long long term, long long index, int quorum, long long *their_term)
{
    long long self = s->self_id;
    godis_client *c = peer(id, url);
    if (!c)
        return -1;
    char t[24], me[24], ix[24];
    snprintf(t, sizeof(t), "%lld", term);
    snprintf(me, sizeof(me), "%lld", self);
    snprintf(ix, sizeof(ix), "%lld", index);
    const char *argv[] = {"standin", verb, t, me, ix, quorum ? "1" : "0"};
    godis_reply *r = NULL;
    int rc = -1;
    if (godis_command(c, &r, quorum < 0 ? 5 : 6, argv) == GD_OK && r->type == GODIS_REPLY_ARRAY && r->n == 2 &&
        r->elems[0]->type == GODIS_REPLY_INTEGER && r->elems[1]->type == GODIS_REPLY_INTEGER) {
        *their_term = r->elems[0]->integer;
        rc = r->elems[1]->integer != 0;
        if (rc == 1) {
            pthread_mutex_lock(&s->mu);
            *ack_slot(id) = mono_ms();
            pthread_mutex_unlock(&s->mu);
        }
    }
    godis_reply_destroy(&r);
    return rc;
}

typedef struct {
    standin_member m[STANDIN_MAX_MEMBERS];
    int n;                                  /* members including self */
    long long term, index;
    int quorum;
} round_snap;

/* Caller holds mu. */
static void snapshot(const standin *s, round_snap *r)
{
    memcpy(r->m, s->members, sizeof(r->m[0]) * (size_t)s->nmembers);
    r->n = s->nmembers;
    r->term = s->term;
    r->index = s->index;
    r->quorum = s->quorum;
}

/* Whether the members that answered within an election timeout are a majority of the
 * current membership (caller holds mu). A leader re-checks it on every membership change:
 * after a member is added, the next entry needs the new majority at once, as in Raft. */
void standin_recheck_quorum(standin *s)
{
    if (s->role != ROLE_LEADER)
        return;
    int heard = 0;
    int64_t since = mono_ms() - ELECTION_MIN_MS;
    for (int i = 0; i < s->nmembers; i++)
        heard += s->members[i].id == s->self_id || *ack_slot(s->members[i].id) >= since;
    s->quorum = heard >= majority(s->nmembers);
}

static void send_heartbeats(standin *s, const round_snap *r)
{
    for (int i = 0; i < r->n; i++) {
        if (r->m[i].id == s->self_id)
            continue;
        long long their = 0;
        if (ask_peer(s, r->m[i].id, r->m[i].url, "heartbeat", r->term, r->index, r->quorum,
                     &their) < 0 || their <= r->term)
            continue;
        pthread_mutex_lock(&s->mu);
        adopt_term(s, their);               /* a newer term exists: step down */
        pthread_mutex_unlock(&s->mu);
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (s->term == r->term)
        standin_recheck_quorum(s);
    pthread_mutex_unlock(&s->mu);
}

/* Caller holds mu; returns with it held. */
static void campaign(standin *s)
{
    s->term++;
    s->voted_for = s->self_id;
    drop_leader(s);
    s->role = ROLE_CANDIDATE;
    s->campaigns++;
    s->election_due_ms = mono_ms() + election_timeout_ms();
    standin_state_save(s, NULL, NULL);
    standin_event(s, "campaign term %lld", s->term);
    round_snap r;
    snapshot(s, &r);
    pthread_mutex_unlock(&s->mu);
    int votes = 0;
    long long newer = 0;
    for (int i = 0; i < r.n; i++) {
        long long their = 0;
        if (r.m[i].id == s->self_id) {
            votes++;
            continue;
        }
        int g = ask_peer(s, r.m[i].id, r.m[i].url, "vote", r.term, r.index, -1, &their);
        votes += g == 1;
        if (g >= 0 && their > newer)
            newer = their;
    }
    pthread_mutex_lock(&s->mu);
    if (newer > s->term) {
        adopt_term(s, newer);
        return;
    }
    if (s->role != ROLE_CANDIDATE || s->term != r.term || votes < majority(r.n))
        return;
    s->role = ROLE_LEADER;
    s->leader = s->self_id;
    s->quorum = 1;                          /* a majority just voted for it */
    s->next_heartbeat_ms = 0;
    standin_event(s, "leader %lld term %lld", s->self_id, s->term);
    char t[24];
    snprintf(t, sizeof(t), "%lld", s->term);
    GD_INFO("became leader", "term", t);
}

static void *ticker(void *arg)
{
    standin *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int64_t now = mono_ms();
        if (s->role == ROLE_LEADER && now >= s->next_heartbeat_ms) {
            s->next_heartbeat_ms = now + HEARTBEAT_MS;
            round_snap r;
            snapshot(s, &r);
            pthread_mutex_unlock(&s->mu);
            send_heartbeats(s, &r);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (s->role != ROLE_LEADER && now >= s->election_due_ms) {
            if (promotable(s))
                campaign(s);
            else
                s->election_due_ms = now + election_timeout_ms();
            continue;
        }
        int64_t due = s->role == ROLE_LEADER ? s->next_heartbeat_ms : s->election_due_ms;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t wait = due - now;
        until.tv_sec += wait / 1000;
        until.tv_nsec += (wait % 1000) * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g_tick_cv, &s->mu, &until);
    }
    return NULL;
}

/* etcd raft counts election ticks even while a node is not promotable, and resets the
 * count on every message from the leader; a joiner becomes promotable by the leader's
 * first message (the snapshot that gives it its configuration), so it then has a full
 * election timeout before it could campaign, and the leader's heartbeats keep it a
 * follower. Here the first sync makes a joiner promotable: without this reset the timer it
 * kept while waiting (reset every timeout, as it could not campaign) could run out before
 * the first heartbeat, and the admitted member would campaign at once, taking the leader
 * away — what real godis does not do. (Caller holds mu.) */
void standin_first_contact(standin *s)
{
    s->election_due_ms = mono_ms() + election_timeout_ms();
}

int standin_election_start(standin *s)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_tick_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&s->mu);
    s->role = ROLE_FOLLOWER;
    s->leader = 0;
    s->election_due_ms = mono_ms() + election_timeout_ms();
    pthread_mutex_unlock(&s->mu);
    return standin_spawn(ticker, s);
}

/* ------------------------------------------------------------------------------------------
 * Peer requests: `standin vote|heartbeat <term> <from> <index>`, answered [term, ok]. */

static int parse_peer_request(godis_reply **a, size_t n, long long *term, long long *from,
                              long long *index)
{
    if (n != 5 && n != 6)
        return -1;
    char *e1, *e2, *e3;
    *term = strtoll(a[2]->str, &e1, 10);
    *from = strtoll(a[3]->str, &e2, 10);
    *index = strtoll(a[4]->str, &e3, 10);
    return (*e1 || *e2 || *e3 || *term < 0 || *from <= 0 || *index < 0) ? -1 : 0;
}

static void answer(sbuf *out, long long term, int ok)
{
    sb_fmt(out, "*2\r\n:%lld\r\n:%d\r\n", term, ok);
}

void standin_peer_vote(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    long long term, cand, index;
    if (parse_peer_request(a, n, &term, &cand, &index) != 0) {
        sb_fmt(out, "-ERR malformed standin vote\r\n");
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (term > s->term) {
        s->elections_seen++;
        standin_event(s, "vote-request %lld term %lld", cand, term);
        adopt_term(s, term);
    }
    int grant = term == s->term && (s->voted_for == 0 || s->voted_for == cand) &&
                index >= s->index && s->role != ROLE_LEADER;
    if (grant) {
        s->voted_for = cand;
        s->election_due_ms = mono_ms() + election_timeout_ms();
        standin_state_save(s, NULL, NULL);
    }
    answer(out, s->term, grant);
    pthread_mutex_unlock(&s->mu);
}

void standin_peer_heartbeat(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    long long term, from, index;
    if (parse_peer_request(a, n, &term, &from, &index) != 0) {
        sb_fmt(out, "-ERR malformed standin heartbeat\r\n");
        return;
    }
    pthread_mutex_lock(&s->mu);
    int ok = term >= s->term;
    if (ok) {
        adopt_term(s, term);
        s->role = ROLE_FOLLOWER;
        s->quorum = n == 6 && !strcmp(a[5]->str, "1");
        if (s->leader != from) {
            s->leader = from;
            standin_event(s, "leader %lld term %lld", from, term);
        }
        s->election_due_ms = mono_ms() + election_timeout_ms();
    }
    answer(out, s->term, ok);
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------------------------------------
 * What tests read and do. */

void standin_cmd_stats(standin *s, sbuf *out)
{
    pthread_mutex_lock(&s->mu);
    const struct { const char *k; long long v; } f[] = {
        {"id", s->self_id}, {"term", s->term}, {"leader", s->leader},
        {"elections-seen", s->elections_seen}, {"leader-lost", s->leader_lost},
        {"campaigns", s->campaigns}, {"index", s->index}, {"fresh", s->fresh},
        {"members", s->nmembers},
    };
    size_t nf = sizeof(f) / sizeof(f[0]);
    sb_fmt(out, "*%zu\r\n", 2 * nf + 2);
    sb_bulkz(out, "role");
    sb_bulkz(out, role_name(s->role));
    for (size_t i = 0; i < nf; i++) {
        sb_bulkz(out, f[i].k);
        sb_fmt(out, ":%lld\r\n", f[i].v);
    }
    pthread_mutex_unlock(&s->mu);
}

void standin_cmd_events(standin *s, sbuf *out)
{
    pthread_mutex_lock(&s->mu);
    long long first = g_nevents > EVENTS_CAP ? g_nevents - EVENTS_CAP : 0;
    sb_fmt(out, "*%lld\r\n", g_nevents - first);
    for (long long k = first; k < g_nevents; k++) {
        char line[128];
        long long i = k % EVENTS_CAP;
        snprintf(line, sizeof(line), "%lld %s", (long long)g_events[i].wall_us, g_events[i].text);
        sb_bulkz(out, line);
    }
    pthread_mutex_unlock(&s->mu);
}

void standin_cmd_campaign(standin *s, sbuf *out)
{
    pthread_mutex_lock(&s->mu);
    if (s->role != ROLE_LEADER) {
        s->election_due_ms = 0;
        pthread_cond_signal(&g_tick_cv);
    }
    pthread_mutex_unlock(&s->mu);
    sb_fmt(out, "+OK\r\n");
}
