/* testing_reconcilers.c — reconciler sets for tests and benchmarks (--reconciler noop|sleepy),
 * linked only into bin/tests/godis-worker (see the Makefile), never into the shipped worker.
 *
 * Both serve the "godiscluster" controller (For GodisCluster) so the standard mapping feeds
 * them. With --reconciler-arg "record=<file>" every reconcile appends one line when it
 * starts and one when it ends, each with a single write(2) to an O_APPEND descriptor, so
 * lines from concurrent threads never interleave:
 *     S <controller> <key> <monotonic ns> <wall-clock us> <pid>
 *     E <controller> <key> <monotonic ns> <pid>
 * (CLOCK_MONOTONIC is one clock for the whole machine, so lines of several workers
 * compare.)
 * A checker then proves that every key was reconciled and that no two reconciles of one key
 * overlapped, and measures event → reconcile latency from the wall-clock stamps.
 * "sleepy" additionally sleeps a random 0..sleep_ms (default 20) milliseconds.
 * With "write=status" a reconcile then writes status.observedGeneration = the cached
 * metadata.generation (merge patch on the status subresource) through the fenced,
 * read-your-own-writes path, so a test can check every final state on the API server.
 * With "requeue_ms=<n>" (and write=status) a successful write asks to run again after n ms
 * while the object exists: a steady stream of writes for tests of fencing, which need writes in flight
 * at the moment a manager is stopped. With "ns=<namespace>" keys of other namespaces are
 * done at once, untouched (the informers watch the whole cluster, where other tests keep
 * their own objects). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cache.h"
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"
#include "gd_time.h"
#include "reconciler.h"

typedef struct {
    int fd;             /* -1: no record */
    int sleep_ms;
    int requeue_ms;     /* 0: done after one reconcile */
    bool write_status;
    char ns_prefix[256];    /* "<ns>/" or "": every key */
} testrec;

static gd_err parse_arg(const char *arg, testrec *t)
{
    if (!arg || !*arg)
        return GD_OK;
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return GD_ERR_NOMEM;
    gd_err rc = GD_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == GD_OK;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            rc = GD_ERR_CONFIG;
            break;
        }
        *eq = '\0';
        const char *v = eq + 1;
        if (strcmp(tok, "record") == 0) {
            t->fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (t->fd < 0)
                rc = GD_ERR_IO;
        } else if (strcmp(tok, "write") == 0) {
            if (strcmp(v, "status") != 0)
                rc = GD_ERR_CONFIG;
            t->write_status = true;
        } else if (strcmp(tok, "ns") == 0) {
            if (!*v || strchr(v, '/') ||
                (size_t)snprintf(t->ns_prefix, sizeof t->ns_prefix, "%s/", v) >= sizeof t->ns_prefix)
                rc = GD_ERR_CONFIG;
        } else if (strcmp(tok, "sleep_ms") == 0 || strcmp(tok, "requeue_ms") == 0) {
            char *end;
            long ms = strtol(v, &end, 10);
            if (*end || end == v || ms < 0 || ms > 60000)
                rc = GD_ERR_CONFIG;
            else if (tok[0] == 's')
                t->sleep_ms = (int)ms;
            else
                t->requeue_ms = (int)ms;
        } else {
            rc = GD_ERR_CONFIG;
        }
    }
    if (rc != GD_OK)
        gd_log(GD_LOG_ERROR, "bad --reconciler-arg (want record=<file>,sleep_ms=<n>,"
               "write=status,requeue_ms=<n>,ns=<namespace>)", "arg", arg, NULL);
    free(copy);
    return rc;
}

static gd_err testrec_init(gd_worker_env *env, const char *arg, void **ud, int sleep_ms)
{
    testrec *t = calloc(1, sizeof *t);
    if (!t)
        return GD_ERR_NOMEM;
    t->fd = -1;
    t->sleep_ms = sleep_ms;
    gd_err rc = parse_arg(arg, t);
    if (rc == GD_OK && t->write_status && !env->client) {
        gd_log(GD_LOG_ERROR, "write=status needs an API server (--kubeconfig)", NULL);
        rc = GD_ERR_CONFIG;
    }
    if (rc != GD_OK) {
        if (t->fd >= 0)
            close(t->fd);
        free(t);
        return rc;
    }
    *ud = t;
    return GD_OK;
}

