/* gd_hoptrace.h — per-hop latency tracing for the pipeline benchmark.
 *
 * With GD_HOPTRACE=<dir> in the environment, a process records (event id, hop, monotonic
 * ns) at each instrumented hop of the informer → worker pipeline and writes them at exit to
 * <dir>/<proc>.<pid>.hops, one "id hop ns" line each (tools/bench/hoptrace.py merges the
 * files of one run and prints per-hop percentiles). The event id is the object's numeric
 * resourceVersion, unique per event in the replay source. Off (the default) a hop costs
 * one predictable branch; on, one atomic increment and a store into a preallocated array
 * (no locks, no syscalls), so the trace does not disturb what it measures. */
#ifndef GD_HOPTRACE_H
#define GD_HOPTRACE_H
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    GD_HOP_SENT = 0,        /* the replay wrote the event (its bench.godis/sent-ns stamp) */
    GD_HOP_INF_DECODED,     /* informer: the watch decoder handed the event over */
    GD_HOP_INF_QUEUED,      /* informer: handed to the publishing side */
    GD_HOP_INF_POPPED,      /* informer: the publishing side took it */
    GD_HOP_INF_SENT,        /* informer: zmq_send of the PUB message returned */
    GD_HOP_SUB_RECV,        /* worker: gd_sub received the PUB message */
    GD_HOP_SUB_APPLIED,     /* worker: the replica holds the object */
    GD_HOP_CACHE,           /* worker: the indexed cache holds it */
    GD_HOP_MAPPED,          /* worker: the mapping function runs */
    GD_HOP_ENQUEUED,        /* worker: the key is in the workqueue */
    GD_HOP_RECONCILE,       /* worker: a reconcile of the key started (id: cached rv) */
    GD_HOP__COUNT
} gd_hop;

extern bool gd_hoptrace_enabled;

/* Reads GD_HOPTRACE; when set, allocates the record array and registers the exit dump.
 * proc names the file ("informer", "worker"). */
void gd_hoptrace_init(const char *proc);
void gd_hoptrace_record(uint64_t id, gd_hop hop, int64_t ns);
/* id from a decimal resourceVersion string; ignored when not numeric. */
void gd_hoptrace_rv(const char *rv, gd_hop hop);
/* Writes the file now (also done at exit). */
void gd_hoptrace_dump(void);

static inline void gd_hop_rv(const char *rv, gd_hop hop)
{
    if (__builtin_expect(gd_hoptrace_enabled, 0))
        gd_hoptrace_rv(rv, hop);
}

#endif
