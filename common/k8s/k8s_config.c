/* k8s_config.c — where the API server is and who we are (client-go's clientcmd, reduced).
 *
 * Resolution order: --kubeconfig; else $KUBECONFIG (colon list, merged first-wins); else
 * $HOME/.kube/config; else in-cluster. Key material is decoded into memory only and wiped
 * before it is freed. The YAML side lives in k8s_kubeconfig_yaml.c. */
#include "k8s_config.h"
#include "k8s_kubeconfig_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KUBECONFIG_MAX  (16u << 20)   /* a kubeconfig larger than this is not a kubeconfig */
#define KEYFILE_MAX     (1u << 20)    /* CA bundles, certificates, keys, tokens */
#define DEFAULT_SA_DIR  "/var/run/secrets/kubernetes.io/serviceaccount"


static void wipe_free(void *p, size_t n)
{
    if (p) {
        explicit_bzero(p, n);
        free(p);
    }
}

/* ---- base64 ---- */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Standard alphabet with padding, as Go's base64.StdEncoding (what kubeconfig []byte fields
 * use); whitespace anywhere is ignored because YAML folds long lines. */
gd_err gd_base64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen)
{
    if (!out || !outlen || (!in && inlen))
        return GD_ERR_ARG;
    *out = NULL;
    *outlen = 0;
    unsigned char *buf = malloc(inlen / 4 * 3 + 4);
    if (!buf)
        return GD_ERR_NOMEM;
    size_t n = 0, quad_len = 0, pad = 0, i;
    uint32_t acc = 0;
    for (i = 0; i < inlen; i++) {
        unsigned char c = (unsigned char)in[i];
        if (isspace(c))
            continue;
        if (c == '=') {
            /* padding only in the last quad, after at least two symbols */
            if (quad_len < 2)
                goto bad;
            pad++;
            quad_len++;
            acc <<= 6;
        } else {
            int v = b64_value(c);
            if (v < 0 || pad)
                goto bad;
            acc = (acc << 6) | (uint32_t)v;
            quad_len++;
        }
        if (quad_len == 4) {
            buf[n++] = (unsigned char)(acc >> 16);
            if (pad < 2)
                buf[n++] = (unsigned char)(acc >> 8);
            if (pad < 1)
                buf[n++] = (unsigned char)acc;
            quad_len = 0;
            acc = 0;
            if (pad)
                break;  /* only whitespace may follow */
        }
    }
    if (quad_len != 0)
        goto bad;
    /* anything but whitespace after the padded quad is garbage */
    for (i = i < inlen ? i + 1 : inlen; i < inlen; i++)
        if (!isspace((unsigned char)in[i]))
            goto bad;
    buf[n] = 0;  /* handy for text (tokens); not counted */
    *out = buf;
    *outlen = n;
    return GD_OK;
bad:
    wipe_free(buf, inlen / 4 * 3 + 4);
    return GD_ERR_PARSE;
}

/* ---- files ---- */

/* Reads a whole regular file of at most cap bytes, NUL-terminated. On failure returns -1
 * with a short reason in why ("No such file or directory", "larger than 1 MiB"). */
static int read_file(const char *path, size_t cap, char **out, size_t *len, char *why, size_t whylen)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;  /* callers tell ENOENT apart */
        snprintf(why, whylen, "%s", strerror(saved));
        errno = saved;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        close(fd);
        errno = EINVAL;
        return -1;
    }
    size_t size = 0, alloc = (size_t)st.st_size < cap ? (size_t)st.st_size + 1 : cap + 1;
    char *buf = malloc(alloc + 1);
    if (!buf) {
        close(fd);
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (;;) {  /* the file may grow while we read (token rotation): never pass cap */
        if (size == alloc) {
            if (alloc > cap)
                break;
            size_t nalloc = alloc * 2 > cap + 1 ? cap + 1 : alloc * 2;
            char *nb = malloc(nalloc + 1);
            if (!nb)
                break;
            memcpy(nb, buf, size);
            wipe_free(buf, alloc + 1);
            buf = nb;
            alloc = nalloc;
        }
        ssize_t n = read(fd, buf + size, alloc - size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, whylen, "%s", strerror(errno));
            close(fd);
            wipe_free(buf, alloc + 1);
            return -1;
        }
        if (n == 0)
            break;
        size += (size_t)n;
    }
    close(fd);
    if (size > cap) {
        snprintf(why, whylen, "larger than %zu bytes", cap);
        wipe_free(buf, alloc + 1);
        errno = EFBIG;
        return -1;
    }
    buf[size] = 0;
    *out = buf;
    *len = size;
    return 0;
}

