/* fake_informer.c — see fake_informer.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "fake_informer.h"
#include "gd_time.h"

#define BTOPIC GD_NSHARDS
#define NNS 10

void finf_sendv(void *sock, int n, const char **f)
{
    for (int i = 0; i < n; i++)
        assert_true(zmq_send(sock, f[i], strlen(f[i]), i < n - 1 ? ZMQ_SNDMORE : 0) >= 0);
}

/* Same, behind a binary ROUTER identity frame. */
static void sendv_to(void *sock, const void *id, size_t idlen, int n, const char **f)
{
    assert_true(zmq_send(sock, id, idlen, ZMQ_SNDMORE) >= 0);
    finf_sendv(sock, n, f);
}

static char *status_json(finf *fi)
{
    cJSON *st = cJSON_CreateObject(), *topics = cJSON_AddObjectToObject(st, "topics");
    cJSON_AddStringToObject(st, "instance", "00c0ffee00c0ffee");
    cJSON_AddNumberToObject(st, "seq", (double)fi->gseq);
    cJSON_AddBoolToObject(st, "synced", 1);
    for (int t = 0; t <= GD_NSHARDS; t++) {
        if (!fi->tseq[t])
            continue;
        char name[8];
        gd_shard_topic(t == BTOPIC ? GD_SHARD_BROADCAST : t, name, sizeof name);
        cJSON_AddNumberToObject(topics, name, (double)fi->tseq[t]);
    }
    char *s = cJSON_PrintUnformatted(st);
    cJSON_Delete(st);
    return s;
}

static void publish(finf *fi, const char *type, int topic_idx, const char *key, const char *rv,
                    const char *body)
{
    char topic[8], seq[48];
    gd_shard_topic(topic_idx == BTOPIC ? GD_SHARD_BROADCAST : topic_idx, topic, sizeof topic);
    fi->gseq++;
    fi->tseq[topic_idx]++;
    snprintf(seq, sizeof seq, "%llu:%llu", (unsigned long long)fi->gseq,
             (unsigned long long)fi->tseq[topic_idx]);
    char *status = NULL;
    if (!body)
        body = status = status_json(fi);
    const char *f[] = {topic, "GDI1", seq, type, "GodisCluster", key, rv, body};
    finf_sendv(fi->pub, 8, f);
    free(status);
}

void finf_heartbeat(finf *fi, const char *type)
{
    char rv[24];
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)fi->rv);
    publish(fi, type, BTOPIC, "", rv, NULL);
    fi->last_hb_ms = gd_mono_ms();
}

void finf_put_cluster(finf *fi, int i, int generation)
{
    char ns[16], name[32];
    snprintf(ns, sizeof ns, "ns%d", i % NNS);
    snprintf(name, sizeof name, "c%d", i);
    fobj *o = &fi->objs[i];
    bool added = !o->body;
    fi->rv++;
    snprintf(o->key, sizeof o->key, "%s/%s", ns, name);
    snprintf(o->rv, sizeof o->rv, "%llu", (unsigned long long)fi->rv);
    o->shard = gd_shard_of_cluster(ns, name);
    cJSON *obj = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON_AddStringToObject(obj, "kind", "GodisCluster");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", ns);
    cJSON_AddStringToObject(meta, "resourceVersion", o->rv);
    cJSON_AddNumberToObject(meta, "generation", generation);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(obj, "spec"), "replicas", 3);
    free(o->body);
    o->body = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (i >= fi->nobjs)
        fi->nobjs = i + 1;
    publish(fi, added ? "ADDED" : "MODIFIED", o->shard, o->key, o->rv, o->body);
}

static bool topic_wanted(const char *list, int topic_idx)
{
    if (strcmp(list, "*") == 0)
        return true;
    char name[8];
    gd_shard_topic(topic_idx == BTOPIC ? GD_SHARD_BROADCAST : topic_idx, name, sizeof name);
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && memcmp(p, name, n) == 0)
            return true;
        p += l + (c ? 1 : 0);
    }
    return false;
}

