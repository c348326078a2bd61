/* gd_curve_zap.c — the ZAP handler (RFC 27) with the allow-list of client public keys
 * (docs/PROTOCOL.md §3.2).
 *
 * One thread per ZeroMQ context owns a REP socket on inproc://zeromq.zap.01; libzmq asks
 * it about every new CURVE connection of every socket of the context. The list is re-read
 * when the file's identity (device, inode, size, mtime) changes — checked on each request,
 * so a key added to the Secret is honoured by the very next connection, and once a second
 * so a broken update is reported even when nobody connects. A bad file keeps the previous
 * list: refusing every worker because of a typo would stop the whole pool. */
#include "gd_curve.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>
#include "gd_log.h"
#include "gd_time.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ALLOW_FILE_MAX (256 * 1024)
#define REFUSAL_MEMORY 32               /* keys whose refusal was logged recently */
#define REFUSAL_LOG_EVERY_MS 60000

gd_err gd_curve_allow_parse(const char *text, gd_curve_allow *out, char *why, size_t cap)
{
    out->n = 0;
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        lineno++;
        if (len >= sizeof line) {
            snprintf(why, cap, "line %d: too long", lineno);
            return GD_ERR_PARSE;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol ? 1 : 0);
        /* z85 keys may contain '#', but never first (a 5-character group's first digit is at
         * most 82 of 85, '#' is 84): a token that starts with '#' begins a comment */
        char *save = NULL, *tok[3] = {NULL, NULL, NULL};
        int nt = 0;
        for (char *t = strtok_r(line, " \t\r", &save); t && nt < 3;
             t = strtok_r(NULL, " \t\r", &save)) {
            if (t[0] == '#')
                break;
            tok[nt++] = t;
        }
        char *key = tok[0], *name = tok[1];
        if (!key)
            continue;
        if (tok[2]) {
            snprintf(why, cap, "line %d: want \"<z85 public key> [name]\"", lineno);
            return GD_ERR_PARSE;
        }
        if (!gd_curve_valid_z85(key)) {
            snprintf(why, cap, "line %d: \"%.48s\" is not a z85 public key (40 characters)",
                     lineno, key);
            return GD_ERR_PARSE;
        }
        if (out->n >= GD_CURVE_ALLOW_MAX) {
            snprintf(why, cap, "line %d: more than %d keys", lineno, GD_CURVE_ALLOW_MAX);
            return GD_ERR_TOO_LARGE;
        }
        zmq_z85_decode(out->e[out->n].key, key);
        snprintf(out->e[out->n].name, sizeof out->e[out->n].name, "%s", name ? name : "");
        out->n++;
    }
    return GD_OK;
}

const char *gd_curve_allow_find(const gd_curve_allow *a, const uint8_t key[32])
{
    for (int i = 0; i < a->n; i++)
        if (memcmp(a->e[i].key, key, 32) == 0)
            return a->e[i].name;
    return NULL;
}

