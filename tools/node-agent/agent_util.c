/* agent_util.c — the node agent's pure logic: no API calls, no processes, no clocks.
 * Everything here is unit-tested by tests/unit/test_node_agent_util.c, which #includes this
 * file, so keep it free of dependencies on the other agent_*.c files. */
#include "agent.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ image map */

bool na_image_strip_tag(const char *image, char *out, size_t cap)
{
    if (!image || !*image) return false;
    size_t len = strcspn(image, "@");            /* digest: name@sha256:... */
    const char *slash = memrchr(image, '/', len);
    const char *colon = memrchr(slash ? slash : image, ':', len - (size_t)((slash ? slash : image) - image));
    if (colon) len = (size_t)(colon - image);    /* a colon after the last slash is the tag */
    if (len == 0 || len >= cap) return false;
    memcpy(out, image, len);
    out[len] = '\0';
    return true;
}

gd_err na_image_map_add(na_image_map *m, const char *spec, char *err, size_t errlen)
{
    const char *eq = spec ? strchr(spec, '=') : NULL;
    if (!eq || eq == spec) {
        seterr(err, errlen, "--image-map %s: want IMAGE=PROGRAM", spec ? spec : "(null)");
        return GD_ERR_ARG;
    }
    na_image_entry e;
    memset(&e, 0, sizeof e);
    char raw[256];
    size_t ilen = (size_t)(eq - spec);
    if (ilen >= sizeof raw || strlen(eq + 1) >= sizeof e.program) {
        seterr(err, errlen, "--image-map %s: image or program too long", spec);
        return GD_ERR_ARG;
    }
    memcpy(raw, spec, ilen);
    raw[ilen] = '\0';
    if (!na_image_strip_tag(raw, e.image, sizeof e.image) || strchr(e.image, ' ')) {
        seterr(err, errlen, "--image-map %s: bad image name", spec);
        return GD_ERR_ARG;
    }
    strcpy(e.program, eq + 1);
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i].image, e.image) == 0) { m->v[i] = e; return GD_OK; }
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4;
        na_image_entry *nv = realloc(m->v, nc * sizeof *nv);
        if (!nv) return GD_ERR_NOMEM;
        m->v = nv;
        m->cap = nc;
    }
    m->v[m->n++] = e;
    return GD_OK;
}

const na_image_entry *na_image_map_find(const na_image_map *m, const char *image)
{
    char name[256];
    if (!na_image_strip_tag(image, name, sizeof name)) return NULL;
    const na_image_entry *best = NULL;
    size_t nlen = strlen(name);
    for (size_t i = 0; i < m->n; i++) {
        const char *k = m->v[i].image;
        size_t klen = strlen(k);
        bool hit = strcmp(name, k) == 0 ||
                   (nlen > klen && name[nlen - klen - 1] == '/' && strcmp(name + nlen - klen, k) == 0);
        if (hit && (!best || klen > strlen(best->image))) best = &m->v[i];
    }
    return best;
}

