/* state.c — the stand-in's membership and key/value data, and how they survive a restart.
 *
 * Membership lives in <waldir>/standin-membership, a small text file rewritten whole on
 * every change (temp file + fsync + rename + fsync of the directory), so a crash leaves the
 * old or the new version, never half of one. Keys live in memory and in an append-only
 * <waldir>/standin-kv.log replayed at start-up, like godis replays its WAL. Strings are
 * written %XX-escaped so a hostile key or URL cannot break the line format. */
#include "standin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gd_log.h"

/* ------------------------------------------------------------------------------------------
 * Escaping */

static char *esc(const char *s, size_t n)
{
    char *o = malloc(n * 3 + 1), *p = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '%')
            p += sprintf(p, "%%%02X", c);
        else
            *p++ = (char)c;
    }
    *p = '\0';
    return o;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Unescapes in place; returns the length or -1 on a broken escape. */
static long unesc(char *s)
{
    char *r = s, *w = s;
    while (*r) {
        if (*r == '%') {
            int h = hexval(r[1]), l = h < 0 ? -1 : hexval(r[2]);
            if (h < 0 || l < 0)
                return -1;
            *w++ = (char)(h * 16 + l);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (long)(w - s);
}

/* ------------------------------------------------------------------------------------------
 * Membership */

int standin_parse_members(const char *list, standin_member *out, int cap)
{
    int n = 0;
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[GODIS_MAX_URL + 32];
        if (len == 0 || len >= sizeof(item) || n >= cap)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        char *at = strchr(item, '@');
        if (!at)
            return -1;
        *at = '\0';
        long long id = godis_parse_id(item);
        if (!id || !godis_valid_peer_url(at + 1))
            return -1;
        for (int i = 0; i < n; i++)
            if (out[i].id == id)
                return -1;
        out[n].id = id;
        snprintf(out[n].url, sizeof(out[n].url), "%s", at + 1);
        n++;
        p = comma ? comma + 1 : NULL;
    }
    return n;
}

int standin_member_add(standin *s, long long id, const char *url)
{
    for (int i = 0; i < s->nremoved; i++)
        if (s->removed[i] == id)
            return 1;                /* raft refuses to re-add a removed id */
    for (int i = 0; i < s->nmembers; i++) {
        if (s->members[i].id == id) {
            snprintf(s->members[i].url, sizeof(s->members[i].url), "%s", url);
            return 0;
        }
    }
    if (s->nmembers >= STANDIN_MAX_MEMBERS)
        return 1;
    s->members[s->nmembers].id = id;
    snprintf(s->members[s->nmembers].url, sizeof(s->members[0].url), "%s", url);
    s->nmembers++;
    return 0;
}

int standin_member_remove(standin *s, long long id)
{
    int found = 0;
    for (int i = 0; i < s->nmembers; i++) {
        if (s->members[i].id == id) {
            s->members[i] = s->members[--s->nmembers];
            found = 1;
            break;
        }
    }
    int known = 0;
    for (int i = 0; i < s->nremoved; i++)
        known |= s->removed[i] == id;
    if (!known && s->nremoved < STANDIN_MAX_REMOVED)
        s->removed[s->nremoved++] = id;
    return found;
}

static void path_in(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

/* Writes the membership file atomically. poison_*: a malformed meet to record (raw). */
int standin_state_save(standin *s, const char *poison_id, const char *poison_url)
{
    if (!s->waldir[0])
        return 0;                    /* no WAL dir: memory only, as documented in --help */
    char path[1200], tmp[1200];
    path_in(path, sizeof(path), s->waldir, STANDIN_STATE_FILE);
    path_in(tmp, sizeof(tmp), s->waldir, STANDIN_STATE_FILE ".tmp");
    FILE *f = fopen(tmp, "we");
    if (!f) {
        GD_ERROR("cannot write membership", "path", tmp, "error", strerror(errno));
        return -1;
    }
    fprintf(f, "godis-standin-membership 1\nself %lld\norigin %s\nindex %lld\nterm %lld\n"
            "vote %lld\n", s->self_id, s->origin, s->index, s->term, s->voted_for);
    for (int i = 0; i < s->nmembers; i++)
        fprintf(f, "member %lld %s\n", s->members[i].id, s->members[i].url);
    for (int i = 0; i < s->nremoved; i++)
        fprintf(f, "removed %lld\n", s->removed[i]);
    if (poison_id) {
        char *a = esc(poison_id, strlen(poison_id));
        char *b = esc(poison_url, strlen(poison_url));
        fprintf(f, "poison %s %s\n", a ? a : "%00", b ? b : "%00");
        free(a);
        free(b);
    }
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        GD_ERROR("cannot persist membership", "path", path, "error", strerror(errno));
        return -1;
    }
    int dfd = open(s->waldir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* A poisoned entry is what godis would replay from its log on every start: it dies. */
static void die_poisoned(const char *id, const char *url)
{
    GD_ERROR("panic: committed cluster meet is malformed; crashing as godis does",
             "id", id, "url", url);
    _exit(STANDIN_EXIT_CRASH);
}

static int parse_state_line(standin *s, char *line)
{
    char *kw = strtok(line, " \n"), *a = strtok(NULL, " \n"), *b = strtok(NULL, " \n");
    if (!kw)
        return 0;
    if (!strcmp(kw, "godis-standin-membership"))
        return a && !strcmp(a, "1") ? 0 : -1;
    if (!a)
        return -1;
    if (!strcmp(kw, "self"))
        return godis_parse_id(a) == s->self_id ? 0 : -1;
    if (!strcmp(kw, "origin")) {
        snprintf(s->origin, sizeof(s->origin), "%s", a);
        return 0;
    }
    if (!strcmp(kw, "index")) {
        s->index = strtoll(a, NULL, 10);
        return s->index >= 0 ? 0 : -1;
    }
    if (!strcmp(kw, "term") || !strcmp(kw, "vote")) {    /* raft's HardState */
        long long v = strtoll(a, NULL, 10);
        *(!strcmp(kw, "term") ? &s->term : &s->voted_for) = v;
        return v >= 0 ? 0 : -1;
    }
    if (!strcmp(kw, "self_removed"))            /* older stand-ins: godis saves no such thing */
        return 0;
    if (!strcmp(kw, "removed")) {
        long long id = godis_parse_id(a);
        if (!id || s->nremoved >= STANDIN_MAX_REMOVED)
            return -1;
        s->removed[s->nremoved++] = id;
        return 0;
    }
    if (!strcmp(kw, "member")) {
        long long id = godis_parse_id(a);
        if (!id || !b || !godis_valid_peer_url(b) || s->nmembers >= STANDIN_MAX_MEMBERS)
            return -1;
        s->members[s->nmembers].id = id;
        snprintf(s->members[s->nmembers].url, sizeof(s->members[0].url), "%s", b);
        s->nmembers++;
        return 0;
    }
    if (!strcmp(kw, "poison")) {
        if (b && unesc(a) >= 0 && unesc(b) >= 0)
            die_poisoned(a, b);
        die_poisoned("?", "?");
    }
    return -1;
}

static int load_membership(standin *s, int *fresh)
{
    char path[1200];
    path_in(path, sizeof(path), s->waldir, STANDIN_STATE_FILE);
    FILE *f = fopen(path, "re");
    if (!f) {
        *fresh = 1;
        return errno == ENOENT ? 0 : -1;
    }
    *fresh = 0;
    char line[GODIS_MAX_URL * 3 + 128];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f))
        rc = parse_state_line(s, line);
    fclose(f);
    if (rc != 0)
        GD_ERROR("membership file is corrupt", "path", path);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * Key/value store: a chained hash table, capped so a test cannot eat the machine. */

#define KV_BUCKETS 4096
#define KV_MAX_BYTES (64u << 20)

typedef struct kv_entry {
    struct kv_entry *next;
    char *key, *val;
    size_t kl, vl;
} kv_entry;

struct kv_table {
    kv_entry *b[KV_BUCKETS];
    size_t bytes;
};

static size_t kv_hash(const char *k, size_t n)
{
    size_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
    return h % KV_BUCKETS;
}

static int kv_put(struct kv_table *t, const char *k, size_t kl, const char *v, size_t vl)
{
    kv_entry **pp = &t->b[kv_hash(k, kl)];
    for (kv_entry *e = *pp; e; e = e->next) {
        if (e->kl == kl && !memcmp(e->key, k, kl)) {
            if (t->bytes - e->vl + vl > KV_MAX_BYTES)
                return -1;
            char *nv = malloc(vl + 1);
            if (!nv)
                return -1;
            memcpy(nv, v, vl);
            nv[vl] = '\0';
            t->bytes = t->bytes - e->vl + vl;
            free(e->val);
            e->val = nv;
            e->vl = vl;
            return 0;
        }
    }
    if (t->bytes + kl + vl > KV_MAX_BYTES)
        return -1;
    kv_entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->key = malloc(kl + 1)) || !(e->val = malloc(vl + 1))) {
        if (e)
            free(e->key);
        free(e);
        return -1;
    }
    memcpy(e->key, k, kl);
    e->key[kl] = '\0';
    memcpy(e->val, v, vl);
    e->val[vl] = '\0';
    e->kl = kl;
    e->vl = vl;
    e->next = *pp;
    *pp = e;
    t->bytes += kl + vl;
    return 0;
}