struct gd_curve_zap {
    void *sock;
    char *path;
    pthread_t th;
    bool started;
    atomic_bool stop;
    gd_curve_allow *allow;      /* the list in force; NULL until one loaded */
    struct stat seen;           /* identity of the file last looked at */
    bool seen_valid;
    int64_t next_check_ms;
    struct { uint8_t key[32]; int64_t at_ms; } refusals[REFUSAL_MEMORY];
    int next_refusal;
    pthread_mutex_t mu;         /* guards stats */
    gd_curve_zap_stats stats;
};

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static char *read_file(const char *path, char *why, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, cap, "%s", strerror(errno));
        return NULL;
    }
    char *buf = malloc(ALLOW_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, ALLOW_FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!buf || n > ALLOW_FILE_MAX) {
        snprintf(why, cap, buf ? "larger than %d bytes" : "out of memory", ALLOW_FILE_MAX);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static void count(gd_curve_zap *z, uint64_t *field)
{
    pthread_mutex_lock(&z->mu);
    (*field)++;
    z->stats.keys = z->allow ? z->allow->n : 0;
    pthread_mutex_unlock(&z->mu);
}

/* Re-reads the list when the file changed (or at first). */
static void maybe_reload(gd_curve_zap *z)
{
    struct stat st;
    char why[200] = "";
    if (stat(z->path, &st) != 0) {
        if (z->seen_valid || !z->allow) {
            gd_log(GD_LOG_ERROR, "CURVE allow-list unreadable; the previous list stays in force",
                   "file", z->path, "error", strerror(errno), NULL);
            count(z, &z->stats.reload_errors);
        }
        z->seen_valid = false;
        return;
    }
    if (z->seen_valid && same_file(&st, &z->seen))
        return;
    z->seen = st;
    z->seen_valid = true;
    gd_curve_allow *next = malloc(sizeof *next);
    char *text = next ? read_file(z->path, why, sizeof why) : NULL;
    gd_err rc = text ? gd_curve_allow_parse(text, next, why, sizeof why) : GD_ERR_IO;
    free(text);
    if (rc != GD_OK) {
        gd_log(GD_LOG_ERROR, "CURVE allow-list not loaded; the previous list stays in force",
               "file", z->path, "error", next ? why : "out of memory", NULL);
        free(next);
        count(z, &z->stats.reload_errors);
        return;
    }
    pthread_mutex_lock(&z->mu);
    free(z->allow);
    z->allow = next;
    pthread_mutex_unlock(&z->mu);
    char n[16];
    snprintf(n, sizeof n, "%d", next->n);
    gd_log(GD_LOG_INFO, "CURVE allow-list loaded", "file", z->path, "keys", n, NULL);
    count(z, &z->stats.reloads);
}

/* One line per refused key per minute: a worker retrying every second must not flood. */
static bool refusal_worth_logging(gd_curve_zap *z, const uint8_t *key)
{
    int64_t now = gd_mono_ms();
    for (int i = 0; i < REFUSAL_MEMORY; i++)
        if (z->refusals[i].at_ms && memcmp(z->refusals[i].key, key, 32) == 0) {
            if (now - z->refusals[i].at_ms < REFUSAL_LOG_EVERY_MS)
                return false;
            z->refusals[i].at_ms = now;
            return true;
        }
    int i = z->next_refusal++ % REFUSAL_MEMORY;
    memcpy(z->refusals[i].key, key, 32);
    z->refusals[i].at_ms = now;
    return true;
}

/* Decides one request: status "200" with the key's name, or "400" with why. */
static const char *decide(gd_curve_zap *z, zmq_msg_t *f, int n, const char **name,
                          const char **why)
{
    *name = "";
    if (n < 7 || zmq_msg_size(&f[0]) != 3 || memcmp(zmq_msg_data(&f[0]), "1.0", 3) != 0) {
        *why = "malformed ZAP request";
        return "500";
    }
    size_t dl = strlen(GD_CURVE_ZAP_DOMAIN);
    if (zmq_msg_size(&f[2]) != dl || memcmp(zmq_msg_data(&f[2]), GD_CURVE_ZAP_DOMAIN, dl) != 0) {
        *why = "wrong ZAP domain";
        return "400";
    }
    if (zmq_msg_size(&f[5]) != 5 || memcmp(zmq_msg_data(&f[5]), "CURVE", 5) != 0 ||
        zmq_msg_size(&f[6]) != 32) {
        *why = "not CURVE";
        return "400";
    }
    maybe_reload(z);
    const char *found = z->allow ? gd_curve_allow_find(z->allow, zmq_msg_data(&f[6])) : NULL;
    if (!found) {
        *why = z->allow ? "key not on the allow-list" : "no allow-list loaded";
        return "400";
    }
    *name = found;
    *why = "OK";
    return "200";
}

static void log_refusal(gd_curve_zap *z, zmq_msg_t *f, int n, const char *why)
{
    char key[GD_CURVE_Z85_LEN + 1] = "", addr[64] = "";
    if (n >= 7 && zmq_msg_size(&f[6]) == 32) {
        if (!refusal_worth_logging(z, zmq_msg_data(&f[6])))
            return;
        zmq_z85_encode(key, zmq_msg_data(&f[6]), 32);
    }
    if (n >= 4)
        snprintf(addr, sizeof addr, "%.*s", (int)zmq_msg_size(&f[3]), (char *)zmq_msg_data(&f[3]));
    gd_log(GD_LOG_WARN, "refused worker key", "client_public", key, "peer", addr, "reason",
           why, NULL);
}

static void serve_one(gd_curve_zap *z)
{
    zmq_msg_t f[8];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t tmp;
        zmq_msg_init(&tmp);
        if (zmq_msg_recv(&tmp, z->sock, 0) < 0) {
            zmq_msg_close(&tmp);
            break;
        }
        more = zmq_msg_more(&tmp);
        if (n < 8)
            f[n++] = tmp;
        else
            zmq_msg_close(&tmp);
    }
    const char *name, *why, *status = decide(z, f, n, &name, &why);
    if (strcmp(status, "200") == 0) {
        count(z, &z->stats.accepted);
    } else {
        count(z, &z->stats.refused);
        log_refusal(z, f, n, why);
    }
    /* REP: the reply must go out even for a malformed request, or the socket wedges. */
    const char *reply[] = {"1.0", "", status, why, name, ""};
    size_t rid_len = n >= 2 ? zmq_msg_size(&f[1]) : 0;
    for (int i = 0; i < 6; i++) {
        const void *data = i == 1 ? (n >= 2 ? zmq_msg_data(&f[1]) : "") : reply[i];
        size_t len = i == 1 ? rid_len : strlen(reply[i]);
        zmq_send(z->sock, data, len, i < 5 ? ZMQ_SNDMORE : 0);
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

static void *zap_main(void *arg)
{
    gd_curve_zap *z = arg;
    while (!atomic_load(&z->stop)) {
        zmq_pollitem_t it = {.socket = z->sock, .events = ZMQ_POLLIN};
        int rc = zmq_poll(&it, 1, 200);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc > 0)
            serve_one(z);
        if (gd_mono_ms() >= z->next_check_ms) {
            maybe_reload(z);
            z->next_check_ms = gd_mono_ms() + 1000;
        }
    }
    return NULL;
}

gd_curve_zap *gd_curve_zap_new(void *zctx, const char *allow_path)
{
    gd_curve_zap *z = calloc(1, sizeof *z);
    if (!z || !(z->path = strdup(allow_path))) {
        free(z);
        return NULL;
    }
    pthread_mutex_init(&z->mu, NULL);
    z->sock = zmq_socket(zctx, ZMQ_REP);
    int linger = 0;
    if (!z->sock || zmq_setsockopt(z->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_bind(z->sock, ZAP_ENDPOINT) != 0) {
        gd_log(GD_LOG_ERROR, "cannot start the ZAP handler", "error", zmq_strerror(errno), NULL);
        gd_curve_zap_destroy(&z);
        return NULL;
    }
    maybe_reload(z);
    z->next_check_ms = gd_mono_ms() + 1000;
    if (pthread_create(&z->th, NULL, zap_main, z) != 0) {
        gd_curve_zap_destroy(&z);
        return NULL;
    }
    z->started = true;
    return z;
}

void gd_curve_zap_destroy(gd_curve_zap **zp)
{
    gd_curve_zap *z = zp ? *zp : NULL;
    if (!z)
        return;
    if (z->started) {
        atomic_store(&z->stop, true);
        pthread_join(z->th, NULL);
    }
    if (z->sock)
        zmq_close(z->sock);
    pthread_mutex_destroy(&z->mu);
    free(z->allow);
    free(z->path);
    free(z);
    *zp = NULL;
}

void gd_curve_zap_get_stats(gd_curve_zap *z, gd_curve_zap_stats *out)
{
    pthread_mutex_lock(&z->mu);
    *out = z->stats;
    out->keys = z->allow ? z->allow->n : 0;
    pthread_mutex_unlock(&z->mu);
}
