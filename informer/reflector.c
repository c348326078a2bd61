/* reflector.c — list then watch, with client-go's Reflector semantics.
 *
 *  - The list is paginated (limit/continue) and a consistent read (resourceVersion ""), so
 *    paging really happens (bounded memory per page) and the result is as new as etcd.
 *    --initial-list-from-cache makes the first list client-go's (resourceVersion=0, from the
 *    API server's watch cache: no etcd read, but one unpaginated response). Relists after
 *    410 are always consistent reads, as client-go's after "resource version too old". If a continue token
 *    expires mid-way (410), we fall back to one full unpaginated list, as client-go's pager
 *    does (FullListIfExpired): restarting the paging could expire again forever.
 *  - The watch starts from the list's resourceVersion with allowWatchBookmarks and a
 *    server-side timeout random in [min, 2*min) (client-go: 5 min → [5, 10) min), so that
 *    many informers do not reconnect in lockstep. Events and bookmarks advance the rv.
 *  - A watch that ends normally is re-established from the last rv at once. 410 Gone /
 *    Expired / "too large resource version" means our rv is unusable: relist, and the
 *    store publishes the difference (DeltaFIFO Replace). Any other error (API server down,
 *    5xx, transport) backs off with jitter (0.8 s doubling to 30 s, reset after 2 minutes
 *    without failure) and retries the watch from the same rv — a relist is not needed to
 *    survive an API server restart, and if our rv has become too old the watch says 410.
 *  - A watch that ends within a second without any event counts as a failure (client-go's
 *    "very short watch"), so a server that closes at once cannot spin us.
 *  - No watch can hang forever: the server is asked to end it (timeoutSeconds), libcurl
 *    gives up 30 s after that, and a progress deadline (--watch-progress-deadline, 150 s by
 *    default) ends a watch that delivered no byte for that long. kube-apiserver sends a
 *    BOOKMARK to every watcher that asked for them about once a minute (1.20's cacher:
 *    defaultBookmarkFrequency), so 150 s is 2.5 of its intervals: one bookmark may be lost
 *    or late (a CPU-starved API server) without a false alarm. A stalled watch is re-watched
 *    from the last rv at once. (1.20 sends no bookmarks for a resource that has had no
 *    event since the API server started; such an idle watch is renewed every 150 s, one
 *    cheap request, and the rv it resumes from is still served.)
 *  - A burst (20 events within 10 s) shortens that deadline to 10 s for the rest of the
 *    watch: 1.20's cacher drops a watcher that falls behind in a burst and sends it nothing
 *    more without ending the response, so silence right after a burst is re-watched soon
 *    (note_event; the end is counted as "quiet").
 *  - Every end is counted by cause (inf_watch_end: timeout, closed, stalled, truncated,
 *    garbage, expired, error, quiet) and every abnormal one is logged with what was wrong. A
 *    stream cut inside an event, or a line that is no event, is never skipped silently: the
 *    watch ends and resumes from the last rv, so the server sends the lost event again; the
 *    same garbage at the same rv three times relists. */
#include "informer.h"
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_hoptrace.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "gd_wake.h"

typedef struct {
    inf_reflector_cfg *cfg;
    char rv[64];
    int events;                 /* events of the current watch */
    long live_deadline;         /* the progress deadline now (note_event shortens it) */
    int64_t burst_start_ms;     /* the current burst window */
    int burst_n;                /* events in it */
    bool relist;                /* the current watch said 410 / too large rv */
    gd_err watch_err;           /* ERROR event other than 410, or GD_OK */
    char err_msg[256];
} refl;

bool inf_needs_relist(gd_err err, const k8s_status *st)
{
    if (err == GD_ERR_GONE)
        return true;
    if (!st)
        return false;
    if (strcmp(st->reason, "Expired") == 0 || strcmp(st->reason, "Gone") == 0 ||
        st->http_status == 410)
        return true;
    /* apiserver: errors.NewTooLargeResourceVersionError → 504 Timeout whose message is
     * "Too large resource version: X, current: Y"; client-go matches the message too. */
    return strcasestr(st->message, "too large resource version") != NULL;
}