int standin_kv_apply(standin *s, long long origin, long long seq, const char *k, size_t kl,
                     const char *v, size_t vl)
{
    if (kv_put(s->kv, k, kl, v, vl) != 0 || standin_kv_record(origin, seq, k, kl, v, vl) != 0)
        return -1;
    if (s->kv_fd >= 0) {
        char *ek = esc(k, kl), *ev = esc(v, vl);
        int ok = ek && ev && dprintf(s->kv_fd, "S %s %s %lld %lld\n", ek, ev, origin, seq) > 0;
        free(ek);
        free(ev);
        if (!ok)
            GD_WARN("cannot append to the kv log", "error", strerror(errno));
    }
    return 0;
}

/* A set received from a client: a new entry of this member's own. */
int standin_kv_set(standin *s, const char *k, size_t kl, const char *v, size_t vl)
{
    return standin_kv_apply(s, s->self_id, standin_kv_next_seq(s), k, kl, v, vl);
}

const char *standin_kv_get(standin *s, const char *k, size_t kl, size_t *vl)
{
    for (kv_entry *e = s->kv->b[kv_hash(k, kl)]; e; e = e->next) {
        if (e->kl == kl && !memcmp(e->key, k, kl)) {
            *vl = e->vl;
            return e->val;
        }
    }
    return NULL;
}

