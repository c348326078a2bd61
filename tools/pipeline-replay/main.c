/* pipeline-replay — the replay source of the worker pipeline benchmark
 * (tools/bench/bench_worker.sh): a minimal Kubernetes-looking HTTP/1.1 server on 127.0.0.1
 * that answers a ConfigMap list and streams one watch of MODIFIED events, each stamped
 * with the CLOCK_MONOTONIC time it was written (annotation bench.godis/sent-ns), so the
 * consumer on this machine measures event → reconcile latency against the same clock.
 *
 *   pipeline-replay [--port P] [--objects N] [--events M] [--rate R] [--bytes B]
 *                   [--namespace NS] [--start-delay-ms D] [--clusters K]
 *
 * The port is printed on stdout once listening. List objects carry sent-ns 0 (they are not
 * events). The first watch waits D ms (default 0; the consumer's subscribers load the list
 * meanwhile, so a measure does not start with a start-up resync), then streams M events (paced at R per second, or as fast as the
 * client reads with R = 0) cycling over the N objects with increasing resourceVersions,
 * then stays open and idle; later watches only idle. Connection: close framing (no chunks).
 * Objects carry the label cluster-name=bench (one godis cluster: one shard), or with K > 1
 * cluster-name=bench-<i mod K>, which spreads them over the shards (the remote-workers
 * bench's cache memory per worker, tools/bench/remote.sh).
 * With --fleet K [--members M] (the scale benchmark, tools/bench/scale.sh) a list answers
 * with every object of the requested kind that K GodisClusters of M members (default 1) have
 * (fleet.c) and watches only idle.
 * Loopback only; SIGTERM/SIGINT end it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "fleet.h"

static long n_objects = 1000, n_events = 100000, obj_bytes = 512;
static double rate = 0;
static long start_delay_ms = 0;
static const char *ns = "bench";
static long n_clusters = 1;
static long fleet = -1, fleet_members = 1;   /* fleet >= 0: --fleet mode */
static char *payload;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int watches_served;

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* One ConfigMap as JSON into buf; returns its length. */
static int render(char *buf, size_t cap, long i, long rv, long long sent)
{
    char cluster[32] = "bench";
    if (n_clusters > 1) snprintf(cluster, sizeof cluster, "bench-%ld", i % n_clusters);
    return snprintf(buf, cap,
                    "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cm-%ld\","
                    "\"namespace\":\"%s\",\"uid\":\"00000000-0000-0000-0000-%012ld\","
                    "\"resourceVersion\":\"%ld\",\"labels\":{\"cluster-name\":\"%s\"},"
                    "\"annotations\":{\"bench.godis/sent-ns\":\"%lld\"}},"
                    "\"data\":{\"payload\":\"%s\"}}",
                    i, ns, i, rv, cluster, sent, payload);
}

static void serve_list(int fd)
{
    size_t per = (size_t)obj_bytes + 512, cap = per * (size_t)n_objects + 256;
    char *body = malloc(cap);
    if (!body)
        return;
    size_t n = (size_t)snprintf(body, cap, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
                                           "\"metadata\":{\"resourceVersion\":\"%ld\"},\"items\":[",
                                n_objects);
    for (long i = 0; i < n_objects; i++) {
        if (i)
            body[n++] = ',';
        n += (size_t)render(body + n, cap - n, i, i + 1, 0);
    }
    n += (size_t)snprintf(body + n, cap - n, "]}");
    char head[160];
    int h = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                        "Content-Length: %zu\r\nConnection: close\r\n\r\n", n);
    if (write_all(fd, head, (size_t)h) == 0)
        write_all(fd, body, n);
    free(body);
}

/* Blocks until the client closes the connection. */
static void idle(int fd)
{
    char b[256];
    while (read(fd, b, sizeof b) > 0)
        ;
}

