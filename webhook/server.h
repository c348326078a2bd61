/* server.h — the webhook's HTTPS endpoint on libmicrohttpd (TLS by GnuTLS, as Debian builds
 * it): POST /eviction answers AdmissionReviews (handler.c), GET /healthz answers "ok".
 * A thread per connection, because an answer waits on the API server (one GET, at most one
 * PATCH); a drain evicting a hundred pods at once is a hundred short connections. */
#ifndef WH_SERVER_H
#define WH_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include "certs.h"

typedef struct wh_server wh_server;

/* Answers one review body: returns the HTTP status and a malloc'd body (JSON for 200, a
 * line of text otherwise) in *out. */
typedef int (*wh_review_fn)(void *ud, const char *body, size_t len, char **out,
                            const char **content_type);

typedef struct {
    const char *host;         /* IPv4 literal */
    int port;                 /* 0: any free port (tests) */
    const char *client_ca;    /* PEM: require a client certificate it signed; NULL: none */
    wh_review_fn review;
    void *ud;
} wh_server_opts;

/* Starts serving with certs (copied). NULL (and a logged reason) on failure: the port is
 * taken, or the pair does not parse or does not match. */
wh_server *wh_server_start(const wh_server_opts *o, const wh_certs *certs);
int  wh_server_port(const wh_server *s);
/* A renewal or a changed --cert-dir: handshakes from now on get the new pair (copied); the
 * connections open, and the answers in progress on them, go on untouched (cert_slot.h says
 * why this is not a new server). false (and a logged reason): the old pair is still served. */
bool wh_server_set_certs(wh_server *s, const wh_certs *certs);
/* The pairs still in memory: the served one and the replaced ones an open connection holds. */
int  wh_server_pairs_alive(wh_server *s);
/* Stops accepting, closes the connections (an answer in progress is cut), frees: at exit. */
void wh_server_stop(wh_server **s);

#endif
