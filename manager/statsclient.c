/* statsclient.c — STATS requests to one informer; see statsclient.h. */
#include "statsclient.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_time.h"

#define STATS_TIMEOUT_MS 3000
#define STATS_MAX_BYTES (1 << 20)

struct mgr_stats {
    void *zctx, *sock;
    char endpoint[300];
    int64_t period_ms, sent_ms, next_ms;
    int64_t early_ms;       /* how long before next_ms a tick may already send */
    bool synced;
    char *text;
};

static void open_sock(mgr_stats *s)
{
    s->sock = zmq_socket(s->zctx, ZMQ_DEALER);
    if (!s->sock) return;
    int zero = 0, one = 1;
    int64_t max = STATS_MAX_BYTES;
    zmq_setsockopt(s->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s->sock, ZMQ_IMMEDIATE, &one, sizeof one);   /* no queueing to nobody */
    zmq_setsockopt(s->sock, ZMQ_MAXMSGSIZE, &max, sizeof max);
    if (zmq_connect(s->sock, s->endpoint) != 0) {
        GD_WARN("cannot connect to informer", "endpoint", s->endpoint,
                "error", zmq_strerror(zmq_errno()));
    }
}

mgr_stats *mgr_stats_new(void *zctx, const char *ep, int64_t period_ms)
{
    mgr_stats *s = calloc(1, sizeof *s);
    if (!s || strlen(ep) >= sizeof s->endpoint) { free(s); return NULL; }
    s->zctx = zctx;
    snprintf(s->endpoint, sizeof s->endpoint, "%s", ep);
    s->period_ms = period_ms;
    s->text = strdup("");
    open_sock(s);
    if (!s->sock || !s->text) { mgr_stats_destroy(&s); return NULL; }
    return s;
}

void mgr_stats_destroy(mgr_stats **sp)
{
    if (!sp || !*sp) return;
    if ((*sp)->sock) zmq_close((*sp)->sock);
    free((*sp)->text);
    free(*sp);
    *sp = NULL;
}

void *mgr_stats_socket(mgr_stats *s) { return s->sock; }
bool mgr_stats_synced(const mgr_stats *s) { return s->synced; }
const char *mgr_stats_text(const mgr_stats *s) { return s->text; }

void mgr_stats_reset(mgr_stats *s)
{
    s->synced = false;
    free(s->text);
    s->text = strdup("");
    s->sent_ms = 0;
    s->next_ms = 0;
    s->early_ms = 0;
    if (s->sock) zmq_close(s->sock);
    open_sock(s);
}

/* When a request in flight is abandoned (tick and due agree). */
static int64_t abandon_at(const mgr_stats *s) { return s->sent_ms + STATS_TIMEOUT_MS + 1; }

void mgr_stats_tick(mgr_stats *s)
{
    int64_t now = gd_mono_ms();
    if (s->sent_ms && now >= abandon_at(s)) {
        /* abandoned: a reopened DEALER cannot receive the late answer */
        s->sent_ms = 0;
        s->synced = false;
        if (s->sock) zmq_close(s->sock);
        open_sock(s);
    }
    /* A request a little early is as good: the manager's loop ticks every informer's client
     * when any of them (or a heartbeat) wakes it, and the nine requests go out together
     * instead of waking it nine times a period. */
    if (s->sent_ms || now < s->next_ms - s->early_ms || !s->sock) return;
    if (zmq_send(s->sock, GD_PROTO_INFORMER, 4, ZMQ_SNDMORE | ZMQ_DONTWAIT) == 4 &&
        zmq_send(s->sock, "STATS", 5, ZMQ_DONTWAIT) == 5) {
        s->sent_ms = now;
        /* until synced, ask often: readiness waits on it */
        int64_t every = s->synced ? s->period_ms : 200;
        s->next_ms = now + every;
        s->early_ms = every / 4;
    } else {
        s->next_ms = now + 100;         /* not connected yet (ZMQ_IMMEDIATE) */
        s->early_ms = 0;
    }
}

int64_t mgr_stats_due_ms(const mgr_stats *s)
{
    if (s->sent_ms) return abandon_at(s);
    return s->sock ? s->next_ms : INT64_MAX;
}

bool mgr_stats_text_synced(const char *text)
{
    const char *p = text;
    while ((p = strstr(p, "godis_informer_synced")) != NULL) {
        bool line_start = p == text || p[-1] == '\n';
        const char *q = p + strlen("godis_informer_synced");
        p = q;
        if (!line_start || (*q != '{' && *q != ' ')) continue;
        if (*q == '{') {
            q = strchr(q, '}');
            if (!q) return false;
            q++;
        }
        while (*q == ' ') q++;
        return *q == '1';
    }
    return false;
}

void mgr_stats_dispatch(mgr_stats *s)
{
    while (s->sock) {
        zmq_msg_t f[3];
        int n = 0;
        bool more = true;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, s->sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&m);
                break;
            }
            more = zmq_msg_more(&m);
            if (n < 3) f[n++] = m;
            else zmq_msg_close(&m);
        }
        if (n == 0) return;
        bool ok = n == 3 && zmq_msg_size(&f[0]) == 4 && !memcmp(zmq_msg_data(&f[0]), "GDI1", 4) &&
                  zmq_msg_size(&f[1]) == 5 && !memcmp(zmq_msg_data(&f[1]), "STATS", 5);
        if (ok) {
            size_t l = zmq_msg_size(&f[2]);
            char *t = malloc(l + 1);
            if (t) {
                memcpy(t, zmq_msg_data(&f[2]), l);
                t[l] = '\0';
                free(s->text);
                s->text = t;
                s->synced = mgr_stats_text_synced(t);
            }
        } else {
            GD_WARN("unexpected reply to STATS", "endpoint", s->endpoint);
        }
        s->sent_ms = 0;
        for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
    }
}