static void serve_request(finf *fi)
{
    char frames[6][1200];
    size_t lens[6] = {0};
    int n = 0, more = 1;
    size_t more_sz = sizeof more;
    while (more) {
        int slot = n < 6 ? n : 5;
        int r = zmq_recv(fi->snap, frames[slot], 1199, 0);
        assert_true(r >= 0);
        lens[slot] = (size_t)(r < 1199 ? r : 1199);
        frames[slot][lens[slot]] = 0;
        n++;
        zmq_getsockopt(fi->snap, ZMQ_RCVMORE, &more, &more_sz);
    }
    assert_true(n >= 3);
    assert_string_equal(frames[1], "GDI1");
    const char *id = frames[0];
    size_t idlen = lens[0];
    if (strcmp(frames[2], "HEARTBEAT") == 0) {     /* identity, GDI1, HEARTBEAT */
        assert_int_equal(n, 3);
        fi->heartbeat_requests++;
        if (fi->predates_heartbeat_request) {
            const char *f[] = {"GDI1", "ERROR", "unknown command"};
            sendv_to(fi->snap, id, idlen, 3, f);
            return;
        }
        finf_heartbeat(fi, "HEARTBEAT");
        char gs[24];
        snprintf(gs, sizeof gs, "%llu", (unsigned long long)fi->gseq);
        const char *f[] = {"GDI1", "HEARTBEAT", gs};
        sendv_to(fi->snap, id, idlen, 3, f);
        return;
    }
    assert_int_equal(n, 4);         /* identity, GDI1, SNAPSHOT, topics */
    assert_string_equal(frames[2], "SNAPSHOT");
    const char *list = frames[3];
    for (int i = 0; i < fi->nobjs; i++) {
        fobj *o = &fi->objs[i];
        if (!o->body || !topic_wanted(list, o->shard))
            continue;
        char topic[8];
        gd_shard_topic(o->shard, topic, sizeof topic);
        const char *f[] = {"GDI1", "OBJ", o->key, o->rv, o->body, topic};
        sendv_to(fi->snap, id, idlen, 6, f);
    }
    cJSON *seqs = cJSON_CreateObject();
    for (int t = 0; t <= GD_NSHARDS; t++) {
        if (!topic_wanted(list, t) || (strcmp(list, "*") == 0 && !fi->tseq[t]))
            continue;
        char name[8];
        gd_shard_topic(t == BTOPIC ? GD_SHARD_BROADCAST : t, name, sizeof name);
        cJSON_AddNumberToObject(seqs, name, (double)fi->tseq[t]);
    }
    char *sj = cJSON_PrintUnformatted(seqs), *st = status_json(fi), gs[24];
    snprintf(gs, sizeof gs, "%llu", (unsigned long long)fi->gseq);
    const char *f[] = {"GDI1", "END", gs, sj, "1", st};
    sendv_to(fi->snap, id, idlen, 6, f);
    free(sj);
    free(st);
    cJSON_Delete(seqs);
}

void finf_serve(finf *fi, int ms)
{
    int64_t until = gd_mono_ms() + ms;
    do {
        zmq_pollitem_t pi = {.socket = fi->snap, .events = ZMQ_POLLIN};
        int64_t left = until - gd_mono_ms();
        zmq_poll(&pi, 1, left > 20 ? 20 : (left > 0 ? left : 0));
        if (pi.revents & ZMQ_POLLIN)
            serve_request(fi);
        if (gd_mono_ms() - fi->last_hb_ms >= 200)
            finf_heartbeat(fi, "HEARTBEAT");
    } while (gd_mono_ms() < until);
}

finf *finf_new(void *zctx, const char *dir, void *(*track)(void *sock))
{
    finf *fi = calloc(1, sizeof *fi);
    char ep[256];
    fi->pub = track(zmq_socket(zctx, ZMQ_PUB));
    fi->snap = track(zmq_socket(zctx, ZMQ_ROUTER));
    int linger = 0;
    zmq_setsockopt(fi->pub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(fi->snap, ZMQ_LINGER, &linger, sizeof linger);
    snprintf(ep, sizeof ep, "ipc://%s/GodisCluster.pub", dir);
    assert_int_equal(zmq_bind(fi->pub, ep), 0);
    snprintf(ep, sizeof ep, "ipc://%s/GodisCluster.snap", dir);
    assert_int_equal(zmq_bind(fi->snap, ep), 0);
    fi->rv = 1000;
    return fi;
}

void finf_destroy(finf *fi)
{
    for (int i = 0; i < fi->nobjs; i++)
        free(fi->objs[i].body);
    free(fi);
}
