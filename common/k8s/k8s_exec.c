/* k8s_exec.c — see k8s_exec.h. Running the plugin (posix_spawnp, pipes, poll with a
 * deadline), reading its ExecCredential (cJSON, OpenSSL for the certificate), caching it. */
#include "k8s_exec.h"
#include "k8s_internal.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define OUT_MAX   (1u << 20)     /* an ExecCredential is a few KiB; certificates included */
#define ERR_KEEP  2048           /* the end of the plugin's stderr, for messages */
#define EXEC_INFO "KUBERNETES_EXEC_INFO"

struct k8s_exec {
    k8s_exec_config *cfg;        /* a deep copy */
    char *cluster_json;          /* spec.cluster for provideClusterInfo, or NULL */
    long timeout_ms;
    pthread_mutex_t mu;          /* one plugin run at a time; guards cached */
    k8s_cred *cached;
    atomic_uint_fast64_t runs;
};

/* ---- credentials ---- */

static void cred_free(k8s_cred *c)
{
    if (!c)
        return;
    if (c->token) {
        explicit_bzero(c->token, strlen(c->token));
        free(c->token);
    }
    if (c->key_pem) {
        explicit_bzero(c->key_pem, c->key_len);
        free(c->key_pem);
    }
    free(c->cert_pem);
    free(c);
}

void k8s_cred_release(k8s_cred **pc)
{
    if (!pc || !*pc)
        return;
    if (__atomic_sub_fetch(&(*pc)->refs, 1, __ATOMIC_ACQ_REL) == 0)
        cred_free(*pc);
    *pc = NULL;
}

static k8s_cred *cred_ref(k8s_cred *c)
{
    if (c)
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
    return c;
}

/* ---- construction ---- */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static k8s_exec_config *copy_cfg(const k8s_exec_config *e)
{
    k8s_exec_config *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->interactive = e->interactive;
    c->provide_cluster_info = e->provide_cluster_info;
    c->command = dup_or_null(e->command);
    c->api_version = dup_or_null(e->api_version);
    c->install_hint = dup_or_null(e->install_hint);
    c->where = dup_or_null(e->where);
    c->args = calloc(e->nargs + 1, sizeof *c->args);
    c->env = calloc(e->nenv + 1, sizeof *c->env);
    bool ok = c->command && c->api_version && c->where && c->args && c->env &&
              (!e->install_hint || c->install_hint);
    for (size_t i = 0; ok && i < e->nargs; i++, c->nargs++)
        ok = (c->args[i] = strdup(e->args[i])) != NULL;
    for (size_t i = 0; ok && i < e->nenv; i++, c->nenv++)
        ok = (c->env[i] = strdup(e->env[i])) != NULL;
    if (!ok)
        k8s_exec_config_destroy(&c);
    return c;
}

/* ExecCredential.spec.cluster (client-go's clientauthentication Cluster): what a plugin
 * needs to know which cluster it authenticates to. */
static char *cluster_json(const k8s_config *cfg)
{
    cJSON *c = cJSON_CreateObject();
    if (!c)
        return NULL;
    cJSON_AddStringToObject(c, "server", cfg->server);
    if (cfg->tls_server_name)
        cJSON_AddStringToObject(c, "tls-server-name", cfg->tls_server_name);
    if (cfg->insecure_skip_tls_verify)
        cJSON_AddTrueToObject(c, "insecure-skip-tls-verify");
    if (cfg->ca_pem && cfg->ca_pem_len) {
        char *b64 = malloc(4 * ((cfg->ca_pem_len + 2) / 3) + 1);
        if (b64) {
            EVP_EncodeBlock((unsigned char *)b64, cfg->ca_pem, (int)cfg->ca_pem_len);
            cJSON_AddStringToObject(c, "certificate-authority-data", b64);
            free(b64);
        }
    }
    char *s = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    return s;
}

