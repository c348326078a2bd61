/* control.c — GDW1 framing on the manager's ROUTER socket.
 *
 * A ROUTER with ROUTER_MANDATORY so a send to a worker that disconnected fails loudly
 * (EHOSTUNREACH) instead of vanishing. Every inbound message is checked frame by frame;
 * anything malformed is counted, logged and answered with ERROR, never trusted. */
#include "control.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_time.h"

#define MAX_FRAMES 8
#define MAX_FRAME_BYTES (4 << 20)   /* a PONG's metrics text is the largest */

typedef struct {
    bool connected;
    char identity[32];
    size_t idlen;
    int pid;
    uint64_t seq;                   /* last seq sent */
    int64_t last_heard_ms;
    bool remote;                    /* tcp:// worker in another pod (PROTOCOL.md §3.3) */
    uint64_t stamp;                 /* its monotonic stamp of its last HELLO/PONG */
    int64_t stamp_recv_ms;          /* our monotonic time when that arrived */
    int64_t lease_end_ms;           /* our monotonic time its last LEASE expires */
} conn_t;

struct mgr_control {
    void *sock;
    mgr_control_handlers h;
    void *ud;
    conn_t w[MGR_SHARDS_MAX_WORKERS];
    uint64_t rejected;
    int64_t remote_lease_cap_ms;    /* 0: no remote endpoint */
};

mgr_control *mgr_control_new(void *zctx, const char *endpoint, const mgr_control_handlers *h,
                           void *ud)
{
    mgr_control *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->h = *h;
    c->ud = ud;
    c->sock = zmq_socket(zctx, ZMQ_ROUTER);
    int one = 1, zero = 0;
    int64_t maxmsg = MAX_FRAME_BYTES;
    if (!c->sock || zmq_setsockopt(c->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one) ||
        zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof zero) ||
        zmq_setsockopt(c->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
        zmq_bind(c->sock, endpoint) != 0) {
        GD_ERROR("cannot bind the control socket", "endpoint", endpoint,
                 "error", zmq_strerror(zmq_errno()));
        if (c->sock) zmq_close(c->sock);
        free(c);
        return NULL;
    }
    return c;
}

void mgr_control_destroy(mgr_control **cp)
{
    if (!cp || !*cp) return;
    zmq_close((*cp)->sock);
    free(*cp);
    *cp = NULL;
}

gd_err mgr_control_bind_remote(mgr_control *c, const char *endpoint, const gd_curve_keys *keys,
                               int64_t lease_cap_ms)
{
    gd_err rc = gd_curve_bind(c->sock, endpoint, keys);
    if (rc != GD_OK) {
        GD_ERROR("cannot bind the remote control endpoint", "endpoint", endpoint, "error",
                 rc == GD_ERR_CONFIG ? "tcp:// needs CURVE keys" : zmq_strerror(zmq_errno()));
        return rc;
    }
    c->remote_lease_cap_ms = lease_cap_ms;
    return GD_OK;
}

bool mgr_control_is_remote(mgr_control *c, int i)
{
    return i >= 0 && i < MGR_SHARDS_MAX_WORKERS && c->w[i].connected && c->w[i].remote;
}

int64_t mgr_control_remote_lease_end(mgr_control *c, int i)
{
    return i >= 0 && i < MGR_SHARDS_MAX_WORKERS ? c->w[i].lease_end_ms : 0;
}

void *mgr_control_socket(mgr_control *c) { return c->sock; }
uint64_t mgr_control_rejected(mgr_control *c) { return c->rejected; }
bool mgr_control_connected(mgr_control *c, int i)
{
    return i >= 0 && i < MGR_SHARDS_MAX_WORKERS && c->w[i].connected;
}
int64_t mgr_control_last_heard(mgr_control *c, int i)
{
    return i >= 0 && i < MGR_SHARDS_MAX_WORKERS ? c->w[i].last_heard_ms : 0;
}
void mgr_control_forget(mgr_control *c, int i)
{
    if (i >= 0 && i < MGR_SHARDS_MAX_WORKERS) memset(&c->w[i], 0, sizeof c->w[i]);
}

