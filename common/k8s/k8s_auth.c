/* k8s_auth.c — who we are on each request: a bearer token (static, or a tokenFile that
 * rotates) or an exec credential plugin (k8s_exec.c). See k8s_internal.h. */
#include "k8s_internal.h"
#include "gd_log.h"
#include "gd_time.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TOKEN_BYTES  (64 * 1024)
#define TOKEN_RECHECK_MS 1000

struct k8s_auth {
    const k8s_config *cfg;          /* the client's; outlives us */
    k8s_exec *exec;                 /* credentials from an exec plugin, or NULL */
    pthread_mutex_t tok_mu;
    char *file_token;               /* last good read of cfg->token_file */
    int64_t tok_checked_ms;
    bool tok_tried;                 /* read attempted at least once */
    bool tok_force;                 /* re-read at the next request (after a 401) */
    struct stat tok_st;
    bool tok_have_st;
};

k8s_auth *k8s_auth_new(const k8s_config *cfg, long exec_timeout_ms)
{
    k8s_auth *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cfg = cfg;
    pthread_mutex_init(&a->tok_mu, NULL);
    if (cfg->exec && !(a->exec = k8s_exec_new(cfg, exec_timeout_ms)))
        k8s_auth_destroy(&a);
    return a;
}

void k8s_auth_destroy(k8s_auth **pa)
{
    if (!pa || !*pa)
        return;
    k8s_auth *a = *pa;
    k8s_exec_destroy(&a->exec);
    pthread_mutex_destroy(&a->tok_mu);
    if (a->file_token) {
        explicit_bzero(a->file_token, strlen(a->file_token));
        free(a->file_token);
    }
    free(a);
    *pa = NULL;
}

gd_err k8s_auth_cred(k8s_auth *a, k8s_cred **cred, k8s_status *st)
{
    *cred = NULL;
    if (!a->exec)
        return GD_OK;
    char why[sizeof st->message] = "";
    if ((*cred = k8s_exec_get(a->exec, why, sizeof why)))
        return GD_OK;
    st->err = GD_ERR_TRANSPORT;
    st->http_status = 0;
    snprintf(st->message, sizeof st->message, "getting credentials: %.490s", why);
    return GD_ERR_TRANSPORT;
}

k8s_cred *k8s_auth_unauthorized(k8s_auth *a, const k8s_cred *used)
{
    if (a->cfg->token_file) {
        pthread_mutex_lock(&a->tok_mu);
        a->tok_force = true;            /* maybe the token just rotated */
        pthread_mutex_unlock(&a->tok_mu);
    }
    if (!a->exec || !used)
        return NULL;
    char why[512] = "";
    k8s_cred *fresh = k8s_exec_refresh(a->exec, used, why, sizeof why);
    if (!fresh)
        gd_log(GD_LOG_WARN, "401 from the API server, and the exec plugin failed", "error", why, NULL);
    return fresh;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads a token file: trimmed, non-empty, no control characters (it goes into a header). */
static char *read_token_file(const char *path, struct stat *st, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    if (fstat(fd, st) != 0 || st->st_size > MAX_TOKEN_BYTES) {
        snprintf(why, whylen, "cannot stat or larger than %d bytes", MAX_TOKEN_BYTES);
        goto fail;
    }
    buf = malloc(MAX_TOKEN_BYTES + 1);
    if (!buf)
        goto fail;
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, MAX_TOKEN_BYTES - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, whylen, "%s", strerror(errno));
            goto fail;
        }
        if (n == 0 || (len += (size_t)n) == MAX_TOKEN_BYTES)
            break;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                       buf[len - 1] == '\t'))
        len--;
    size_t start = 0;
    while (start < len && (buf[start] == ' ' || buf[start] == '\t'))
        start++;
    if (start == len) {
        snprintf(why, whylen, "file is empty");
        goto fail;
    }
    for (size_t i = start; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
            snprintf(why, whylen, "token contains control characters");
            goto fail;
        }
    memmove(buf, buf + start, len - start);
    buf[len - start] = '\0';
    close(fd);
    return buf;
fail:
    free(buf);
    close(fd);
    return NULL;
}

/* Re-reads the token file when it changed, at most once per second (or right away after a
 * 401). client-go's rule: a readable token file wins over the static token. */
static void refresh_token_locked(k8s_auth *c)
{
    int64_t now = gd_mono_ms();
    if (!c->tok_force && c->tok_tried && now - c->tok_checked_ms < TOKEN_RECHECK_MS)
        return;                         /* also keeps a missing file from flooding the log */
    c->tok_tried = true;
    c->tok_checked_ms = now;
    c->tok_force = false;
    struct stat st;
    if (c->tok_have_st && c->file_token && stat(c->cfg->token_file, &st) == 0 &&
        same_file(&st, &c->tok_st))
        return;
    char why[128];
    char *tok = read_token_file(c->cfg->token_file, &st, why, sizeof why);
    if (!tok) {
        gd_log(GD_LOG_WARN, "cannot read the token file; keeping the last good token",
               "path", c->cfg->token_file, "error", why, NULL);
        return;
    }
    if (c->file_token) {
        memset(c->file_token, 0, strlen(c->file_token));
        free(c->file_token);
    }
    c->file_token = tok;
    c->tok_st = st;
    c->tok_have_st = true;
}

char *k8s_auth_header(k8s_auth *a, const k8s_cred *cred, bool *nomem)
{
    *nomem = false;
    pthread_mutex_lock(&a->tok_mu);
    if (!cred && a->cfg->token_file && a->cfg->token_file[0])
        refresh_token_locked(a);
    const char *tok = cred ? cred->token : a->file_token ? a->file_token : a->cfg->token;
    char *line = NULL;
    if (tok && tok[0] && !strpbrk(tok, "\r\n")) {
        size_t n = strlen(tok) + 32;
        if ((line = malloc(n)))
            snprintf(line, n, "Authorization: Bearer %s", tok);
        else
            *nomem = true;
    }
    pthread_mutex_unlock(&a->tok_mu);
    return line;
}
