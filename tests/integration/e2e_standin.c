/* e2e_standin.c — see e2e_standin.h. */
#include "e2e_standin.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "godis_client.h"
#include "gd_json.h"

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool e2e_member_ip(k8s_client *c, const char *ns, const char *godis, char *ip, size_t cap)
{
    char sel[300];
    snprintf(sel, sizeof sel, "node-name=%s", godis);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *pods = NULL;
    ip[0] = '\0';
    if (k8s_list(c, &K8S_RES_PODS, ns, &lo, &pods, NULL) != GD_OK) return false;
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(pods, "items"))
        if (!gd_meta_deleting(p) && *gd_json_str_or(p, "status.podIP", ""))
            snprintf(ip, cap, "%s", gd_json_str_or(p, "status.podIP", ""));
    cJSON_Delete(pods);
    return ip[0] != '\0';
}

/* The stand-in's own extensions (stats, events) are read over its peer port, which the
 * client-port faults (refuse, delay-ms) leave alone: a test sees what happened on a member
 * even while that member holds the operator's answers back. */
static godis_reply *ask(const char *ip, int port, int argc, const char *const *argv)
{
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = 3000};
    godis_client *gc = godis_client_new(ip, port, &o);
    godis_reply *r = NULL;
    if (gc && godis_command(gc, &r, argc, argv) != GD_OK) r = NULL;
    godis_client_destroy(&gc);
    return r;
}

int e2e_standin_events(const char *ip, e2e_sev *out, int cap)
{
    const char *argv[] = {"standin", "events"};
    godis_reply *r = ask(ip, E2E_STANDIN_PEER_PORT, 2, argv);
    if (!r || r->type != GODIS_REPLY_ARRAY) {
        godis_reply_destroy(&r);
        return -1;
    }
    int n = 0;
    for (size_t i = 0; i < r->n && n < cap; i++) {
        const char *sp = strchr(r->elems[i]->str, ' ');
        if (!sp) continue;
        out[n].wall_us = atoll(r->elems[i]->str);
        snprintf(out[n].text, sizeof out[n].text, "%s", sp + 1);
        n++;
    }
    godis_reply_destroy(&r);
    return n;
}

long long e2e_standin_stat(const char *ip, const char *key)
{
    const char *argv[] = {"standin", "stats"};
    godis_reply *r = ask(ip, E2E_STANDIN_PEER_PORT, 2, argv);
    long long v = -1;
    for (size_t i = 0; r && r->type == GODIS_REPLY_ARRAY && i + 1 < r->n; i += 2)
        if (!strcmp(r->elems[i]->str, key) && r->elems[i + 1]->type == GODIS_REPLY_INTEGER)
            v = r->elems[i + 1]->integer;
    godis_reply_destroy(&r);
    return v;
}

bool e2e_standin_cmd(const char *ip, int port, int argc, const char *const *argv)
{
    const char *full[8] = {"standin"};
    for (int i = 0; i < argc && i < 7; i++) full[i + 1] = argv[i];
    godis_reply *r = ask(ip, port, argc + 1, full);
    bool ok = r && r->type == GODIS_REPLY_STATUS;
    godis_reply_destroy(&r);
    return ok;
}

#define MAX_EVENTS 4096

/* Calls fn for every event of every stand-in at ips[]. */
static void each_event(char ips[][64], int n, void (*fn)(const e2e_sev *ev, void *arg), void *arg)
{
    e2e_sev *evs = malloc(sizeof *evs * MAX_EVENTS);
    for (int i = 0; evs && i < n; i++) {
        int k = e2e_standin_events(ips[i], evs, MAX_EVENTS);
        for (int j = 0; j < k; j++) fn(&evs[j], arg);
    }
    free(evs);
}

typedef struct {
    int64_t id, at;
} forget_q;

static void forget_ev(const e2e_sev *ev, void *arg)
{
    forget_q *q = arg;
    char want[40];
    snprintf(want, sizeof want, "applied-forget %lld", (long long)q->id);
    if (strcmp(ev->text, want) == 0 && (!q->at || ev->wall_us < q->at)) q->at = ev->wall_us;
}

int64_t e2e_forget_time_us(char ips[][64], int n, int64_t id)
{
    forget_q q = {.id = id};
    each_event(ips, n, forget_ev, &q);
    return q.at;
}

typedef struct {
    int64_t from, to;
    long long terms[512];
    int n;
} elections_q;

static void election_ev(const e2e_sev *ev, void *arg)
{
    elections_q *q = arg;
    long long cand = 0, term = 0;
    if (ev->wall_us < q->from || ev->wall_us >= q->to) return;
    if (sscanf(ev->text, "vote-request %lld term %lld", &cand, &term) != 2 &&
        sscanf(ev->text, "campaign term %lld", &term) != 1)
        return;
    for (int i = 0; i < q->n; i++)
        if (q->terms[i] == term) return;
    if (q->n < 512) q->terms[q->n++] = term;
}

int e2e_elections_seen(char ips[][64], int n, int64_t from_us, int64_t to_us)
{
    elections_q q = {.from = from_us, .to = to_us};
    each_event(ips, n, election_ev, &q);
    return q.n;
}

typedef struct {
    int64_t id, from;
    int n;
} votes_q;

static void vote_ev(const e2e_sev *ev, void *arg)
{
    votes_q *q = arg;
    long long cand = 0, term = 0;
    if (ev->wall_us >= q->from && sscanf(ev->text, "vote-request %lld term %lld", &cand, &term) == 2 &&
        cand == q->id)
        q->n++;
}

int e2e_vote_requests_from(char ips[][64], int n, int64_t id, int64_t from_us)
{
    votes_q q = {.id = id, .from = from_us};
    each_event(ips, n, vote_ev, &q);
    return q.n;
}

/* ---- a member's process end ---- */

static void *watch_main(void *arg)
{
    e2e_member_watch *w = arg;
    char buf[256];
    for (;;) {
        ssize_t r = recv(w->fd, buf, sizeof buf, 0);
        if (r > 0 || (r < 0 && errno == EINTR)) continue;
        break;
    }
    if (!w->stopping) w->end_us = wall_us();
    return NULL;
}

bool e2e_member_watch_start(e2e_member_watch *w, int64_t id, const char *ip)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    snprintf(w->ip, sizeof w->ip, "%s", ip);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(6379)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) return false;
    if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) return false;   /* loopback only */
    w->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (w->fd < 0 || connect(w->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (w->fd >= 0) close(w->fd);
        w->fd = -1;
        return false;
    }
    return pthread_create(&w->th, NULL, watch_main, w) == 0;
}

int64_t e2e_member_watch_end(e2e_member_watch *w, int timeout_ms)
{
    if (w->fd < 0) return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    if (pthread_timedjoin_np(w->th, NULL, &until) != 0) {
        w->stopping = 1;                          /* still running: end the watch */
        shutdown(w->fd, SHUT_RDWR);
        pthread_join(w->th, NULL);
    }
    int64_t end = w->end_us;
    close(w->fd);
    w->fd = -1;
    return end;
}
