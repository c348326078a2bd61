/* worker_link.c — the worker's end of the control channel: one ZeroMQ DEALER to the
 * manager's ROUTER, speaking GDW1 (docs/PROTOCOL.md §2).
 *
 * control.c parses and formats the messages without sockets (so they are unit-tested); this
 * file does the socket I/O on the main thread and hands each message to the shard logic
 * (worker_shards.c) or the stop/lease state the main loop reads. */
#include "worker_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_log.h"
#include "gd_time.h"
#include "gd_metrics.h"

static gd_err send_frames(worker *w, const char **frames, const size_t *lens, int n)
{
    for (int i = 0; i < n; i++) {
        if (zmq_send(w->control, frames[i], lens[i], i < n - 1 ? ZMQ_SNDMORE : 0) < 0) {
            gd_log(GD_LOG_ERROR, "control: send failed", "error", zmq_strerror(errno), NULL);
            return GD_ERR_ZMQ;
        }
    }
    return GD_OK;
}

void worker_send_strs(worker *w, const char **frames, int n)
{
    size_t lens[8];
    for (int i = 0; i < n; i++)
        lens[i] = strlen(frames[i]);
    send_frames(w, frames, lens, n);
}

void worker_send_hello(worker *w)
{
    char idx[16], pid[16], stamp[24];
    int64_t now = gd_mono_ms();
    snprintf(idx, sizeof idx, "%d", w->o->index);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(stamp, sizeof stamp, "%lld", (long long)now);
    if (w->o->remote) {
        /* PROTOCOL.md §3.3: the stamp comes back in LEASE */
        const char *f[] = {GD_PROTO_WORKER, "HELLO", "remote", pid, stamp,
                           w->o->worker_name ? w->o->worker_name : "worker"};
        worker_send_strs(w, f, 6);
    } else {
        const char *f[] = {GD_PROTO_WORKER, "HELLO", idx, pid};
        worker_send_strs(w, f, 4);
    }
    w->last_hello_ms = now;
}

/* A remote LEASE: our deadline is our stamp plus what the manager granted from when that
 * stamp reached it — never later than the manager's view, whatever the message's delay (a
 * LEASE read after a SIGSTOP is already expired). Converted to the wall clock the fence
 * reads. */
static void remote_lease(worker *w, const gdw_msg *m)
{
    int64_t left = m->echo_ms + m->remaining_ms - gd_mono_ms();
    if (left > 0)
        gd_fence_extend(&w->fence, gd_wall_ms() + left);
}

void worker_send_revoked(worker *w, const worker_revoked *r)
{
    if (!w->control || !r->shards || !r->pending)
        return;
    const char *f[] = {GD_PROTO_WORKER, "REVOKED", r->seq, r->shards, r->pending};
    worker_send_strs(w, f, 5);
}

void worker_send_error(worker *w, const char *why)
{
    const char *f[] = {GD_PROTO_WORKER, "ERROR", why};
    worker_send_strs(w, f, 3);
}

static char *render_metrics(worker *w)
{
    gd_sbuf b;
    gd_sbuf_init(&b);
    controllers_render_metrics(w->ctrls, w->nctrls, &b);
    if (w->set)
        controllers_render_key_metrics(w->ctrls, w->nctrls, w->set->key_metrics, &b);
    gd_prom_header(&b, "godis_worker_shards_active", "gauge",
                   "Shards whose keys this worker reconciles");
    int n = 0;
    for (int i = 0; i < GD_NSHARDS; i++)
        n += w->active[i];
    gd_prom_sample(&b, "godis_worker_shards_active", "", n);
    gd_prom_header(&b, "godis_worker_cache_objects", "gauge",
                   "Objects in the worker's cache replica");
    for (int i = 0; i < w->nsubs; i++) {
        char lab[80];
        snprintf(lab, sizeof lab, "kind=\"%s\"", w->subs[i].kind);
        gd_prom_sample(&b, "godis_worker_cache_objects", lab,
                       (double)cache_count(w->cache, w->subs[i].kind));
    }
    gd_prom_header(&b, "godis_worker_lease_valid", "gauge",
                   "1 while the worker may start writes (lease deadline not passed)");
    gd_prom_sample(&b, "godis_worker_lease_valid", "", gd_fence_open(&w->fence) ? 1 : 0);
    return gd_sbuf_detach(&b);
}

