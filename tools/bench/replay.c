/* replay.c — the replay source for informer benchmarks: a tiny HTTP/1.1 server on 127.0.0.1
 * that answers a list and then streams a recorded watch as fast as the client reads it.
 *
 * Why not the API server: on 2 cores it writes far slower than an informer reads, so it would
 * measure etcd, not us. Why not libmicrohttpd: its per-chunk overhead would show in the
 * figures; a blocking write() of 64 KiB blocks per connection is as fast as loopback goes.
 *
 * - A GET without "watch=" gets the list: `list_count` objects made from the first recorded
 *   object (name and data replaced; data padded to `obj_bytes`), paged by limit/continue.
 * - The first GET with "watch=" waits for SIGUSR1 (so the subscriber can be ready and the
 *   CPU sampled first), then streams `count` events: the recorded event lines cycled, each
 *   with a fresh increasing resourceVersion, then closes the stream.
 * - Later watches get headers and nothing else until the client goes away (an idle watch).
 * Connections are closed after each response ("Connection: close"). */
#include "bench.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "gd_json.h"

typedef struct {
    char *prefix, *suffix;      /* event line split around the resourceVersion value */
    size_t plen, slen;
} tmpl;

static struct {
    tmpl *t;
    size_t nt;
    long count;
    char *item_pre, *item_suf;  /* a list item split around its name */
    long list_count;
    int watches;
    pthread_mutex_t mu;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

static volatile sig_atomic_t go;
static void on_usr1(int s) { (void)s; go = 1; }

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Splits a watch event line at the object's resourceVersion value so that a new value can
 * be printed between the halves. The rv is forced to a unique marker first. */
static int make_tmpl(const char *line, tmpl *out)
{
    cJSON *ev = gd_json_parse(line, strlen(line));
    cJSON *obj = ev ? cJSON_GetObjectItem(ev, "object") : NULL;
    if (!obj || !gd_json_path(obj, "metadata.name")) {
        cJSON_Delete(ev);
        return -1;
    }
    gd_json_set(obj, "metadata.resourceVersion", cJSON_CreateString("@@RV@@"));
    char *s = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    char *m = s ? strstr(s, "@@RV@@") : NULL;
    if (!m) {
        free(s);
        return -1;
    }
    *m = 0;
    out->prefix = strdup(s);
    out->plen = strlen(out->prefix);
    out->suffix = malloc(strlen(m + 6) + 2);
    sprintf(out->suffix, "%s\n", m + 6);
    out->slen = strlen(out->suffix);
    free(s);
    return 0;
}

/* The list: n copies of the first recorded object, named bench-<i>, data padded to
 * obj_bytes. Pages are built per request (limit/continue honoured, the continue token being
 * the next index) so the informer pages exactly as against the API server. */
static int make_list(const char *first_event, long n, int obj_bytes)
{
    cJSON *ev = gd_json_parse(first_event, strlen(first_event));
    cJSON *obj = ev ? cJSON_DetachItemFromObject(ev, "object") : NULL;
    cJSON_Delete(ev);
    if (!obj)
        return -1;
    char *pad = malloc((size_t)obj_bytes + 1);
    memset(pad, 'x', (size_t)obj_bytes);
    pad[obj_bytes] = 0;
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "payload", pad);
    cJSON_ReplaceItemInObject(obj, "data", data);
    free(pad);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "managedFields");
    gd_json_set(obj, "metadata.name", cJSON_CreateString("@@NAME@@"));
    gd_json_set(obj, "metadata.resourceVersion", cJSON_CreateString("1"));
    char *s = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    char *m = strstr(s, "@@NAME@@");
    *m = 0;
    R.item_pre = strdup(s);
    R.item_suf = strdup(m + 8);
    R.list_count = n;
    free(s);
    return 0;
}

