/* Tests of the node agent's process side: program lookup, spawning into a process group with
 * the log as stdout/stderr and exactly the given env, TCP/HTTP readiness probes against local
 * listeners (loopback only), and directory removal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "k8s_client.h"
#include "k8s_config.h"
#include "../../tools/node-agent/agent.h"

static void test_resolve_program(void **st)
{
    (void)st;
    char p[NA_PATH_MAX];
    assert_true(na_resolve_program("sh", p, sizeof p));
    assert_non_null(strstr(p, "/sh"));
    assert_true(na_resolve_program("/bin/sh", p, sizeof p));
    assert_false(na_resolve_program("/nonexistent/prog", p, sizeof p));
    assert_false(na_resolve_program("no-such-program-anywhere", p, sizeof p));
    assert_false(na_resolve_program("", p, sizeof p));
    assert_false(na_resolve_program(NULL, p, sizeof p));
    assert_false(na_resolve_program("/bin/sh", p, 4));       /* does not fit */
}

static void test_spawn(void **st)
{
    (void)st;
    char dir[] = "/tmp/test-na-proc-XXXXXX", log[64], err[256] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/c.log", dir);
    char *argv[] = { "/bin/sh", "-c", "echo \"$GREETING $1 $(pwd) $HOME\"; echo oops >&2; "
                     "ps -o pgid= -p $$ | tr -d ' ' ; exit 7", "sh", "arg1", NULL };
    char *envp[] = { "GREETING=hi", "PATH=/usr/bin:/bin", NULL };
    pid_t pid = na_spawn("/bin/sh", argv, envp, dir, log, err, sizeof err);
    assert_true(pid > 0);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 7);
    char buf[512] = "";
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char want[256];
    snprintf(want, sizeof want, "hi arg1 %s \n", dir);          /* HOME not inherited */
    assert_true(strncmp(buf, want, strlen(want)) == 0);
    assert_non_null(strstr(buf, "oops\n"));
    char pg[32];
    snprintf(pg, sizeof pg, "\n%d\n", (int)pid);                 /* its own process group */
    if (strstr(buf, "ps:") == NULL) assert_non_null(strstr(buf, pg));
    /* a log that cannot be opened is an error, not a child */
    pid = na_spawn("/bin/sh", argv, envp, dir, "/nonexistent/dir/log", err, sizeof err);
    assert_int_equal(pid, -1);
    assert_non_null(strstr(err, "cannot open log"));
    na_rmtree(dir);
    assert_int_equal(access(dir, F_OK), -1);
}

typedef struct {
    int fd;
    const char *reply;
} server;

static void *serve_one(void *arg)
{
    server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c >= 0) {
        char buf[512];
        ssize_t r = recv(c, buf, sizeof buf, 0);
        (void)r;
        if (s->reply) {
            ssize_t w = send(c, s->reply, strlen(s->reply), MSG_NOSIGNAL);
            (void)w;
        }
        close(c);
    }
    return NULL;
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return fd;
}

static bool http_probe_with(const char *reply)
{
    int port;
    server s = { .fd = listen_any(&port), .reply = reply };
    pthread_t t;
    pthread_create(&t, NULL, serve_one, &s);
    bool ok = na_probe_http("127.0.0.1", port, "/ready", 1000);
    pthread_join(t, NULL);
    close(s.fd);
    return ok;
}

static void test_probes(void **st)
{
    (void)st;
    int port;
    int fd = listen_any(&port);
    assert_true(na_probe_tcp("127.0.0.1", port, 1000));
    close(fd);
    assert_false(na_probe_tcp("127.0.0.1", port, 1000));         /* nobody listens now */
    assert_false(na_probe_tcp("10.1.2.3", 80, 1000));            /* never leaves loopback */
    assert_false(na_probe_tcp("not-an-ip", 80, 1000));
    assert_true(http_probe_with("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    assert_true(http_probe_with("HTTP/1.0 302 Found\r\n\r\n"));
    assert_false(http_probe_with("HTTP/1.1 500 Internal Server Error\r\n\r\n"));
    assert_false(http_probe_with("HTTP/1.1 404 Not Found\r\n\r\n"));
    assert_false(http_probe_with("garbage that is long enough\r\n"));
    assert_false(http_probe_with(NULL));                         /* closed without a reply */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_program),
        cmocka_unit_test(test_spawn),
        cmocka_unit_test(test_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