void na_image_map_free(na_image_map *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ IP pool */

gd_err na_ipam_init(na_ipam *p, const char *base, uint32_t size, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    struct in_addr a;
    if (!base || inet_pton(AF_INET, base, &a) != 1) {
        seterr(err, errlen, "--ip-base %s: not an IPv4 address", base ? base : "(null)");
        return GD_ERR_ARG;
    }
    uint32_t b = ntohl(a.s_addr);
    if ((b >> 24) != 127) {
        seterr(err, errlen, "--ip-base %s: must be in 127.0.0.0/8 (loopback only)", base);
        return GD_ERR_ARG;
    }
    uint32_t room = 0x7FFFFFFEu - b;              /* up to 127.255.255.254 */
    if (size == 0 || size > room) size = room;
    if (size == 0) {
        seterr(err, errlen, "--ip-base %s: no addresses above it", base);
        return GD_ERR_ARG;
    }
    p->used = calloc((size_t)size + 1, 1);
    if (!p->used) return GD_ERR_NOMEM;
    p->base = b;
    p->size = size;
    p->next = 1;
    return GD_OK;
}

void na_ipam_free(na_ipam *p)
{
    free(p->used);
    memset(p, 0, sizeof *p);
}

static void ipam_format(const na_ipam *p, uint32_t off, char out[16])
{
    struct in_addr a = { .s_addr = htonl(p->base + off) };
    inet_ntop(AF_INET, &a, out, 16);
}

/* Offset of ip in the pool, or 0 when it is not a pool address. */
static uint32_t ipam_offset(const na_ipam *p, const char *ip)
{
    struct in_addr a;
    if (!ip || inet_pton(AF_INET, ip, &a) != 1) return 0;
    uint32_t v = ntohl(a.s_addr);
    if (v <= p->base || v - p->base > p->size) return 0;
    return v - p->base;
}

gd_err na_ipam_alloc(na_ipam *p, char out[16])
{
    for (uint32_t i = 0; i < p->size; i++) {
        uint32_t off = (p->next - 1 + i) % p->size + 1;
        if (!p->used[off]) {
            p->used[off] = 1;
            p->next = off % p->size + 1;
            ipam_format(p, off, out);
            return GD_OK;
        }
    }
    return GD_ERR_TOO_LARGE;
}

gd_err na_ipam_reserve(na_ipam *p, const char *ip)
{
    uint32_t off = ipam_offset(p, ip);
    if (!off) return GD_ERR_ARG;
    if (p->used[off]) return GD_ERR_ALREADY_EXISTS;
    p->used[off] = 1;
    if (off >= p->next) p->next = off % p->size + 1;
    return GD_OK;
}

void na_ipam_release(na_ipam *p, const char *ip)
{
    uint32_t off = ipam_offset(p, ip);
    if (off) p->used[off] = 0;
}

/* ------------------------------------------------------------------ env */

gd_err na_env_set(na_env *e, const char *name, const char *value)
{
    char *v = strdup(value ? value : "");
    if (!v) return GD_ERR_NOMEM;
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].name, name) == 0) {
            free(e->v[i].value);
            e->v[i].value = v;
            return GD_OK;
        }
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 16;
        na_env_var *nv = realloc(e->v, nc * sizeof *nv);
        if (!nv) { free(v); return GD_ERR_NOMEM; }
        e->v = nv;
        e->cap = nc;
    }
    e->v[e->n].name = strdup(name);
    if (!e->v[e->n].name) { free(v); return GD_ERR_NOMEM; }
    e->v[e->n++].value = v;
    return GD_OK;
}

const char *na_env_get(const na_env *e, const char *name)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].name, name) == 0) return e->v[i].value;
    return NULL;
}

void na_env_free(na_env *e)
{
    for (size_t i = 0; i < e->n; i++) { free(e->v[i].name); free(e->v[i].value); }
    free(e->v);
    memset(e, 0, sizeof *e);
}

char **na_env_to_envp(const na_env *e)
{
    char **v = calloc(e->n + 1, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < e->n; i++) {
        if (asprintf(&v[i], "%s=%s", e->v[i].name, e->v[i].value) < 0) {
            v[i] = NULL;
            na_strv_free(&v);
            return NULL;
        }
    }
    return v;
}

void na_strv_free(char ***v)
{
    if (!v || !*v) return;
    for (char **p = *v; *p; p++) free(*p);
    free(*v);
    *v = NULL;
}

char *na_expand(const char *in, const na_env *e)
{
    size_t cap = strlen(in) + 1, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
#define PUT(s, n) do { size_t n_ = (n); if (len + n_ + 1 > cap) { \
        while (len + n_ + 1 > cap) { cap *= 2; } char *t_ = realloc(out, cap); \
        if (!t_) { free(out); return NULL; } out = t_; } \
        memcpy(out + len, (s), n_); len += n_; } while (0)
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '$') { PUT("$", 1); p += 2; continue; }
        if (p[0] == '$' && p[1] == '(') {
            const char *close = strchr(p + 2, ')');
            if (close && close > p + 2 && (size_t)(close - p - 2) < 256) {
                char name[256];
                memcpy(name, p + 2, (size_t)(close - p - 2));
                name[close - p - 2] = '\0';
                const char *val = na_env_get(e, name);
                if (val) { PUT(val, strlen(val)); p = close + 1; continue; }
            }
        }
        PUT(p, 1);
        p++;
    }
#undef PUT
    out[len] = '\0';
    return out;
}

