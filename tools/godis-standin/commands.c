/* commands.c — one thread per client connection: read RESP2 requests, answer like godis.
 *
 * What godis does with each kind of bad input is kept (see standin.h): a request that is not
 * RESP closes the connection; a request that is not an array answers `-invalid format`; a
 * short command or a non-string argument kills the process; a malformed `cluster meet` is
 * persisted first and then kills the process. Command names are case-sensitive, as in godis.
 * Writes (set, cluster meet, cluster forget) are proposals: without a leader they wait about
 * a second and are answered `-propose canceled by context`, unapplied (election.c). */
#include "standin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gd_log.h"

/* ------------------------------------------------------------------------------------------
 * Reply buffer */

void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t nc = (b->len + n + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            GD_ERROR("out of memory building a reply");
            _exit(STANDIN_EXIT_CRASH);
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

void sb_fmt(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    sb_add(b, tmp, n < (int)sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void sb_bulk(sbuf *b, const char *s, size_t n)
{
    sb_fmt(b, "$%zu\r\n", n);
    sb_add(b, s, n);
    sb_add(b, "\r\n", 2);
}

void sb_bulkz(sbuf *b, const char *s)
{
    sb_bulk(b, s, strlen(s));
}

/* ------------------------------------------------------------------------------------------
 * Helpers */

static __attribute__((noreturn)) void crash(const char *why, const char *detail)
{
    GD_ERROR("panic: godis would crash here; exiting", "reason", why, "detail", detail);
    _exit(STANDIN_EXIT_CRASH);
}

static double rand01(void)
{
    static __thread unsigned long long x;
    if (!x) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        x = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)(uintptr_t)&x << 16) ^ 0x9E37;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return (double)(x >> 11) / 9007199254740992.0;
}

/* Real godis sometimes answers a proposal that it did apply with this error. */
static int fault_cancel(standin *s)
{
    return s->fault_propose_cancel > 0 && rand01() < s->fault_propose_cancel;
}

static void reply_proposal_ok(standin *s, sbuf *out)
{
    if (fault_cancel(s))
        sb_fmt(out, "-propose canceled by context\r\n");
    else
        sb_fmt(out, "+OK\r\n");
}

/* ------------------------------------------------------------------------------------------
 * Commands. argv[i] are strings (checked by the caller); argc >= 1. */

static void cmd_hello(standin *s, sbuf *out)
{
    sb_fmt(out, "*14\r\n");
    sb_bulkz(out, "server");
    sb_bulkz(out, "godis");
    sb_bulkz(out, "version");
    sb_bulkz(out, "255.255.255");
    sb_bulkz(out, "proto");
    sb_fmt(out, ":2\r\n");
    sb_bulkz(out, "id");
    sb_fmt(out, ":%lld\r\n", s->self_id);
    sb_bulkz(out, "mode");
    sb_bulkz(out, "cluster");
    sb_bulkz(out, "role");
    sb_bulkz(out, "master");
    sb_bulkz(out, "modules");
    sb_fmt(out, "*0\r\n");
}

static void cmd_set(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    if (n < 3)
        crash("short command", "set");
    int nx = 0, xx = 0, get = 0;
    for (size_t i = 3; i < n; i++) {
        if (!strcmp(a[i]->str, "nx"))
            nx = 1;
        else if (!strcmp(a[i]->str, "xx"))
            xx = 1;
        else if (!strcmp(a[i]->str, "get"))
            get = 1;
        else {
            sb_fmt(out, "-ERR illegal argument\r\n");
            return;
        }
    }
    if (!standin_wait_leader(s)) {
        sb_fmt(out, "-propose canceled by context\r\n");
        return;
    }
    pthread_mutex_lock(&s->mu);
    size_t ol = 0;
    const char *old = standin_kv_get(s, a[1]->str, a[1]->len, &ol);
    char *oldcopy = NULL;
    if (get && old && (oldcopy = malloc(ol + 1)))
        memcpy(oldcopy, old, ol);
    int skip = (nx && old) || (xx && !old);
    int rc = skip ? 0 : standin_kv_set(s, a[1]->str, a[1]->len, a[2]->str, a[2]->len);
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        sb_fmt(out, "-ERR out of memory\r\n");
    else if (skip)
        sb_fmt(out, "$-1\r\n");
    else if (get)
        oldcopy ? sb_bulk(out, oldcopy, ol) : sb_fmt(out, "$-1\r\n");
    else
        reply_proposal_ok(s, out);
    free(oldcopy);
}

static void cmd_get(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    if (n < 2)
        crash("short command", "get");
    pthread_mutex_lock(&s->mu);
    size_t vl = 0;
    const char *v = standin_kv_get(s, a[1]->str, a[1]->len, &vl);
    if (v)
        sb_bulk(out, v, vl);
    else
        sb_fmt(out, "-redis: nil\r\n");
    pthread_mutex_unlock(&s->mu);
}

static void cmd_mget(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    pthread_mutex_lock(&s->mu);
    sb_fmt(out, "*%zu\r\n", n - 1);
    for (size_t i = 1; i < n; i++) {
        size_t vl = 0;
        const char *v = standin_kv_get(s, a[i]->str, a[i]->len, &vl);
        v ? sb_bulk(out, v, vl) : sb_fmt(out, "$-1\r\n");
    }
    pthread_mutex_unlock(&s->mu);
}

/* A membership change proposed to a follower goes to its leader (over the leader's peer
 * port), as a Raft follower forwards a proposal: only the leader appends to the log, after
 * everything it has, so two members never apply different changes at the same index. (A
 * follower applying it to its own membership diverged for good when it was behind, e.g.
 * just restarted: a member forgotten meanwhile came back in its membership, and the next
 * change it pushed carried it to the others.) A forwarded proposal is not forwarded again:
 * a member that no longer leads answers `-propose canceled by context`. Returns 1 when
 * forwarded (the leader's answer is in out), 0 when this member leads. */
static int forward_to_leader(standin *s, godis_reply **a, size_t n, int from_peer, sbuf *out)
{
    char url[GODIS_MAX_URL + 1];
    int who = standin_leader_url(s, url, sizeof(url));
    if (who == 0)
        return 0;
    if (who < 0 || from_peer) {
        sb_fmt(out, "-propose canceled by context\r\n");
        return 1;
    }
    pthread_mutex_lock(&s->mu);
    long long before = s->index;
    pthread_mutex_unlock(&s->mu);
    godis_client *c = standin_peer_client(url, 3000);
    const char *argv[8];
    size_t argc = n < 8 ? n : 8;
    for (size_t i = 0; i < argc; i++)
        argv[i] = a[i]->str;
    godis_reply *r = NULL;
    gd_err e = c ? godis_command(c, &r, (int)argc, argv) : GD_ERR_TRANSPORT;
    if (e == GD_OK && r->type == GODIS_REPLY_STATUS) {
        /* +OK once the change reached this member too (the leader pushes it at once) */
        for (int waited = 0; waited < 1000; waited += 10) {
            pthread_mutex_lock(&s->mu);
            long long now = s->index;
            pthread_mutex_unlock(&s->mu);
            if (now > before)
                break;
            struct timespec ts = {.tv_nsec = 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        reply_proposal_ok(s, out);
    } else if (e == GD_OK && r->type == GODIS_REPLY_ERROR) {
        sb_fmt(out, "-%s\r\n", r->str);
    } else {
        sb_fmt(out, "-propose canceled by context\r\n");
    }
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    return 1;
}

static void cmd_meet(standin *s, godis_reply **a, size_t n, int from_peer, sbuf *out)
{
    if (n < 4)
        crash("short command", "cluster meet");
    long long id = godis_parse_id(a[2]->str);
    int url_ok = strlen(a[3]->str) == a[3]->len && godis_valid_peer_url(a[3]->str);
    if (!standin_wait_leader(s)) {
        sb_fmt(out, "-propose canceled by context\r\n");
        return;
    }
    if (id && url_ok && strlen(a[2]->str) == a[2]->len && forward_to_leader(s, a, n, from_peer, out))
        return;
    pthread_mutex_lock(&s->mu);
    if (!id || !url_ok || strlen(a[2]->str) != a[2]->len) {
        /* godis commits the conf change first and dies applying it, on every restart. */
        standin_state_save(s, a[2]->str, a[3]->str);
        crash("malformed cluster meet committed to the log", a[3]->str);
    }
    int ignored = standin_member_add(s, id, a[3]->str);
    if (!ignored) {
        standin_replicate_changed(s);
        standin_recheck_quorum(s);
        standin_event(s, "applied-meet %lld", id);
        GD_INFO("cluster meet applied", "id", a[2]->str, "url", a[3]->str);
    } else {
        GD_WARN("cluster meet ignored: id was removed before or membership is full",
                "id", a[2]->str);
    }
    standin_state_save(s, NULL, NULL);
    pthread_mutex_unlock(&s->mu);
    reply_proposal_ok(s, out);
}

/* `cluster forget <id>`, applied by the leader (a follower forwards it). A removed follower
 * is not told, as in godis. The leader asked to forget itself (directly or forwarded) applies
 * its own removal: it hands the new membership to the others and shuts down (exit 0) without
 * saving it, like a removed godis leader. */
static void cmd_forget(standin *s, godis_reply **a, size_t n, int from_peer, sbuf *out,
                       int *forgotten)
{
    if (n < 3)
        crash("short command", "cluster forget");
    long long id = godis_parse_id(a[2]->str);
    if (!id || strlen(a[2]->str) != a[2]->len)
        crash("cluster forget with a non-numeric id", a[2]->str);
    if (!standin_wait_leader(s)) {
        sb_fmt(out, "-propose canceled by context\r\n");
        return;
    }
    if (id == s->self_id) {
        standin_replicate_final_push(s);
        *forgotten = 1;
        sb_fmt(out, "+OK\r\n");
        return;
    }
    if (forward_to_leader(s, a, n, from_peer, out))
        return;
    pthread_mutex_lock(&s->mu);
    if (standin_member_remove(s, id)) {
        standin_replicate_changed(s);
        standin_recheck_quorum(s);
        standin_event(s, "applied-forget %lld", id);
    }
    standin_state_save(s, NULL, NULL);
    pthread_mutex_unlock(&s->mu);
    GD_INFO("cluster forget applied", "id", a[2]->str);
    reply_proposal_ok(s, out);
}

static void cmd_members(standin *s, sbuf *out)
{
    pthread_mutex_lock(&s->mu);
    sb_fmt(out, "*%d\r\n", s->nmembers);
    for (int i = 0; i < s->nmembers; i++) {
        char item[GODIS_MAX_URL + 32];
        snprintf(item, sizeof(item), "%lld@%s", s->members[i].id, s->members[i].url);
        sb_bulkz(out, item);
    }
    pthread_mutex_unlock(&s->mu);
}

/* `standin fault refuse on|off` / `standin fault delay-ms N`: the fault flags at run time,
 * so a test can hold one member's answers back in the middle of an operator's step. */
static void cmd_fault(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    if (n == 4 && !strcmp(a[2]->str, "refuse") &&
        (!strcmp(a[3]->str, "on") || !strcmp(a[3]->str, "off"))) {
        s->fault_refuse = !strcmp(a[3]->str, "on");
    } else if (n == 4 && !strcmp(a[2]->str, "delay-ms") && atoi(a[3]->str) >= 0) {
        s->fault_delay_ms = atoi(a[3]->str);
    } else if (n == 4 && !strcmp(a[2]->str, "delay-membership-ms") && atoi(a[3]->str) >= 0) {
        s->fault_delay_membership_ms = atoi(a[3]->str);
    } else {
        sb_fmt(out, "-ERR usage: standin fault refuse on|off | standin fault delay-ms N | "
                    "standin fault delay-membership-ms N\r\n");
        return;
    }
    GD_INFO("fault set", "fault", a[2]->str, "value", a[3]->str);
    sb_fmt(out, "+OK\r\n");
}

static void cmd_standin(standin *s, godis_reply **a, size_t n, sbuf *out)
{
    const char *verb = a[1]->str;
    if (!strcmp(verb, "members"))
        cmd_members(s, out);
    else if (!strcmp(verb, "sync"))
        standin_replicate_receive(s, a, n, out);
    else if (!strcmp(verb, "kvsync"))
        standin_kv_receive(s, a, n, out);
    else if (!strcmp(verb, "vote"))
        standin_peer_vote(s, a, n, out);
    else if (!strcmp(verb, "heartbeat"))
        standin_peer_heartbeat(s, a, n, out);
    else if (!strcmp(verb, "leading"))
        standin_peer_leading(s, a, n, out);
    else if (!strcmp(verb, "stats"))
        standin_cmd_stats(s, out);
    else if (!strcmp(verb, "events"))
        standin_cmd_events(s, out);
    else if (!strcmp(verb, "campaign"))
        standin_cmd_campaign(s, out);
    else if (!strcmp(verb, "fault"))
        cmd_fault(s, a, n, out);
    else
        sb_fmt(out, "-ERR unknown command\r\n");
}

/* Answers one request into out. Sets *forgotten when this member was removed. */
static void handle(standin *s, const godis_reply *req, int from_peer, sbuf *out, int *forgotten)
{
    if (req->type == GODIS_REPLY_NIL || (req->type == GODIS_REPLY_ARRAY && req->n == 0)) {
        sb_fmt(out, "-empty request\r\n");
        return;
    }
    if (req->type != GODIS_REPLY_ARRAY) {
        sb_fmt(out, "-invalid format\r\n");
        return;
    }
    godis_reply **a = req->elems;
    size_t n = req->n;
    for (size_t i = 0; i < n; i++)
        if (a[i]->type != GODIS_REPLY_BULK && a[i]->type != GODIS_REPLY_STATUS)
            crash("non-string argument", "interface conversion");
    const char *name = a[0]->str;
    if (!strcmp(name, "hello"))
        cmd_hello(s, out);
    else if (!strcmp(name, "set"))
        cmd_set(s, a, n, out);
    else if (!strcmp(name, "get"))
        cmd_get(s, a, n, out);
    else if (!strcmp(name, "mget"))
        cmd_mget(s, a, n, out);
    else if (!strcmp(name, "cluster")) {
        if (n < 2)
            crash("short command", "cluster");
        if (!strcmp(a[1]->str, "meet"))
            cmd_meet(s, a, n, from_peer, out);
        else if (!strcmp(a[1]->str, "forget"))
            cmd_forget(s, a, n, from_peer, out, forgotten);
        else
            sb_fmt(out, "-ERR unknown command\r\n");
    } else if (!strcmp(name, "standin") && n >= 2)
        cmd_standin(s, a, n, out);   /* stand-in extensions, see standin.h */
    else
        sb_fmt(out, "-ERR unknown command\r\n");
}

/* ------------------------------------------------------------------------------------------
 * Connection loop */

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void *standin_conn_thread(void *arg)
{
    standin *s = &g_standin;
    int fd = ((int *)arg)[0], peer_port = ((int *)arg)[1];
    free(arg);
    size_t cap = 16384, len = 0;
    const size_t maxcap = GODIS_MAX_BULK * 4;
    char *buf = malloc(cap);
    sbuf out = {0};
    while (buf) {
        /* Answer every complete request already buffered (pipelining works). */
        godis_reply *req = NULL;
        size_t used = 0;
        gd_err e = godis_reply_parse(buf, len, &req, &used);
        if (e != GD_OK) {
            GD_WARN("failed to read request; closing connection", "error", gd_strerror(e));
            break;
        }
        if (req) {
            int forgotten = 0;
            out.len = 0;
            int membership = req->type == GODIS_REPLY_ARRAY && req->n >= 2 &&
                             req->elems[0]->str && !strcmp(req->elems[0]->str, "cluster");
            handle(s, req, peer_port, &out, &forgotten);
            godis_reply_destroy(&req);
            memmove(buf, buf + used, len - used);
            len -= used;
            int delay = s->fault_delay_ms > 0 ? s->fault_delay_ms
                        : membership ? s->fault_delay_membership_ms : 0;
            if (delay > 0 && !peer_port)   /* faults are the client port's */
                sleep_ms(delay);
            int wrc = send_all(fd, out.p, out.len);
            if (forgotten) {
                GD_INFO("I've been removed from the cluster! Shutting down.");
                standin_request_exit(s, 'F');
            }
            if (wrc != 0)
                break;
            continue;
        }
        if (len == cap) {
            if (cap >= maxcap)
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    free(buf);
    free(out.p);
    close(fd);
    __atomic_sub_fetch(&s->nconns, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
