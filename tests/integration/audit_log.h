/* audit_log.h — reads the API server's audit log (tools/devcluster writes it: JSON lines of
 * audit.k8s.io/v1 Events, one per completed write, path in $DEVCLUSTER_AUDIT_LOG), the API
 * server's own record of who wrote what and when. Tests use it to prove orderings of writes
 * from the server's clock instead of from the writers' own logs. */
#ifndef AUDIT_LOG_H
#define AUDIT_LOG_H
#include <stdint.h>

typedef struct {
    int64_t recv_us;            /* requestReceivedTimestamp, µs since the epoch */
    int64_t done_us;            /* stageTimestamp (ResponseComplete), µs since the epoch */
    int code;                   /* responseStatus.code (0 when absent) */
    char verb[24];
    char resource[64];          /* objectRef.resource, "/" and the subresource if any */
    char name[256];             /* objectRef.name ("" for a collection) */
    char user_agent[320];
} audit_event;

/* "2026-11-22T14:00:09.782450Z" → µs since the epoch; -1 when malformed. */
int64_t audit_time_us(const char *rfc3339);

/* Every ResponseComplete event of the log at path (and of its rotated files beside it,
 * "<stem>-*.log") whose userAgent contains ua_part, into *out (malloc'd, caller frees).
 * Returns the count, or -1 when the log cannot be read or *out cannot be allocated.
 * Malformed lines are skipped and counted in *bad (may be NULL). */
int audit_events(const char *path, const char *ua_part, audit_event **out, int *bad);

#endif