k8s_exec *k8s_exec_new(const k8s_config *cfg, long timeout_ms)
{
    if (!cfg || !cfg->exec)
        return NULL;
    k8s_exec *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
    pthread_mutex_init(&x->mu, NULL);
    x->cfg = copy_cfg(cfg->exec);
    if (x->cfg && x->cfg->provide_cluster_info)
        x->cluster_json = cluster_json(cfg);
    if (!x->cfg || (x->cfg->provide_cluster_info && !x->cluster_json))
        k8s_exec_destroy(&x);
    return x;
}

void k8s_exec_destroy(k8s_exec **px)
{
    if (!px || !*px)
        return;
    k8s_exec *x = *px;
    k8s_cred_release(&x->cached);
    k8s_exec_config_destroy(&x->cfg);
    free(x->cluster_json);
    pthread_mutex_destroy(&x->mu);
    free(x);
    *px = NULL;
}

uint64_t k8s_exec_runs(const k8s_exec *x) { return x ? atomic_load(&((k8s_exec *)x)->runs) : 0; }

/* ---- running the plugin ---- */

/* Our environment, then the kubeconfig's env (which wins, as the last duplicate does in
 * Go's os/exec), then KUBERNETES_EXEC_INFO. */
static char **build_env(const k8s_exec *x, bool interactive)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + x->cfg->nenv + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool shadowed = nl == strlen(EXEC_INFO) && !strncmp(environ[i], EXEC_INFO, nl);
        for (size_t j = 0; j < x->cfg->nenv && !shadowed; j++)
            shadowed = !strncmp(x->cfg->env[j], environ[i], nl) && x->cfg->env[j][nl] == '=';
        if (!shadowed)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < x->cfg->nenv; j++)
        env[k++] = x->cfg->env[j];
    size_t cap = strlen(x->cfg->api_version) + (x->cluster_json ? strlen(x->cluster_json) : 0) + 160;
    char *info = malloc(cap);
    if (!info) {
        free(env);
        return NULL;
    }
    snprintf(info, cap, EXEC_INFO "={\"kind\":\"ExecCredential\",\"apiVersion\":\"%s\",\"spec\":"
             "{\"interactive\":%s%s%s}}", x->cfg->api_version, interactive ? "true" : "false",
             x->cluster_json ? ",\"cluster\":" : "", x->cluster_json ? x->cluster_json : "");
    env[k++] = info;                     /* freed by the caller: the last entry */
    return env;
}

typedef struct {
    char *out;
    size_t outlen;
    char err[ERR_KEEP];                  /* the last ERR_KEEP bytes of stderr */
    size_t errlen;
    int status;                          /* waitpid status; -1: unknown */
    bool timed_out, too_large;
} run_result;

static void keep_err(run_result *r, const char *p, size_t n)
{
    if (n >= ERR_KEEP) {
        memcpy(r->err, p + n - ERR_KEEP, ERR_KEEP);
        r->errlen = ERR_KEEP;
        return;
    }
    if (r->errlen + n > ERR_KEEP) {
        size_t drop = r->errlen + n - ERR_KEEP;
        memmove(r->err, r->err + drop, r->errlen - drop);
        r->errlen -= drop;
    }
    memcpy(r->err + r->errlen, p, n);
    r->errlen += n;
}

/* Reads stdout (and stderr when captured) until both close or the deadline passes. */
static void collect(int outfd, int errfd, int64_t deadline, run_result *r)
{
    size_t cap = 0;
    char buf[4096];
    while (outfd >= 0 || errfd >= 0) {
        struct pollfd p[2] = {{outfd, POLLIN, 0}, {errfd, POLLIN, 0}};
        int64_t left = deadline - gd_mono_ms();
        if (left <= 0) {
            r->timed_out = true;
            return;
        }
        int rc = poll(p, 2, (int)(left > 1000 ? 1000 : left));
        if (rc < 0 && errno != EINTR)
            return;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                if (i == 0) outfd = -1; else errfd = -1;
                continue;
            }
            if (i == 1) {
                keep_err(r, buf, (size_t)n);
                continue;
            }
            if (r->outlen + (size_t)n > OUT_MAX) {
                r->too_large = true;
                return;
            }
            if (r->outlen + (size_t)n + 1 > cap) {
                cap = (r->outlen + (size_t)n + 1) * 2;
                char *nb = realloc(r->out, cap);
                if (!nb) {
                    r->too_large = true;
                    return;
                }
                r->out = nb;
            }
            memcpy(r->out + r->outlen, buf, (size_t)n);
            r->outlen += (size_t)n;
            r->out[r->outlen] = '\0';
        }
    }
}

