/* replay.c — the replay source for informer benchmarks: a tiny HTTP/1.1 server on 127.0.0.1
 * that answers a list and then streams a recorded watch as fast as the client reads it.
 *
 * Why not the API server: on 2 cores it writes far slower than an informer reads, so it would
 * measure etcd, not us. Why not libmicrohttpd: its per-chunk overhead would show in the
 * figures; a blocking write() of 64 KiB blocks per connection is as fast as loopback goes.
 *
 * - A GET without "watch=" gets the list: `list_count` objects shaped like the first recorded
 *   one (name, uid, resourceVersion and data made per object: `obj_bytes` of a generated
 *   config file), paged by limit/continue.
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

enum { SLOT_NAME, SLOT_UID, SLOT_RV, SLOT_DATA, NSLOTS };
static const char *const slot_marker[NSLOTS] = {"@@NAME@@", "@@UID@@", "@@RV@@", "@@DATA@@"};

static struct {
    tmpl *t;
    size_t nt;
    long count;
    char *seg[NSLOTS + 1];      /* a list item split at its slots (make_list) */
    int slot[NSLOTS];           /* which slot follows seg[k] */
    long list_count;
    int obj_bytes;
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

/* The list: n objects shaped like the first recorded one, each with its own name
 * (bench-<i>), uid, resourceVersion and data: one key, config.ini, holding obj_bytes of a
 * generated config file (payload.c; not compressible to nothing, unlike a run of 'x').
 * Items are printed from a template split at those four slots. Pages are built per request
 * (limit/continue honoured, the continue token being the next index) so the informer pages
 * exactly as against the API server. */
static int split_template(const char *s)
{
    const char *p = s;
    for (int k = 0; k < NSLOTS; k++) {
        const char *first = NULL;
        int which = -1;
        for (int j = 0; j < NSLOTS; j++) {
            const char *m = strstr(p, slot_marker[j]);
            if (m && (!first || m < first)) {
                first = m;
                which = j;
            }
        }
        if (!first)
            return -1;
        R.seg[k] = strndup(p, (size_t)(first - p));
        R.slot[k] = which;
        p = first + strlen(slot_marker[which]);
    }
    R.seg[NSLOTS] = strdup(p);
    return 0;
}

static int make_list(const char *first_event, long n, int obj_bytes)
{
    cJSON *ev = gd_json_parse(first_event, strlen(first_event));
    cJSON *obj = ev ? cJSON_DetachItemFromObject(ev, "object") : NULL;
    cJSON_Delete(ev);
    if (!obj)
        return -1;
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "config.ini", slot_marker[SLOT_DATA]);
    cJSON_ReplaceItemInObject(obj, "data", data);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "managedFields");
    gd_json_set(obj, "metadata.name", cJSON_CreateString(slot_marker[SLOT_NAME]));
    gd_json_set(obj, "metadata.uid", cJSON_CreateString(slot_marker[SLOT_UID]));
    gd_json_set(obj, "metadata.resourceVersion", cJSON_CreateString(slot_marker[SLOT_RV]));
    char *s = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    int rc = s ? split_template(s) : -1;
    free(s);
    R.list_count = n;
    R.obj_bytes = obj_bytes > 0 ? obj_bytes : 0;
    return rc;
}

/* Appends item i at b; returns the length written. data: scratch of obj_bytes + 1. */
static size_t list_item(char *b, long i, char *data)
{
    char val[40], uid[37];
    size_t n = 0;
    for (int k = 0; k < NSLOTS; k++) {
        n += (size_t)sprintf(b + n, "%s", R.seg[k]);
        switch (R.slot[k]) {
        case SLOT_NAME:
            n += (size_t)sprintf(b + n, "bench-%ld", i);
            break;
        case SLOT_UID:
            bench_uid(uid, (uint64_t)i);
            n += (size_t)sprintf(b + n, "%s", uid);
            break;
        case SLOT_RV:
            snprintf(val, sizeof val, "%ld", 100 + i);
            n += (size_t)sprintf(b + n, "%s", val);
            break;
        default:      /* the config text only needs its newlines escaped for JSON */
            bench_config_text(data, (size_t)R.obj_bytes, (uint64_t)i);
            for (const char *c = data; *c; c++) {
                if (*c == '\n') {
                    b[n++] = '\\';
                    b[n++] = 'n';
                } else {
                    b[n++] = *c;
                }
            }
        }
    }
    n += (size_t)sprintf(b + n, "%s", R.seg[NSLOTS]);
    return n;
}

/* One page of the list; malloc'd, length in *len. */
static char *list_page(const char *uri, size_t *len)
{
    const char *l = strstr(uri, "limit="), *c = strstr(uri, "continue=");
    long limit = l ? atol(l + 6) : 0, from = c ? atol(c + 9) : 0;
    if (from < 0 || from > R.list_count)
        from = R.list_count;
    long to = limit > 0 && from + limit < R.list_count ? from + limit : R.list_count;
    size_t one = 2 * (size_t)R.obj_bytes + 128;
    for (int k = 0; k <= NSLOTS; k++)
        one += strlen(R.seg[k]);
    char *b = malloc(256 + (size_t)(to - from) * one), *data = malloc((size_t)R.obj_bytes + 1);
    size_t n = (size_t)sprintf(b, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
                                  "\"metadata\":{\"resourceVersion\":\"1000\"");
    if (to < R.list_count)
        n += (size_t)sprintf(b + n, ",\"continue\":\"%ld\"", to);
    n += (size_t)sprintf(b + n, "},\"items\":[");
    for (long i = from; i < to; i++) {
        if (i > from)
            b[n++] = ',';
        n += list_item(b + n, i, data);
    }
    n += (size_t)sprintf(b + n, "]}");
    free(data);
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
