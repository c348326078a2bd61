/* httpd_helper.c — see httpd_helper.h. Thread-per-connection libmicrohttpd, so a response
 * that sleeps (delays, slow chunks, held-open streams) never blocks other connections. */
#include "httpd_helper.h"
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct resp_node {
    httpd_resp r;               /* headers/body point into the node's own copies */
    char *headers, *body;
    struct resp_node *next;
} resp_node;

struct httpd {
    struct MHD_Daemon *d;
    int port;
    char url[64];
    bool tls, need_client_cert;
    volatile int stopping;
    pthread_mutex_t mu;
    resp_node *head, *tail;
    httpd_req **reqs;
    int nreqs, capreqs;
    int connections;                /* TCP connections accepted so far */
};

/* One request in flight; allocated by the URI log callback (which sees the raw URI). */
typedef struct {
    httpd *h;
    httpd_req *req;
    size_t body_cap;
    bool started;
} conn_ctx;

/* Streaming state of one chunked response. */
typedef struct {
    httpd *h;
    resp_node *n;
} stream_ctx;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void free_node(resp_node *n)
{
    if (!n)
        return;
    free(n->headers);
    free(n->body);
    free(n);
}

static void *uri_logger(void *cls, const char *uri, struct MHD_Connection *con)
{
    (void)con;
    conn_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->h = cls;
    c->req = calloc(1, sizeof *c->req);
    if (!c->req) {
        free(c);
        return NULL;
    }
    snprintf(c->req->uri, sizeof c->req->uri, "%s", uri);
    return c;
}

static void completed(void *cls, struct MHD_Connection *con, void **req_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls; (void)con; (void)toe;
    conn_ctx *c = *req_cls;
    if (!c)
        return;
    if (c->req) {              /* never recorded (aborted early) */
        free(c->req->body);
        free(c->req);
    }
    free(c);
    *req_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *con, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)con; (void)socket_ctx;
    httpd *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        pthread_mutex_lock(&h->mu);
        h->connections++;
        pthread_mutex_unlock(&h->mu);
    }
}

static void copy_header(struct MHD_Connection *con, const char *name, char *dst, size_t cap)
{
    const char *v = MHD_lookup_connection_value(con, MHD_HEADER_KIND, name);
    snprintf(dst, cap, "%s", v ? v : "");
}

static bool client_cert_verified(struct MHD_Connection *con)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return false;
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned int n = 0, status = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
    if (!certs || n == 0)
        return false;
    return gnutls_certificate_verify_peers2(s, &status) == 0 && status == 0;
}

static void record(httpd *h, conn_ctx *c)
{
    pthread_mutex_lock(&h->mu);
    if (h->nreqs == h->capreqs) {
        int ncap = h->capreqs ? h->capreqs * 2 : 64;
        httpd_req **nr = realloc(h->reqs, (size_t)ncap * sizeof *nr);
        if (!nr) {
            pthread_mutex_unlock(&h->mu);
            return;
        }
        h->reqs = nr;
        h->capreqs = ncap;
    }
    h->reqs[h->nreqs++] = c->req;
    c->req = NULL;                 /* owned by the server record now */
    pthread_mutex_unlock(&h->mu);
}