static void close_pair(int p[2])
{
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
    p[0] = p[1] = -1;
}

/* Spawns the plugin; returns 0 and fills r, or errno of the spawn itself. */
/* 0 when cmd names an executable file, else ENOENT or EACCES — Go's exec.LookPath, which
 * client-go's exec.Command runs first: a name without '/' is searched in our $PATH, a path
 * is checked as it is. Asked before spawning rather than learnt from posix_spawnp's error,
 * which only some spawn implementations report (one that forks, as valgrind makes
 * glibc's do, reports exit code 127 instead of "not found"). */
static int look_path(const char *cmd)
{
    struct stat st;
    if (strchr(cmd, '/'))
        return stat(cmd, &st) != 0 ? ENOENT
               : (!S_ISREG(st.st_mode) || access(cmd, X_OK) != 0) ? EACCES : 0;
    const char *path = getenv("PATH");
    int found = ENOENT;
    for (const char *p = path ? path : ""; ; p++) {
        const char *end = strchrnul(p, ':');
        char full[PATH_MAX];
        int n = end == p ? snprintf(full, sizeof full, "./%s", cmd)   /* empty entry: "." */
                         : snprintf(full, sizeof full, "%.*s/%s", (int)(end - p), p, cmd);
        if (n > 0 && (size_t)n < sizeof full && stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(full, X_OK) == 0)
                return 0;
            found = EACCES;
        }
        if (!*end)
            return found;
        p = end;
    }
}

static int run_plugin(const k8s_exec *x, bool interactive, long timeout_ms, run_result *r)
{
    int looked = look_path(x->cfg->command);
    if (looked != 0)
        return looked;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(outp, O_CLOEXEC) != 0 || (!interactive && pipe2(errp, O_CLOEXEC) != 0)) {
        int e = errno;
        close_pair(outp);
        return e;
    }
    char **argv = calloc(x->cfg->nargs + 2, sizeof *argv);
    char **envp = build_env(x, interactive);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    int err = ENOMEM;
    pid_t pid = -1;
    if (argv && envp) {
        argv[0] = x->cfg->command;
        for (size_t i = 0; i < x->cfg->nargs; i++)
            argv[i + 1] = x->cfg->args[i];
        posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
        if (!interactive) {
            posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
            posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
        }
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);   /* our sockets stay ours */
        /* Ignored signals stay ignored across exec: give the plugin the defaults. A
         * non-interactive plugin gets its own process group, so a timeout kills all of
         * it; an interactive one stays in the terminal's foreground group to read it. */
        sigset_t none, dflt;
        sigemptyset(&none);
        sigemptyset(&dflt);
        sigaddset(&dflt, SIGPIPE);
        sigaddset(&dflt, SIGINT);
        sigaddset(&dflt, SIGTERM);
        sigaddset(&dflt, SIGCHLD);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &dflt);
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                          (interactive ? 0 : POSIX_SPAWN_SETPGROUP));
        err = posix_spawnp(&pid, x->cfg->command, &fa, &at, argv, envp);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (envp) {
        size_t n = 0;
        while (envp[n + 1]) n++;
        free(envp[n]);                  /* the KUBERNETES_EXEC_INFO entry we made */
    }
    free(envp);
    free(argv);
    if (outp[1] >= 0) { close(outp[1]); outp[1] = -1; }
    if (errp[1] >= 0) { close(errp[1]); errp[1] = -1; }
    if (err != 0) {
        close_pair(outp);
        close_pair(errp);
        return err;
    }
    collect(outp[0], errp[0], gd_mono_ms() + timeout_ms, r);
    if (r->timed_out || r->too_large)
        kill(interactive ? pid : -pid, SIGKILL);
    close_pair(outp);
    close_pair(errp);
    r->status = -1;
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    if (w == pid)
        r->status = st;                 /* ECHILD: someone else reaped it; judge the output */
    return 0;
}

