/* main.c — bin/bench, the informer benchmark driver (run by tools/bench/run.sh).
 *
 *   bench replay   --events FILE --count N --list-count M --obj-bytes B [--port P]
 *   bench events   --informer BIN --kubeconfig KC --replay-pid PID --count N
 *   bench rss      --informer BIN --kubeconfig KC
 *   bench list     --informer BIN --namespace NS --count N [--from-cache 1]
 *                  (KUBECONFIG: the real API server; --from-cache: client-go's RV=0 list)
 *   (events, rss, list: --clientgo BIN instead of --informer measures the client-go baseline,
 *    tools/bench/clientgo, under the same figure names)
 *   bench populate --namespace NS --count N --bytes B        (KUBECONFIG: the real API server)
 *                  (data: config.ini, B bytes of a generated config file, tools/bench/payload.c)
 *
 * events/rss/list start the informer themselves, follow it with a raw SUB socket (no JSON
 * parsing: the subscriber must not be the bottleneck) and print one JSON line per figure:
 * {"name":..,"value":..,"unit":..}. */
#include "bench.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return def;
}

static pid_t g_target;      /* the informer we started, killed on the way out */

static void die(const char *msg)
{
    fprintf(stderr, "bench: %s\n", msg);
    if (g_target > 0)
        kill(g_target, SIGKILL);
    exit(2);
}

/* ---- the informer under test */

typedef struct {
    pid_t pid;
    char dir[128], pub[192];
    void *zctx, *sub;
} target;

