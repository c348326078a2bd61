/* statsclient.h — asks an informer for its STATS over its snapshot ROUTER (GDI1, see
 * docs/PROTOCOL.md section 1): the manager learns whether the informer's cache is synced
 * (for /readyz) and gathers its metrics (for /metrics). One DEALER per informer; a request
 * not answered in time is abandoned by closing and reopening the DEALER, so a late reply
 * can never be taken for the next one. */
#ifndef MGR_STATSCLIENT_H
#define MGR_STATSCLIENT_H
#include <stdbool.h>
#include <stdint.h>

typedef struct mgr_stats mgr_stats;

mgr_stats *mgr_stats_new(void *zctx, const char *snap_endpoint, int64_t period_ms);
void      mgr_stats_destroy(mgr_stats **s);
/* Sends a request when one is due (or due within a quarter of its interval), abandons a
 * late one. Call every loop iteration. */
void      mgr_stats_tick(mgr_stats *s);
/* When the next tick has something to do (monotonic ms): the next request, or the end of
 * the wait for the one in flight. INT64_MAX when nothing is due (no socket). */
int64_t   mgr_stats_due_ms(const mgr_stats *s);
void     *mgr_stats_socket(mgr_stats *s);     /* for zmq_poll (may change after a reset) */
/* Reads any reply without blocking. */
void      mgr_stats_dispatch(mgr_stats *s);
/* The informer restarted: forget what it said. */
void      mgr_stats_reset(mgr_stats *s);
bool        mgr_stats_synced(const mgr_stats *s);
const char *mgr_stats_text(const mgr_stats *s);  /* last STATS text, "" before the first */
/* Parses "godis_informer_synced{...} 1" out of a STATS text. */
bool        mgr_stats_text_synced(const char *text);

#endif
