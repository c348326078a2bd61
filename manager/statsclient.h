/* statsclient.h — asks an informer for its STATS over its snapshot ROUTER (GDI1, see
 * docs/PROTOCOL.md section 1): the manager learns whether the informer's cache is synced
 * (for /readyz) and gathers its metrics (for /metrics). One DEALER per informer; a request
 * not answered in time is abandoned by closing and reopening the DEALER, so a late reply
 * can never be taken for the next one. */
#ifndef GD_STATSCLIENT_H
#define GD_STATSCLIENT_H
#include <stdbool.h>
#include <stdint.h>

typedef struct gd_stats gd_stats;

gd_stats *gd_stats_new(void *zctx, const char *snap_endpoint, int64_t period_ms);
void      gd_stats_destroy(gd_stats **s);
/* Sends a request when one is due, abandons a late one. Call every loop iteration. */
void      gd_stats_tick(gd_stats *s);
void     *gd_stats_socket(gd_stats *s);     /* for zmq_poll (may change after a reset) */
/* Reads any reply without blocking. */
void      gd_stats_dispatch(gd_stats *s);
/* The informer restarted: forget what it said. */
void      gd_stats_reset(gd_stats *s);
bool        gd_stats_synced(const gd_stats *s);
const char *gd_stats_text(const gd_stats *s);  /* last STATS text, "" before the first */
/* Parses "godis_informer_synced{...} 1" out of a STATS text. */
bool        gd_stats_text_synced(const char *text);

#endif