static void start_target(target *t, const char *bin, const char *const *args)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/bench-informer-XXXXXX");
    if (!mkdtemp(t->dir))
        die("mkdtemp");
    snprintf(t->pub, sizeof t->pub, "ipc://%s/ConfigMap.pub", t->dir);
    const char *argv[32] = {bin, "--kind", "ConfigMap", "--runtime-dir", t->dir,
                            "--log-level", "warn"};
    int n = 7;
    for (int i = 0; args[i] && n < 30; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    t->zctx = zmq_ctx_new();
    t->sub = zmq_socket(t->zctx, ZMQ_SUB);
    int hwm = 0, linger = 0;
    zmq_setsockopt(t->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(t->sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(t->sub, ZMQ_SUBSCRIBE, "", 0);
    t->pid = fork();
    if (t->pid == 0) {
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    g_target = t->pid;
    /* the endpoint appears once the informer has bound it; connect retries anyway */
    zmq_connect(t->sub, t->pub);
}

static void stop_target(target *t)
{
    kill(t->pid, SIGTERM);
    waitpid(t->pid, NULL, 0);
    g_target = 0;
    zmq_close(t->sub);
    zmq_ctx_term(t->zctx);
    rmdir(t->dir);
}

/* ---- the client-go baseline (tools/bench/clientgo): talks over its stdin/stdout */

typedef struct {
    pid_t pid;
    FILE *out;
    int in_fd;
} gotarget;

static void start_go(gotarget *g, const char *bin, const char *const *args)
{
    int to[2], from[2];
    if (pipe(to) || pipe(from))
        die("pipe");
    const char *argv[16] = {bin};
    int n = 1;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    g->pid = fork();
    if (g->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    g_target = g->pid;
    close(to[0]);
    close(from[1]);
    g->in_fd = to[1];
    g->out = fdopen(from[0], "r");
}

static void go_expect(gotarget *g, const char *prefix, char *line, size_t cap)
{
    while (fgets(line, (int)cap, g->out))
        if (!strncmp(line, prefix, strlen(prefix)))
            return;
    die("the client-go baseline ended early");
}

static void stop_go(gotarget *g)
{
    close(g->in_fd);
    fclose(g->out);
    waitpid(g->pid, NULL, 0);
    g_target = 0;
}

/* Receives one PUB message; type (frame 3) into type. 0 on timeout. A HEARTBEAT whose status
 * says synced is reported as "SYNCED": a subscriber that connected after the SYNCED message
 * learns it from the next heartbeat. */
static uint64_t g_last_seq, g_lost;   /* messages the subscriber never got (PUB HWM) */

static int recv_type(void *sub, char *type, size_t cap, int timeout_ms)
{
    zmq_pollitem_t pi = {.socket = sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&pi, 1, timeout_ms) <= 0)
        return 0;
    int i = 0, more = 1;
    type[0] = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        zmq_msg_recv(&m, sub, 0);
        more = zmq_msg_more(&m);
        if (i == 2) {           /* "seq:topic_seq": a jump is messages dropped for us */
            char n[24] = "";
            memcpy(n, zmq_msg_data(&m), zmq_msg_size(&m) < sizeof n - 1 ? zmq_msg_size(&m) : sizeof n - 1);
            uint64_t seq = strtoull(n, NULL, 10);
            if (g_last_seq && seq > g_last_seq + 1)
                g_lost += seq - g_last_seq - 1;
            g_last_seq = seq;
        }
        if (i == 3) {
            size_t l = zmq_msg_size(&m) < cap - 1 ? zmq_msg_size(&m) : cap - 1;
            memcpy(type, zmq_msg_data(&m), l);
            type[l] = 0;
        }
        if (i == 7 && !strcmp(type, "HEARTBEAT") &&
            memmem(zmq_msg_data(&m), zmq_msg_size(&m), "\"synced\":true", 13))
            snprintf(type, cap, "SYNCED");
        zmq_msg_close(&m);
        i++;
    }
    return 1;
}

static int64_t wait_synced(target *t, int timeout_ms)
{
    char type[16];
    int64_t until = gd_mono_ms() + timeout_ms;
    while (gd_mono_ms() < until)
        if (recv_type(t->sub, type, sizeof type, 100) && !strcmp(type, "SYNCED"))
            return gd_mono_ms();
    die("the informer did not sync in time");
    return 0;
}

/* utime + stime of a process in microseconds. */
static double cpu_us(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, sizeof buf, f))
        die("cannot read /proc/<pid>/stat");
    fclose(f);
    char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    /* fields after ")": state(3) ... utime(14) stime(15) */
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
    return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static long rss_bytes(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb * 1024;
}

/* The mappings holding more than 256 KiB of RSS (heap, arenas, libraries). */
static void print_rss_maps(pid_t pid)
{
    char path[64], line[512], map[512] = "";
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        long kb;
        if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' '))
            snprintf(map, sizeof map, "%s", line);
        else if (sscanf(line, "Rss: %ld kB", &kb) == 1 && kb > 256)
            fprintf(stderr, "bench rss: %6ld kB  %s", kb, map);
    }
    if (f)
        fclose(f);
}

static void figure(const char *name, double value, const char *unit)
{
    printf("{\"name\":\"%s\",\"value\":%.3f,\"unit\":\"%s\"}\n", name, value, unit);
    fflush(stdout);
}

/* ---- subcommands */

