/* test_godis_client.c — the RESP2 parser on hostile input (truncated at every byte, huge
 * lengths, overflow, wrong framing, deep nesting, random bytes), the encoder, the refusal of
 * bad ids and URLs before anything is sent, and the client's retry/timeout behaviour against
 * a scripted fake server on loopback. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "godis_client.h"

/* ------------------------------------------------------------------------------------------
 * Parser */

static godis_reply *parse_all(const char *s, gd_err *err)
{
    godis_reply *r = NULL;
    size_t used = 0;
    *err = godis_reply_parse(s, strlen(s), &r, &used);
    if (r)
        assert_int_equal(used, strlen(s));
    return r;
}

static void test_parse_types(void **state)
{
    (void)state;
    gd_err e;
    godis_reply *r = parse_all("+OK\r\n", &e);
    assert_int_equal(e, GD_OK);
    assert_int_equal(r->type, GODIS_REPLY_STATUS);
    assert_string_equal(r->str, "OK");
    godis_reply_destroy(&r);
    assert_null(r);

    r = parse_all("-propose canceled by context\r\n", &e);
    assert_int_equal(r->type, GODIS_REPLY_ERROR);
    assert_string_equal(r->str, "propose canceled by context");
    godis_reply_destroy(&r);

    r = parse_all(":-9223372036854775808\r\n", &e);
    assert_int_equal(r->type, GODIS_REPLY_INTEGER);
    assert_true(r->integer == INT64_MIN);
    godis_reply_destroy(&r);

    r = parse_all("$0\r\n\r\n", &e);
    assert_int_equal(r->type, GODIS_REPLY_BULK);
    assert_int_equal(r->len, 0);
    godis_reply_destroy(&r);

    r = parse_all("$-1\r\n", &e);
    assert_int_equal(r->type, GODIS_REPLY_NIL);
    godis_reply_destroy(&r);

    r = parse_all("*-1\r\n", &e);
    assert_int_equal(r->type, GODIS_REPLY_NIL);
    godis_reply_destroy(&r);

    r = parse_all("*3\r\n$3\r\na\0b\r\n*0\r\n:7\r\n", &e);   /* strlen stops at NUL: incomplete */
    assert_null(r);
    assert_int_equal(e, GD_OK);

    static const char bin[] = "*3\r\n$3\r\na\0b\r\n*0\r\n:7\r\n";
    size_t used = 0;
    assert_int_equal(godis_reply_parse(bin, sizeof(bin) - 1, &r, &used), GD_OK);
    assert_non_null(r);
    assert_int_equal(used, sizeof(bin) - 1);
    assert_int_equal(r->n, 3);
    assert_int_equal(r->elems[0]->len, 3);
    assert_memory_equal(r->elems[0]->str, "a\0b", 3);
    assert_int_equal(r->elems[1]->type, GODIS_REPLY_ARRAY);
    assert_int_equal(r->elems[1]->n, 0);
    assert_int_equal(r->elems[2]->integer, 7);
    godis_reply_destroy(&r);
}

/* Every proper prefix of a valid reply is "incomplete", never an error or a crash. */
static void test_parse_truncated_every_byte(void **state)
{
    (void)state;
    static const char full[] =
        "*14\r\n$6\r\nserver\r\n$5\r\ngodis\r\n$7\r\nversion\r\n$11\r\n255.255.255\r\n"
        "$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$7\r\ncluster\r\n$4\r\nrole\r\n"
        "$6\r\nmaster\r\n$7\r\nmodules\r\n*2\r\n+x\r\n-y\r\n";
    size_t n = sizeof(full) - 1;
    for (size_t i = 0; i < n; i++) {
        godis_reply *r = NULL;
        size_t used = 99;
        assert_int_equal(godis_reply_parse(full, i, &r, &used), GD_OK);
        assert_null(r);
        assert_int_equal(used, 0);
    }
    godis_reply *r = NULL;
    size_t used = 0;
    assert_int_equal(godis_reply_parse(full, n, &r, &used), GD_OK);
    assert_non_null(r);
    assert_int_equal(r->n, 14);
    godis_reply_destroy(&r);
}