static void set_rv(refl *r, const char *rv)
{
    if (!rv || !*rv)
        return;
    snprintf(r->rv, sizeof r->rv, "%s", rv);
    char *end;
    long long v = strtoll(rv, &end, 10);
    atomic_store_explicit(&r->cfg->ctr->last_rv, *end ? -1 : v, memory_order_relaxed);
}

/* A backoff sleep that a stop ends: on the stop fd when there is one, else in 100 ms
 * steps that look at the flag. */
static void nap(const inf_reflector_cfg *c, int64_t ms)
{
    int64_t until = gd_mono_ms() + ms;
    while (!*c->stop) {
        int64_t left = until - gd_mono_ms();
        if (left <= 0)
            return;
        if (c->stop_fd && *c->stop_fd >= 0)
            gd_wake_wait(*c->stop_fd, left);
        else
            gd_sleep_ms(left < 100 ? left : 100);
    }
}

static gd_err push(refl *r, inf_update_kind type, inf_obj *o, inf_obj **items, size_t n)
{
    inf_update *it = calloc(1, sizeof *it);
    if (!it) {
        inf_obj_unref(o);
        for (size_t i = 0; i < n; i++)
            inf_obj_unref(items[i]);
        free(items);
        return GD_ERR_NOMEM;
    }
    it->type = type;
    it->obj = o;
    it->items = items;
    it->nitems = n;
    snprintf(it->rv, sizeof it->rv, "%s", r->rv);
    gd_err e = r->cfg->apply(r->cfg->apply_ud, it);
    inf_update_destroy(&it);
    return e == GD_ERR_NOMEM ? e : GD_OK;
}

/* ------------------------------------------------------------ list */

typedef struct {
    inf_obj **v;
    size_t n, cap;
} objvec;

static void objvec_free(objvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        inf_obj_unref(v->v[i]);
    free(v->v);
    memset(v, 0, sizeof *v);
}

static gd_err objvec_add(objvec *v, inf_obj *o)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 256;
        inf_obj **nv = realloc(v->v, nc * sizeof *nv);
        if (!nv)
            return GD_ERR_NOMEM;
        v->v = nv;
        v->cap = nc;
    }
    v->v[v->n++] = o;
    return GD_OK;
}

/* List items carry no kind/apiVersion; set them so listed and watched bodies look alike. */
static void add_type_meta(cJSON *item, const char *api_version, const char *kind)
{
    if (!cJSON_GetObjectItemCaseSensitive(item, "kind") && kind && *kind)
        cJSON_AddStringToObject(item, "kind", kind);
    if (!cJSON_GetObjectItemCaseSensitive(item, "apiVersion") && api_version && *api_version)
        cJSON_AddStringToObject(item, "apiVersion", api_version);
}

static gd_err add_page(refl *r, cJSON *page, objvec *out)
{
    inf_reflector_cfg *c = r->cfg;
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items");
    const char *api_version = gd_json_str_or(page, "apiVersion", "");
    /* The item kind is the list's minus "List" (SecretList → Secret): right even for a
     * --resource given by its plural. */
    char kind[128];
    const char *lk = gd_json_str_or(page, "kind", "");
    size_t kl = strlen(lk);
    if (kl > 4 && kl < sizeof kind && strcmp(lk + kl - 4, "List") == 0)
        snprintf(kind, sizeof kind, "%.*s", (int)(kl - 4), lk);
    else
        snprintf(kind, sizeof kind, "%s", c->res.kind ? c->res.kind : "");
    cJSON *item;
    cJSON_ArrayForEach(item, items) {
        add_type_meta(item, api_version, kind);
        const char *why = NULL;
        inf_obj *o = inf_obj_from_json(c->kind, item, c->drop, c->ndrop, &why);
        if (!o) {
            atomic_fetch_add(&c->ctr->bad_objects, 1);
            GD_WARN("object dropped", "kind", c->kind, "reason", why);
            continue;
        }
        if (objvec_add(out, o) != GD_OK) {
            inf_obj_unref(o);
            return GD_ERR_NOMEM;
        }
    }
    return GD_OK;
}

