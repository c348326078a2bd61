/* http.h — /healthz, /readyz and /metrics on libmicrohttpd (one internal polling thread per
 * listening address). The handlers run on that thread: they must only read state the main
 * loop publishes under a lock. */
#ifndef MGR_HTTP_H
#define MGR_HTTP_H
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    /* Fill msg (one line) and return true when healthy / ready. */
    bool (*healthz)(void *ud, char *msg, size_t cap);
    bool (*readyz)(void *ud, char *msg, size_t cap);
    /* Prometheus text, malloc'd (freed by the server). */
    char *(*metrics)(void *ud);
} mgr_http_handlers;

enum { MGR_HTTP_HEALTH = 1, MGR_HTTP_METRICS = 2 };

typedef struct mgr_http mgr_http;

/* Listens on host:port (an IPv4 literal, validated by config.c) serving the paths of `what`
 * (MGR_HTTP_HEALTH and/or MGR_HTTP_METRICS); port 0 picks a free port (mgr_http_port).
 * NULL on failure, logged as one structured line naming flag (the flag that chose the
 * address), the address and the reason ("Address already in use"). */
mgr_http *mgr_http_start(const char *host, int port, int what, const mgr_http_handlers *h, void *ud,
                       const char *flag);
int      mgr_http_port(const mgr_http *s);
void     mgr_http_stop(mgr_http **s);

#endif
