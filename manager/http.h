/* http.h — /healthz, /readyz and /metrics on libmicrohttpd (one internal polling thread per
 * listening address). The handlers run on that thread: they must only read state the main
 * loop publishes under a lock. */
#ifndef GD_MGR_HTTP_H
#define GD_MGR_HTTP_H
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    /* Fill msg (one line) and return true when healthy / ready. */
    bool (*healthz)(void *ud, char *msg, size_t cap);
    bool (*readyz)(void *ud, char *msg, size_t cap);
    /* Prometheus text, malloc'd (freed by the server). */
    char *(*metrics)(void *ud);
} gd_http_handlers;

enum { GD_HTTP_HEALTH = 1, GD_HTTP_METRICS = 2 };

typedef struct gd_http gd_http;

/* Listens on host:port (an IPv4 literal, validated by config.c) serving the paths of `what`
 * (GD_HTTP_HEALTH and/or GD_HTTP_METRICS); port 0 picks a free port (gd_http_port).
 * NULL on failure, logged as one structured line naming flag (the flag that chose the
 * address), the address and the reason ("Address already in use"). */
gd_http *gd_http_start(const char *host, int port, int what, const gd_http_handlers *h, void *ud,
                       const char *flag);
int      gd_http_port(const gd_http *s);
void     gd_http_stop(gd_http **s);

#endif
