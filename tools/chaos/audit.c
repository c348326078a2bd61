/* audit.c — the exclusive and fenced invariants, from two logs read as they grow.
 *
 * exclusive: the workers' reconcile trace (common/proto/gd_rectrace.h), one line per begin and
 * end of a reconcile, in the order the calls happened. A begin for a key that another thread
 * has begun and not ended is a violation — unless that thread's process is gone (a killed
 * worker never writes its end; the manager moves its shards only after reaping it).
 *
 * fenced: the API server's audit log. The Lease's holder changes when another manager's
 * write of the Lease succeeds (only the holder renews; a takeover is the new holder's
 * update), and every write by a worker names its manager in its User-Agent. A worker write
 * received after its manager's Lease went to another manager is a violation. The log is in
 * completion order, so every takeover that completed before a write was received is read
 * before that write. */
#include "chaos.h"
#include "chaos_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "gd_json.h"
#include "gd_map.h"
#include "gd_time.h"

typedef struct {
    FILE *f;
    ino_t ino;
    char path[PATH_MAX + 32];
    char line[1 << 16];
    size_t len;
} tail;

/* Next complete line of a growing (and possibly rotated) file; NULL when none yet. */
static char *tail_line(tail *t)
{
    if (!t->f) {
        struct stat st;
        if (stat(t->path, &st) != 0 || !(t->f = fopen(t->path, "r"))) return NULL;
        t->ino = st.st_ino;
    }
    for (;;) {
        int ch = fgetc(t->f);
        if (ch == EOF) {
            clearerr(t->f);
            struct stat st;
            if (stat(t->path, &st) == 0 && st.st_ino != t->ino) {   /* rotated: next file */
                fclose(t->f);
                t->f = NULL;
                t->len = 0;
            }
            return NULL;
        }
        if (ch == '\n') {
            t->line[t->len] = '\0';
            t->len = 0;
            return t->line;
        }
        if (t->len < sizeof t->line - 1) t->line[t->len++] = (char)ch;
    }
}

/* ---- exclusive ---- */

typedef struct {
    int pid, tid;
} owner;

void ch_trace_line(chaos *x, gd_map *open, char *line)
{
    char what, ctrl[64], key[400];
    long long us;
    int pid, tid;
    if (sscanf(line, "%c %lld %d %d %63s %399s", &what, &us, &pid, &tid, ctrl, key) != 6) return;
    char k[480];
    snprintf(k, sizeof k, "%s %s", ctrl, key);
    owner *o = gd_map_get(open, k);
    if (what == 'E') {
        if (o && o->pid == pid && o->tid == tid) gd_map_del(open, k);
        return;
    }
    ch_check(x, I_EXCLUSIVE);
    if (o && !(o->pid == pid && o->tid == tid) && ch_pid_alive(o->pid))
        ch_violation(x, I_EXCLUSIVE, "%s key %s: reconcile began in pid %d thread %d while pid "
                     "%d thread %d (alive) had not finished its own", ctrl, key, pid, tid,
                     o->pid, o->tid);
    owner *n = malloc(sizeof *n);
    if (!n) return;
    *n = (owner){pid, tid};
    gd_map_put(open, k, n, NULL);
}

/* ---- fenced ---- */

/* "2026-11-22T11:02:03.123456Z" → µs since the epoch; 0 when malformed. */
static int64_t audit_us(const char *s)
{
    struct tm tm = {0};
    int us = 0;
    char frac[16] = "";
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d.%15[0-9]Z", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, frac) < 6)
        return 0;
    for (int i = 0; i < 6; i++) us = us * 10 + (frac[i] >= '0' && frac[i] <= '9' ? frac[i] - '0' : 0);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000000 + us;
}


static const char *holder_at(const ch_holders *h, int64_t us)
{
    const char *who = NULL;
    for (int i = 0; i < h->n && h->at[i] <= us; i++) who = h->who[i];
    return who;
}

void ch_audit_line(chaos *x, ch_holders *h, const char *line)
{
    cJSON *ev = cJSON_Parse(line);
    const char *ua = gd_json_str_or(ev, "userAgent", "");
    const char *mgr = strstr(ua, "(manager; identity="), *wkr = strstr(ua, "(worker; manager=");
    char id[32] = "";
    if (mgr) sscanf(mgr, "(manager; identity=%31[^)])", id);
    else if (wkr) sscanf(wkr, "(worker; manager=%31[^)])", id);
    int64_t code = gd_json_int_or(ev, "responseStatus.code", 0);
    if (mgr && id[0] && code >= 200 && code < 300 &&
        !strcmp(gd_json_str_or(ev, "objectRef.resource", ""), "leases") &&
        !strcmp(gd_json_str_or(ev, "objectRef.name", ""), CH_LEASE)) {
        const char *cur = h->n ? h->who[h->n - 1] : "";
        if (strcmp(cur, id) && h->n < CH_MAX_TAKEOVERS) {
            h->at[h->n] = audit_us(gd_json_str_or(ev, "stageTimestamp", NULL));
            snprintf(h->who[h->n], sizeof h->who[0], "%s", id);
            h->n++;
            ch_log(x, "  the Lease went to %s", id);
        }
    } else if (wkr && id[0]) {
        ch_check(x, I_FENCED);
        int64_t recv = audit_us(gd_json_str_or(ev, "requestReceivedTimestamp", NULL));
        const char *holder = holder_at(h, recv);
        if (!holder || strcmp(holder, id))
            ch_violation(x, I_FENCED, "a worker of %s wrote (%s %s %s/%s, received %s) while "
                         "the Lease was %s%s", id, gd_json_str_or(ev, "verb", ""),
                         gd_json_str_or(ev, "objectRef.resource", ""),
                         gd_json_str_or(ev, "objectRef.namespace", ""),
                         gd_json_str_or(ev, "objectRef.name", ""),
                         gd_json_str_or(ev, "requestReceivedTimestamp", ""),
                         holder ? "held by " : "not held yet", holder ? holder : "");
    }
    cJSON_Delete(ev);
}

void *ch_audit_thread(void *arg)
{
    chaos *x = arg;
    static tail tr, au;
    static ch_holders h;
    snprintf(tr.path, sizeof tr.path, "%s", x->trace);
    snprintf(au.path, sizeof au.path, "%s", x->audit_log);
    gd_map *open = gd_map_new(free);
    for (int last = 0; !last;) {
        last = atomic_load(&x->stop) != 0;    /* one more pass after the stop: read to the end */
        char *l;
        int n = 0;
        while ((l = tail_line(&tr))) {
            ch_trace_line(x, open, l);
            n++;
        }
        while ((l = tail_line(&au))) {
            ch_audit_line(x, &h, l);
            n++;
        }
        if (!n && !last) gd_sleep_ms(100);
    }
    gd_map_destroy(&open);
    if (tr.f) fclose(tr.f);
    if (au.f) fclose(au.f);
    return NULL;
}