/* ---- reading the ExecCredential ---- */

static bool interactive_now(const k8s_exec *x, char *err, size_t errlen)
{
    bool tty = isatty(0) == 1;
    if (x->cfg->interactive == K8S_EXEC_ALWAYS && !tty)
        snprintf(err, errlen, "exec plugin cannot support interactive mode: standard input is "
                 "not a terminal");
    return x->cfg->interactive != K8S_EXEC_NEVER && tty;
}

/* One line of what the plugin said on stderr, for the message. */
static void stderr_tail(const run_result *r, char *out, size_t cap)
{
    char line[ERR_KEEP + 8];
    size_t n = k8s_sanitize(line, sizeof line, r->err, r->errlen);
    while (n && line[n - 1] == ' ')
        line[--n] = '\0';
    const char *p = line;
    if (n > 300)
        p = line + n - 300;
    snprintf(out, cap, "%s%.300s", n ? ": " : "", p);
}

/* The certificate and key must be PEM, and belong together (client-go: tls.X509KeyPair). */
static bool cert_key_ok(const char *cert, const char *key)
{
    BIO *cb = BIO_new_mem_buf(cert, -1), *kb = BIO_new_mem_buf(key, -1);
    X509 *c = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    bool ok = c && k && X509_check_private_key(c, k) == 1;
    X509_free(c);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    return ok;
}

static k8s_cred *parse_cred(const k8s_exec *x, const run_result *r, char *why, size_t cap)
{
    cJSON *j = r->out ? cJSON_ParseWithLength(r->out, r->outlen) : NULL;
    k8s_cred *c = NULL;
    const char *kind = gd_json_str_or(j, "kind", ""), *ver = gd_json_str_or(j, "apiVersion", "");
    const cJSON *status = gd_json_path(j, "status");
    const char *tok = gd_json_str_or(status, "token", ""),
               *cert = gd_json_str_or(status, "clientCertificateData", ""),
               *key = gd_json_str_or(status, "clientKeyData", ""),
               *exp = gd_json_str_or(status, "expirationTimestamp", "");
    int64_t expiry = 0;
    /* The plugin's values are quoted in the error as one printable line: a kind, version or
     * timestamp holding a line break or an escape sequence must not reach a log or terminal
     * as such (found by fuzzing, tests/fuzz/corpus/kubeconfig/regress-*). */
    char q[64];
    if (!j)
        snprintf(why, cap, "its output is not an ExecCredential (not JSON, %zu bytes)", r->outlen);
    else if (strcmp(kind, "ExecCredential")) {
        k8s_sanitize(q, 44, kind, strlen(kind));
        snprintf(why, cap, "its output is not an ExecCredential (kind \"%s\")", q);
    } else if (strcmp(ver, x->cfg->api_version)) {
        k8s_sanitize(q, sizeof q, ver, strlen(ver));
        snprintf(why, cap, "it is configured to use API version %s, the plugin returned version "
                 "\"%s\"", x->cfg->api_version, q);
    }
    else if (!cJSON_IsObject(status))
        snprintf(why, cap, "the plugin didn't return a status field");
    else if (!*tok && !*cert && !*key)
        snprintf(why, cap, "the plugin didn't return a token or cert/key pair");
    else if (!*cert != !*key)
        snprintf(why, cap, "the plugin returned only certificate or key, not both");
    else if (strpbrk(tok, "\r\n"))
        snprintf(why, cap, "the plugin returned a token with a line break");
    else if (*exp && gd_parse_rfc3339_ms(exp, &expiry) != GD_OK) {
        k8s_sanitize(q, 44, exp, strlen(exp));
        snprintf(why, cap, "expirationTimestamp \"%s\" is not RFC 3339", q);
    }
    else if (*cert && !cert_key_ok(cert, key))
        snprintf(why, cap, "the plugin's client certificate and key are not a PEM pair that "
                 "belongs together");
    else if ((c = calloc(1, sizeof *c))) {
        c->refs = 1;
        c->expiry_wall_ms = expiry;
        c->token = *tok ? strdup(tok) : NULL;
        c->cert_pem = *cert ? (unsigned char *)strdup(cert) : NULL;
        c->key_pem = *key ? (unsigned char *)strdup(key) : NULL;
        c->cert_len = strlen(cert);
        c->key_len = strlen(key);
        if ((*tok && !c->token) || (*cert && (!c->cert_pem || !c->key_pem))) {
            cred_free(c);
            c = NULL;
            snprintf(why, cap, "out of memory");
        }
    } else {
        snprintf(why, cap, "out of memory");
    }
    cJSON_Delete(j);
    return c;
}