char *na_rewrite_path(const char *value, const na_mount *m, size_t n)
{
    const na_mount *best = NULL;
    size_t blen = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ml = strlen(m[i].mount_path);
        while (ml > 1 && m[i].mount_path[ml - 1] == '/') ml--;   /* "/data/" == "/data" */
        if (ml == 0 || strncmp(value, m[i].mount_path, ml) != 0) continue;
        if (value[ml] != '\0' && value[ml] != '/' && !(ml == 1)) continue; /* "/database" is not under "/data" */
        if (ml > blen) { best = &m[i]; blen = ml; }
    }
    if (!best) return NULL;
    char *out;
    const char *rest = value + blen;
    if (blen == 1 && *rest != '/') rest = value;   /* mountPath "/" keeps the leading slash */
    if (asprintf(&out, "%s%s", best->host_path, rest) < 0) return NULL;
    return out;
}

gd_err na_argv_rewrite_paths(char **argv, const na_mount *m, size_t n)
{
    for (size_t i = 1; argv && argv[i]; i++) {
        char *a = argv[i], *eq = a[0] == '-' ? strchr(a, '=') : NULL;
        char *r = na_rewrite_path(eq ? eq + 1 : a, m, n);
        if (!r) continue;
        char *full = r;
        if (eq && asprintf(&full, "%.*s%s", (int)(eq + 1 - a), a, r) < 0) full = NULL;
        if (eq) free(r);
        if (!full) return GD_ERR_NOMEM;
        free(argv[i]);
        argv[i] = full;
    }
    return GD_OK;
}

/* The fieldRef paths kubelet supports that make sense here. */
static const char *field_value(const cJSON *pod, const char *path, const na_env_ctx *ctx)
{
    if (strcmp(path, "status.podIP") == 0 || strcmp(path, "status.podIPs") == 0) return ctx->pod_ip;
    if (strcmp(path, "status.hostIP") == 0) return ctx->host_ip;
    if (strcmp(path, "spec.nodeName") == 0) return ctx->node_name;
    const char *simple[] = { "metadata.name", "metadata.namespace", "metadata.uid",
                             "spec.serviceAccountName" };
    for (size_t i = 0; i < sizeof simple / sizeof *simple; i++) {
        if (strcmp(path, simple[i]) != 0) continue;
        const cJSON *o = pod;
        char buf[64];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
            o = cJSON_GetObjectItemCaseSensitive(o, tok);
        return cJSON_IsString(o) ? o->valuestring : "";
    }
    /* metadata.labels['k'] / metadata.annotations['k'] */
    const char *kinds[] = { "metadata.labels['", "metadata.annotations['" };
    for (size_t i = 0; i < 2; i++) {
        size_t kl = strlen(kinds[i]), pl = strlen(path);
        if (strncmp(path, kinds[i], kl) != 0 || pl < kl + 2 || strcmp(path + pl - 2, "']") != 0)
            continue;
        char key[256];
        if (pl - kl - 2 >= sizeof key) return NULL;
        memcpy(key, path + kl, pl - kl - 2);
        key[pl - kl - 2] = '\0';
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
        const cJSON *map = cJSON_GetObjectItemCaseSensitive(meta, i == 0 ? "labels" : "annotations");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(map, key);
        return cJSON_IsString(v) ? v->valuestring : "";
    }
    return NULL;
}

/* Extra variables an image's contract needs because all pods share one network namespace:
 * godis must listen on its pod IP. "%s" is the pod IP. */
static const struct { const char *image, *name, *tmpl; } image_extras[] = {
    { "kbzjung359/godis", "CLUSTER_LISTEN-CLIENT", "http://%s:6379" },
    { "kbzjung359/godis", "CLUSTER_LISTEN-PEER", "http://%s:6300" },
};