static void handle_message(worker *w, const gdw_msg *m)
{
    switch (m->type) {
    case GDW_ASSIGN: {
        cJSON *pending = m->pending ? cJSON_Duplicate(m->pending, 1) : NULL;
        worker_start_loading(w, m->shards, m->nshards, &pending);
        cJSON_Delete(pending);
        break;
    }
    case GDW_REVOKE:
        if (!worker_handle_revoke(w, m))
            worker_send_error(w, "too many revocations in progress");
        break;
    case GDW_LEASE:
        if (w->o->remote && m->has_remote)
            remote_lease(w, m);
        else if (!w->o->remote)     /* a remote worker shares no clock with the manager */
            gd_fence_extend(&w->fence, m->deadline_ms);
        break;
    case GDW_PING: {
        char seq[24], stamp[24];
        snprintf(seq, sizeof seq, "%llu", (unsigned long long)m->seq);
        snprintf(stamp, sizeof stamp, "%lld", (long long)gd_mono_ms());
        char *text = render_metrics(w);
        const char *f[] = {GD_PROTO_WORKER, "PONG", seq, text ? text : "", stamp};
        worker_send_strs(w, f, w->o->remote ? 5 : 4);
        free(text);
        break;
    }
    case GDW_STOP:
        gd_log(GD_LOG_INFO, "STOP from the manager", NULL);
        w->stopping = true;
        w->stop_deadline_wall_ms = m->deadline_ms;
        break;
    case GDW_ERROR:
        gd_log(GD_LOG_WARN, "manager reported an error", "message", m->text, NULL);
        if (w->o->remote && strstr(m->text, "no HELLO"))
            w->reconnect = true;
        break;
    }
}

/* Reads every message waiting on the control socket. */
void worker_drain_control(worker *w)
{
    for (;;) {
        zmq_msg_t parts[8];
        gdw_frame frames[8];
        int n = 0, more = 1;
        bool too_many = false;
        while (more) {
            zmq_msg_t tmp;
            zmq_msg_init(&tmp);
            if (zmq_msg_recv(&tmp, w->control, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&tmp);
                for (int i = 0; i < n; i++)
                    zmq_msg_close(&parts[i]);
                return;         /* EAGAIN: nothing more */
            }
            more = zmq_msg_more(&tmp);
            if (n < 8) {
                parts[n] = tmp;
                frames[n].data = zmq_msg_data(&parts[n]);
                frames[n].len = zmq_msg_size(&parts[n]);
                n++;
            } else {
                too_many = true;
                zmq_msg_close(&tmp);
            }
        }
        w->last_heard_ms = gd_mono_ms();
        gdw_msg m;
        char why[200];
        if (too_many) {
            worker_send_error(w, "too many frames");
        } else if (gdw_parse(frames, n, &m, why, sizeof why) != GD_OK) {
            gd_log(GD_LOG_WARN, "control: malformed message", "reason", why, NULL);
            worker_send_error(w, why);
        } else {
            handle_message(w, &m);
            gdw_msg_clear(&m);
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&parts[i]);
    }
}

gd_err worker_setup_control(worker *w)
{
    if (!w->o->control_endpoint)
        return GD_OK;
    w->control = zmq_socket(w->zctx, ZMQ_DEALER);
    if (!w->control)
        return GD_ERR_ZMQ;
    char id[48];
    if (w->o->remote)       /* a new identity per connection: the manager tells them apart */
        snprintf(id, sizeof id, "r%d-%08x", (int)getpid(), (unsigned)(gd_mono_ns() ^ (uint64_t)rand()));
    else
        snprintf(id, sizeof id, "w%d-%d", w->o->index, (int)getpid());
    int linger = 500;
    zmq_setsockopt(w->control, ZMQ_ROUTING_ID, id, strlen(id));
    zmq_setsockopt(w->control, ZMQ_LINGER, &linger, sizeof linger);
    if (gd_curve_connect(w->control, w->o->control_endpoint, &w->o->curve,
                         w->o->server_public) != GD_OK) {
        gd_log(GD_LOG_ERROR, "cannot connect to the manager", "endpoint",
               w->o->control_endpoint, "error", zmq_strerror(errno), NULL);
        return GD_ERR_CONFIG;
    }
    worker_send_hello(w);
    w->last_heard_ms = gd_mono_ms();
    return GD_OK;
}