/* clientcmd resolves paths inside a kubeconfig against that file's directory. */
static char *resolve_path(const char *dir, const char *p)
{
    if (p[0] == '/' || !dir || strcmp(dir, ".") == 0)
        return strdup(p);
    while (p[0] == '.' && p[1] == '/')   /* "./bin/x" is "bin/x" next to the kubeconfig */
        p += 2;
    size_t n = strlen(dir) + strlen(p) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, p);
    return s;
}

static void trim_right(char *s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)s[*len - 1]))
        s[--*len] = 0;
}

/* ---- building a k8s_config from the chosen entries ---- */

typedef struct {
    const char *file;   /* kubeconfig file path */
    const char *list;   /* "clusters" / "users" */
    int index;
    const char *name;
    const char *dir;
    char *err;
    size_t errlen;
} where;

/* PEM material from either the inline base64 field (wins, as in clientcmd) or a file. */
static gd_err load_pem(const where *w, const char *file_field, const char *file,
                       const char *data_field, const char *data,
                       unsigned char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    const char *field = data_field;
    if (data && *data) {
        gd_err rc = gd_base64_decode(data, strlen(data), out, outlen);
        if (rc == GD_ERR_NOMEM)
            return rc;
        if (rc != GD_OK) {
            kc_err(w->err, w->errlen, "%s: %s[%d] (name=%s): %s: invalid base64", w->file,
                    w->list, w->index, w->name, data_field);
            return GD_ERR_CONFIG;
        }
    } else if (file && *file) {
        field = file_field;
        char *path = resolve_path(w->dir, file), why[96];
        if (!path)
            return GD_ERR_NOMEM;
        char *buf;
        if (read_file(path, KEYFILE_MAX, &buf, outlen, why, sizeof why) != 0) {
            kc_err(w->err, w->errlen, "%s: %s[%d] (name=%s): %s: cannot read %s: %s", w->file,
                    w->list, w->index, w->name, file_field, path, why);
            free(path);
            return GD_ERR_CONFIG;
        }
        free(path);
        *out = (unsigned char *)buf;
    } else {
        return GD_OK;
    }
    if (*outlen == 0 || !memmem(*out, *outlen, "-----BEGIN ", 11)) {
        kc_err(w->err, w->errlen, "%s: %s[%d] (name=%s): %s: not PEM (no -----BEGIN line)",
                w->file, w->list, w->index, w->name, field);
        wipe_free(*out, *outlen + 1);
        *out = NULL;
        *outlen = 0;
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

static gd_err normalise_server(const char *in, char **out, const char *prefix, char *err, size_t errlen)
{
    const char *scheme = strstr(in, "://");
    size_t n = strlen(in);
    while (n > 0 && in[n - 1] == '/')
        n--;
    if (scheme && strncmp(in, "https://", 8) != 0 && strncmp(in, "http://", 7) != 0) {
        kc_err(err, errlen, "%s: server \"%s\": unsupported scheme (want https:// or http://)",
                prefix, in);
        return GD_ERR_CONFIG;
    }
    if (n == 0 || (scheme && (size_t)(scheme - in) + 3 >= n)) {
        kc_err(err, errlen, "%s: server \"%s\": no host", prefix, in);
        return GD_ERR_CONFIG;
    }
    /* a bare host:port means https, as client-go's DefaultServerURL */
    size_t cap = n + 9;
    *out = malloc(cap);
    if (!*out)
        return GD_ERR_NOMEM;
    snprintf(*out, cap, "%s%.*s", scheme ? "" : "https://", (int)n, in);
    return GD_OK;
}

static gd_err apply_cluster(k8s_config *cfg, const kc_cluster *c, const char *ctx, char *err, size_t errlen)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s: cluster \"%s\" (context \"%s\")", c->file->path, c->name, ctx);
    if (!c->server || !*c->server) {
        kc_err(err, errlen, "%s: server is missing", prefix);
        return GD_ERR_CONFIG;
    }
    gd_err rc = normalise_server(c->server, &cfg->server, prefix, err, errlen);
    if (rc != GD_OK)
        return rc;
    cfg->insecure_skip_tls_verify = c->insecure == 1;
    if (c->tls_server_name && *c->tls_server_name &&
        !(cfg->tls_server_name = strdup(c->tls_server_name)))
        return GD_ERR_NOMEM;
    where w = { c->file->path, "clusters", c->index, c->name, c->file->dir, err, errlen };
    return load_pem(&w, "certificate-authority", c->ca, "certificate-authority-data", c->ca_data,
                    &cfg->ca_pem, &cfg->ca_pem_len);
}

