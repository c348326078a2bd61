/* k8s_http.c — the client object and the one place that talks libcurl.
 *
 * Connection reuse without sharing handles between threads: the client keeps a free list of
 * curl easy handles (mutex-protected). A request pops one (or makes one), uses it alone, and
 * pushes it back; a handle keeps its live connections across curl_easy_reset, so the next
 * request on it reuses the TCP+TLS connection. A CURLSH shares the DNS cache and TLS session
 * IDs between handles so even a fresh handle resumes TLS cheaply.
 *
 * Every option is set again per request (reset + setup) instead of remembering what a
 * previous request left on the handle — a watch and a PUT leave very different state.
 *
 * TLS: OpenSSL verifies the server against the kubeconfig's CA only (given as an in-memory
 * blob; system CAs are used when the kubeconfig has none). tls-server-name is honoured by
 * sending requests to https://<tls-server-name>:<port> and telling curl to connect to the
 * real host (CURLOPT_CONNECT_TO): SNI and the certificate name check then both use it. */
#include "k8s_client.h"
#include "k8s_internal.h"
#include "gd_log.h"
#include "gd_time.h"
#include "gd_version.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BODY_BYTES   (256u * 1024 * 1024)   /* a whole non-watch response */
#define MAX_ERROR_BYTES  (1024u * 1024)         /* an error body beside a stream */
#define MAX_IDLE_HANDLES 128   /* >= the busiest caller's concurrency (a worker: 2 controllers x 32
                                 * reconcilers); a handle dropped on return closes its
                                 * connection, and the next request pays a TLS handshake */
#define MAX_RETRY_AFTER_S 60                    /* longer waits go back to the caller */

struct k8s_client {
    k8s_config *cfg;
    k8s_client_opts opts;
    char *user_agent;
    char *base_url;                 /* scheme://host:port[/prefix], no trailing slash */
    struct curl_slist *connect_to;  /* tls-server-name mapping, or NULL */
    bool https;

    pthread_mutex_t pool_mu;
    CURL *idle[MAX_IDLE_HANDLES];
    int nidle;

    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];

    gd_bucket bucket;
    atomic_uint_fast64_t requests;

    k8s_auth *auth;                 /* bearer token (file) and exec plugin: k8s_auth.c */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;
static void curl_init_once(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

void k8s_client_opts_default(k8s_client_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->qps = 50;
    o->burst = 100;
    o->connect_timeout_ms = 5000;
    o->request_timeout_ms = 30000;
    o->max_retries_429 = 3;
    o->user_agent = NULL;
    o->http2 = true;
    o->exec_timeout_ms = 60000;
}

bool k8s_user_agent_word_ok(const char *s)
{
    if (!s)
        return false;
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || strchr("();\\", s[i]))
            return false;
    return true;
}

void k8s_delete_opts_default(k8s_delete_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->grace_period_seconds = -1;
}

/* ---- share locks ---- */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    (void)h; (void)access;
    k8s_client *c = ud;
    if (data >= 0 && data < CURL_LOCK_DATA_LAST)
        pthread_mutex_lock(&c->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    k8s_client *c = ud;
    if (data >= 0 && data < CURL_LOCK_DATA_LAST)
        pthread_mutex_unlock(&c->share_mu[data]);
}

/* ---- construction ---- */

/* Splits cfg->server into the base URL the requests use and, with tls-server-name, the
 * CONNECT_TO entry that sends them to the real address. */