static void expect_err(const char *s, size_t len, gd_err want)
{
    godis_reply *r = NULL;
    size_t used = 0;
    gd_err e = godis_reply_parse(s, len, &r, &used);
    if (e != want)
        fail_msg("input %.40s: got %d want %d", s, e, want);
    assert_null(r);
}

static void test_parse_hostile(void **state)
{
    (void)state;
#define E(s, w) expect_err(s, sizeof(s) - 1, w)
    E("$99999999999\r\n", GD_ERR_TOO_LARGE);
    E("$2097152\r\n", GD_ERR_TOO_LARGE);
    E("*100000\r\n", GD_ERR_TOO_LARGE);
    E("*9223372036854775807\r\n", GD_ERR_TOO_LARGE);
    E(":99999999999999999999\r\n", GD_ERR_PARSE);
    E(":9223372036854775808\r\n", GD_ERR_PARSE);
    E("$-2\r\n", GD_ERR_PARSE);
    E("*-5\r\n", GD_ERR_PARSE);
    E("$\r\n", GD_ERR_PARSE);
    E("$+3\r\nabc\r\n", GD_ERR_PARSE);
    E("$ 3\r\nabc\r\n", GD_ERR_PARSE);
    E(":12a\r\n", GD_ERR_PARSE);
    E(":-\r\n", GD_ERR_PARSE);
    E("$3\r\nabcd\r\n", GD_ERR_PARSE);          /* data longer than declared */
    E("+OK\n", GD_ERR_PARSE);                   /* bare LF */
    E("+OK\rX", GD_ERR_PARSE);
    E("PING\r\n", GD_ERR_PARSE);                /* inline commands are not RESP2 replies */
    E("!3\r\nabc\r\n", GD_ERR_PARSE);
    E("*2\r\n+a\r\n?\r\n", GD_ERR_PARSE);       /* bad element inside an array */
#undef E
    /* Nesting deeper than the cap. */
    char deep[64] = "";
    for (int i = 0; i < GODIS_MAX_DEPTH + 1; i++)
        strcat(deep, "*1\r\n");
    strcat(deep, ":1\r\n");
    expect_err(deep, strlen(deep), GD_ERR_TOO_LARGE);
    /* A line that never ends, longer than the cap. */
    size_t big = GODIS_MAX_LINE + 10;
    char *line = malloc(big);
    assert_non_null(line);
    line[0] = '+';
    memset(line + 1, 'a', big - 1);
    expect_err(line, big, GD_ERR_TOO_LARGE);
    /* ... and shorter than the cap: just incomplete. */
    godis_reply *r = NULL;
    size_t used = 0;
    assert_int_equal(godis_reply_parse(line, 1000, &r, &used), GD_OK);
    assert_null(r);
    free(line);
    /* Many small arrays whose total exceeds the per-reply element budget. */
    size_t cap = 64 + (size_t)(GODIS_MAX_ELEMS / GODIS_MAX_ARRAY + 2) * 16;
    char *many = malloc(cap);
    int pos = snprintf(many, cap, "*%d\r\n", GODIS_MAX_ELEMS / GODIS_MAX_ARRAY + 2);
    for (int i = 0; i < GODIS_MAX_ELEMS / GODIS_MAX_ARRAY + 2; i++)
        pos += snprintf(many + pos, cap - (size_t)pos, "*%d\r\n", GODIS_MAX_ARRAY);
    expect_err(many, (size_t)pos, GD_ERR_TOO_LARGE);
    free(many);
    /* Bad arguments. */
    assert_int_equal(godis_reply_parse(NULL, 3, &r, &used), GD_ERR_ARG);
}

/* Random bytes and mutated valid replies: any outcome but a crash or a leak (ASan). */
static void test_parse_fuzz(void **state)
{
    (void)state;
    static const char seed[] = "*3\r\n$5\r\nhello\r\n:42\r\n*2\r\n+OK\r\n$-1\r\n";
    static const char alphabet[] = "*$:+-\r\n0123456789-abc";
    unsigned x = 12345;
    char buf[64];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = sizeof(seed) - 1;
        memcpy(buf, seed, n);
        for (int k = 0; k < 3; k++) {
            x = x * 1103515245u + 12345u;
            buf[(x >> 8) % n] = alphabet[(x >> 20) % (sizeof(alphabet) - 1)];
        }
        godis_reply *r = NULL;
        size_t used = 0;
        gd_err e = godis_reply_parse(buf, n, &r, &used);
        assert_true(e == GD_OK || e == GD_ERR_PARSE || e == GD_ERR_TOO_LARGE);
        if (r)
            assert_true(used <= n);
        godis_reply_destroy(&r);
    }
}