/* from_cache: resourceVersion=0, served by the API server's watch cache (client-go's initial
 * list: cheap for etcd, but the cache ignores limit, so it arrives as one page).
 * A complete list is counted before it is pushed: the push publishes its events from this
 * thread, so whoever sees them and then asks for STATS must find the list counted. */
static gd_err list_all(refl *r, k8s_status *st, bool from_cache, bool relist)
{
    inf_reflector_cfg *c = r->cfg;
    objvec all = {0};
    char cont[4096] = "", list_rv[64] = "";
    long limit = c->page_size;
    int pages = 0;
    size_t raw_total = 0;          /* response bytes read (trim below) */
    for (;;) {
        k8s_list_opts lo = {.label_selector = c->label_selector,
                            .field_selector = c->field_selector,
                            .resource_version = from_cache && !cont[0] ? "0" : NULL,
                            .limit = limit, .continue_token = cont[0] ? cont : NULL,
                            .stop = c->stop, .stop_fd = c->stop_fd};
        cJSON *page = NULL;
        char *raw = NULL;
        size_t rawlen = 0;
        /* the fast path (watchline.c) reads the body itself; drop paths need the tree */
        gd_err e = c->ndrop ? k8s_list(c->client, &c->res, c->ns, &lo, &page, st)
                            : k8s_list_raw(c->client, &c->res, c->ns, &lo, &raw, &rawlen, st);
        if (e == GD_ERR_GONE && cont[0]) {
            GD_WARN("list continue token expired; falling back to a full list", "kind",
                    c->kind);
            objvec_free(&all);
            cont[0] = '\0';
            list_rv[0] = '\0';
            limit = 0;
            pages = 0;
            continue;
        }
        if (e != GD_OK) {
            free(raw);
            cJSON_Delete(page);
            objvec_free(&all);
            return e;
        }
        pages++;
        inf_obj **items = NULL;
        size_t nitems = 0;
        char prv[64];
        raw_total += rawlen;
        if (raw && inf_list_page_scan(c->kind, c->res.kind, raw, rawlen, &items, &nitems, prv,
                                      sizeof prv, cont, sizeof cont)) {
            free(raw);
            if (!list_rv[0])
                snprintf(list_rv, sizeof list_rv, "%s", prv);
            for (size_t i = 0; i < nitems; i++) {
                if (e == GD_OK && objvec_add(&all, items[i]) != GD_OK)
                    e = GD_ERR_NOMEM;
                if (e != GD_OK)
                    inf_obj_unref(items[i]);
            }
            free(items);
        } else {
            if (raw && !(page = cJSON_ParseWithLength(raw, rawlen))) {
                free(raw);
                objvec_free(&all);
                memset(st, 0, sizeof *st);
                st->err = GD_ERR_PARSE;
                snprintf(st->message, sizeof st->message,
                         "list: response body (%zu bytes) is not valid JSON", rawlen);
                return GD_ERR_PARSE;
            }
            free(raw);
            if (!list_rv[0])
                snprintf(list_rv, sizeof list_rv, "%s",
                         gd_json_str_or(page, "metadata.resourceVersion", ""));
            e = add_page(r, page, &all);
            const char *next = gd_json_str_or(page, "metadata.continue", "");
            if (strlen(next) >= sizeof cont) {
                e = GD_ERR_TOO_LARGE;
            } else {
                snprintf(cont, sizeof cont, "%s", next);
            }
            cJSON_Delete(page);
        }
        if (e != GD_OK) {
            objvec_free(&all);
            return e;
        }
        if (!cont[0] || *c->stop)
            break;
    }
    if (*c->stop) {
        objvec_free(&all);
        return GD_ERR_CANCELLED;
    }
    set_rv(r, list_rv);
    char n[24], np[16];
    snprintf(n, sizeof n, "%zu", all.n);
    snprintf(np, sizeof np, "%d", pages);
    GD_INFO("listed", "kind", c->kind, "objects", n, "pages", np, "rv", r->rv);
    atomic_fetch_add(&c->ctr->lists, 1);
    if (relist)
        atomic_fetch_add(&c->ctr->relists, 1);
    gd_err pe = push(r, INF_UPD_REPLACE, NULL, all.v, all.n);
    /* The response bodies (tens of MB for a large list) were freed, but glibc keeps freed
     * heap once its trim threshold has grown past them: measured +5 MB over 8 informers
     * holding 70 000 objects (tools/bench/scale.sh). A list is rare; give them back. */
    if (raw_total >= (4u << 20))
        malloc_trim(0);
    return pe;
}

