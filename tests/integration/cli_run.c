/* cli_run.c — see cli_run.h. */
#include "cli_run.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void child(const char *const *argv, const char *const *env, int out, int err)
{
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out, 1);
    dup2(err, 2);
    for (const char *const *e = env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - *e : (long)strlen(*e)), *e);
        if (eq && eq[1]) setenv(name, eq + 1, 1);
        else unsetenv(name);
    }
    setpgid(0, 0);                       /* the timeout kills what it started too */
    execv(argv[0], (char *const *)argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static void append(char *buf, size_t cap, size_t *len, const char *p, size_t n)
{
    if (*len + 1 >= cap) return;
    if (n > cap - 1 - *len) n = cap - 1 - *len;
    memcpy(buf + *len, p, n);
    *len += n;
    buf[*len] = '\0';
}

void cli_run(cli_result *r, const char *const *argv, const char *const *env, int timeout_ms)
{
    memset(r, 0, sizeof *r);
    int op[2], ep[2];
    if (pipe(op) || pipe(ep)) {
        r->status = -2;
        return;
    }
    int64_t t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        close(op[0]);
        close(ep[0]);
        child(argv, env, op[1], ep[1]);
    }
    close(op[1]);
    close(ep[1]);
    size_t olen = 0, elen = 0;
    int fds[2] = {op[0], ep[0]};
    bool killed = false;
    while (fds[0] >= 0 || fds[1] >= 0) {
        struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        int64_t left = t0 + timeout_ms - now_ms();
        if (left <= 0) {
            kill(-pid, SIGKILL);
            killed = true;
            break;
        }
        if (poll(p, 2, (int)left) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i] < 0 || !p[i].revents) continue;
            char buf[4096];
            ssize_t n = read(fds[i], buf, sizeof buf);
            if (n <= 0) { close(fds[i]); fds[i] = -1; continue; }
            if (i == 0) append(r->out, sizeof r->out, &olen, buf, (size_t)n);
            else append(r->err, sizeof r->err, &elen, buf, (size_t)n);
        }
    }
    for (int i = 0; i < 2; i++) if (fds[i] >= 0) close(fds[i]);
    int st = 0;
    waitpid(pid, &st, 0);
    r->ms = now_ms() - t0;
    r->status = killed ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void cli_runl(cli_result *r, const char *const *env, int timeout_ms, ...)
{
    const char *argv[32];
    int n = 0;
    va_list ap;
    va_start(ap, timeout_ms);
    for (const char *a; n < 31 && (a = va_arg(ap, const char *));) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    cli_run(r, argv, env, timeout_ms);
}

int cli_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

int cli_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        if (*s == '\n' || s[1] == '\0') n++;
    return n;
}

/* ---- servers that are not API servers ---- */

struct cli_server {
    int mode, fd, port;
    pthread_t th;
    atomic_int accepted, stop;
    int conns[256];
    int nconns;
};

static void answer_html(int c, bool error)
{
    char req[8192];
    size_t n = 0;
    /* read the request head (and nothing more is expected: GET, or a small PATCH) */
    while (n < sizeof req - 1) {
        ssize_t k = read(c, req + n, sizeof req - 1 - n);
        if (k <= 0) return;
        n += (size_t)k;
        req[n] = '\0';
        if (strstr(req, "\r\n\r\n")) break;
    }
    static const char page[] = "<!DOCTYPE html><html><head><title>Sign in</title></head>"
                               "<body><form>user <input name=u></form></body></html>\n";
    char resp[512];
    int len = snprintf(resp, sizeof resp, "HTTP/1.1 %s\r\nContent-Type: text/html\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                       error ? "502 Bad Gateway" : "200 OK", sizeof page - 1);
    (void)!write(c, resp, (size_t)len);
    (void)!write(c, page, sizeof page - 1);
}

static void *serve(void *ud)
{
    cli_server *s = ud;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {s->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        int c = accept(s->fd, NULL, NULL);
        if (c < 0) continue;
        atomic_fetch_add(&s->accepted, 1);
        if (s->mode != CLI_SERVER_SILENT) {
            answer_html(c, s->mode == CLI_SERVER_HTML_ERROR);
            close(c);
        } else if (s->nconns < 256) {
            s->conns[s->nconns++] = c;   /* held open, never answered */
        } else {
            close(c);
        }
    }
    return NULL;
}

cli_server *cli_server_start(int mode)
{
    cli_server *s = calloc(1, sizeof *s);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    s->mode = mode;
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof a) || listen(s->fd, 64) ||
        getsockname(s->fd, (struct sockaddr *)&a, &al) || pthread_create(&s->th, NULL, serve, s)) {
        if (s->fd >= 0) close(s->fd);
        free(s);
        return NULL;
    }
    s->port = ntohs(a.sin_port);
    return s;
}

int cli_server_port(const cli_server *s) { return s->port; }
int cli_server_accepted(cli_server *s) { return atomic_load(&s->accepted); }

void cli_server_stop(cli_server **ps)
{
    if (!ps || !*ps) return;
    cli_server *s = *ps;
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    for (int i = 0; i < s->nconns; i++) close(s->conns[i]);
    close(s->fd);
    free(s);
    *ps = NULL;
}

void cli_kubeconfig(const char *path, const char *server)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
               "clusters: [{name: c, cluster: {server: '%s'}}]\n"
               "users: [{name: u, user: {token: not-a-real-token}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\n", server);
    fclose(f);
}

int cli_busy_port(int *fd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) || listen(*fd, 4) ||
        getsockname(*fd, (struct sockaddr *)&a, &al))
        return -1;
    return ntohs(a.sin_port);
}

/* ---- scratch files ---- */

static char tmp_dir[64];

bool cli_tmp_init(const char *name)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/%s-XXXXXX", name);
    return mkdtemp(tmp_dir) != NULL;
}

const char *cli_tmp(const char *name)
{
    static char buf[8][320];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
    return buf[k];
}

int cli_tmp_done(int rc)
{
    if (rc != 0) {
        fprintf(stderr, "files of the failed run kept in %s\n", tmp_dir);
        return rc;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : 1;
}

bool cli_put(const char *path, const char *text, mode_t mode)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0700);                /* one level: what the tests' scratch trees need */
    }
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok && chmod(path, mode) == 0;
}

char *cli_slurp(const char *path)
{
    static char buf[1 << 20];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    return buf;
}