static gd_err env_entry(const cJSON *pod, const cJSON *item, const na_env_ctx *ctx, na_env *out,
                        char *err, size_t errlen)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
    if (!cJSON_IsString(name) || !*name->valuestring) {
        seterr(err, errlen, "env entry without a name");
        return GD_ERR_INVALID;
    }
    const char *n = name->valuestring;
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, "value");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(item, "valueFrom");
    if (!from || cJSON_IsNull(from)) {
        char *v = na_expand(cJSON_IsString(value) ? value->valuestring : "", out);
        if (!v) return GD_ERR_NOMEM;
        gd_err e = na_env_set(out, n, v);
        free(v);
        return e;
    }
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(from, "configMapKeyRef");
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(from, "fieldRef");
    if (cm) {
        const cJSON *cmn = cJSON_GetObjectItemCaseSensitive(cm, "name");
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(cm, "key");
        bool optional = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cm, "optional"));
        if (!cJSON_IsString(cmn) || !cJSON_IsString(key)) {
            seterr(err, errlen, "env %s: configMapKeyRef needs name and key", n);
            return GD_ERR_INVALID;
        }
        if (!ctx->cm_lookup) {
            seterr(err, errlen, "env %s: no ConfigMap lookup available", n);
            return GD_ERR_INVALID;
        }
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
        char *v = NULL;
        gd_err e = ctx->cm_lookup(ctx->ud, cJSON_IsString(ns) ? ns->valuestring : "default",
                                  cmn->valuestring, key->valuestring, &v, err, errlen);
        if (e == GD_ERR_NOT_FOUND && optional) return GD_OK;
        if (e != GD_OK) return e;
        e = na_env_set(out, n, v);
        free(v);
        return e;
    }
    if (fr) {
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(fr, "fieldPath");
        const char *v = cJSON_IsString(fp) ? field_value(pod, fp->valuestring, ctx) : NULL;
        if (!v) {
            seterr(err, errlen, "env %s: unsupported fieldRef %s", n,
                   cJSON_IsString(fp) ? fp->valuestring : "(none)");
            return GD_ERR_INVALID;
        }
        return na_env_set(out, n, v);
    }
    seterr(err, errlen, "env %s: unsupported valueFrom (configMapKeyRef and fieldRef only)", n);
    return GD_ERR_INVALID;
}

gd_err na_env_build(const cJSON *pod, const cJSON *container, const char *image,
                    const na_env_ctx *ctx, const na_mount *mounts, size_t nmounts,
                    na_env *out, char *err, size_t errlen)
{
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(container, "env");
    const cJSON *item;
    if (env && !cJSON_IsNull(env) && !cJSON_IsArray(env)) {
        seterr(err, errlen, "env is not a list");
        return GD_ERR_INVALID;
    }
    cJSON_ArrayForEach(item, env) {
        gd_err e = env_entry(pod, item, ctx, out, err, errlen);
        if (e != GD_OK) return e;
    }
    char name[256];
    if (image && na_image_strip_tag(image, name, sizeof name)) {
        for (size_t i = 0; i < sizeof image_extras / sizeof *image_extras; i++) {
            size_t nl = strlen(name), kl = strlen(image_extras[i].image);
            bool hit = strcmp(name, image_extras[i].image) == 0 ||
                       (nl > kl && name[nl - kl - 1] == '/' && strcmp(name + nl - kl, image_extras[i].image) == 0);
            if (!hit || na_env_get(out, image_extras[i].name)) continue;
            char v[128];
            snprintf(v, sizeof v, image_extras[i].tmpl, ctx->pod_ip ? ctx->pod_ip : "");
            if (na_env_set(out, image_extras[i].name, v) != GD_OK) return GD_ERR_NOMEM;
        }
    }
    for (size_t i = 0; i < out->n; i++) {
        char *r = na_rewrite_path(out->v[i].value, mounts, nmounts);
        if (r) { free(out->v[i].value); out->v[i].value = r; }
    }
    return GD_OK;
}

/* Appends the strings of a JSON list, $(VAR)-expanded, to v (count in *n, capacity cap). */
static gd_err argv_append(char ***v, size_t *n, size_t cap, const cJSON *list, size_t skip,
                          const na_env *env, const char *what, char *err, size_t errlen)
{
    const cJSON *it;
    size_t i = 0;
    cJSON_ArrayForEach(it, list) {
        if (i++ < skip) continue;
        if (!cJSON_IsString(it)) {
            seterr(err, errlen, "%s contains a non-string", what);
            return GD_ERR_INVALID;
        }
        if (*n + 1 >= cap) return GD_ERR_TOO_LARGE;
        char *s = na_expand(it->valuestring, env);
        if (!s) return GD_ERR_NOMEM;
        (*v)[(*n)++] = s;
    }
    return GD_OK;
}