/* ------------------------------------------------------------ watch */

/* A burst shortens the progress deadline. kube-apiserver 1.20's watch cache drops a
 * watcher that falls behind in a burst and leaves its response open with nothing more sent
 * (docs/architecture.md): the 150 s deadline, sized for bookmarks on an idle watch, then
 * left the operator's Services unseen for a whole 100 x 3 converge, and its workers
 * re-created them 1 500 times. Silence right after a burst is that or the burst's end; a
 * re-watch from the last resourceVersion tells them apart for one cheap request. */
static void note_event(refl *r)
{
    const inf_reflector_cfg *c = r->cfg;
    if (c->watch_idle_timeout_ms <= 0)
        return;
    int64_t window = c->burst_window_ms > 0 ? c->burst_window_ms : 10000;
    int64_t deadline = c->burst_deadline_ms > 0 ? c->burst_deadline_ms : 10000;
    int burst = c->burst_events > 0 ? c->burst_events : 20;
    int64_t now = gd_mono_ms();
    if (now - r->burst_start_ms > window) {
        r->burst_start_ms = now;
        r->burst_n = 0;
    }
    if (++r->burst_n >= burst && deadline < r->live_deadline)
        r->live_deadline = (long)deadline;
}

static int on_event(void *ud, const char *type, cJSON *obj)
{
    refl *r = ud;
    inf_reflector_cfg *c = r->cfg;
    r->events++;
    if (strcmp(type, "ERROR") == 0) {
        int64_t code = gd_json_int_or(obj, "code", 0);
        const char *reason = gd_json_str_or(obj, "reason", "");
        const char *msg = gd_json_str_or(obj, "message", "");
        snprintf(r->err_msg, sizeof r->err_msg, "%s", msg);
        if (code == 410 || strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0 ||
            strcasestr(msg, "too large resource version"))
            r->relist = true;
        else
            r->watch_err = code >= 500 ? GD_ERR_SERVER : GD_ERR_UNEXPECTED;
        return 1;
    }
    const char *rv = gd_meta_rv(obj);
    if (strcmp(type, "BOOKMARK") == 0) {
        set_rv(r, rv);
        return push(r, INF_UPD_RV, NULL, NULL, 0) == GD_OK ? 0 : 1;
    }
    note_event(r);
    inf_update_kind qt;
    gd_ev ev = gd_ev_parse(type);
    if (ev == GD_EV_ADDED || ev == GD_EV_MODIFIED)
        qt = INF_UPD_UPSERT;
    else if (ev == GD_EV_DELETED)
        qt = INF_UPD_DELETE;
    else {
        GD_WARN("unknown watch event type ignored", "kind", c->kind, "type", type);
        return 0;
    }
    set_rv(r, rv);
    if (gd_hoptrace_enabled) {
        const char *sent = gd_meta_annotation(obj, "bench.godis/sent-ns");
        char *end;
        unsigned long long id = strtoull(rv, &end, 10);
        if (sent && *rv && !*end)
            gd_hoptrace_record(id, GD_HOP_SENT, atoll(sent));
        gd_hop_rv(rv, GD_HOP_INF_DECODED);
    }
    const char *why = NULL;
    inf_obj *o = inf_obj_from_json(c->kind, obj, c->drop, c->ndrop, &why);
    if (!o) {
        atomic_fetch_add(&c->ctr->bad_objects, 1);
        GD_WARN("object dropped", "kind", c->kind, "reason", why);
        return 0;
    }
    gd_hop_rv(o->rv, GD_HOP_INF_QUEUED);
    return push(r, qt, o, NULL, 0) == GD_OK ? 0 : 1;
}

