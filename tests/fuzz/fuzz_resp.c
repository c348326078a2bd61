/* fuzz_resp.c — the RESP2 replies a godis member (or anything listening on its port) sends
 * the operator: common/godis/godis_resp.c's parser, and common/godis/godis_client.c's verbs reading them
 * off a real socket.
 *
 * Part 1, the parser on the raw bytes: every value it accepts must be re-found from any
 * longer buffer, and each strict prefix of it must be "incomplete, read more" — never an
 * error and never a different value (the client re-parses from the start as bytes arrive,
 * so a prefix that parsed as something else would desynchronise the stream).
 * Part 2, the client: a listener on 127.0.0.1 answers every request on a connection with
 * the whole input, then closes; hello, get, set, the stand-in's members, meet and forget
 * read it as their replies (one after the other on one connection, reconnecting after a
 * close), as they would from a hostile or broken member. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fuzz_util.h"
#include "godis_client.h"

/* ---- part 1 ---- */

static bool same_reply(const godis_reply *a, const godis_reply *b)
{
    if (a->type != b->type || a->integer != b->integer || a->len != b->len || a->n != b->n)
        return false;
    if ((a->str == NULL) != (b->str == NULL) || (a->str && memcmp(a->str, b->str, a->len)))
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!same_reply(a->elems[i], b->elems[i]))
            return false;
    return true;
}

static void check_reply_shape(const godis_reply *r)
{
    switch (r->type) {
    case GODIS_REPLY_STATUS: case GODIS_REPLY_ERROR: case GODIS_REPLY_BULK:
        if (!r->str || r->str[r->len] != '\0') abort();
        break;
    case GODIS_REPLY_ARRAY:
        if (r->n > GODIS_MAX_ARRAY || (r->n && !r->elems)) abort();
        for (size_t i = 0; i < r->n; i++) check_reply_shape(r->elems[i]);
        break;
    case GODIS_REPLY_INTEGER: case GODIS_REPLY_NIL:
        break;
    default:
        abort();
    }
}

static void parse_all(const char *d, size_t len)
{
    size_t pos = 0;
    while (pos < len) {
        godis_reply *r = NULL;
        size_t used = 0;
        gd_err e = godis_reply_parse(d + pos, len - pos, &r, &used);
        if (e != GD_OK || !r)
            return;
        if (used == 0 || used > len - pos) abort();
        check_reply_shape(r);
        /* prefixes: incomplete, never an error or another value (a few cuts: the whole
         * O(n^2) walk would slow the fuzzer down for nothing) */
        size_t cuts[4] = {0, used / 2, used > 1 ? used - 1 : 0, used > 2 ? used - 2 : 0};
        for (int i = 0; i < 4; i++) {
            godis_reply *p = NULL;
            size_t pu = 0;
            if (cuts[i] >= used) continue;
            if (godis_reply_parse(d + pos, cuts[i], &p, &pu) != GD_OK || p || pu) abort();
        }
        /* the same value from a buffer that holds more after it */
        godis_reply *again = NULL;
        size_t au = 0;
        if (godis_reply_parse(d + pos, len - pos, &again, &au) != GD_OK || au != used ||
            !again || !same_reply(r, again))
            abort();
        godis_reply_destroy(&again);
        godis_reply_destroy(&r);
        pos += used;
    }
}

/* ---- part 2 ---- */

/* No allocation on the server thread: libFuzzer runs a full leak scan after every input
 * whose mallocs and frees do not balance, and a thread that frees a little later than the
 * input ends made that happen all the time. */
#define ANSWER_MAX (1 << 17)
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char answer[ANSWER_MAX], copy[ANSWER_MAX];
static size_t answer_len;
static int port;

/* Serves one connection: reads a request, answers with the current input, closes for
 * writing, and drains whatever the client still sends until it closes. */
static void serve(int fd)
{
    char buf[4096];
    if (recv(fd, buf, sizeof buf, 0) <= 0) return;
    pthread_mutex_lock(&mu);
    size_t n = answer_len, off = 0;
    memcpy(copy, answer, n);
    pthread_mutex_unlock(&mu);
    while (off < n) {
        ssize_t w = send(fd, copy + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    while (recv(fd, buf, sizeof buf, 0) > 0)
        ;
}

static void *server(void *arg)
{
    int ls = *(int *)arg;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        serve(fd);
        close(fd);
    }
    return NULL;
}

static void start_server(void)
{
    static int ls = -1;
    if (ls >= 0) return;
    ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 64) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        perror("fuzz_resp: listener");
        abort();
    }
    port = ntohs(a.sin_port);
    pthread_t th;
    if (pthread_create(&th, NULL, server, &ls)) abort();
    pthread_detach(th);
}

static void client_verbs(bool membership)
{
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = 2000, .loopback_only = 1};
    godis_client *c = godis_client_new("127.0.0.1", port, &o);
    if (!c) abort();
    godis_hello_info hi;
    if (godis_hello(c, &hi) == GD_OK &&
        (!memchr(hi.server, 0, sizeof hi.server) || !memchr(hi.role, 0, sizeof hi.role)))
        abort();
    char *v = NULL;
    if (godis_get(c, "probe", &v) == GD_OK && !v) abort();
    free(v);
    godis_set(c, "probe", "x");
    long long ids[8];
    char *urls[8] = {0};
    size_t n = 0;
    if (godis_members(c, ids, urls, 8, &n) == GD_OK) {
        if (n > 8) abort();
        for (size_t i = 0; i < n; i++) {
            if (!godis_valid_id(ids[i]) || !urls[i]) abort();
            free(urls[i]);
        }
    }
    /* 1 ms: one attempt (a retry on "propose canceled" would only repeat the same reply).
     * A failed attempt still sleeps out that millisecond, so only status replies (what
     * meet/forget look at) go through them: 0.6k execs/s with every input, 4k without. */
    if (membership) {
        godis_meet(c, 4, "http://g-4-endpoint.default.svc.cluster.local:6300", 1);
        godis_forget(c, 4, 1);
    }
    (void)godis_last_error(c);
    godis_client_destroy(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    parse_all((const char *)d, len);
    start_server();
    pthread_mutex_lock(&mu);
    answer_len = len < ANSWER_MAX ? len : ANSWER_MAX;
    memcpy(answer, d, answer_len);
    pthread_mutex_unlock(&mu);
    client_verbs(len > 0 && (d[0] == '+' || d[0] == '-'));
    return 0;
}