/* Sends frames (NULL-terminated list of strings) to a raw identity. */
static gd_err send_raw(mgr_control *c, const char *id, size_t idlen, const char **frames,
                       const size_t *lens, int n)
{
    if (zmq_send(c->sock, id, idlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) return GD_ERR_ZMQ;
    for (int i = 0; i < n; i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        if (zmq_send(c->sock, frames[i], lens[i], flags) < 0) return GD_ERR_ZMQ;
    }
    return GD_OK;
}

static void send_error(mgr_control *c, const char *id, size_t idlen, const char *why)
{
    const char *f[] = {GD_PROTO_WORKER, "ERROR", why};
    size_t l[] = {4, 5, strlen(why)};
    send_raw(c, id, idlen, f, l, 3);
}

static void reject(mgr_control *c, const char *id, size_t idlen, const char *why)
{
    c->rejected++;
    char idtxt[40];
    snprintf(idtxt, sizeof idtxt, "%.*s", (int)(idlen < 32 ? idlen : 32), id);
    GD_WARN("rejected control message", "peer", idtxt, "reason", why);
    send_error(c, id, idlen, why);
}

/* Parses a decimal uint64 frame; false when it is not one. */
static bool parse_u64(const zmq_msg_t *m, uint64_t *out)
{
    size_t n = zmq_msg_size((zmq_msg_t *)m);
    const char *d = zmq_msg_data((zmq_msg_t *)m);
    if (n == 0 || n > 19) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9') return false;
        v = v * 10 + (uint64_t)(d[i] - '0');
    }
    *out = v;
    return true;
}

static bool frame_is(zmq_msg_t *m, const char *s)
{
    size_t n = strlen(s);
    return zmq_msg_size(m) == n && memcmp(zmq_msg_data(m), s, n) == 0;
}

/* "w<index>-<pid>" → index, pid. */
static bool parse_identity(const char *id, size_t len, int *index, int *pid)
{
    char buf[32];
    if (len < 4 || len >= sizeof buf || id[0] != 'w') return false;
    memcpy(buf, id, len);
    buf[len] = '\0';
    char *end;
    long i = strtol(buf + 1, &end, 10);
    if (end == buf + 1 || *end != '-' || i < 0 || i >= MGR_SHARDS_MAX_WORKERS) return false;
    char *p = end + 1;
    long pd = strtol(p, &end, 10);
    if (end == p || *end || pd <= 0 || pd > 4194304) return false;
    *index = (int)i;
    *pid = (int)pd;
    return true;
}

/* The worker index of an accepted connection with this identity, or -1. */
static int conn_of(mgr_control *c, const char *id, size_t idlen)
{
    for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++)
        if (c->w[i].connected && c->w[i].idlen == idlen && memcmp(c->w[i].identity, id, idlen) == 0)
            return i;
    return -1;
}

/* HELLO from a remote worker: GDW1 HELLO remote pid stamp name. Its slot is the one its
 * identity already has, else the first free remote slot. */
static void remote_hello(mgr_control *c, zmq_msg_t *f, int n, const char *id, size_t idlen)
{
    uint64_t pid, stamp;
    if (!c->h.on_remote_hello || !c->remote_lease_cap_ms) {
        reject(c, id, idlen, "HELLO: this manager takes no remote workers");
        return;
    }
    if (n != 7 || !parse_u64(&f[4], &pid) || !parse_u64(&f[5], &stamp) || idlen >= 32 ||
        zmq_msg_size(&f[6]) == 0 || zmq_msg_size(&f[6]) > 253) {
        reject(c, id, idlen, "HELLO: expected remote, pid, stamp, name");
        return;
    }
    int index = conn_of(c, id, idlen);
    for (int i = MGR_REMOTE_FIRST; index < 0 && i < MGR_SHARDS_MAX_WORKERS; i++)
        if (!c->w[i].connected) index = i;
    if (index < 0) {
        reject(c, id, idlen, "HELLO: no free remote worker slot");
        return;
    }
    char name[254];
    snprintf(name, sizeof name, "%.*s", (int)zmq_msg_size(&f[6]), (char *)zmq_msg_data(&f[6]));
    conn_t *w = &c->w[index];
    bool again = w->connected;
    if (!again) {                   /* connected first: the handler sends LEASE at once */
        memset(w, 0, sizeof *w);
        memcpy(w->identity, id, idlen);
        w->idlen = idlen;
        w->pid = (int)pid;
        w->connected = w->remote = true;
    }
    w->last_heard_ms = w->stamp_recv_ms = gd_mono_ms();
    w->stamp = stamp;
    if (!c->h.on_remote_hello(c->ud, index, name) && !again) {
        memset(w, 0, sizeof *w);
        reject(c, id, idlen, "HELLO: refused");
    }
}