static bool setup_endpoint(k8s_client *c, char *err, size_t errlen)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    bool ok = false;
    if (!u)
        return false;
    if (curl_url_set(u, CURLUPART_URL, c->cfg->server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(err, errlen, "server URL is not valid");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        path = NULL;
    if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0) {
        snprintf(err, errlen, "server URL scheme must be https or http");
        goto out;
    }
    c->https = strcmp(scheme, "https") == 0;
    size_t plen = path ? strlen(path) : 0;
    while (plen > 0 && path[plen - 1] == '/')
        plen--;
    const char *name = c->cfg->tls_server_name;
    bool remap = c->https && name && name[0] && strcmp(name, host) != 0;
    if (remap && (strpbrk(name, ":/[]@ ?#") || strlen(name) > 253)) {
        snprintf(err, errlen, "tls-server-name is not a host name");
        goto out;
    }
    size_t cap = strlen(scheme) + strlen(remap ? name : host) + strlen(port) + plen + 8;
    c->base_url = malloc(cap);
    if (!c->base_url)
        goto out;
    snprintf(c->base_url, cap, "%s://%s:%s%.*s", scheme, remap ? name : host, port, (int)plen,
             path ? path : "");
    if (remap) {
        char entry[600];
        snprintf(entry, sizeof entry, "%s:%s:%s:%s", name, port, host, port);
        c->connect_to = curl_slist_append(NULL, entry);
        if (!c->connect_to)
            goto out;
    }
    ok = true;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return ok;
}

k8s_client *k8s_client_new(k8s_config **cfgp, const k8s_client_opts *opts)
{
    if (!cfgp || !*cfgp)
        return NULL;
    k8s_config *cfg = *cfgp;
    *cfgp = NULL;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK || !cfg->server) {
        k8s_config_destroy(&cfg);
        return NULL;
    }
    k8s_client *c = calloc(1, sizeof *c);
    if (!c) {
        k8s_config_destroy(&cfg);
        return NULL;
    }
    c->cfg = cfg;
    if (opts)
        c->opts = *opts;
    else
        k8s_client_opts_default(&c->opts);
    if (c->opts.connect_timeout_ms <= 0)
        c->opts.connect_timeout_ms = 5000;
    if (c->opts.request_timeout_ms <= 0)
        c->opts.request_timeout_ms = 30000;
    if (c->opts.max_retries_429 < 0)
        c->opts.max_retries_429 = 0;
    char ua[160];
    snprintf(ua, sizeof ua, "godis-operator/%s", gd_version());
    c->user_agent = strdup(c->opts.user_agent ? c->opts.user_agent : ua);
    c->opts.user_agent = c->user_agent;
    pthread_mutex_init(&c->pool_mu, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_mu[i], NULL);
    gd_bucket_init(&c->bucket, c->opts.qps, c->opts.burst);
    atomic_init(&c->requests, 0);

    char err[160] = "out of memory";
    bool ok = c->user_agent && setup_endpoint(c, err, sizeof err);
    if (ok && !(c->auth = k8s_auth_new(cfg, c->opts.exec_timeout_ms)))
        ok = false;
    if (ok && (c->share = curl_share_init()) != NULL) {
        curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
    if (!ok) {
        gd_log(GD_LOG_ERROR, "cannot create the Kubernetes client", "server", cfg->server,
               "error", err, NULL);
        k8s_client_destroy(&c);
        return NULL;
    }
    return c;
}

void k8s_client_destroy(k8s_client **cp)
{
    if (!cp || !*cp)
        return;
    k8s_client *c = *cp;
    for (int i = 0; i < c->nidle; i++)
        curl_easy_cleanup(c->idle[i]);
    if (c->share)
        curl_share_cleanup(c->share);
    curl_slist_free_all(c->connect_to);
    k8s_auth_destroy(&c->auth);
    gd_bucket_destroy(&c->bucket);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_mu[i]);
    pthread_mutex_destroy(&c->pool_mu);
    free(c->base_url);
    free(c->user_agent);
    k8s_config_destroy(&c->cfg);
    free(c);
    *cp = NULL;
}

const k8s_config *k8s_client_config(const k8s_client *c) { return c ? c->cfg : NULL; }

uint64_t k8s_client_request_count(const k8s_client *c)
{
    return c ? (uint64_t)atomic_load(&((k8s_client *)c)->requests) : 0;
}

/* ---- handle pool ---- */