static resp_node *next_response(httpd *h)
{
    pthread_mutex_lock(&h->mu);
    resp_node *n = h->head;
    if (n) {
        h->head = n->next;
        if (!h->head)
            h->tail = NULL;
    }
    pthread_mutex_unlock(&h->mu);
    return n;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream_ctx *s = cls;
    const httpd_resp *r = &s->n->r;
    size_t end = r->body_len;
    if (r->cut && r->cut_at < end)
        end = r->cut_at;
    if (pos >= end) {
        if (r->cut)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        for (int waited = 0; waited < r->hang_ms && !__atomic_load_n(&s->h->stopping, __ATOMIC_ACQUIRE); waited += 10)
            sleep_ms(10);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (pos > 0 && r->chunk_delay_ms > 0)
        sleep_ms(r->chunk_delay_ms);
    size_t n = end - pos;
    if (n > r->chunk)
        n = r->chunk;
    if (n > max)
        n = max;
    memcpy(buf, r->body + pos, n);
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream_ctx *s = cls;
    free_node(s->n);
    free(s);
}

static void add_headers(struct MHD_Response *resp, const char *headers)
{
    bool have_ct = false;
    for (const char *p = headers; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        if (len < sizeof line) {
            memcpy(line, p, len);
            line[len] = '\0';
            char *colon = strchr(line, ':');
            if (colon) {
                *colon = '\0';
                char *v = colon + 1;
                while (*v == ' ')
                    v++;
                if (strcasecmp(line, "Content-Type") == 0)
                    have_ct = true;
                MHD_add_response_header(resp, line, v);
            }
        }
        p += len + (eol ? 1 : 0);
    }
    if (!have_ct)
        MHD_add_response_header(resp, "Content-Type", "application/json");
}

static enum MHD_Result respond(struct MHD_Connection *con, httpd *h, const httpd_req *req)
{
    resp_node *n = next_response(h);
    char echo[4400];
    struct MHD_Response *resp;
    int status = 200;
    if (!n) {
        snprintf(echo, sizeof echo, "{\"method\":\"%s\",\"uri\":\"%s\",\"body_len\":%zu}",
                 req->method, req->uri, req->body_len);
        resp = MHD_create_response_from_buffer(strlen(echo), echo, MHD_RESPMEM_MUST_COPY);
        add_headers(resp, NULL);
    } else {
        for (int waited = 0; waited < n->r.delay_ms &&
                             !__atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE); waited += 10)
            sleep_ms(10);                 /* cut short by httpd_stop */
        status = n->r.status ? n->r.status : 200;
        const char *headers = n->headers;
        if (n->r.chunk > 0) {
            stream_ctx *s = calloc(1, sizeof *s);
            if (!s) {
                free_node(n);
                return MHD_NO;
            }
            s->h = h;
            s->n = n;
            resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                     stream_reader, s, stream_free);
        } else {
            resp = MHD_create_response_from_buffer(n->r.body_len, n->body,
                                                   MHD_RESPMEM_MUST_COPY);
        }
        if (resp)
            add_headers(resp, headers);
        if (n->r.chunk == 0)
            free_node(n);
    }
    if (!resp)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(con, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *con, const char *url,
                               const char *method, const char *version,
                               const char *upload, size_t *upload_size, void **req_cls)
{
    (void)url; (void)version;
    httpd *h = cls;
    conn_ctx *c = *req_cls;
    if (!c || !c->req)
        return MHD_NO;
    httpd_req *req = c->req;
    if (!c->started) {
        c->started = true;
        snprintf(req->method, sizeof req->method, "%s", method);
        copy_header(con, "Content-Type", req->content_type, sizeof req->content_type);
        copy_header(con, "Authorization", req->authorization, sizeof req->authorization);
        copy_header(con, "User-Agent", req->user_agent, sizeof req->user_agent);
        copy_header(con, "Accept", req->accept, sizeof req->accept);
        if (h->tls)
            req->client_cert_ok = client_cert_verified(con);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (req->body_len + *upload_size + 1 > c->body_cap) {
            size_t ncap = (req->body_len + *upload_size + 1) * 2;
            char *nb = realloc(req->body, ncap);
            if (!nb)
                return MHD_NO;
            req->body = nb;
            c->body_cap = ncap;
        }
        memcpy(req->body + req->body_len, upload, *upload_size);
        req->body_len += *upload_size;
        req->body[req->body_len] = '\0';
        *upload_size = 0;
        return MHD_YES;
    }
    httpd_req snapshot = *req;     /* for the echo; the record moves to the server */
    snapshot.body = NULL;
    bool denied = h->need_client_cert && !req->client_cert_ok;
    record(h, c);
    if (denied) {
        static const char body[] = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
                                   "\"client certificate required\",\"reason\":"
                                   "\"Unauthorized\",\"code\":401}";
        struct MHD_Response *resp = MHD_create_response_from_buffer(
            sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
        enum MHD_Result ret = MHD_queue_response(con, 401, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    return respond(con, h, &snapshot);
}

httpd *httpd_start(const httpd_tls *tls)
{
    httpd *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    pthread_mutex_init(&h->mu, NULL);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    h->tls = tls && tls->cert_pem && tls->key_pem;
    h->need_client_cert = h->tls && tls->client_ca_pem;
    struct MHD_OptionItem opts[10];
    int k = 0;
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &sa};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_logger, h};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, h};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL};
    if (h->tls) {
        flags |= MHD_USE_TLS;
        opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)tls->key_pem};
        opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)tls->cert_pem};
        if (tls->client_ca_pem)
            opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                                (void *)tls->client_ca_pem};
    }
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (!h->d) {
        pthread_mutex_destroy(&h->mu);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : 0;
    snprintf(h->url, sizeof h->url, "%s://127.0.0.1:%d", h->tls ? "https" : "http", h->port);
    return h;
}

void httpd_stop(httpd **hp)
{
    if (!hp || !*hp)
        return;
    httpd *h = *hp;
    __atomic_store_n(&h->stopping, 1, __ATOMIC_RELEASE);
    MHD_stop_daemon(h->d);
    for (resp_node *n = h->head, *nx; n; n = nx) {
        nx = n->next;
        free_node(n);
    }
    for (int i = 0; i < h->nreqs; i++) {
        free(h->reqs[i]->body);
        free(h->reqs[i]);
    }
    free(h->reqs);
    pthread_mutex_destroy(&h->mu);
    free(h);
    *hp = NULL;
}

int httpd_port(const httpd *h) { return h->port; }
const char *httpd_url(const httpd *h) { return h->url; }