gd_err na_argv_build(const cJSON *container, const char *program, const na_env *env,
                     char ***out, char *err, size_t errlen)
{
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(container, "command");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(container, "args");
    if ((cmd && !cJSON_IsNull(cmd) && !cJSON_IsArray(cmd)) ||
        (args && !cJSON_IsNull(args) && !cJSON_IsArray(args))) {
        seterr(err, errlen, "command/args must be lists of strings");
        return GD_ERR_INVALID;
    }
    int ncmd = cJSON_IsArray(cmd) ? cJSON_GetArraySize(cmd) : 0;
    int nargs = cJSON_IsArray(args) ? cJSON_GetArraySize(args) : 0;
    if ((!program || !*program) && ncmd == 0) {
        seterr(err, errlen, "image mapped to no program: the container needs a command");
        return GD_ERR_INVALID;
    }
    size_t cap = (size_t)ncmd + (size_t)nargs + 2, n = 0;
    char **v = calloc(cap, sizeof *v);
    if (!v) return GD_ERR_NOMEM;
    gd_err e = GD_OK;
    size_t plen = program ? strlen(program) : 0;
    if (plen && program[plen - 1] == '/') {
        /* an image of several programs: its entrypoint's name, found in that directory */
        const cJSON *c0 = cJSON_GetArrayItem(cmd, 0);
        const char *base = cJSON_IsString(c0) ? strrchr(c0->valuestring, '/') : NULL;
        base = base ? base + 1 : cJSON_IsString(c0) ? c0->valuestring : "";
        if (!*base || strcmp(base, "..") == 0 || strcmp(base, ".") == 0) {
            seterr(err, errlen, "image mapped to directory %s: the container needs a command naming a program", program);
            free(v);
            return GD_ERR_INVALID;
        }
        if (asprintf(&v[n++], "%s%s", program, base) < 0) { v[--n] = NULL; e = GD_ERR_NOMEM; }
        if (e == GD_OK) e = argv_append(&v, &n, cap, cmd, 1, env, "command", err, errlen);
    } else if (program && *program) {
        if (!(v[n++] = strdup(program))) e = GD_ERR_NOMEM;
        if (e == GD_OK) e = argv_append(&v, &n, cap, cmd, 1, env, "command", err, errlen);
    } else {
        e = argv_append(&v, &n, cap, cmd, 0, env, "command", err, errlen);
    }
    if (e == GD_OK) e = argv_append(&v, &n, cap, args, 0, env, "args", err, errlen);
    if (e != GD_OK) { na_strv_free(&v); return e; }
    *out = v;
    return GD_OK;
}

/* ------------------------------------------------------------------ probes */

static int int_field(const cJSON *o, const char *k, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e6 ? (int)v->valuedouble : def;
}

static int resolve_port(const cJSON *container, const cJSON *port)
{
    if (cJSON_IsNumber(port)) {
        int p = (int)port->valuedouble;
        return p > 0 && p < 65536 && port->valuedouble == p ? p : -1;
    }
    if (!cJSON_IsString(port)) return -1;
    char *end;
    long p = strtol(port->valuestring, &end, 10);
    if (*port->valuestring && !*end) return p > 0 && p < 65536 ? (int)p : -1;
    const cJSON *ports = cJSON_GetObjectItemCaseSensitive(container, "ports"), *it;
    cJSON_ArrayForEach(it, ports) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, port->valuestring) == 0)
            return int_field(it, "containerPort", -1);
    }
    return -1;
}

gd_err na_probe_parse(const cJSON *container, const char *field, na_probe *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(container, field);
    if (!p || cJSON_IsNull(p)) return GD_OK;
    if (!cJSON_IsObject(p)) {
        seterr(err, errlen, "%s is not an object", field);
        return GD_ERR_INVALID;
    }
    out->initial_delay_s = int_field(p, "initialDelaySeconds", 0);
    out->period_s = int_field(p, "periodSeconds", 10);
    out->timeout_s = int_field(p, "timeoutSeconds", 1);
    out->success_threshold = int_field(p, "successThreshold", 1);
    out->failure_threshold = int_field(p, "failureThreshold", 3);
    if (out->period_s < 1) out->period_s = 1;
    if (out->timeout_s < 1) out->timeout_s = 1;
    if (out->success_threshold < 1) out->success_threshold = 1;
    if (out->failure_threshold < 1) out->failure_threshold = 1;
    const cJSON *tcp = cJSON_GetObjectItemCaseSensitive(p, "tcpSocket");
    const cJSON *http = cJSON_GetObjectItemCaseSensitive(p, "httpGet");
    const cJSON *h = tcp ? tcp : http;
    if (!h) { out->kind = NA_PROBE_UNSUPPORTED; return GD_OK; }
    out->kind = tcp ? NA_PROBE_TCP : NA_PROBE_HTTP;
    out->port = resolve_port(container, cJSON_GetObjectItemCaseSensitive(h, "port"));
    if (out->port < 0) {
        seterr(err, errlen, "%s: port missing, out of range or not a container port name", field);
        out->kind = NA_PROBE_NONE;
        return GD_ERR_INVALID;
    }
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(h, "path");
    snprintf(out->path, sizeof out->path, "%s",
             http && cJSON_IsString(path) && path->valuestring[0] == '/' ? path->valuestring : "/");
    return GD_OK;
}