static void handle(mgr_control *c, zmq_msg_t *f, int n)
{
    const char *id = zmq_msg_data(&f[0]);
    size_t idlen = zmq_msg_size(&f[0]);
    if (n < 3 || !frame_is(&f[1], GD_PROTO_WORKER)) {
        reject(c, id, idlen, "expected GDW1 and a command");
        return;
    }
    zmq_msg_t *cmd = &f[2];
    int index, pid;
    if (frame_is(cmd, "HELLO") && n >= 4 && frame_is(&f[3], "remote")) {
        remote_hello(c, f, n, id, idlen);
        return;
    }
    if (frame_is(cmd, "HELLO")) {
        uint64_t fi, fp;
        if (n != 5 || !parse_u64(&f[3], &fi) || !parse_u64(&f[4], &fp) ||
            !parse_identity(id, idlen, &index, &pid) || (uint64_t)index != fi ||
            (uint64_t)pid != fp) {
            reject(c, id, idlen, "HELLO: expected index and pid matching identity w<index>-<pid>");
            return;
        }
        if (!c->h.on_hello(c->ud, index, pid)) {
            reject(c, id, idlen, "HELLO: not a worker this manager started");
            return;
        }
        conn_t *w = &c->w[index];
        bool same = w->connected && w->pid == pid;
        if (!same) {
            memset(w, 0, sizeof *w);
            memcpy(w->identity, id, idlen);
            w->idlen = idlen;
            w->pid = pid;
            w->connected = true;
        }
        w->last_heard_ms = gd_mono_ms();
        return;
    }
    index = conn_of(c, id, idlen);
    if (index < 0) {
        reject(c, id, idlen, "no HELLO from this peer");
        return;
    }
    c->w[index].last_heard_ms = gd_mono_ms();
    uint64_t seq;
    if (frame_is(cmd, "PONG")) {
        uint64_t stamp;
        bool remote = c->w[index].remote;
        if (n < 4 || n > (remote ? 6 : 5) || !parse_u64(&f[3], &seq) ||
            (remote && (n != 6 || !parse_u64(&f[5], &stamp)))) {
            reject(c, id, idlen, remote ? "PONG: expected seq, metrics, stamp"
                                        : "PONG: expected seq [metrics]");
            return;
        }
        if (remote) {
            c->w[index].stamp = stamp;
            c->w[index].stamp_recv_ms = gd_mono_ms();
        }
        const char *m = n >= 5 ? zmq_msg_data(&f[4]) : "";
        size_t ml = n >= 5 ? zmq_msg_size(&f[4]) : 0;
        c->h.on_pong(c->ud, index, seq, m, ml);
    } else if (frame_is(cmd, "REVOKED")) {
        int shards[GD_NSHARDS], ns = 0;
        char list[GD_NSHARDS * 4 + 1];
        size_t ll = n >= 5 ? zmq_msg_size(&f[4]) : 0;
        if (n != 6 || !parse_u64(&f[3], &seq) || ll >= sizeof list) {
            reject(c, id, idlen, "REVOKED: expected seq, shards, pending keys");
            return;
        }
        memcpy(list, zmq_msg_data(&f[4]), ll);
        list[ll] = '\0';
        if (mgr_shards_parse_list(list, shards, GD_NSHARDS, &ns) != GD_OK) {
            reject(c, id, idlen, "REVOKED: bad shard list");
            return;
        }
        size_t pl = zmq_msg_size(&f[5]);
        char *pending = malloc(pl + 1);
        if (!pending) return;
        memcpy(pending, zmq_msg_data(&f[5]), pl);
        pending[pl] = '\0';
        c->h.on_revoked(c->ud, index, seq, shards, ns, pending);
        free(pending);
    } else if (frame_is(cmd, "ERROR")) {
        char why[200];
        size_t l = n >= 4 ? zmq_msg_size(&f[3]) : 0;
        snprintf(why, sizeof why, "%.*s", (int)(l < 199 ? l : 199), n >= 4 ? (char *)zmq_msg_data(&f[3]) : "");
        char idx[12];
        snprintf(idx, sizeof idx, "%d", index);
        GD_WARN("worker reported a protocol error", "worker", idx, "error", why);
    } else {
        reject(c, id, idlen, "unknown command");
    }
}