/* One page of the list; malloc'd, length in *len. */
static char *list_page(const char *uri, size_t *len)
{
    const char *l = strstr(uri, "limit="), *c = strstr(uri, "continue=");
    long limit = l ? atol(l + 6) : 0, from = c ? atol(c + 9) : 0;
    if (from < 0 || from > R.list_count)
        from = R.list_count;
    long to = limit > 0 && from + limit < R.list_count ? from + limit : R.list_count;
    size_t one = strlen(R.item_pre) + strlen(R.item_suf) + 24;
    char *b = malloc(256 + (size_t)(to - from) * one);
    size_t n = (size_t)sprintf(b, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
                                  "\"metadata\":{\"resourceVersion\":\"1000\"");
    if (to < R.list_count)
        n += (size_t)sprintf(b + n, ",\"continue\":\"%ld\"", to);
    n += (size_t)sprintf(b + n, "},\"items\":[");
    for (long i = from; i < to; i++)
        n += (size_t)sprintf(b + n, "%s%sbench-%ld%s", i > from ? "," : "", R.item_pre, i,
                             R.item_suf);
    n += (size_t)sprintf(b + n, "]}");
    *len = n;
    return b;
}

static void stream_watch(int fd)
{
    static const char hdr[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\n\r\n";
    if (write_all(fd, hdr, sizeof hdr - 1) < 0)
        return;
    while (!go)
        usleep(1000);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 4096);
    for (long i = 0; i < R.count; i++) {
        const tmpl *t = &R.t[(size_t)i % R.nt];
        if (len + t->plen + t->slen + 24 > cap) {
            if (write_all(fd, buf, len) < 0)
                break;
            len = 0;
        }
        if (t->plen + t->slen + 24 > cap)
            continue;                       /* an absurdly large recorded event: skip */
        memcpy(buf + len, t->prefix, t->plen);
        len += t->plen;
        len += (size_t)sprintf(buf + len, "%ld", 2000 + i);
        memcpy(buf + len, t->suffix, t->slen);
        len += t->slen;
    }
    write_all(fd, buf, len);
    free(buf);
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char req[8192];
    size_t n = 0;
    while (n < sizeof req - 1) {
        ssize_t r = read(fd, req + n, sizeof req - 1 - n);
        if (r <= 0)
            goto out;
        n += (size_t)r;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    char *eol = strstr(req, "\r\n");
    if (!eol)
        goto out;
    *eol = 0;
    if (strstr(req, "watch=")) {
        pthread_mutex_lock(&R.mu);
        int first = R.watches++ == 0;
        pthread_mutex_unlock(&R.mu);
        if (first) {
            stream_watch(fd);
        } else {
            static const char hdr[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                      "Connection: close\r\n\r\n";
            if (write_all(fd, hdr, sizeof hdr - 1) == 0)
                while (read(fd, req, sizeof req) > 0)   /* idle until the client leaves */
                    ;
        }
    } else {
        size_t blen;
        char *body = list_page(req, &blen), hdr[256];
        int hl = snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                           "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          blen);
        if (write_all(fd, hdr, (size_t)hl) == 0)
            write_all(fd, body, blen);
        free(body);
    }
out:
    close(fd);
    return NULL;
}

int bench_replay(const char *events_file, long count, long list_count, int obj_bytes, int port)
{
    FILE *f = fopen(events_file, "r");
    if (!f) {
        fprintf(stderr, "bench replay: cannot open %s\n", events_file);
        return 2;
    }
    size_t cap = 1 << 20;
    char *line = malloc(cap);
    char *first = NULL;
    while (fgets(line, (int)cap, f)) {
        tmpl t;
        if (make_tmpl(line, &t) != 0)
            continue;
        if (!first)
            first = strdup(line);
        R.t = realloc(R.t, (R.nt + 1) * sizeof *R.t);
        R.t[R.nt++] = t;
    }
    fclose(f);
    free(line);
    if (!R.nt || make_list(first, list_count, obj_bytes) != 0) {
        fprintf(stderr, "bench replay: no usable watch events in %s\n", events_file);
        return 2;
    }
    free(first);
    R.count = count;
    signal(SIGUSR1, on_usr1);
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 64) != 0) {
        perror("bench replay: bind");
        return 1;
    }
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        pthread_t th;
        pthread_create(&th, NULL, serve, (void *)(intptr_t)fd);
        pthread_detach(th);
    }
}