/* Runs the plugin and replaces the cache. Called with x->mu held. */
static k8s_cred *refresh_locked(k8s_exec *x, char *err, size_t errlen)
{
    char e0[200] = "";
    bool interactive = interactive_now(x, e0, sizeof e0);
    const char *cmd = x->cfg->command, *where = x->cfg->where;
    if (e0[0]) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): %s", cmd, where, e0);
        return NULL;
    }
    run_result r = {0};
    atomic_fetch_add(&x->runs, 1);
    long timeout = interactive && x->timeout_ms < 300000 ? 300000 : x->timeout_ms;
    int serr = run_plugin(x, interactive, timeout, &r);
    char tail[320], why[300];
    k8s_cred *c = NULL;
    stderr_tail(&r, tail, sizeof tail);
    if (serr == ENOENT) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): executable not found%s%s", cmd, where,
                 x->cfg->install_hint ? ": " : "", x->cfg->install_hint ? x->cfg->install_hint : "");
    } else if (serr) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): cannot run it: %s", cmd, where, strerror(serr));
    } else if (r.timed_out) {
        char d[32];                       /* as the flags say durations: 1m0s, 300ms */
        gd_format_duration_ms(timeout, d, sizeof d);
        snprintf(err, errlen, "exec plugin \"%s\" (%s): no answer within %s, killed%s", cmd,
                 where, d, tail);
    } else if (r.too_large) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): output larger than %u bytes", cmd, where,
                 OUT_MAX);
    } else if (r.status != -1 && WIFSIGNALED(r.status)) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): killed by signal %d%s", cmd, where,
                 WTERMSIG(r.status), tail);
    } else if (r.status != -1 && WEXITSTATUS(r.status) != 0) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): failed with exit code %d%s", cmd, where,
                 WEXITSTATUS(r.status), tail);
    } else if (!(c = parse_cred(x, &r, why, sizeof why))) {
        snprintf(err, errlen, "exec plugin \"%s\" (%s): %s%s", cmd, where, why, tail);
    } else {
        k8s_cred_release(&x->cached);
        x->cached = c;
        if (r.errlen)
            gd_log(GD_LOG_DEBUG, "exec plugin wrote to stderr", "plugin", cmd, "stderr", tail, NULL);
    }
    if (r.out)
        explicit_bzero(r.out, r.outlen);    /* it held the credential */
    free(r.out);
    return c ? cred_ref(c) : NULL;
}

static bool expired(const k8s_cred *c)
{
    return c->expiry_wall_ms && gd_wall_ms() > c->expiry_wall_ms;
}

k8s_cred *k8s_exec_get(k8s_exec *x, char *err, size_t errlen)
{
    pthread_mutex_lock(&x->mu);
    k8s_cred *c = x->cached && !expired(x->cached) ? cred_ref(x->cached)
                                                   : refresh_locked(x, err, errlen);
    pthread_mutex_unlock(&x->mu);
    return c;
}

k8s_cred *k8s_exec_refresh(k8s_exec *x, const k8s_cred *used, char *err, size_t errlen)
{
    pthread_mutex_lock(&x->mu);
    k8s_cred *c = x->cached && x->cached != used && !expired(x->cached)
                      ? cred_ref(x->cached)            /* someone already rotated it */
                      : refresh_locked(x, err, errlen);
    pthread_mutex_unlock(&x->mu);
    return c;
}