int mgr_control_dispatch(mgr_control *c)
{
    int handled = 0;
    for (;;) {
        zmq_msg_t f[MAX_FRAMES];
        int n = 0;
        bool more = true, overflow = false;
        zmq_msg_init(&f[0]);
        if (zmq_msg_recv(&f[0], c->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&f[0]);
            break;
        }
        n = 1;
        more = zmq_msg_more(&f[0]);
        while (more) {
            zmq_msg_t tmp;
            zmq_msg_init(&tmp);
            if (zmq_msg_recv(&tmp, c->sock, 0) < 0) { zmq_msg_close(&tmp); break; }
            more = zmq_msg_more(&tmp);
            if (n < MAX_FRAMES) f[n++] = tmp;
            else { overflow = true; zmq_msg_close(&tmp); }
        }
        if (overflow) reject(c, zmq_msg_data(&f[0]), zmq_msg_size(&f[0]), "too many frames");
        else handle(c, f, n);
        for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
        handled++;
    }
    return handled;
}

static gd_err send_to(mgr_control *c, int index, const char *verb, const char **args,
                      const size_t *lens, int nargs, uint64_t *seq_out)
{
    if (index < 0 || index >= MGR_SHARDS_MAX_WORKERS || !c->w[index].connected) return GD_ERR_ARG;
    conn_t *w = &c->w[index];
    char seq[24];
    uint64_t s = ++w->seq;
    snprintf(seq, sizeof seq, "%" PRIu64, s);
    const char *f[8] = {GD_PROTO_WORKER, verb, seq};
    size_t l[8] = {4, strlen(verb), strlen(seq)};
    for (int i = 0; i < nargs && i < 5; i++) {
        f[3 + i] = args[i];
        l[3 + i] = lens ? lens[i] : strlen(args[i]);
    }
    gd_err e = send_raw(c, w->identity, w->idlen, f, l, 3 + nargs);
    if (e != GD_OK) {
        char idx[12];
        snprintf(idx, sizeof idx, "%d", index);
        GD_WARN("cannot send to worker", "worker", idx, "message", verb,
                "error", zmq_strerror(zmq_errno()));
    }
    if (seq_out) *seq_out = s;
    return e;
}

gd_err mgr_control_assign(mgr_control *c, int index, const int *shards, int n,
                         const char *pending_json, uint64_t *seq_out)
{
    char list[GD_NSHARDS * 4 + 1];
    mgr_shards_format_list(shards, n, list, sizeof list);
    const char *a[] = {list, pending_json ? pending_json : "{}"};
    return send_to(c, index, "ASSIGN", a, NULL, 2, seq_out);
}

gd_err mgr_control_revoke(mgr_control *c, int index, const int *shards, int n, uint64_t *seq_out)
{
    char list[GD_NSHARDS * 4 + 1];
    mgr_shards_format_list(shards, n, list, sizeof list);
    const char *a[] = {list};
    return send_to(c, index, "REVOKE", a, NULL, 1, seq_out);
}

static gd_err send_ms(mgr_control *c, int index, const char *verb, int64_t ms)
{
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)ms);
    const char *a[] = {t};
    return send_to(c, index, verb, a, NULL, 1, NULL);
}

/* A remote worker shares no clock with us: its LEASE also carries the stamp of its last
 * PONG and how long the lease lasts from when that PONG reached us, so its deadline on its
 * own clock (stamp + remaining) is never later than ours (PROTOCOL.md §3.3). */
gd_err mgr_control_lease(mgr_control *c, int index, int64_t deadline_wall_ms)
{
    if (!mgr_control_is_remote(c, index))
        return send_ms(c, index, "LEASE", deadline_wall_ms);
    conn_t *w = &c->w[index];
    int64_t now = gd_mono_ms();
    int64_t recv_wall = gd_wall_ms() - (now - w->stamp_recv_ms);
    int64_t remaining = deadline_wall_ms - recv_wall;
    if (remaining > c->remote_lease_cap_ms)
        remaining = c->remote_lease_cap_ms;
    if (remaining <= 0)
        return GD_OK;                   /* nothing left to give: it fences itself */
    char d[24], echo[24], rem[24];
    snprintf(d, sizeof d, "%lld", (long long)deadline_wall_ms);
    snprintf(echo, sizeof echo, "%" PRIu64, w->stamp);
    snprintf(rem, sizeof rem, "%lld", (long long)remaining);
    if (w->stamp_recv_ms + remaining > w->lease_end_ms)
        w->lease_end_ms = w->stamp_recv_ms + remaining;
    const char *a[] = {d, echo, rem};
    return send_to(c, index, "LEASE", a, NULL, 3, NULL);
}

gd_err mgr_control_stop(mgr_control *c, int index, int64_t drain_deadline_wall_ms)
{
    return send_ms(c, index, "STOP", drain_deadline_wall_ms);
}

gd_err mgr_control_ping(mgr_control *c, int index)
{
    return send_to(c, index, "PING", NULL, NULL, 0, NULL);
}