/* The fast path for the common events (watchline.c); everything else, and every event when
 * drop paths are configured or hop tracing is on, goes through on_event. Same effects as
 * on_event for the lines it takes. */
static int on_line(void *ud, const char *line, size_t n)
{
    refl *r = ud;
    inf_reflector_cfg *c = r->cfg;
    if (c->ndrop || gd_hoptrace_enabled)
        return 0;
    gd_ev ev;
    inf_obj *o = NULL;
    if (!inf_obj_from_watch_line(c->kind, line, n, &ev, &o))
        return 0;
    r->events++;
    note_event(r);
    set_rv(r, o->rv);
    gd_hop_rv(o->rv, GD_HOP_INF_QUEUED);
    return push(r, ev == GD_EV_DELETED ? INF_UPD_DELETE : INF_UPD_UPSERT, o, NULL, 0) == GD_OK
               ? 1 : -1;
}

/* One watch from r->rv. Returns why it ended; *ret is k8s_watch's result. */
static inf_watch_end watch_once(refl *r, k8s_status *st, gd_err *ret)
{
    inf_reflector_cfg *c = r->cfg;
    int min = c->min_watch_timeout_s > 0 ? c->min_watch_timeout_s : 300;
    int timeout_s = min + (int)(gd_rand01() * min);
    k8s_watch_opts wo = {
        .list = {.label_selector = c->label_selector, .field_selector = c->field_selector,
                 .resource_version = r->rv, .timeout_seconds = timeout_s},
        .allow_bookmarks = true,
        .stop = c->stop,
        .stop_fd = c->stop_fd,
        .idle_timeout_ms = c->watch_idle_timeout_ms,
        .idle_timeout_live = &r->live_deadline,
        .end_on_bad_event = true,
        .on_line = on_line,
    };
    r->events = 0;
    r->live_deadline = (long)c->watch_idle_timeout_ms;
    r->burst_start_ms = 0;
    r->burst_n = 0;
    r->relist = false;
    r->watch_err = GD_OK;
    r->err_msg[0] = '\0';
    GD_DEBUG("watch", "kind", c->kind, "rv", r->rv);
    int64_t started = gd_mono_ms();
    gd_err e = k8s_watch(c->client, &c->res, c->ns, &wo, on_event, r, st);
    *ret = e;
    if (r->relist)
        return INF_END_EXPIRED;
    if (e == GD_ERR_CANCELLED && r->watch_err != GD_OK && !*c->stop) {
        snprintf(st->message, sizeof st->message, "%s", r->err_msg);
        *ret = r->watch_err;                   /* an ERROR event other than 410 */
        return INF_END_ERROR;
    }
    /* The server ended the response: at its timeout, or before. Its timer starts after
     * our clock did, so a genuine timeout always looks at least that long from here. */
    if (e == GD_OK)
        return gd_mono_ms() - started + 100 >= (int64_t)timeout_s * 1000 ? INF_END_TIMEOUT
                                                                          : INF_END_CLOSED;
    if (e == GD_ERR_TIMEOUT)      /* our progress deadline, or timeoutSeconds overrun */
        return r->live_deadline < c->watch_idle_timeout_ms ? INF_END_QUIET : INF_END_STALLED;
    if (e == GD_ERR_CLOSED)
        return INF_END_TRUNCATED;
    if (strcmp(st->reason, K8S_REASON_GARBAGE) == 0)
        return INF_END_GARBAGE;
    return inf_needs_relist(e, st) ? INF_END_EXPIRED : INF_END_ERROR;
}