static CURL *pool_get(k8s_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->nidle > 0)
        h = c->idle[--c->nidle];
    pthread_mutex_unlock(&c->pool_mu);
    return h ? h : curl_easy_init();
}

static void pool_put(k8s_client *c, CURL *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&c->pool_mu);
    if (c->nidle < MAX_IDLE_HANDLES) {
        c->idle[c->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (h)
        curl_easy_cleanup(h);          /* more idle handles than we ever want to keep */
}

/* Appends "Authorization: Bearer <token>" when there is a token (k8s_auth.c decides). */
static struct curl_slist *add_auth_header(k8s_client *c, struct curl_slist *hdrs,
                                          const k8s_cred *cred, bool *ok)
{
    bool nomem = false;
    char *line = k8s_auth_header(c->auth, cred, &nomem);
    struct curl_slist *res = hdrs;
    if (line) {
        res = curl_slist_append(hdrs, line);
        explicit_bzero(line, strlen(line));
        free(line);
    }
    if (nomem || (line && !res)) {
        *ok = false;
        res = hdrs;
    }
    return res;
}

/* ---- one transfer ---- */

typedef struct {
    const k8s_http_req *rq;
    CURL *h;
    char *buf;
    size_t len, cap, max;
    bool too_large;
    int streaming;                  /* -1 unknown yet, 0 buffer, 1 to the sink */
    bool sink_stopped;
    bool stalled;                   /* the progress deadline (rq->idle_timeout_ms) passed */
    int64_t last_rx_ms;             /* monotonic time of the last byte received */
    char retry_after[32];
} xfer;

/* The progress deadline now: the caller's live value when it gave one. */
static long idle_deadline_ms(const k8s_http_req *rq)
{
    return rq->idle_timeout_live && rq->idle_timeout_ms > 0 ? *rq->idle_timeout_live
                                                            : rq->idle_timeout_ms;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->rq->idle_timeout_ms > 0)
        x->last_rx_ms = gd_mono_ms();
    if (x->streaming < 0) {
        long code = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        x->streaming = x->rq->sink && code >= 200 && code <= 299;
        x->max = x->rq->sink ? MAX_ERROR_BYTES : MAX_BODY_BYTES;
    }
    if (x->streaming) {
        if (x->rq->sink(x->rq->sink_ud, p, n) != 0) {
            x->sink_stopped = true;
            return 0;                   /* aborts the transfer with CURLE_WRITE_ERROR */
        }
        return n;
    }
    if (x->len + n > x->max) {
        x->too_large = true;
        return 0;
    }
    if (x->len + n + 1 > x->cap) {
        size_t ncap = x->cap ? x->cap : 16384;
        while (ncap < x->len + n + 1)
            ncap *= 2;
        char *nb = realloc(x->buf, ncap);
        if (!nb) {
            x->too_large = true;
            return 0;
        }
        x->buf = nb;
        x->cap = ncap;
    }
    memcpy(x->buf + x->len, p, n);
    x->len += n;
    x->buf[x->len] = '\0';
    return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->rq->idle_timeout_ms > 0)
        x->last_rx_ms = gd_mono_ms();
    if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        x->retry_after[0] = '\0';       /* a new response (after 100 Continue, say) */
    } else if (n > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        size_t vlen = n - 12;
        if (vlen >= sizeof x->retry_after)
            vlen = sizeof x->retry_after - 1;
        memcpy(x->retry_after, p + 12, vlen);
        x->retry_after[vlen] = '\0';
    }
    return n;
}

/* The stop flag is set by another thread: read it atomically (a plain volatile read is a
 * data race in C11, and ThreadSanitizer says so). Writers should use __atomic_store_n. */
static bool stop_requested(const volatile int *stop)
{
    return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE) != 0;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt; (void)dn; (void)ut; (void)un;
    const volatile int *stop = ud;
    return stop && stop_requested(stop) ? 1 : 0;
}

