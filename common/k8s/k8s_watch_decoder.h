/* k8s_watch_decoder.h — turns a watch byte stream into whole events.
 *
 * The API server sends one JSON object per line ({"type":..,"object":..}\n), but libcurl
 * hands us bytes however the network split them: half an event, several events in one
 * read, lines longer than any buffer. The decoder accumulates until a newline, enforces a
 * per-event size cap (an oversized event is skipped to its end and reported, never
 * half-parsed), and hands out parsed events. */
#ifndef K8S_WATCH_DECODER_H
#define K8S_WATCH_DECODER_H
#include <stddef.h>
#include <cjson/cJSON.h>
#include "gd_err.h"

typedef struct k8s_watch_decoder k8s_watch_decoder;

/* Called for each whole event; obj is the parsed "object" (borrowed). Non-zero stops. */
typedef int (*k8s_watch_event_fn)(void *ud, const char *type, cJSON *obj);
/* Called for a line that is not a valid event (bad JSON, no type, oversized). */
typedef void (*k8s_watch_error_fn)(void *ud, gd_err err, const char *what);

k8s_watch_decoder *k8s_watch_decoder_new(size_t max_event_bytes, k8s_watch_event_fn on_event,
                                         k8s_watch_error_fn on_error, void *ud);
void k8s_watch_decoder_destroy(k8s_watch_decoder **d);
/* Optional: called with each whole line (trimmed, without '\n') before it is parsed. Returns
 * 1 when it consumed the line as an event (no parse, no on_event), 0 to have the line parsed
 * and delivered as usual, -1 to stop as on_event's non-zero does. For consumers with a
 * cheaper decoding of their common events (the informer's watch fast path). */
typedef int (*k8s_watch_line_fn)(void *ud, const char *line, size_t n);
void k8s_watch_decoder_set_line_fn(k8s_watch_decoder *d, k8s_watch_line_fn fn);
/* Feeds bytes. Returns GD_OK, or GD_ERR_CANCELLED when on_event asked to stop. */
gd_err k8s_watch_decoder_feed(k8s_watch_decoder *d, const char *buf, size_t len);
/* Bytes of an unfinished event still buffered (a non-zero value at stream end = truncated). */
size_t k8s_watch_decoder_pending(const k8s_watch_decoder *d);

#endif
