/* counters.c — the informer's figures for the manager's /metrics, as Prometheus text
 * (written with gd_metrics.h, the processes' one text writer).
 * Written by two threads (reflector: lists, watches, rv; publisher: the rest) as relaxed
 * atomics: each figure is independent, so no ordering between them is needed. */
#include "informer.h"
#include <stdio.h>
#include <stdlib.h>
#include "gd_metrics.h"

#define LD(x) ((long long)atomic_load_explicit(&c->x, memory_order_relaxed))

char *inf_counters_render(const inf_counters *c, const char *kind)
{
    /* Escape the label value minimally: kinds are identifiers, but a --resource name could
     * in theory contain anything; keep only safe characters. */
    char k[64];
    size_t n = 0;
    for (const char *p = kind ? kind : ""; *p && n + 1 < sizeof k; p++)
        if (*p != '"' && *p != '\\' && *p != '\n')
            k[n++] = *p;
    k[n] = '\0';
    char labels[80];
    snprintf(labels, sizeof labels, "kind=\"%s\"", k);
    const gd_prom_int f[] = {
        {"godis_informer_objects", "gauge", "Objects in the informer's cache.", labels, LD(objects)},
        {"godis_informer_events_published_total", "counter",
         "ADDED/MODIFIED/DELETED events published.", labels, LD(events_published)},
        {"godis_informer_messages_published_total", "counter",
         "Every PUB message (events, SYNCED, HEARTBEAT).", labels, LD(messages_published)},
        {"godis_informer_lists_total", "counter",
         "Complete (possibly paginated) lists, the initial one included.", labels, LD(lists)},
        {"godis_informer_relists_total", "counter",
         "Lists after the initial one (410 Gone, too large resource version).", labels, LD(relists)},
        {"godis_informer_watch_restarts_total", "counter",
         "Watches re-established after the first.", labels, LD(watch_restarts)},
        {"godis_informer_watch_errors_total", "counter",
         "Lists or watches that failed (retried with backoff).", labels, LD(watch_errors)},
        {"godis_informer_bad_objects_total", "counter",
         "Objects dropped because they could not be keyed or serialised.", labels, LD(bad_objects)},
        {"godis_informer_snapshots_total", "counter", "Snapshots served.", labels, LD(snapshots)},
        {"godis_informer_synced", "gauge", "1 once the initial list was published.", labels, LD(synced)},
        {"godis_informer_last_resource_version", "gauge",
         "The last resourceVersion seen (list, event or bookmark).",
         labels, (long long)atomic_load_explicit(&c->last_rv, memory_order_relaxed)},
    };
    gd_sbuf b;
    gd_sbuf_init(&b);
    gd_prom_ints(&b, f, sizeof f / sizeof f[0]);
    /* one family, one sample per cause (a row without a name continues the family) */
    gd_prom_int ends[INF_END__COUNT];
    char el[INF_END__COUNT][112];
    for (int i = 0; i < INF_END__COUNT; i++) {
        snprintf(el[i], sizeof el[i], "%s,cause=\"%s\"", labels,
                 inf_watch_end_name((inf_watch_end)i));
        ends[i] = (gd_prom_int){i == 0 ? "godis_informer_watch_ends_total" : NULL, "counter",
                                "Watches that ended, by cause (see docs/PROTOCOL.md).", el[i],
                                (long long)atomic_load_explicit(&c->watch_ends[i],
                                                                memory_order_relaxed)};
    }
    gd_prom_ints(&b, ends, INF_END__COUNT);
    return gd_sbuf_detach(&b);
}

const char *inf_watch_end_name(inf_watch_end e)
{
    static const char *const N[INF_END__COUNT] = {
        [INF_END_TIMEOUT] = "timeout", [INF_END_CLOSED] = "closed",
        [INF_END_STALLED] = "stalled", [INF_END_TRUNCATED] = "truncated",
        [INF_END_GARBAGE] = "garbage", [INF_END_EXPIRED] = "expired",
        [INF_END_ERROR] = "error", [INF_END_QUIET] = "quiet",
    };
    return (unsigned)e < INF_END__COUNT ? N[e] : "unknown";
}