void standin_kv_free(standin *s)
{
    if (!s->kv)
        return;
    for (int i = 0; i < KV_BUCKETS; i++) {
        kv_entry *e = s->kv->b[i];
        while (e) {
            kv_entry *n = e->next;
            free(e->key);
            free(e->val);
            free(e);
            e = n;
        }
    }
    free(s->kv);
    s->kv = NULL;
}

static int replay_kv(standin *s, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    char *line = NULL;
    size_t cap = 0;
    long n = 0;
    while (getline(&line, &cap, f) > 0) {
        char *kw = strtok(line, " \n"), *k = strtok(NULL, " \n"), *v = strtok(NULL, " \n");
        char *o = strtok(NULL, " \n"), *q = strtok(NULL, " \n");
        long kl, vl;
        if (!kw || strcmp(kw, "S") || !k || !v || (kl = unesc(k)) < 0 || (vl = unesc(v)) < 0)
            continue;                /* a torn last line after a crash: skip it, as a WAL does */
        /* Its replication id; a line from before replication was this member's own. */
        long long origin = o && q ? atoll(o) : s->self_id;
        long long seq = o && q ? atoll(q) : standin_kv_next_seq(s);
        if (origin <= 0 || seq <= 0 || standin_kv_seen(origin, seq))
            continue;
        if (kv_put(s->kv, k, (size_t)kl, v, (size_t)vl) == 0 &&
            standin_kv_record(origin, seq, k, (size_t)kl, v, (size_t)vl) == 0)
            n++;
    }
    free(line);
    fclose(f);
    char count[24];
    snprintf(count, sizeof(count), "%ld", n);
    GD_INFO("replayed kv log", "entries", count);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Start-up */

static int mkdir_p(const char *dir)
{
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int standin_state_load(standin *s)
{
    s->kv = calloc(1, sizeof(*s->kv));
    s->kv_fd = -1;
    if (!s->kv)
        return -1;
    if (s->snapdir[0] && mkdir_p(s->snapdir) != 0) {
        GD_ERROR("cannot create snapdir", "path", s->snapdir, "error", strerror(errno));
        return -1;
    }
    int fresh = 1;
    if (s->waldir[0]) {
        if (mkdir_p(s->waldir) != 0) {
            GD_ERROR("cannot create waldir", "path", s->waldir, "error", strerror(errno));
            return -1;
        }
        if (load_membership(s, &fresh) != 0)
            return -1;
        char kvpath[1200];
        path_in(kvpath, sizeof(kvpath), s->waldir, STANDIN_KV_FILE);
        if (replay_kv(s, kvpath) != 0)
            return -1;
        s->kv_fd = open(kvpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (s->kv_fd < 0)
            return -1;
    } else {
        GD_WARN("no --waldir: membership and data are kept in memory only");
    }
    if (!fresh) {
        GD_INFO("restarting from the WAL dir", "waldir", s->waldir, "origin", s->origin);
        standin_event(s, "start wal term %lld", s->term);
        return 0;
    }
    /* An empty WAL dir: a new member — or one whose volume was lost, which comes up as a
     * fresh voter that remembers no vote (it can vote twice in a term): godis cannot tell. */
    s->fresh = 1;
    standin_event(s, "start fresh join %d", s->join);
    /* A fresh WAL: take the membership from --initial-cluster. With join=false godis starts
     * a new Raft log of its own (bootstrap); with join=true it waits to be contacted. */
    int n = standin_parse_members(s->initial_cluster, s->members, STANDIN_MAX_MEMBERS);
    if (n < 0) {
        GD_ERROR("malformed --initial-cluster (want id@http://host:port,...)",
                 "initial-cluster", s->initial_cluster);
        return -1;
    }
    s->nmembers = n;
    snprintf(s->origin, sizeof(s->origin), "%s", s->join ? "join" : "bootstrap");
    if (!s->join)
        GD_INFO("fresh WAL and join=false: forming a new cluster log of its own");
    return standin_state_save(s, NULL, NULL);
}