static void test_encode_roundtrip(void **state)
{
    (void)state;
    const char *argv[] = {"cluster", "meet", "4", "http://127.0.0.1:6300", ""};
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(godis_encode_command(5, argv, NULL, &out, &len), GD_OK);
    static const char want[] = "*5\r\n$7\r\ncluster\r\n$4\r\nmeet\r\n$1\r\n4\r\n"
                               "$21\r\nhttp://127.0.0.1:6300\r\n$0\r\n\r\n";
    assert_int_equal(len, sizeof(want) - 1);
    assert_memory_equal(out, want, len);
    godis_reply *r = NULL;
    size_t used = 0;
    assert_int_equal(godis_reply_parse(out, len, &r, &used), GD_OK);
    assert_int_equal(r->n, 5);
    assert_string_equal(r->elems[3]->str, "http://127.0.0.1:6300");
    godis_reply_destroy(&r);
    free(out);
    assert_int_equal(godis_encode_command(0, argv, NULL, &out, &len), GD_ERR_ARG);
    const char *withnull[] = {"get", NULL};
    assert_int_equal(godis_encode_command(2, withnull, NULL, &out, &len), GD_ERR_ARG);
}

/* ------------------------------------------------------------------------------------------
 * Validation */

static void test_validate_ids_and_urls(void **state)
{
    (void)state;
    assert_true(godis_valid_id(1));
    assert_true(godis_valid_id(GODIS_MAX_ID));
    assert_false(godis_valid_id(0));
    assert_false(godis_valid_id(-1));
    assert_false(godis_valid_id(GODIS_MAX_ID + 1));
    assert_true(godis_parse_id("42") == 42);
    static const char *bad_ids[] = {"", "0", "-1", "+1", "007", "1a", " 1", "1 ", "4.0",
                                    "99999999999", "2147483648", "0x10", NULL};
    for (int i = 0; bad_ids[i]; i++)
        assert_true(godis_parse_id(bad_ids[i]) == 0);
    assert_true(godis_parse_id(NULL) == 0);

    static const char *good[] = {
        "http://127.0.0.1:6300",
        "http://example-godis-4-endpoint.default.svc.cluster.local:6300",
        "http://a:1", "http://x-1.y:65535", NULL};
    for (int i = 0; good[i]; i++)
        if (!godis_valid_peer_url(good[i]))
            fail_msg("refused good url %s", good[i]);
    static const char *bad[] = {
        "", "127.0.0.1:6300", "https://127.0.0.1:6300", "http://127.0.0.1", "http://:6300",
        "http://127.0.0.1:", "http://127.0.0.1:0", "http://127.0.0.1:65536",
        "http://127.0.0.1:6300/", "http://127.0.0.1:6300/x", "http://u@h:1", "http://h:1?x",
        "http://h h:1", "http://h:1 ", "http://-h:1", "http://h-:1", "http://h..x:1",
        "http://.h:1", "http://h.:1", "http://999.0.0.1:1", "http://1.2.3:1", "http://h:01",
        "http://h:+1", "http://[::1]:6300", "http://h:1\r\n", "HTTP://h:1", "http://h_x:1",
        "http://h:1:2", NULL};
    for (int i = 0; bad[i]; i++)
        if (godis_valid_peer_url(bad[i]))
            fail_msg("accepted bad url %s", bad[i]);
    assert_false(godis_valid_peer_url(NULL));
    char longurl[400] = "http://";
    memset(longurl + 7, 'a', 300);
    strcpy(longurl + 307, ":1");
    assert_false(godis_valid_peer_url(longurl));
}

/* ------------------------------------------------------------------------------------------
 * A scripted fake server: answers each request with the next canned reply (or stays silent
 * when the script says NULL), and records how many bytes and requests it received. */

typedef struct {
    int lfd, port;
    const char *script[8];
    int nscript;
    int requests;
    size_t bytes;
    pthread_t th;
} fake;

