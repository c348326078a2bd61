/* httpd_helper.h — a scriptable HTTP(S) server on 127.0.0.1 (libmicrohttpd) for tests.
 *
 * Responses are queued (FIFO) with httpd_push: status, headers, body, optionally streamed
 * chunked in pieces with delays, cut off mid-stream, or held open. With an empty queue the
 * server echoes the request as JSON {"method","uri","body_len"}. Every request is recorded
 * (method, raw URI, selected headers, body) for assertions.
 *
 * TLS: httpd_tls_material_new makes, in memory with OpenSSL, a CA, a server certificate
 * for 127.0.0.1 / localhost / kubernetes.test, a client certificate, and a second unrelated
 * CA with its own client certificate, so tests can check verification both ways. */
#ifndef HTTPD_HELPER_H
#define HTTPD_HELPER_H
#include <stdbool.h>
#include <stddef.h>

typedef struct httpd httpd;

typedef struct {
    int status;              /* 0: 200 */
    const char *headers;     /* "Name: value\n" lines, or NULL (Content-Type defaults to JSON) */
    const char *body;        /* NULL: empty */
    size_t body_len;         /* 0: strlen(body) */
    size_t chunk;            /* > 0: stream the body with chunked encoding, this many bytes a piece */
    int chunk_delay_ms;      /* pause before each piece after the first */
    int delay_ms;            /* pause before the response starts */
    bool cut;                /* chunked only: drop the connection after cut_at body bytes */
    size_t cut_at;
    int hang_ms;             /* chunked only: keep the stream open this long after the body */
} httpd_resp;

typedef struct {
    char method[16];
    char uri[4096];          /* raw request target as sent: path and query, still encoded */
    char content_type[128];
    char authorization[512];
    char user_agent[256];
    char accept[128];
    char *body;              /* NUL-terminated copy */
    size_t body_len;
    bool client_cert_ok;     /* TLS client certificate verified against client_ca_pem */
} httpd_req;

typedef struct {
    const char *cert_pem, *key_pem;   /* server identity; both set enables TLS */
    const char *client_ca_pem;        /* non-NULL: a verified client certificate is required
                                       * (requests without one get 401) */
} httpd_tls;

httpd *httpd_start(const httpd_tls *tls);   /* NULL tls: plain HTTP. NULL on failure. */
void   httpd_stop(httpd **h);
int    httpd_port(const httpd *h);
/* "http(s)://127.0.0.1:<port>" */
const char *httpd_url(const httpd *h);
void   httpd_push(httpd *h, const httpd_resp *r);   /* copied */
int    httpd_request_count(httpd *h);
int    httpd_connection_count(httpd *h);   /* TCP connections accepted (reuse check) */
/* The i-th recorded request (negative: from the end, -1 = last); NULL when out of range.
 * Valid until httpd_stop. */
const httpd_req *httpd_request(httpd *h, int i);

typedef struct {
    char *ca_pem, *other_ca_pem;
    char *server_cert_pem, *server_key_pem;
    char *client_cert_pem, *client_key_pem;   /* signed by ca */
    char *rogue_cert_pem, *rogue_key_pem;     /* signed by other_ca */
} httpd_tls_material;
httpd_tls_material *httpd_tls_material_new(void);
void httpd_tls_material_destroy(httpd_tls_material **m);

#endif
