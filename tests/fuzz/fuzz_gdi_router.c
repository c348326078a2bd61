/* fuzz_gdi_router.c — what a subscriber (or anything that can reach the socket) sends an
 * informer's ROUTER (docs/PROTOCOL.md §1, GDI1): SNAPSHOT and STATS requests, with or
 * without a REQ envelope, with any frames, into informer/publisher.c's inf_pub_serve_one,
 * over real inproc ZeroMQ sockets. The informer holds a few objects on several topics.
 *
 * Every record of the input is one request (its frames, fuzz_util.h). Each reply must be
 * well-formed: GDI1 first, then OBJ (6 frames), END (6 frames, last of a snapshot), STATS (3)
 * or ERROR (3); requests are answered in order, one answer per request. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "fuzz_util.h"
#include "../../informer/store.c"
#include "../../informer/store_pack.c"
#include "../../informer/counters.c"
#include "../../informer/publisher.c"

static inf_pub *pub;
static void *dealer;
static inf_counters ctr;

static void setup(void)
{
    static volatile int stop;
    void *zctx = zmq_ctx_new();
    inf_pub_cfg c = {.zctx = zctx, .kind = "Pod", .pub_endpoint = "inproc://fz.pub",
                     .snap_endpoint = "inproc://fz.snap", .heartbeat_ms = 1000, .ctr = &ctr,
                     .stop = &stop};
    if (!(pub = inf_pub_new(&c))) abort();
    static const char *const objs[] = {
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"g-1-a\",\"namespace\":\"default\","
        "\"resourceVersion\":\"11\",\"labels\":{\"cluster-name\":\"g\"}}}",
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"h-2-b\",\"namespace\":\"ns\","
        "\"resourceVersion\":\"12\",\"labels\":{\"cluster-name\":\"h\"}}}",
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"loose\",\"namespace\":\"default\","
        "\"resourceVersion\":\"13\"}}",
    };
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        cJSON *o = cJSON_Parse(objs[i]);
        inf_update it = {.type = INF_UPD_UPSERT, .obj = inf_obj_from_json("Pod", o, NULL, 0, NULL)};
        snprintf(it.rv, sizeof it.rv, "%d", 11 + (int)i);
        if (!it.obj || inf_pub_apply(pub, &it) != GD_OK) abort();
        inf_obj_unref(it.obj);
        cJSON_Delete(o);
    }
    dealer = zmq_socket(zctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(dealer, ZMQ_RCVHWM, &zero, sizeof zero);
    if (zmq_connect(dealer, "inproc://fz.snap") != 0) abort();
}

static bool is(zmq_msg_t *m, const char *s)
{
    return zmq_msg_size(m) == strlen(s) && memcmp(zmq_msg_data(m), s, strlen(s)) == 0;
}

/* Reads the answers waiting on the DEALER; returns how many requests they answered. */
static int drain(void)
{
    int answered = 0;
    for (;;) {
        zmq_msg_t m[8];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t x;
            zmq_msg_init(&x);
            if (zmq_msg_recv(&x, dealer, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&x);
                if (n) abort();                 /* a half message */
                return answered;
            }
            more = zmq_msg_more(&x);
            if (n < 8) m[n++] = x;
            else abort();                       /* no reply has more than 7 frames */
        }
        int at = is(&m[0], "") ? 1 : 0;         /* the REQ envelope, echoed */
        if (n - at < 3 || !is(&m[at], "GDI1")) abort();
        zmq_msg_t *cmd = &m[at + 1];
        int nf = n - at;
        if (is(cmd, "OBJ")) {
            if (nf != 6) abort();
        } else if (is(cmd, "END")) {
            if (nf != 6) abort();
            answered++;
        } else if (is(cmd, "STATS") || is(cmd, "ERROR")) {
            if (nf != 3) abort();
            answered++;
        } else {
            abort();
        }
        for (int i = 0; i < n; i++) zmq_msg_close(&m[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    if (!pub) setup();
    size_t pos = 0;
    fz_record r;
    int sent = 0;
    while (fz_next_record(d, len, &pos, &r)) {
        for (int i = 0; i < r.n; i++)
            if (zmq_send(dealer, r.p[i], r.len[i], ZMQ_DONTWAIT | (i + 1 < r.n ? ZMQ_SNDMORE : 0)) < 0)
                abort();
        sent++;
        while (inf_pub_serve_one(pub) == GD_OK)
            ;
    }
    if (drain() != sent) abort();
    return 0;
}
