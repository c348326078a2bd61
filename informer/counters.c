/* counters.c — the informer's figures for the manager's /metrics, as Prometheus text.
 * Written by two threads (reflector: lists, watches, rv; publisher: the rest) as relaxed
 * atomics: each figure is independent, so no ordering between them is needed. */
#include "informer.h"
#include <stdio.h>
#include <stdlib.h>

#define LD(x) ((unsigned long long)atomic_load_explicit(&c->x, memory_order_relaxed))

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
    long long rv = (long long)atomic_load_explicit(&c->last_rv, memory_order_relaxed);
    char *out = NULL;
    int len = asprintf(&out,
        "# HELP godis_informer_objects Objects in the informer's cache.\n"
        "# TYPE godis_informer_objects gauge\n"
        "godis_informer_objects{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_events_published_total ADDED/MODIFIED/DELETED events published.\n"
        "# TYPE godis_informer_events_published_total counter\n"
        "godis_informer_events_published_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_messages_published_total Every PUB message (events, SYNCED, HEARTBEAT).\n"
        "# TYPE godis_informer_messages_published_total counter\n"
        "godis_informer_messages_published_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_lists_total Complete (possibly paginated) lists, the initial one included.\n"
        "# TYPE godis_informer_lists_total counter\n"
        "godis_informer_lists_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_relists_total Lists after the initial one (410 Gone, too large resource version).\n"
        "# TYPE godis_informer_relists_total counter\n"
        "godis_informer_relists_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_watch_restarts_total Watches re-established after the first.\n"
        "# TYPE godis_informer_watch_restarts_total counter\n"
        "godis_informer_watch_restarts_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_watch_errors_total Lists or watches that failed (retried with backoff).\n"
        "# TYPE godis_informer_watch_errors_total counter\n"
        "godis_informer_watch_errors_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_bad_objects_total Objects dropped because they could not be keyed or serialised.\n"
        "# TYPE godis_informer_bad_objects_total counter\n"
        "godis_informer_bad_objects_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_snapshots_total Snapshots served.\n"
        "# TYPE godis_informer_snapshots_total counter\n"
        "godis_informer_snapshots_total{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_synced 1 once the initial list was published.\n"
        "# TYPE godis_informer_synced gauge\n"
        "godis_informer_synced{kind=\"%s\"} %llu\n"
        "# HELP godis_informer_last_resource_version The last resourceVersion seen (list, event or bookmark).\n"
        "# TYPE godis_informer_last_resource_version gauge\n"
        "godis_informer_last_resource_version{kind=\"%s\"} %lld\n",
        k, LD(objects), k, LD(events_published), k, LD(messages_published), k, LD(lists),
        k, LD(relists), k, LD(watch_restarts), k, LD(watch_errors), k, LD(bad_objects),
        k, LD(snapshots), k, LD(synced), k, rv);
    return len < 0 ? NULL : out;
}