void *inf_reflector_run(void *arg)
{
    inf_reflector_cfg *c = arg;
    refl r = {.cfg = c};
    gd_backoff bo;
    gd_backoff_init(&bo, 800, 30000, 2.0, 0.2, 120000);
    bool need_list = true, first_list = true, first_watch = true;
    int garbage_streak = 0;            /* garbage endings without the rv moving */
    char garbage_rv[64] = "";
    while (!*c->stop) {
        k8s_status st;
        memset(&st, 0, sizeof st);
        if (need_list) {
            gd_err e = list_all(&r, &st, first_list && c->initial_list_from_cache, !first_list);
            if (e == GD_ERR_CANCELLED)
                break;
            if (e != GD_OK) {
                atomic_fetch_add(&c->ctr->watch_errors, 1);
                int64_t d = gd_backoff_next(&bo);
                char ds[24];
                snprintf(ds, sizeof ds, "%lld", (long long)d);
                GD_WARN("list failed; retrying", "kind", c->kind, "error", gd_strerror(e),
                        "message", st.message, "backoff_ms", ds);
                nap(c, d);
                continue;
            }
            first_list = false;
            need_list = false;
        }
        if (!first_watch)
            atomic_fetch_add(&c->ctr->watch_restarts, 1);
        first_watch = false;
        int64_t started = gd_mono_ms();
        gd_err e;
        inf_watch_end end = watch_once(&r, &st, &e);
        if (e == GD_ERR_CANCELLED && *c->stop)
            break;
        atomic_fetch_add(&c->ctr->watch_ends[end], 1);
        const char *why = r.err_msg[0] ? r.err_msg : st.message;
        char evs[24];
        snprintf(evs, sizeof evs, "%d", r.events);
        if (end == INF_END_EXPIRED) {
            GD_INFO("resourceVersion unusable; relisting", "kind", c->kind, "rv", r.rv,
                    "message", why);
            need_list = true;
            continue;
        }
        if (end == INF_END_GARBAGE) {
            /* The line may have been an event: re-watching from the last good rv gets it
             * again. The same garbage at the same rv three times is no passing corruption:
             * relist (the list has no per-event cap and re-reads every object). */
            garbage_streak = strcmp(garbage_rv, r.rv) == 0 ? garbage_streak + 1 : 1;
            snprintf(garbage_rv, sizeof garbage_rv, "%s", r.rv);
            if (garbage_streak >= 3) {
                GD_WARN("the same bad watch event three times; relisting", "kind", c->kind,
                        "rv", r.rv, "detail", why);
                garbage_streak = 0;
                garbage_rv[0] = '\0';
                need_list = true;
                continue;
            }
        }
        bool quick = r.events == 0 && gd_mono_ms() - started < 1000;
        switch (end) {
        case INF_END_TIMEOUT:
        case INF_END_CLOSED:
            if (quick)
                break;                 /* client-go's "very short watch": back off */
            if (end == INF_END_CLOSED)
                GD_INFO("the API server ended the watch before its timeout; re-watching",
                        "kind", c->kind, "rv", r.rv, "events", evs);
            continue;
        case INF_END_STALLED:
            /* nothing to back off from: the deadline already spaced the attempts */
            GD_WARN("watch made no progress; re-watching from the last resourceVersion",
                    "kind", c->kind, "rv", r.rv, "events", evs, "detail", why);
            continue;
        case INF_END_QUIET:
            GD_INFO("watch silent right after a burst; re-watching from the last resourceVersion",
                    "kind", c->kind, "rv", r.rv, "events", evs);
            continue;
        case INF_END_TRUNCATED:
            GD_WARN("watch stream cut; re-watching from the last resourceVersion", "kind",
                    c->kind, "rv", r.rv, "events", evs, "detail", why);
            if (!quick)
                continue;              /* it made progress: at once */
            break;
        default:                       /* garbage, errors: back off */
            break;
        }
        atomic_fetch_add(&c->ctr->watch_errors, 1);
        int64_t d = gd_backoff_next(&bo);
        char ds[24];
        snprintf(ds, sizeof ds, "%lld", (long long)d);
        GD_WARN("watch failed; retrying from the last resourceVersion", "kind", c->kind,
                "cause", inf_watch_end_name(end),
                "error", quick && e == GD_OK ? "very short watch" : gd_strerror(e),
                "message", why, "rv", r.rv, "backoff_ms", ds);
        nap(c, d);
    }
    GD_DEBUG("reflector stopped", "kind", c->kind);
    inf_obj_scratch_release();
    inf_watch_line_release();
    return NULL;
}
