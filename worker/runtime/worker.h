/* worker.h — the godis-worker process: subscribers → cache → mapping → controllers, and the
 * GDW1 conversation with the manager (or flags alone in standalone mode). The kinds it
 * subscribes to and the reconciler set it runs by default come from the domain table
 * (gd_domain.h).
 *
 * The main thread owns the control DEALER and runs a poll loop; each informer kind has a
 * subscriber thread of its own (its SUB and snapshot sockets, worker_feed.c); reconciles run
 * on the controllers' own threads.
 *
 * Shards become active in two steps, so a reconcile never sees a half-loaded shard: ASSIGN
 * (or --shards) first makes the subscribers follow the shards and snapshot them ("loading");
 * once every subscriber is in sync the controllers take the shards, the ASSIGN's pending
 * keys are enqueued, and every cached object of those shards is mapped as if just added (a
 * full resync of the shard). Revoking runs the other way: the controllers stop taking the
 * shards' keys at once, queued and newly arriving keys become pending, and when no key of
 * those shards is in flight any more the worker answers REVOKED with the pending keys and
 * only then forgets the shards' objects. */
#ifndef WORKER_WORKER_H
#define WORKER_WORKER_H
#include <stdbool.h>
#include <stdint.h>
#include "gd_curve.h"
#include "gd_err.h"
#include "gd_proto.h"

#include "gd_domain.h"

#define WORKER_MAX_KINDS GD_DOMAIN_MAX_KINDS

typedef struct {
    char kind[48];
    char pub[256];
    char snap[256];
} worker_endpoint;

typedef struct {
    int index;                          /* --index; -1 when standalone */
    const char *control_endpoint;       /* NULL: standalone (no manager, no fence) */
    const char *runtime_dir;
    worker_endpoint informers[WORKER_MAX_KINDS];
    int ninformers;
    int shards[GD_NSHARDS];             /* standalone: --shards */
    int nshards;
    int max_concurrent;                 /* per controller */
    /* Per-controller rate limiter (client-go DefaultControllerRateLimiter by default). */
    int64_t queue_base_delay_ms, queue_max_delay_ms;
    double queue_qps;
    int queue_burst;
    bool queue_no_priority;             /* priority=0: resyncs queue as real changes do */
    int64_t heartbeat_ms;
    /* The API client's own token bucket (client-go's QPS/Burst): 50/100 by default. */
    double kube_api_qps;                /* < 0: no client-side limit */
    int kube_api_burst;
    const char *kubeconfig, *context;
    const char *reconciler, *reconciler_arg;
    const char *manager_identity;       /* NULL, or the manager's Lease identity: in User-Agent */
    int64_t stop_grace_ms;              /* SIGTERM: how long in-flight reconciles may take */
    const char *cluster_domain;         /* --cluster-domain: godis Service names' DNS suffix */
    int max_concurrent_rollouts;        /* --max-concurrent-rollouts (0: no limit) */
    const char *default_image;          /* --default-godis-image, or NULL: the domain's own */
    /* tcp:// endpoints (remote workers, PROTOCOL.md §3.2): our key pair, the server's key */
    gd_curve_keys curve;
    char server_public[GD_CURVE_Z85_LEN + 1];
    /* A remote worker (control endpoint over tcp://): remote HELLO/PONG/LEASE, and on STOP
     * or a silent manager it returns WORKER_RECONNECT instead of exiting (§3.1 step 3). */
    bool remote;
    const char *worker_name;            /* in the remote HELLO (default: the host name) */
    char *const *argv;                  /* remote: to re-exec when a reconnect cannot drain */
} worker_opts;

/* worker_run's result for a remote worker whose manager stopped it or went silent: drop
 * everything and find the leader again. Never a process exit code. */
#define WORKER_RECONNECT 100

/* A remote worker (--leader-lease NS/NAME): finds the leader in the Lease's annotation and
 * runs against it, again after every WORKER_RECONNECT, until a signal. Exit code. */
int worker_remote_main(worker_opts *o, const char *lease_ns, const char *lease_name);
/* True once SIGTERM/SIGINT arrived (after the first worker_run installed the handlers). */
bool worker_signalled(void);

void worker_opts_default(worker_opts *o);
/* Fills the endpoints of the domain's kinds from a runtime directory (PROTOCOL.md §2), in
 * the order the subscribers load them: the domain table lists parents first, the worker
 * loads children before parents, so a parent's keys are never reconciled against children
 * that have not arrived yet. */
gd_err worker_endpoints_from_dir(worker_opts *o, const char *dir);
/* Parses "Kind=PUB,SNAP;Kind=PUB,SNAP". */
gd_err worker_endpoints_parse(worker_opts *o, const char *spec, char *why, size_t cap);

/* Parses "base-ms=5,max-ms=1000000,qps=10,burst=100" (any subset) into o. */
/* True when an informer or the control endpoint is not ipc:// (it needs CURVE keys). */
bool worker_opts_need_curve(const worker_opts *o);
/* Loads --curve-key (our secret key) and --curve-server-public (the server's public key);
 * GD_ERR_CONFIG/IO/PARSE with why on a missing or bad file. */
gd_err worker_curve_load(worker_opts *o, const char *key_file, const char *server_file,
                         char *why, size_t cap);
gd_err worker_rate_limits_parse(worker_opts *o, const char *spec, char *why, size_t cap);

/* Runs until STOP, a signal, or a fatal error. Returns the process exit code. */
int worker_run(const worker_opts *o);

#endif