static int cmd_events(int argc, char **argv)
{
    const char *bin = opt(argc, argv, "--informer", NULL), *kc = opt(argc, argv, "--kubeconfig", NULL);
    pid_t replay = (pid_t)atol(opt(argc, argv, "--replay-pid", "0"));
    long count = atol(opt(argc, argv, "--count", "100000"));
    const char *go = opt(argc, argv, "--clientgo", NULL);
    if ((!bin && !go) || !kc || replay <= 0)
        die("events: --informer (or --clientgo), --kubeconfig and --replay-pid are required");
    if (go) {
        gotarget g;
        char cnt[24], line[256];
        snprintf(cnt, sizeof cnt, "%ld", count);
        const char *args[] = {"-kubeconfig", kc, "-count", cnt, NULL};
        start_go(&g, go, args);
        go_expect(&g, "synced", line, sizeof line);
        double c0 = cpu_us(g.pid);
        kill(replay, SIGUSR1);
        go_expect(&g, "done", line, sizeof line);
        double c1 = cpu_us(g.pid);
        long long got = 0, ns = 0;
        sscanf(line, "done %lld %lld", &got, &ns);
        stop_go(&g);
        figure("informer_events_per_s", (double)got * 1e9 / (double)ns, "events/s");
        figure("informer_cpu_us_per_event", (c1 - c0) / (double)got, "us/event");
        return 0;
    }
    target t;
    /* a PUB queue deep enough for the whole run: on a loaded machine the subscriber can fall
     * 100 000 messages (the default mark) behind an informer that publishes faster than it
     * reads, and a dropped message would end the run */
    const char *args[] = {"--kubeconfig", kc, "--heartbeat", "200ms", "--pub-hwm", "10000000",
                          NULL};
    start_target(&t, bin, args);
    wait_synced(&t, 30000);
    double c0 = cpu_us(t.pid);
    kill(replay, SIGUSR1);
    long got = 0;
    int64_t first = 0, last = 0;
    char type[16];
    while (got < count) {
        if (!recv_type(t.sub, type, sizeof type, 20000))
            break;
        if (g_lost) {      /* they will never come: say so rather than wait for ever */
            fprintf(stderr, "bench events: the subscriber lost %llu messages (PUB high-water "
                    "mark: it fell too far behind)\n", (unsigned long long)g_lost);
            break;
        }
        if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED") && strcmp(type, "DELETED"))
            continue;
        last = gd_mono_ns();
        if (!first)
            first = last;
        got++;
    }
    double c1 = cpu_us(t.pid);
    stop_target(&t);
    if (got < count) {
        fprintf(stderr, "bench events: only %ld of %ld events arrived\n", got, count);
        return 1;
    }
    double secs = (double)(last - first) / 1e9;
    figure("informer_events_per_s", (double)got / secs, "events/s");
    figure("informer_cpu_us_per_event", (c1 - c0) / (double)got, "us/event");
    return 0;
}

static int cmd_rss(int argc, char **argv)
{
    const char *bin = opt(argc, argv, "--informer", NULL), *kc = opt(argc, argv, "--kubeconfig", NULL);
    const char *go = opt(argc, argv, "--clientgo", NULL);
    if ((!bin && !go) || !kc)
        die("rss: --informer (or --clientgo) and --kubeconfig are required");
    if (go) {
        gotarget g;
        char line[256];
        const char *args[] = {"-kubeconfig", kc, NULL};
        start_go(&g, go, args);
        go_expect(&g, "synced", line, sizeof line);
        gd_sleep_ms(500);
        long rss = rss_bytes(g.pid);
        stop_go(&g);
        printf("%ld\n", rss);
        return 0;
    }
    target t;
    const char *args[] = {"--kubeconfig", kc, "--heartbeat", "200ms", NULL};
    start_target(&t, bin, args);
    wait_synced(&t, 60000);
    gd_sleep_ms(500);
    long rss = rss_bytes(t.pid);
    if (getenv("BENCH_RSS_MAPS"))       /* diagnosis: where the RSS is, to stderr */
        print_rss_maps(t.pid);
    stop_target(&t);
    printf("%ld\n", rss);
    return 0;
}

static int cmd_list(int argc, char **argv)
{
    const char *bin = opt(argc, argv, "--informer", NULL), *ns = opt(argc, argv, "--namespace", NULL);
    long count = atol(opt(argc, argv, "--count", "20000"));
    const char *go = opt(argc, argv, "--clientgo", NULL);
    if ((!bin && !go) || !ns)
        die("list: --informer (or --clientgo) and --namespace are required");
    if (go) {
        gotarget g;
        char line[256];
        const char *kc = getenv("KUBECONFIG");
        const char *args[] = {"-kubeconfig", kc ? kc : "", "-namespace", ns, NULL};
        int64_t t0 = gd_mono_ms();
        start_go(&g, go, args);
        go_expect(&g, "synced", line, sizeof line);
        int64_t t1 = gd_mono_ms();
        stop_go(&g);
        figure("informer_list_objects_per_s", (double)count * 1000.0 / (double)(t1 - t0),
               "objects/s");
        return 0;
    }
    target t;
    bool cache = opt(argc, argv, "--from-cache", NULL) != NULL;
    const char *args[] = {"--namespace", ns, "--page-size", "500", "--heartbeat", "100ms",
                          cache ? "--initial-list-from-cache" : NULL, NULL};
    int64_t t0 = gd_mono_ms();
    start_target(&t, bin, args);
    int64_t t1 = wait_synced(&t, 300000);
    stop_target(&t);
    figure(cache ? "informer_list_objects_per_s_from_cache" : "informer_list_objects_per_s",
           (double)count * 1000.0 / (double)(t1 - t0), "objects/s");
    return 0;
}