static bool setup_handle(k8s_client *c, CURL *h, const k8s_http_req *rq, xfer *x,
                         const k8s_cred *cred, struct curl_slist **hdrs, char *errbuf)
{
    curl_easy_reset(h);
    size_t ulen = strlen(c->base_url) + strlen(rq->path) + 1;
    char *url = malloc(ulen);
    if (!url)
        return false;
    snprintf(url, ulen, "%s%s", c->base_url, rq->path);
    CURLcode rc = curl_easy_setopt(h, CURLOPT_URL, url);      /* curl copies it */
    free(url);
    if (rc != CURLE_OK)
        return false;
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    bool h2 = c->opts.http2 && (!rq->watch || c->opts.watch_http2);  /* k8s_client.h: why */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     h2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
    /* TCP keepalive notices a peer that vanished without a FIN (a watch can be idle for
     * minutes, so a low-speed limit would kill healthy watches) */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    if (!rq->watch)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->opts.request_timeout_ms);
    else if (rq->watch_timeout_s > 0)   /* the server ends it at timeoutSeconds; allow slack */
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(rq->watch_timeout_s + 30) * 1000L);
    if (c->connect_to)
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);

    const k8s_config *cfg = c->cfg;
    if (c->https) {
        long verify = cfg->insecure_skip_tls_verify ? 0L : 1L;
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, verify);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
        if (cfg->ca_pem && cfg->ca_pem_len) {
            struct curl_blob ca = {cfg->ca_pem, cfg->ca_pem_len, CURL_BLOB_COPY};
            curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
            /* the kubeconfig's CA is the only trust anchor, as in client-go */
            curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
            curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
        }
        /* the exec plugin's certificate (a different blob never reuses a connection made
         * with the old one: curl compares them), else the kubeconfig's */
        const unsigned char *cp = cred && cred->cert_pem ? cred->cert_pem : cfg->cert_pem;
        const unsigned char *kp = cred && cred->cert_pem ? cred->key_pem : cfg->key_pem;
        size_t cl = cred && cred->cert_pem ? cred->cert_len : cfg->cert_pem_len;
        size_t kl = cred && cred->cert_pem ? cred->key_len : cfg->key_pem_len;
        if (cp && cl && kp && kl) {
            struct curl_blob cert = {(void *)cp, cl, CURL_BLOB_COPY};
            struct curl_blob key = {(void *)kp, kl, CURL_BLOB_COPY};
            curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
            curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
            curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
            curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
        }
    }

    bool ok = true;
    struct curl_slist *l = curl_slist_append(NULL, "Accept: application/json");
    if (l && rq->content_type && rq->body) {
        char ct[160];
        snprintf(ct, sizeof ct, "Content-Type: %s", rq->content_type);
        l = curl_slist_append(l, ct) ? l : (ok = false, l);
    }
    if (l)
        l = curl_slist_append(l, "Expect:") ? l : (ok = false, l);  /* no 100-continue wait */
    if (l)
        l = add_auth_header(c, l, cred, &ok);
    *hdrs = l;
    if (!l || !ok)
        return false;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);

    if (strcmp(rq->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        if (rq->body || strcmp(rq->method, "POST") == 0 || strcmp(rq->method, "PUT") == 0 ||
            strcmp(rq->method, "PATCH") == 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                             (curl_off_t)(rq->body ? rq->body_len : 0));
        }
        if (strcmp(rq->method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    if (rq->stop) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)rq->stop);
    }
    return true;
}

/* Runs the transfer in our own multi loop so *stop and the progress deadline are checked
 * even when the stream is idle (curl_easy_perform would look at a stop flag only about once
 * a second, and has no "no byte for N ms" limit finer than CURLOPT_LOW_SPEED_TIME's whole
 * seconds of an averaged rate). Without a stop fd the loop looks every 100 ms; with one it
 * sleeps until a byte, the deadline or the stop, and the cap is only a safety net for a
 * stop flag set without its poke. */