static void serve_watch(int fd)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               "Connection: close\r\n\r\n";
    if (write_all(fd, head, sizeof head - 1) < 0)
        return;
    pthread_mutex_lock(&mu);
    int first = watches_served++ == 0;
    pthread_mutex_unlock(&mu);
    if (!first) {
        idle(fd);
        return;
    }
    size_t cap = (size_t)obj_bytes + 640;
    char *line = malloc(cap);
    if (start_delay_ms > 0) {
        struct timespec d = {start_delay_ms / 1000, (start_delay_ms % 1000) * 1000000L};
        nanosleep(&d, NULL);
    }
    long long t0 = mono_ns();
    for (long e = 0; line && e < n_events; e++) {
        if (rate > 0) {
            long long due = t0 + (long long)((double)e * 1e9 / rate), now = mono_ns();
            if (due > now) {
                struct timespec d = {(time_t)((due - now) / 1000000000LL),
                                     (long)((due - now) % 1000000000LL)};
                nanosleep(&d, NULL);
            }
        }
        int n = snprintf(line, cap, "{\"type\":\"MODIFIED\",\"object\":");
        n += render(line + n, cap - (size_t)n, e % n_objects, n_objects + 1 + e, mono_ns());
        n += snprintf(line + n, cap - (size_t)n, "}\n");
        if (write_all(fd, line, (size_t)n) < 0)
            break;
    }
    free(line);
    idle(fd);
}

static void *conn_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char req[8192];
    size_t n = 0;
    while (n < sizeof req - 1) {        /* read the request head */
        ssize_t r = read(fd, req + n, sizeof req - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        req[n] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    req[n] = '\0';
    char *eol = strstr(req, "\r\n");
    if (eol)
        *eol = '\0';
    if (strncmp(req, "GET ", 4) != 0) {
        static const char bad[] = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n"
                                  "Connection: close\r\n\r\n";
        write_all(fd, bad, sizeof bad - 1);
    } else if (strstr(req, "watch=1") || strstr(req, "watch=true")) {
        serve_watch(fd);
    } else if (fleet >= 0) {
        size_t blen = 0;
        char *body = fleet_list(req, fleet, fleet_members, &blen), head[160];
        if (!body)
            body = strdup("{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":"
                          "{\"resourceVersion\":\"1000000\"},\"items\":[]}");
        if (body && !blen)
            blen = strlen(body);
        int h = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                            "Content-Length: %zu\r\nConnection: close\r\n\r\n", blen);
        if (body && write_all(fd, head, (size_t)h) == 0)
            write_all(fd, body, blen);
        free(body);
    } else {
        serve_list(fd);
    }
    close(fd);
    return NULL;
}

static long arg_long(const char *v, long lo, long hi, const char *name)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) {
        fprintf(stderr, "pipeline-replay: %s wants %ld..%ld\n", name, lo, hi);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    long port = 0;
    for (int i = 1; i < argc; i += 2) {   /* every flag takes one value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: pipeline-replay [--port P] [--objects N] [--events M] [--rate R] "
                 "[--bytes B] [--namespace NS] [--start-delay-ms D] [--clusters K] [--fleet K --members M]");
            return 0;
        }
        if (!v) {
            fprintf(stderr, "pipeline-replay: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--port")) port = arg_long(v, 0, 65535, a);
        else if (!strcmp(a, "--objects")) n_objects = arg_long(v, 1, 1000000, a);
        else if (!strcmp(a, "--events")) n_events = arg_long(v, 0, 100000000, a);
        else if (!strcmp(a, "--rate")) rate = (double)arg_long(v, 0, 10000000, a);
        else if (!strcmp(a, "--bytes")) obj_bytes = arg_long(v, 0, 1 << 20, a);
        else if (!strcmp(a, "--namespace")) ns = v;
        else if (!strcmp(a, "--start-delay-ms")) start_delay_ms = arg_long(v, 0, 600000, a);
        else if (!strcmp(a, "--clusters")) n_clusters = arg_long(v, 1, 1000000, a);
        else if (!strcmp(a, "--fleet")) fleet = arg_long(v, 0, 1000000, a);
        else if (!strcmp(a, "--members")) fleet_members = arg_long(v, 1, 9, a);
        else {
            fprintf(stderr, "pipeline-replay: unknown flag %s\n", a);
            return 2;
        }
    }
    payload = malloc((size_t)obj_bytes + 1);
    memset(payload, 'x', (size_t)obj_bytes);
    payload[obj_bytes] = '\0';
    signal(SIGPIPE, SIG_IGN);
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 64) < 0 ||
        getsockname(s, (struct sockaddr *)&sa, &sl) < 0) {
        perror("pipeline-replay: listen");
        return 1;
    }
    printf("%d\n", ntohs(sa.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(s, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        /* Small event lines must leave at once: Nagle's algorithm would hold them back for
         * the client's delayed ACK and add tens of milliseconds to every latency figure. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t th;
        if (pthread_create(&th, NULL, conn_thread, (void *)(intptr_t)fd) == 0)
            pthread_detach(th);
        else
            close(fd);
    }
    return 0;
}