void httpd_push(httpd *h, const httpd_resp *r)
{
    resp_node *n = calloc(1, sizeof *n);
    if (!n)
        abort();
    n->r = *r;
    if (r->headers && !(n->headers = strdup(r->headers)))
        abort();
    size_t blen = r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0;
    n->body = malloc(blen + 1);
    if (!n->body)
        abort();
    if (blen)
        memcpy(n->body, r->body, blen);
    n->body[blen] = '\0';
    n->r.body = n->body;
    n->r.body_len = blen;
    n->r.headers = n->headers;
    pthread_mutex_lock(&h->mu);
    if (h->tail)
        h->tail->next = n;
    else
        h->head = n;
    h->tail = n;
    pthread_mutex_unlock(&h->mu);
}

int httpd_request_count(httpd *h)
{
    pthread_mutex_lock(&h->mu);
    int n = h->nreqs;
    pthread_mutex_unlock(&h->mu);
    return n;
}

int httpd_connection_count(httpd *h)
{
    pthread_mutex_lock(&h->mu);
    int n = h->connections;
    pthread_mutex_unlock(&h->mu);
    return n;
}

const httpd_req *httpd_request(httpd *h, int i)
{
    pthread_mutex_lock(&h->mu);
    if (i < 0)
        i += h->nreqs;
    const httpd_req *r = (i >= 0 && i < h->nreqs) ? h->reqs[i] : NULL;
    pthread_mutex_unlock(&h->mu);
    return r;
}

/* ---- certificates, made in memory ---- */

static char *pem_of(int (*write)(BIO *, void *), void *obj)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b && write(b, obj)) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        out = malloc((size_t)n + 1);
        if (out) {
            memcpy(out, data, (size_t)n);
            out[n] = '\0';
        }
    }
    BIO_free(b);
    return out;
}
static int write_cert(BIO *b, void *x) { return PEM_write_bio_X509(b, x); }
static int write_key(BIO *b, void *k)
{
    return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!e)
        return 0;
    int ok = X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok;
}

/* kind: 0 CA, 1 server, 2 client. Self-signed when issuer is NULL. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                       int kind, long serial)
{
    X509 *x = X509_new();
    if (!x)
        return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 7 * 86400);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    int ok = add_ext(x, &ctx, NID_subject_key_identifier, "hash");
    if (kind == 0) {
        ok = ok && add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        ok = ok && add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
             add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
             add_ext(x, &ctx, NID_ext_key_usage, kind == 1 ? "serverAuth" : "clientAuth") &&
             add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always");
        if (kind == 1)
            ok = ok && add_ext(x, &ctx, NID_subject_alt_name,
                               "IP:127.0.0.1,DNS:localhost,DNS:kubernetes.test");
    }
    if (!ok || !X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

httpd_tls_material *httpd_tls_material_new(void)
{
    httpd_tls_material *m = calloc(1, sizeof *m);
    EVP_PKEY *k[5] = {0};
    X509 *x[5] = {0};
    bool ok = m != NULL;
    for (int i = 0; ok && i < 5; i++)
        ok = (k[i] = EVP_EC_gen("P-256")) != NULL;
    /* 0 CA, 1 other CA, 2 server (by CA), 3 client (by CA), 4 rogue client (by other CA) */
    ok = ok && (x[0] = make_cert(k[0], "godis-test-ca", NULL, NULL, 0, 1)) &&
         (x[1] = make_cert(k[1], "unrelated-ca", NULL, NULL, 0, 2)) &&
         (x[2] = make_cert(k[2], "kubernetes.test", x[0], k[0], 1, 3)) &&
         (x[3] = make_cert(k[3], "godis-test-client", x[0], k[0], 2, 4)) &&
         (x[4] = make_cert(k[4], "rogue-client", x[1], k[1], 2, 5));
    if (ok) {
        m->ca_pem = pem_of(write_cert, x[0]);
        m->other_ca_pem = pem_of(write_cert, x[1]);
        m->server_cert_pem = pem_of(write_cert, x[2]);
        m->server_key_pem = pem_of(write_key, k[2]);
        m->client_cert_pem = pem_of(write_cert, x[3]);
        m->client_key_pem = pem_of(write_key, k[3]);
        m->rogue_cert_pem = pem_of(write_cert, x[4]);
        m->rogue_key_pem = pem_of(write_key, k[4]);
        ok = m->ca_pem && m->other_ca_pem && m->server_cert_pem && m->server_key_pem &&
             m->client_cert_pem && m->client_key_pem && m->rogue_cert_pem && m->rogue_key_pem;
    }
    for (int i = 0; i < 5; i++) {
        X509_free(x[i]);
        EVP_PKEY_free(k[i]);
    }
    if (!ok)
        httpd_tls_material_destroy(&m);
    return m;
}

void httpd_tls_material_destroy(httpd_tls_material **mp)
{
    if (!mp || !*mp)
        return;
    httpd_tls_material *m = *mp;
    free(m->ca_pem);
    free(m->other_ca_pem);
    free(m->server_cert_pem);
    free(m->server_key_pem);
    free(m->client_cert_pem);
    free(m->client_key_pem);
    free(m->rogue_cert_pem);
    free(m->rogue_key_pem);
    free(m);
    *mp = NULL;
}