#define STOP_POLL_MS 100
#define STOP_FD_POLL_MS 1000
static CURLcode perform_stoppable(CURL *h, const k8s_http_req *rq, xfer *x, bool *cancelled)
{
    const volatile int *stop = rq->stop;
    struct curl_waitfd stop_wait = {.fd = rq->stop_fd ? *rq->stop_fd : -1,
                                    .events = CURL_WAIT_POLLIN};
    bool have_fd = stop_wait.fd >= 0;
    CURLM *m = curl_multi_init();
    if (!m)
        return CURLE_OUT_OF_MEMORY;
    CURLcode res = CURLE_OK;
    if (curl_multi_add_handle(m, h) != CURLM_OK) {
        curl_multi_cleanup(m);
        return CURLE_FAILED_INIT;
    }
    int running = 1;
    bool done = false;
    x->last_rx_ms = gd_mono_ms();
    while (!done) {
        if (stop_requested(stop)) {
            *cancelled = true;
            break;
        }
        long idle_ms = idle_deadline_ms(x->rq);
        if (idle_ms > 0 && gd_mono_ms() - x->last_rx_ms >= idle_ms) {
            x->stalled = true;
            break;
        }
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            res = CURLE_RECV_ERROR;
            break;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)) != NULL)
            if (msg->msg == CURLMSG_DONE) {
                res = msg->data.result;
                done = true;
            }
        if (!done && !running)
            done = true;
        if (!done) {
            int wait = have_fd ? STOP_FD_POLL_MS : STOP_POLL_MS;
            if (idle_ms > 0) {          /* wake up in time for the deadline */
                int64_t left = x->last_rx_ms + idle_ms - gd_mono_ms();
                wait = left < 1 ? 1 : left < wait ? (int)left : wait;
            }
            curl_multi_poll(m, have_fd ? &stop_wait : NULL, have_fd ? 1 : 0, wait, NULL);
        }
    }
    curl_multi_remove_handle(m, h);
    curl_multi_cleanup(m);
    return res;
}

static gd_err transport_err(CURLcode cc)
{
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT: return GD_ERR_TIMEOUT;
    case CURLE_OUT_OF_MEMORY: return GD_ERR_NOMEM;
    default: return GD_ERR_TRANSPORT;
    }
}

/* What one transfer came to: cancelled, stopped by the sink, too large, a transport error
 * (before or after a stream began), or the API server's answer classified; fills st, and
 * *ra with Retry-After seconds (-1 when none). */
static gd_err outcome(const k8s_http_req *rq, const xfer *x, CURLcode cc, long code,
                      bool cancelled, const char *errbuf, k8s_status *st, int *ra)
{
    gd_err err;
    if (cancelled || (rq->stop && stop_requested(rq->stop)) ||
        (cc == CURLE_ABORTED_BY_CALLBACK && rq->stop)) {
        err = GD_ERR_CANCELLED;
        st->err = err;
        st->http_status = code;
        snprintf(st->message, sizeof st->message, "cancelled");
    } else if (x->stalled) {
        err = GD_ERR_TIMEOUT;
        st->err = err;
        st->http_status = code;
        snprintf(st->reason, sizeof st->reason, "%s", K8S_REASON_STALLED);
        snprintf(st->message, sizeof st->message,
                 "no byte from the server for %ld ms (progress deadline)%s",
                 idle_deadline_ms(rq), x->streaming == 1 ? "" : "; no response yet");
    } else if (x->sink_stopped) {
        err = GD_ERR_CANCELLED;           /* the sink asked to stop; it knows why */
        st->err = err;
        st->http_status = code;
    } else if (x->too_large) {
        err = GD_ERR_TOO_LARGE;
        st->err = err;
        st->http_status = code;
        snprintf(st->message, sizeof st->message, "response body larger than %zu bytes",
                 x->max);
    } else if (cc != CURLE_OK) {
        /* before the stream began: a transport error; after: the stream broke, and the
         * caller decides (GD_ERR_CLOSED) */
        bool broke = x->streaming == 1;
        err = !broke ? transport_err(cc)
              : cc == CURLE_OPERATION_TIMEDOUT ? GD_ERR_TIMEOUT : GD_ERR_CLOSED;
        st->err = err;
        st->http_status = broke ? code : 0;
        const char *t = errbuf[0] ? errbuf : curl_easy_strerror(cc);
        k8s_sanitize(st->message, sizeof st->message, t, strlen(t));
    } else {
        err = k8s_classify_ex(code, x->buf, x->len, x->retry_after[0] ? x->retry_after : NULL,
                              st, ra);
    }
    return err;
}