static void *fake_run(void *arg)
{
    fake *f = arg;
    int fd = accept(f->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char buf[4096];
    size_t len = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + len, sizeof(buf) - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        f->bytes += (size_t)r;
        godis_reply *req = NULL;
        size_t used = 0;
        while (godis_reply_parse(buf, len, &req, &used) == GD_OK && req) {
            godis_reply_destroy(&req);
            memmove(buf, buf + used, len - used);
            len -= used;
            const char *ans = f->requests < f->nscript ? f->script[f->requests] : "+OK\r\n";
            f->requests++;
            if (ans && send(fd, ans, strlen(ans), MSG_NOSIGNAL) < 0)
                goto out;
        }
    }
out:
    close(fd);
    return NULL;
}

static void fake_start(fake *f)
{
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->lfd, 4), 0);
    getsockname(f->lfd, (struct sockaddr *)&sa, &sl);
    f->port = ntohs(sa.sin_port);
    pthread_create(&f->th, NULL, fake_run, f);
}

static void fake_stop(fake *f, godis_client **c)
{
    godis_client_destroy(c);          /* closes the connection: the fake's recv ends */
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->lfd);
}

static const godis_opts fast = {.connect_timeout_ms = 500, .reply_timeout_ms = 300};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_meet_retries_propose_canceled(void **state)
{
    (void)state;
    fake f = {.script = {"-propose canceled by context\r\n", "-propose canceled by context\r\n",
                         "+OK\r\n"},
              .nscript = 3};
    fake_start(&f);
    godis_client *c = godis_client_new("127.0.0.1", f.port, &fast);
    assert_non_null(c);
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.1:6300", 5000), GD_OK);
    assert_int_equal(f.requests, 3);
    fake_stop(&f, &c);
}

static void test_forget_other_error_is_not_retried(void **state)
{
    (void)state;
    fake f = {.script = {"-ERR something else\r\n"}, .nscript = 1};
    fake_start(&f);
    godis_client *c = godis_client_new("127.0.0.1", f.port, &fast);
    assert_int_equal(godis_forget(c, 2, 5000), GD_ERR_PROTOCOL);
    assert_string_equal(godis_last_error(c), "ERR something else");
    assert_int_equal(f.requests, 1);
    fake_stop(&f, &c);
}

static void test_forget_deadline(void **state)
{
    (void)state;
    fake f = {.script = {"-propose canceled by context\r\n", "-propose canceled by context\r\n",
                         "-propose canceled by context\r\n", "-propose canceled by context\r\n",
                         "-propose canceled by context\r\n", "-propose canceled by context\r\n",
                         "-propose canceled by context\r\n", "-propose canceled by context\r\n"},
              .nscript = 8};
    fake_start(&f);
    godis_client *c = godis_client_new("127.0.0.1", f.port, &fast);
    assert_int_equal(godis_forget(c, 2, 300), GD_ERR_TIMEOUT);
    assert_true(f.requests >= 2);
    fake_stop(&f, &c);
}

static void test_reply_timeout_then_reconnect(void **state)
{
    (void)state;
    fake f = {.script = {NULL}, .nscript = 1};      /* never answers the first request */
    fake_start(&f);
    godis_client *c = godis_client_new("127.0.0.1", f.port, &fast);
    godis_reply *r = NULL;
    const char *argv[] = {"get", "k"};
    assert_int_equal(godis_command(c, &r, 2, argv), GD_ERR_TIMEOUT);
    assert_null(r);
    fake_stop(&f, &c);
}