/* ------------------------------------------------------------------ services and hosts */

bool na_selector_matches(const cJSON *selector, const cJSON *labels)
{
    if (!cJSON_IsObject(selector) || !selector->child) return false;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, selector) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(labels, kv->string);
        if (!cJSON_IsString(kv) || !cJSON_IsString(l) || strcmp(l->valuestring, kv->valuestring) != 0)
            return false;
    }
    return true;
}

/* True when the line starting at p (up to its newline) is exactly marker. */
static bool line_is(const char *p, const char *marker)
{
    size_t ml = strlen(marker);
    return strncmp(p, marker, ml) == 0 && (p[ml] == '\n' || p[ml] == '\0' ||
                                          (p[ml] == '\r' && (p[ml + 1] == '\n' || !p[ml + 1])));
}

char *na_hosts_rewrite(const char *old, const char *lines, const char *block, gd_err *e)
{
    *e = GD_OK;
    if (!old) old = "";
    if (!lines) lines = "";
    char begin[160], end[160];
    bool named = block && *block;
    snprintf(begin, sizeof begin, "%s%s%.100s", NA_HOSTS_BEGIN, named ? " " : "", named ? block : "");
    snprintf(end, sizeof end, "%s%s%.100s", NA_HOSTS_END, named ? " " : "", named ? block : "");
    size_t cap = strlen(old) + strlen(lines) + sizeof begin + sizeof end + 8;
    char *out = malloc(cap), *w = out;
    if (!out) { *e = GD_ERR_NOMEM; return NULL; }
    bool inside = false;
    for (const char *p = old; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (!inside && line_is(p, begin)) inside = true;
        else if (inside && line_is(p, end)) inside = false;
        else if (!inside) { memcpy(w, p, len); w += len; }
        p += len;
    }
    if (inside) { free(out); *e = GD_ERR_PARSE; return NULL; }
    if (w > out && w[-1] != '\n') *w++ = '\n';
    size_t ll = strlen(lines);
    w += sprintf(w, "%s\n", begin);
    memcpy(w, lines, ll);
    w += ll;
    if (ll && lines[ll - 1] != '\n') *w++ = '\n';
    w += sprintf(w, "%s\n", end);
    *w = '\0';
    return out;
}

cJSON *na_taint_parse(const char *spec, char *err, size_t errlen)
{
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    if (!colon || colon == spec) {
        seterr(err, errlen, "--taint %s: want KEY[=VALUE]:EFFECT", spec ? spec : "(null)");
        return NULL;
    }
    const char *effect = colon + 1;
    if (strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") && strcmp(effect, "NoExecute")) {
        seterr(err, errlen, "--taint %s: effect must be NoSchedule, PreferNoSchedule or NoExecute", spec);
        return NULL;
    }
    char kv[320];
    size_t kvl = (size_t)(colon - spec);
    if (kvl >= sizeof kv) { seterr(err, errlen, "--taint: too long"); return NULL; }
    memcpy(kv, spec, kvl);
    kv[kvl] = '\0';
    char *eq = strchr(kv, '=');
    if (eq) *eq = '\0';
    if (!*kv) { seterr(err, errlen, "--taint %s: empty key", spec); return NULL; }
    cJSON *t = cJSON_CreateObject();
    if (!t) return NULL;
    cJSON_AddStringToObject(t, "key", kv);
    if (eq) cJSON_AddStringToObject(t, "value", eq + 1);
    cJSON_AddStringToObject(t, "effect", effect);
    return t;
}

bool na_path_join(char *out, size_t cap, const char *dir, const char *name)
{
    if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n > 0 && (size_t)n < cap;
}

bool na_mkdirs(const char *path)
{
    char buf[NA_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) { errno = ENAMETOOLONG; return false; }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}