gd_err k8s_http_do(k8s_client *c, const k8s_http_req *rq, k8s_http_resp *rs, k8s_status *st)
{
    k8s_status local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (rs)
        memset(rs, 0, sizeof *rs);
    if (!c || !rq || !rq->method || !rq->path || rq->path[0] != '/') {
        st->err = GD_ERR_ARG;
        snprintf(st->message, sizeof st->message, "bad request arguments");
        return GD_ERR_ARG;
    }
    k8s_cred *cred = NULL;
    bool reauthed = false;
    for (int attempt = 0;; attempt++) {
        if (!cred && k8s_auth_cred(c->auth, &cred, st) != GD_OK)
            return st->err;
        gd_bucket_wait(&c->bucket);
        CURL *h = pool_get(c);
        xfer x = {.rq = rq, .h = h, .streaming = -1, .max = MAX_BODY_BYTES};
        char errbuf[CURL_ERROR_SIZE] = "";
        struct curl_slist *hdrs = NULL;
        if (!h || !setup_handle(c, h, rq, &x, cred, &hdrs, errbuf)) {
            curl_slist_free_all(hdrs);
            if (h)
                curl_easy_reset(h);
            pool_put(c, h);
            k8s_cred_release(&cred);
            st->err = GD_ERR_NOMEM;
            snprintf(st->message, sizeof st->message, "cannot set up the request");
            return GD_ERR_NOMEM;
        }
        atomic_fetch_add(&c->requests, 1);
        bool cancelled = false;
        CURLcode cc = rq->stop || rq->idle_timeout_ms > 0
                          ? perform_stoppable(h, rq, &x, &cancelled)
                          : curl_easy_perform(h);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        /* drop references to our stack and header list before the handle goes back */
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
        curl_slist_free_all(hdrs);
        pool_put(c, h);

        int ra = -1;
        gd_err err = outcome(rq, &x, cc, code, cancelled, errbuf, st, &ra);
        if (err == GD_ERR_UNAUTHORIZED) {
            /* a rotated token file is read again; an exec plugin runs again, and as the
             * request was refused, not done, it goes out once more with the new credential */
            k8s_cred *fresh = k8s_auth_unauthorized(c->auth, reauthed ? NULL : cred);
            if (fresh && fresh != cred) {
                reauthed = true;
                k8s_cred_release(&cred);
                cred = fresh;
                free(x.buf);
                continue;
            }
            k8s_cred_release(&fresh);
        }
        if (err == GD_ERR_TOO_MANY_REQUESTS && attempt < c->opts.max_retries_429 &&
            ra <= MAX_RETRY_AFTER_S) {
            int wait_s = ra < 0 ? 1 : ra;     /* no Retry-After: one second */
            char ws[16];
            snprintf(ws, sizeof ws, "%d", wait_s);
            gd_log(GD_LOG_DEBUG, "API server asked to retry later", "path", rq->path,
                   "retry_after_s", ws, NULL);
            free(x.buf);
            if (wait_s > 0)
                gd_sleep_ms((int64_t)wait_s * 1000);
            continue;
        }
        if (rs && err == GD_OK) {
            rs->status = code;
            rs->body = x.buf;
            rs->len = x.len;
            x.buf = NULL;
        }
        free(x.buf);
        k8s_cred_release(&cred);
        return err;
    }
}