/* Invalid input never reaches the wire. */
static void test_invalid_meet_sends_nothing(void **state)
{
    (void)state;
    fake f = {.nscript = 0};
    fake_start(&f);
    godis_client *c = godis_client_new("127.0.0.1", f.port, &fast);
    assert_int_equal(godis_meet(c, 0, "http://127.0.0.1:6300", 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(c, -3, "http://127.0.0.1:6300", 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.1:6300/", 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(c, 4, "127.0.0.1:6300", 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(c, 4, NULL, 1000), GD_ERR_ARG);
    assert_int_equal(godis_forget(c, 0, 1000), GD_ERR_ARG);
    assert_int_equal(godis_forget(c, GODIS_MAX_ID + 1, 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(NULL, 4, "http://h:1", 1000), GD_ERR_ARG);
    fake_stop(&f, &c);
    assert_int_equal(f.bytes, 0);
    assert_int_equal(f.requests, 0);
}

/* The order the operator dials a member in: the pod IP from the Pod cache, then the
 * member's Service name in the cluster's DNS domain (default cluster.local). */
static void test_member_hosts_order(void **state)
{
    (void)state;
    char h[2][GODIS_HOST_MAX];
    assert_int_equal(godis_member_hosts("10.244.1.7", "ex-3", "db", NULL, h), 2);
    assert_string_equal(h[0], "10.244.1.7");
    assert_string_equal(h[1], "ex-3-endpoint.db.svc.cluster.local");
    assert_int_equal(godis_member_hosts("", "ex-3", "db", "corp.example", h), 1);
    assert_string_equal(h[0], "ex-3-endpoint.db.svc.corp.example");
    assert_int_equal(godis_member_hosts(NULL, "ex-3", "db", "", h), 1);
    assert_string_equal(h[0], "ex-3-endpoint.db.svc.cluster.local");
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(godis_member_hosts(NULL, longname, "db", NULL, h), -1);
    assert_true(godis_valid_dns_name("cluster.local"));
    assert_true(godis_valid_dns_name("k8s-1.corp.example"));
    assert_false(godis_valid_dns_name(""));
    assert_false(godis_valid_dns_name(".cluster.local"));
    assert_false(godis_valid_dns_name("cluster..local"));
    assert_false(godis_valid_dns_name("-x.local"));
    assert_false(godis_valid_dns_name("x-.local"));
    assert_false(godis_valid_dns_name("cluster.local."));
    assert_false(godis_valid_dns_name("a_b.local"));
    assert_false(godis_valid_dns_name("a b"));
}

/* Writes a hosts file for the resolution tests; the caller unlinks path. */
static void hosts_file(char *path, const char *text)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* host resolves, under opts, to want (GD_OK: the address want_addr; else its error). */
static void resolves(const char *host, const godis_opts *o, gd_err want, const char *want_addr)
{
    char addr[300] = "";
    godis_client *c = godis_client_new(host, 6379, o);
    assert_non_null(c);
    gd_err e = godis_client_resolve(c, addr, sizeof(addr));
    if (e != want || (want_addr && strcmp(addr, want_addr) != 0))
        fail_msg("%s: %s \"%s\" (%s), want %s %s", host, gd_strerror(e), addr,
                 godis_last_error(c), gd_strerror(want), want_addr ? want_addr : "");
    godis_client_destroy(&c);
}

/* The product's default (no guard): literal addresses and names anywhere are resolved — and
 * only resolved here: godis_client_resolve never connects, so no test dials outside
 * loopback. $GODIS_HOSTS_FILE comes before the system resolver. */
static void test_default_resolves_real_cluster_addresses(void **state)
{
    (void)state;
    char *saved = getenv(GODIS_LOOPBACK_ENV) ? strdup(getenv(GODIS_LOOPBACK_ENV)) : NULL;
    unsetenv(GODIS_LOOPBACK_ENV);
    char path[] = "/tmp/godis-hosts-XXXXXX", addr[300];
    hosts_file(path, "10.1.2.3 ex-1-endpoint.db.svc.cluster.local\n");
    setenv("GODIS_HOSTS_FILE", path, 1);
    godis_client *c = godis_client_new("192.0.2.1", 6379, &fast);          /* TEST-NET-1 */
    assert_int_equal(godis_client_loopback_only(c), 0);
    godis_client_destroy(&c);
    resolves("192.0.2.1", &fast, GD_OK, "192.0.2.1:6379");
    resolves("fd00::7", &fast, GD_OK, "[fd00::7]:6379");
    resolves("ex-1-endpoint.db.svc.cluster.local", &fast, GD_OK, "10.1.2.3:6379");
    unsetenv("GODIS_HOSTS_FILE");
    /* Not in $GODIS_HOSTS_FILE: the system resolver (nsswitch: /etc/hosts, then DNS) answers.
     * "localhost" is asked because /etc/hosts answers it without a DNS query. */
    FILE *eh = fopen("/etc/hosts", "re");
    char line[256];
    bool has_localhost = false;
    while (eh && fgets(line, sizeof(line), eh))
        has_localhost |= strncmp(line, "127.0.0.1", 9) == 0 && strstr(line, "localhost") != NULL;
    if (eh)
        fclose(eh);
    assert_true(has_localhost);        /* every Debian install lists it; so does fresh-check's root */
    c = godis_client_new("localhost", 6379, &fast);
    assert_int_equal(godis_client_resolve(c, addr, sizeof(addr)), GD_OK);
    assert_true(!strcmp(addr, "127.0.0.1:6379") || !strcmp(addr, "[::1]:6379"));
    godis_client_destroy(&c);
    unlink(path);
    if (saved) {
        setenv(GODIS_LOOPBACK_ENV, saved, 1);
        free(saved);
    }
}

/* The test environment's guard: on from the environment or opts, it refuses any address
 * outside 127.0.0.0/8 before connecting (no retry), and never asks DNS. */
static void test_loopback_guard(void **state)
{
    (void)state;
    char *saved = getenv(GODIS_LOOPBACK_ENV) ? strdup(getenv(GODIS_LOOPBACK_ENV)) : NULL;
    setenv(GODIS_LOOPBACK_ENV, "1", 1);
    assert_true(godis_loopback_guard_env());
    godis_client *c = godis_client_new("192.0.2.1", 6379, &fast);   /* opts say nothing */
    assert_int_equal(godis_client_loopback_only(c), 1);
    godis_reply *r = NULL;
    const char *argv[] = {"hello"};
    assert_int_equal(godis_command(c, &r, 1, argv), GD_ERR_ARG);
    assert_non_null(strstr(godis_last_error(c), "192.0.2.1:6379"));
    assert_non_null(strstr(godis_last_error(c), "loopback guard"));
    int64_t t0 = now_ms();
    assert_int_equal(godis_meet(c, 4, "http://h:1", 2000), GD_ERR_ARG);   /* not retried */
    assert_true(now_ms() - t0 < 500);
    godis_client_destroy(&c);

    unsetenv(GODIS_LOOPBACK_ENV);
    assert_false(godis_loopback_guard_env());
    godis_opts guarded = fast;
    guarded.loopback_only = 1;
    char path[] = "/tmp/godis-hosts-XXXXXX", addr[300];
    hosts_file(path, "10.1.2.3 far-away.db.svc.cluster.local\n");
    setenv("GODIS_HOSTS_FILE", path, 1);
    c = godis_client_new("far-away.db.svc.cluster.local", 6379, &guarded);
    assert_int_equal(godis_client_resolve(c, addr, sizeof(addr)), GD_ERR_ARG);
    assert_non_null(strstr(godis_last_error(c), "10.1.2.3"));
    godis_client_destroy(&c);
    c = godis_client_new("in-no-hosts-file.db.svc.cluster.local", 6379, &guarded);
    assert_int_equal(godis_client_resolve(c, addr, sizeof(addr)), GD_ERR_TRANSPORT);
    assert_non_null(strstr(godis_last_error(c), "does not ask DNS"));
    godis_client_destroy(&c);
    resolves("127.0.0.9", &guarded, GD_OK, "127.0.0.9:6379");
    unsetenv("GODIS_HOSTS_FILE");
    unlink(path);
    if (saved) {
        setenv(GODIS_LOOPBACK_ENV, saved, 1);
        free(saved);
    }
    assert_null(godis_client_new("", 6379, NULL));
    assert_null(godis_client_new("127.0.0.1", 0, NULL));
    assert_null(godis_client_new("127.0.0.1", 70000, NULL));
}

static void test_connection_refused_is_retried_until_deadline(void **state)
{
    (void)state;
    fake f = {.nscript = 0};
    fake_start(&f);
    int port = f.port;
    godis_client *c = NULL;
    fake_stop(&f, &c);                /* nothing listens on port now */
    c = godis_client_new("127.0.0.1", port, &fast);
    gd_err e = godis_forget(c, 3, 300);
    assert_true(e == GD_ERR_TRANSPORT || e == GD_ERR_TIMEOUT);
    /* the error names the address dialled and the cause */
    char want[64];
    snprintf(want, sizeof(want), "connect 127.0.0.1:%d", port);
    assert_non_null(strstr(godis_last_error(c), want));
    assert_non_null(strstr(godis_last_error(c), "refused"));
    godis_client_destroy(&c);
}

static void test_hello_and_get(void **state)
{
    (void)state;
    fake f = {.script = {"*14\r\n$6\r\nserver\r\n$5\r\ngodis\r\n$7\r\nversion\r\n$11\r\n"
                         "255.255.255\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:3\r\n$4\r\nmode\r\n"
                         "$7\r\ncluster\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
                         "-redis: nil\r\n", "$2\r\nhi\r\n", "*2\r\n$23\r\n1@http://127.0.0.1:6300\r\n"
                         "$12\r\n2@http://h:1\r\n", "*1\r\n$5\r\nnope!\r\n"},
              .nscript = 5};
    fake_start(&f);
    godis_client *c = godis_client_new("127.0.0.1", f.port, &fast);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    assert_string_equal(hi.server, "godis");
    assert_string_equal(hi.version, "255.255.255");
    assert_int_equal(hi.proto, 2);
    assert_int_equal(hi.id, 3);
    char *v = NULL;
    assert_int_equal(godis_get(c, "k", &v), GD_ERR_NOT_FOUND);
    assert_null(v);
    assert_int_equal(godis_get(c, "k", &v), GD_OK);
    assert_string_equal(v, "hi");
    free(v);
    long long ids[4];
    char *urls[4];
    size_t n = 0;
    assert_int_equal(godis_members(c, ids, urls, 4, &n), GD_OK);
    assert_int_equal(n, 2);
    assert_true(ids[0] == 1 && ids[1] == 2);
    assert_string_equal(urls[1], "http://h:1");
    free(urls[0]);
    free(urls[1]);
    assert_int_equal(godis_members(c, ids, urls, 4, &n), GD_ERR_PROTOCOL);
    fake_stop(&f, &c);
}


/* Under the guard, names come from hosts files, never from DNS. */
static void test_names_from_hosts_file_only(void **state)
{
    (void)state;
    char path[] = "/tmp/godis-hosts-XXXXXX";
    hosts_file(path, "# node agent block\n10.1.2.3 far-away.default.svc.cluster.local\n"
                     "127.0.0.1   ex-1-endpoint.default.svc.cluster.local ex-1 # member\n");
    setenv("GODIS_HOSTS_FILE", path, 1);
    godis_opts guarded = fast;
    guarded.loopback_only = 1;
    fake f = {.script = {"+OK\r\n"}, .nscript = 1};
    fake_start(&f);
    godis_client *c = godis_client_new("EX-1-endpoint.default.svc.cluster.local", f.port, &guarded);
    assert_int_equal(godis_forget(c, 3, 1000), GD_OK);
    godis_client_destroy(&c);
    c = godis_client_new("far-away.default.svc.cluster.local", f.port, &guarded);
    assert_int_equal(godis_forget(c, 3, 1000), GD_ERR_ARG);       /* maps outside loopback */
    godis_client_destroy(&c);
    c = godis_client_new("not-in-any.hosts-file.invalid", f.port, &guarded);
    godis_reply *r = NULL;
    const char *argv[] = {"hello"};
    assert_int_equal(godis_command(c, &r, 1, argv), GD_ERR_TRANSPORT);
    assert_non_null(strstr(godis_last_error(c), "hosts file"));
    fake_stop(&f, &c);
    unsetenv("GODIS_HOSTS_FILE");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_types),
        cmocka_unit_test(test_parse_truncated_every_byte),
        cmocka_unit_test(test_parse_hostile),
        cmocka_unit_test(test_parse_fuzz),
        cmocka_unit_test(test_encode_roundtrip),
        cmocka_unit_test(test_validate_ids_and_urls),
        cmocka_unit_test(test_meet_retries_propose_canceled),
        cmocka_unit_test(test_forget_other_error_is_not_retried),
        cmocka_unit_test(test_forget_deadline),
        cmocka_unit_test(test_reply_timeout_then_reconnect),
        cmocka_unit_test(test_invalid_meet_sends_nothing),
        cmocka_unit_test(test_member_hosts_order),
        cmocka_unit_test(test_default_resolves_real_cluster_addresses),
        cmocka_unit_test(test_loopback_guard),
        cmocka_unit_test(test_connection_refused_is_retried_until_deadline),
        cmocka_unit_test(test_hello_and_get),
        cmocka_unit_test(test_names_from_hosts_file_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