typedef struct {
    k8s_client *c;
    const char *ns;
    long from, to;
    int bytes;
    int failed;
} pop;

static void *populate_range(void *arg)
{
    pop *p = arg;
    char *pad = malloc((size_t)p->bytes + 1);
    for (long i = p->from; i < p->to; i++) {
        char name[32];
        bench_config_text(pad, (size_t)p->bytes, (uint64_t)i);   /* as the replay's list */
        snprintf(name, sizeof name, "bench-%05ld", i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "apiVersion", "v1");
        cJSON_AddStringToObject(o, "kind", "ConfigMap");
        cJSON *md = cJSON_AddObjectToObject(o, "metadata");
        cJSON_AddStringToObject(md, "name", name);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "data"), "config.ini", pad);
        gd_err e = GD_OK;
        for (int a = 0; a < 10; a++) {
            e = k8s_create(p->c, &K8S_RES_CONFIGMAPS, p->ns, o, NULL, NULL);
            if (e == GD_OK || e == GD_ERR_ALREADY_EXISTS || !gd_err_retryable(e))
                break;
            gd_sleep_ms(200);
        }
        if (e != GD_OK && e != GD_ERR_ALREADY_EXISTS)
            p->failed++;
        cJSON_Delete(o);
    }
    free(pad);
    return NULL;
}

static int cmd_populate(int argc, char **argv)
{
    const char *ns = opt(argc, argv, "--namespace", NULL);
    long count = atol(opt(argc, argv, "--count", "20000"));
    int bytes = atoi(opt(argc, argv, "--bytes", "1024"));
    if (!ns)
        die("populate: --namespace is required");
    k8s_config_opts co = {0};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK)
        die(err);
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.qps = -1;
    k8s_client *c = k8s_client_new(&cfg, &ko);
    cJSON *nso = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{}}");
    cJSON_AddStringToObject(cJSON_GetObjectItem(nso, "metadata"), "name", ns);
    k8s_create(c, &K8S_RES_NAMESPACES, NULL, nso, NULL, NULL);
    cJSON_Delete(nso);
    enum { T = 8 };
    pop p[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        p[i] = (pop){.c = c, .ns = ns, .from = i * count / T, .to = (i + 1) * count / T,
                     .bytes = bytes};
        pthread_create(&th[i], NULL, populate_range, &p[i]);
    }
    int failed = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        failed += p[i].failed;
    }
    k8s_client_destroy(&c);
    if (failed) {
        fprintf(stderr, "bench populate: %d creates failed\n", failed);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: bench replay|events|rss|list|populate [options] (see tools/bench/main.c)");
    gd_log_init("bench", GD_LOG_WARN, 0, 2);
    signal(SIGPIPE, SIG_IGN);
    const char *c = argv[1];
    if (!strcmp(c, "replay"))
        return bench_replay(opt(argc, argv, "--events", "events.jsonl"),
                            atol(opt(argc, argv, "--count", "100000")),
                            atol(opt(argc, argv, "--list-count", "0")),
                            atoi(opt(argc, argv, "--obj-bytes", "1024")),
                            atoi(opt(argc, argv, "--port", "0")));
    if (!strcmp(c, "events"))
        return cmd_events(argc, argv);
    if (!strcmp(c, "rss"))
        return cmd_rss(argc, argv);
    if (!strcmp(c, "list"))
        return cmd_list(argc, argv);
    if (!strcmp(c, "populate"))
        return cmd_populate(argc, argv);
    die("unknown subcommand");
    return 2;
}