static gd_err noop_init(gd_worker_env *env, const char *arg, void **ud)
{
    return testrec_init(env, arg, ud, 0);
}

static gd_err sleepy_init(gd_worker_env *env, const char *arg, void **ud)
{
    return testrec_init(env, arg, ud, 20);
}

static void testrec_fini(void *ud)
{
    testrec *t = ud;
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    free(t);
}

static void record(testrec *t, char what, const char *ctrl, const char *key)
{
    if (t->fd < 0)
        return;
    char line[640];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int n = what == 'S'
                ? snprintf(line, sizeof line, "S %s %s %lld %lld %d\n", ctrl, key,
                           (long long)gd_mono_ns(),
                           (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, (int)getpid())
                : snprintf(line, sizeof line, "E %s %s %lld %d\n", ctrl, key,
                           (long long)gd_mono_ns(), (int)getpid());
    if (n > 0 && (size_t)n < sizeof line && write(t->fd, line, (size_t)n) != n)
        gd_log(GD_LOG_WARN, "test reconciler: record write failed", NULL);
}

/* status.observedGeneration := metadata.generation, fenced and recorded. */
static gd_result write_status(rec_ctx *ctx, const char *key)
{
    cJSON *obj = cache_get(ctx->env->cache, "GodisCluster", key);
    if (!obj)
        return gd_done();                       /* deleted meanwhile */
    char patch[96], ns[256], name[256];
    snprintf(patch, sizeof patch, "{\"status\":{\"observedGeneration\":%lld}}",
             (long long)gd_meta_generation(obj));
    snprintf(ns, sizeof ns, "%s", gd_meta_namespace(obj));
    snprintf(name, sizeof name, "%s", gd_meta_name(obj));
    cJSON_Delete(obj);
    gd_err rc = rec_may_write(ctx);
    if (rc != GD_OK)
        return gd_error(rc);
    cJSON *out = NULL;
    k8s_status st;
    rc = k8s_patch(ctx->env->client, &K8S_RES_GODISCLUSTERS, ns, name, K8S_PATCH_MERGE, patch,
                   "status", &out, &st);
    if (rc == GD_ERR_NOT_FOUND)
        return gd_done();
    if (rc != GD_OK) {
        gd_log(GD_LOG_WARN, "test reconciler: status patch failed", "key", key, "error",
               gd_strerror(rc), "message", st.message, NULL);
        return gd_error(rc);
    }
    rec_record_write(ctx, "GodisCluster", key, gd_meta_rv(out), false);
    cJSON_Delete(out);
    const testrec *t = ctx->ud;
    return t->requeue_ms > 0 ? gd_requeue_after(t->requeue_ms) : gd_done();
}

static gd_result testrec_reconcile(rec_ctx *ctx, const char *key)
{
    testrec *t = ctx->ud;
    if (t->ns_prefix[0] && strncmp(key, t->ns_prefix, strlen(t->ns_prefix)) != 0)
        return gd_done();
    record(t, 'S', ctx->controller_name, key);
    if (t->sleep_ms > 0)
        gd_sleep_ms((int64_t)(gd_rand01() * (t->sleep_ms + 1)));
    gd_result r = t->write_status ? write_status(ctx, key) : gd_done();
    record(t, 'E', ctx->controller_name, key);
    return r;
}

static gd_reconciler_set noop_set = {
    .name = "noop",
    .help = "test: returns at once (record=<file> logs starts/ends)",
    .ncontrollers = 1,
    .controllers = {{"godiscluster", "GodisCluster", testrec_reconcile}},
    .init = noop_init,
    .fini = testrec_fini,
};
GD_RECONCILER_SET(noop_set)

static gd_reconciler_set sleepy_set = {
    .name = "sleepy",
    .help = "test: sleeps 0..sleep_ms ms at random (sleep_ms=<n>,record=<file>,"
            "write=status,requeue_ms=<n>,ns=<ns>)",
    .ncontrollers = 1,
    .controllers = {{"godiscluster", "GodisCluster", testrec_reconcile}},
    .init = sleepy_init,
    .fini = testrec_fini,
};
GD_RECONCILER_SET(sleepy_set)