static char *dup_env(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", name, value);
    return s;
}

/* clientcmd's checks of an ExecConfig (validation.go and the v1 defaults): a command, an
 * apiVersion this client speaks, and for v1 an explicit interactiveMode. */
static gd_err check_exec(const kc_user *u, k8s_exec_interactive *mode, char *err, size_t errlen)
{
    const kc_exec *x = &u->exec;
    static const char V1[] = "client.authentication.k8s.io/v1",
                      V1B1[] = "client.authentication.k8s.io/v1beta1";
    const char *why = NULL;
    char buf[300];
    if (!x->command || !*x->command) {
        why = "exec.command is missing";
    } else if (!x->api_version || !*x->api_version) {
        why = "exec.apiVersion is missing (client.authentication.k8s.io/v1 or v1beta1)";
    } else if (strcmp(x->api_version, V1) && strcmp(x->api_version, V1B1)) {
        snprintf(buf, sizeof buf, "exec.apiVersion \"%.100s\" is not supported (want %s or %s)",
                 x->api_version, V1, V1B1);
        why = buf;
    } else if (!x->interactive_mode || !*x->interactive_mode) {
        *mode = K8S_EXEC_IF_AVAILABLE;      /* v1beta1's default */
        if (!strcmp(x->api_version, V1))
            why = "exec.interactiveMode must be set for client.authentication.k8s.io/v1 "
                  "(Never, IfAvailable or Always)";
    } else if (!strcmp(x->interactive_mode, "Never")) {
        *mode = K8S_EXEC_NEVER;
    } else if (!strcmp(x->interactive_mode, "IfAvailable")) {
        *mode = K8S_EXEC_IF_AVAILABLE;
    } else if (!strcmp(x->interactive_mode, "Always")) {
        *mode = K8S_EXEC_ALWAYS;
    } else {
        snprintf(buf, sizeof buf, "exec.interactiveMode \"%.60s\" is not Never, IfAvailable or "
                 "Always", x->interactive_mode);
        why = buf;
    }
    if (why) {
        kc_err(err, errlen, "%s: users[%d] (name=%s): %s", u->file->path, u->index, u->name, why);
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

static gd_err apply_exec(k8s_config *cfg, const kc_user *u, char *err, size_t errlen)
{
    k8s_exec_interactive mode = K8S_EXEC_IF_AVAILABLE;
    gd_err rc = check_exec(u, &mode, err, errlen);
    if (rc != GD_OK)
        return rc;
    const kc_exec *x = &u->exec;
    k8s_exec_config *e = calloc(1, sizeof *e);
    if (!e || !(cfg->exec = e))
        return GD_ERR_NOMEM;
    e->interactive = mode;
    e->provide_cluster_info = x->provide_cluster_info == 1;
    /* clientcmd resolves a command with a path separator against the kubeconfig's
     * directory; a bare name is looked up in $PATH when it runs */
    e->command = strchr(x->command, '/') ? resolve_path(u->file->dir, x->command) : strdup(x->command);
    e->api_version = strdup(x->api_version);
    e->install_hint = x->install_hint && *x->install_hint ? strdup(x->install_hint) : NULL;
    size_t wn = strlen(u->file->path) + strlen(u->name) + 48;
    if ((e->where = malloc(wn)))
        snprintf(e->where, wn, "%s: users[%d] (name=%s)", u->file->path, u->index, u->name);
    e->args = calloc(x->nargs + 1, sizeof *e->args);
    e->env = calloc(x->nenv + 1, sizeof *e->env);
    if (!e->command || !e->api_version || !e->where || !e->args || !e->env ||
        (x->install_hint && *x->install_hint && !e->install_hint))
        return GD_ERR_NOMEM;
    for (; e->nargs < x->nargs; e->nargs++)
        if (!(e->args[e->nargs] = strdup(x->args[e->nargs])))
            return GD_ERR_NOMEM;
    for (; e->nenv < x->nenv; e->nenv++)
        if (!(e->env[e->nenv] = dup_env(x->env_names[e->nenv], x->env_values[e->nenv])))
            return GD_ERR_NOMEM;
    return GD_OK;
}

void k8s_exec_config_destroy(k8s_exec_config **pe)
{
    if (!pe || !*pe)
        return;
    k8s_exec_config *e = *pe;
    for (size_t i = 0; i < e->nargs; i++)
        free(e->args[i]);
    for (size_t i = 0; i < e->nenv; i++)
        wipe_free(e->env[i], strlen(e->env[i]));   /* env often carries secrets */
    free(e->args);
    free(e->env);
    free(e->command);
    free(e->api_version);
    free(e->install_hint);
    free(e->where);
    free(e);
    *pe = NULL;
}

static gd_err apply_user(k8s_config *cfg, const kc_user *u, char *err, size_t errlen)
{
    where w = { u->file->path, "users", u->index, u->name, u->file->dir, err, errlen };
    gd_err rc;
    if ((rc = load_pem(&w, "client-certificate", u->cert, "client-certificate-data", u->cert_data,
                       &cfg->cert_pem, &cfg->cert_pem_len)) != GD_OK ||
        (rc = load_pem(&w, "client-key", u->key, "client-key-data", u->key_data, &cfg->key_pem,
                       &cfg->key_pem_len)) != GD_OK)
        return rc;
    if (!cfg->cert_pem != !cfg->key_pem) {
        kc_err(err, errlen, "%s: users[%d] (name=%s): %s is set but %s is missing", u->file->path,
                u->index, u->name, cfg->cert_pem ? "client-certificate" : "client-key",
                cfg->cert_pem ? "client-key" : "client-certificate");
        return GD_ERR_CONFIG;
    }
    if (u->token && *u->token && !(cfg->token = strdup(u->token)))
        return GD_ERR_NOMEM;
    if (u->token_file && *u->token_file) {
        /* Read it now so a missing file is a startup error; the client re-reads it later. */
        cfg->token_file = resolve_path(u->file->dir, u->token_file);
        if (!cfg->token_file)
            return GD_ERR_NOMEM;
        char *tok, why[96];
        size_t len;
        if (read_file(cfg->token_file, KEYFILE_MAX, &tok, &len, why, sizeof why) != 0) {
            kc_err(err, errlen, "%s: users[%d] (name=%s): tokenFile: cannot read %s: %s",
                    u->file->path, u->index, u->name, cfg->token_file, why);
            return GD_ERR_CONFIG;
        }
        trim_right(tok, &len);
        if (len == 0) {
            kc_err(err, errlen, "%s: users[%d] (name=%s): tokenFile: %s is empty", u->file->path,
                    u->index, u->name, cfg->token_file);
            free(tok);
            return GD_ERR_CONFIG;
        }
        if (cfg->token)  /* the file's content takes precedence, as in client-go */
            wipe_free(cfg->token, strlen(cfg->token));
        cfg->token = tok;
    }
    if (!cfg->token && !cfg->cert_pem && u->has_exec)
        return apply_exec(cfg, u, err, errlen);
    if (!cfg->token && !cfg->cert_pem && (u->has_auth_provider || u->has_basic)) {
        kc_err(err, errlen, "%s: users[%d] (name=%s): %s is not supported; use an exec "
                "credential plugin (what kubectl uses since 1.26), a token, tokenFile or a "
                "client certificate", u->file->path, u->index, u->name,
                u->has_auth_provider ? "auth-provider" : "basic auth");
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

static gd_err build_from_set(const kc_set *set, const char *want_ctx, k8s_config **out,
                             char *err, size_t errlen)
{
    char *sources = kc_set_sources(set);
    if (!sources)
        return GD_ERR_NOMEM;
    gd_err rc = GD_ERR_CONFIG;
    k8s_config *cfg = NULL;
    const char *ctx_name = want_ctx && *want_ctx ? want_ctx : set->current_context;
    if (!ctx_name) {
        if (set->ncontexts == 0 && set->nclusters == 0 && set->nusers == 0)
            kc_err(err, errlen, "%s: kubeconfig is empty", sources);
        else
            kc_err(err, errlen, "%s: no current-context set and no --context given", sources);
        goto out;
    }
    const kc_context *ctx = kc_find_context(set, ctx_name);
    if (!ctx) {
        kc_err(err, errlen, "context \"%s\" not found in %s", ctx_name, sources);
        goto out;
    }
    if (!ctx->cluster || !*ctx->cluster) {
        kc_err(err, errlen, "%s: contexts[%d] (name=%s): cluster is missing", ctx->file->path,
                ctx->index, ctx->name);
        goto out;
    }
    const kc_cluster *cl = kc_find_cluster(set, ctx->cluster);
    if (!cl) {
        kc_err(err, errlen, "cluster \"%s\" (context \"%s\") not found in %s", ctx->cluster,
                ctx->name, sources);
        goto out;
    }
    const kc_user *user = NULL;
    if (ctx->user && *ctx->user && !(user = kc_find_user(set, ctx->user))) {
        kc_err(err, errlen, "user \"%s\" (context \"%s\") not found in %s", ctx->user, ctx->name,
                sources);
        goto out;
    }
    rc = GD_ERR_NOMEM;
    if (!(cfg = calloc(1, sizeof *cfg)))
        goto out;
    if (!(cfg->context_name = strdup(ctx->name)) || !(cfg->source = strdup(ctx->file->path)) ||
        !(cfg->namespace_ = strdup(ctx->namespace_ && *ctx->namespace_ ? ctx->namespace_ : "default")))
        goto out;
    if ((rc = apply_cluster(cfg, cl, ctx->name, err, errlen)) != GD_OK)
        goto out;
    if (user && (rc = apply_user(cfg, user, err, errlen)) != GD_OK)
        goto out;
    *out = cfg;
    cfg = NULL;
    rc = GD_OK;
out:
    if (rc == GD_ERR_NOMEM)
        kc_err(err, errlen, "%s: out of memory", sources);
    k8s_config_destroy(&cfg);
    free(sources);
    return rc;
}

gd_err k8s_config_from_yaml(const char *yaml, size_t len, const char *source, const char *context,
                            k8s_config **out, char *err, size_t errlen)
{
    if (!out || (!yaml && len))
        return GD_ERR_ARG;
    *out = NULL;
    kc_set set = { 0 };
    gd_err rc = kc_set_add(&set, yaml ? yaml : "", len, source ? source : "<kubeconfig>", err, errlen);
    if (rc == GD_OK)
        rc = build_from_set(&set, context, out, err, errlen);
    kc_set_free(&set);
    return rc;
}

/* ---- in-cluster ---- */

static gd_err sa_file(const char *dir, const char *name, bool required, char **out, size_t *len,
                      char *err, size_t errlen)
{
    char path[4096], why[96];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (read_file(path, KEYFILE_MAX, out, len, why, sizeof why) != 0) {
        if (!required && errno == ENOENT)
            return GD_OK;
        kc_err(err, errlen, "in-cluster: %s: cannot read: %s", path, why);
        return GD_ERR_CONFIG;
    }
    trim_right(*out, len);
    if (*len == 0 && required) {
        kc_err(err, errlen, "in-cluster: %s: file is empty", path);
        wipe_free(*out, 1);
        *out = NULL;
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

gd_err k8s_config_in_cluster(const char *sa_dir, k8s_config **out, char *err, size_t errlen)
{
    if (!out)
        return GD_ERR_ARG;
    *out = NULL;
    const char *dir = sa_dir && *sa_dir ? sa_dir : DEFAULT_SA_DIR;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port) {
        kc_err(err, errlen, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                "must be set (not running in a pod?)");
        return GD_ERR_CONFIG;
    }
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (errno || *end || p < 1 || p > 65535) {
        kc_err(err, errlen, "in-cluster: KUBERNETES_SERVICE_PORT \"%s\" is not a port", port);
        return GD_ERR_CONFIG;
    }
    if (strpbrk(host, "/ @?#")) {
        kc_err(err, errlen, "in-cluster: KUBERNETES_SERVICE_HOST \"%s\" is not a host", host);
        return GD_ERR_CONFIG;
    }
    k8s_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return GD_ERR_NOMEM;
    gd_err rc = GD_ERR_NOMEM;
    size_t len, n = strlen(host) + 32;
    char *ca = NULL, *ns = NULL;
    if (!(cfg->server = malloc(n)))
        goto fail;
    bool v6 = strchr(host, ':') && host[0] != '[';
    snprintf(cfg->server, n, v6 ? "https://[%s]:%ld" : "https://%s:%ld", host, p);
    if ((rc = sa_file(dir, "token", true, &cfg->token, &len, err, errlen)) != GD_OK)
        goto fail;
    rc = GD_ERR_NOMEM;
    if (!(cfg->token_file = malloc(strlen(dir) + 7)))
        goto fail;
    sprintf(cfg->token_file, "%s/token", dir);
    if ((rc = sa_file(dir, "ca.crt", true, &ca, &len, err, errlen)) != GD_OK)
        goto fail;
    cfg->ca_pem = (unsigned char *)ca;
    cfg->ca_pem_len = len;
    /* POD_NAMESPACE first (downward API), then the file, then "default", as clientcmd. */
    const char *env_ns = getenv("POD_NAMESPACE");
    if (env_ns && *env_ns) {
        ns = strdup(env_ns);
    } else {
        if ((rc = sa_file(dir, "namespace", false, &ns, &len, err, errlen)) != GD_OK)
            goto fail;
        if (ns && !*ns) {
            free(ns);
            ns = NULL;
        }
        if (!ns)
            ns = strdup("default");
    }
    rc = GD_ERR_NOMEM;
    if (!(cfg->namespace_ = ns) || !(cfg->context_name = strdup("in-cluster")) ||
        !(cfg->source = strdup(dir)))
        goto fail;
    *out = cfg;
    return GD_OK;
fail:
    if (rc == GD_ERR_NOMEM)
        kc_err(err, errlen, "in-cluster: out of memory");
    k8s_config_destroy(&cfg);
    return rc;
}

/* ---- the loader ---- */

/* Reads one kubeconfig file into set. ENOENT is reported through *missing when the caller
 * tolerates it (KUBECONFIG entries, the default path); anything else is an error. */
static gd_err add_file(kc_set *set, const char *path, bool *missing, char *err, size_t errlen)
{
    char *text, why[96];
    size_t len;
    if (missing)
        *missing = false;
    if (read_file(path, KUBECONFIG_MAX, &text, &len, why, sizeof why) != 0) {
        if (missing && errno == ENOENT) {
            *missing = true;
            return GD_OK;
        }
        kc_err(err, errlen, "%s: cannot read kubeconfig: %s", path, why);
        return GD_ERR_CONFIG;
    }
    gd_err rc = kc_set_add(set, text, len, path, err, errlen);
    wipe_free(text, len + 1);  /* it held key material */
    return rc;
}

static gd_err load_kubeconfig_env(kc_set *set, const char *env, char *err, size_t errlen)
{
    char *list = strdup(env);
    if (!list)
        return GD_ERR_NOMEM;
    gd_err rc = GD_OK;
    char *save = NULL;
    for (char *p = strtok_r(list, ":", &save); p && rc == GD_OK; p = strtok_r(NULL, ":", &save)) {
        bool dup = false, missing;
        for (size_t i = 0; i < set->nfiles && !dup; i++)
            dup = strcmp(set->files[i]->path, p) == 0;
        if (!dup)
            rc = add_file(set, p, &missing, err, errlen);
    }
    free(list);
    return rc;
}

gd_err k8s_config_load(const k8s_config_opts *opts, k8s_config **out, char *err, size_t errlen)
{
    static const k8s_config_opts defaults = { 0 };
    if (!out)
        return GD_ERR_ARG;
    *out = NULL;
    if (!opts)
        opts = &defaults;
    kc_set set = { 0 };
    gd_err rc = GD_OK;
    const char *tried;
    char home_path[4096];
    const char *env = getenv("KUBECONFIG");
    if (opts->kubeconfig && *opts->kubeconfig) {
        tried = "--kubeconfig";
        rc = add_file(&set, opts->kubeconfig, NULL, err, errlen);
    } else if (env && *env) {
        tried = "KUBECONFIG";
        rc = load_kubeconfig_env(&set, env, err, errlen);
    } else {
        tried = "$HOME/.kube/config";
        const char *home = getenv("HOME");
        if (home && *home) {
            bool missing;
            snprintf(home_path, sizeof home_path, "%s/.kube/config", home);
            rc = add_file(&set, home_path, &missing, err, errlen);
        }
    }
    if (rc == GD_OK && set.nfiles > 0)
        rc = build_from_set(&set, opts->context, out, err, errlen);
    kc_set_free(&set);
    if (rc != GD_OK || *out)
        return rc;

    /* No kubeconfig file at all. */
    if (opts->allow_in_cluster && getenv("KUBERNETES_SERVICE_HOST"))
        return k8s_config_in_cluster(opts->sa_dir, out, err, errlen);
    if (strcmp(tried, "KUBECONFIG") == 0)
        kc_err(err, errlen, "KUBECONFIG=%s: none of these files exist%s", env,
                opts->allow_in_cluster ? ", and not running in a cluster" : "");
    else
        kc_err(err, errlen, "no kubeconfig: --kubeconfig not given, KUBECONFIG unset, "
                "$HOME/.kube/config does not exist%s",
                opts->allow_in_cluster ? ", and not running in a cluster" : "");
    return GD_ERR_CONFIG;
}

void k8s_config_destroy(k8s_config **pcfg)
{
    if (!pcfg || !*pcfg)
        return;
    k8s_config *c = *pcfg;
    free(c->server);
    free(c->tls_server_name);
    wipe_free(c->ca_pem, c->ca_pem_len);
    wipe_free(c->cert_pem, c->cert_pem_len);
    wipe_free(c->key_pem, c->key_pem_len);
    if (c->token)
        wipe_free(c->token, strlen(c->token));
    free(c->token_file);
    k8s_exec_config_destroy(&c->exec);
    free(c->namespace_);
    free(c->context_name);
    free(c->source);
    free(c);
    *pcfg = NULL;
}
