/* watchline.c — the watch fast path: an ADDED/MODIFIED/DELETED event line straight to an
 * inf_obj, without building a cJSON tree of the whole object and printing it back.
 *
 * Why: on the replay benchmark (issue 23 item 3) parsing every event into cJSON and
 * serialising it again was 38 % of the informer's instructions (callgrind), while the
 * informer only needs the object's text minus metadata.managedFields plus a few metadata
 * fields (key, resourceVersion, shard: labels and ownerReferences). So the line is checked
 * by one strict validating scan that also finds the "type", the "object" and, inside it,
 * "metadata" and its "managedFields" member; the body is the object's bytes with that
 * member cut out; only the metadata (a few hundred bytes) is parsed with cJSON, for the
 * helpers every other path uses (gd_meta_key, gd_shard_of_object).
 *
 * Same per-object semantics as inf_obj_from_json: managedFields dropped, every other byte
 * kept (verbatim: no renumbering of numbers cJSON would round through a double, escapes as
 * the server wrote them; the same JSON value). Anything the scan is not sure about is left
 * to the general path (returns 0): another event type (BOOKMARK, ERROR), a key with an
 * escape at a level we look into, a \u escape of a surrogate (cJSON rejects unpaired ones),
 * a control character in a string, a number or literal outside strict JSON, nesting deeper
 * than cJSON's limit, an object without metadata.name. A line the general path then
 * rejects is garbage there, as before. */
#include "informer.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"

enum { MAX_DEPTH = 512 };       /* below cJSON's 1000: deeper lines go to cJSON to judge */

typedef struct {
    const char *key;            /* the raw key (between the quotes), no escapes */
    size_t klen;
    const char *mstart;         /* the member's first byte (its key's opening quote) */
    const char *vstart, *vend;  /* the value */
    const char *prev_comma;     /* the comma before the member, NULL for the first */
    const char *after;          /* the ',' or '}' after the value */
} member;

/* Called per member of an object we look into, once its value was scanned; non-zero makes
 * the scan fail. */
typedef int (*member_fn)(void *ud, const member *m);
/* Which visitor, if any, the members of m's value get (m has its key only): one scan of the
 * line visits the event, its object and the object's metadata. */
static member_fn child_of(member_fn fn, void *ud, const member *m);

static const char *value(const char *p, const char *e, int depth, member_fn fn, void *ud);
static int on_items(void *ud, const member *m);
static const char *items(const char *p, const char *e, int depth, void *ud);

static inline const char *ws(const char *p, const char *e)
{
    while (p && p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static inline int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Whether 8 bytes hold no '"', no '\\' and no control character: string bytes that need no
 * look (the bulk of a body is string content; a byte at a time cost 9 instructions each). */
static inline bool plain8(const char *p)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t v, q, b;
    memcpy(&v, p, 8);
    q = v ^ (ones * '"');
    b = v ^ (ones * '\\');
    return !((((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v)) & high);
}

/* p at the opening quote; returns the byte after the closing one, or NULL. *escaped says
 * whether the string held a backslash. */
static const char *string(const char *p, const char *e, bool *escaped)
{
    p++;
    while (p < e) {
        while (e - p >= 8 && plain8(p))
            p += 8;
        if (p >= e)
            return NULL;
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c != '\\') {
            p++;
            continue;
        }
        *escaped = true;
        if (++p >= e)
            return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u': {
            if (e - p < 5)
                return NULL;
            int v = 0;
            for (int i = 1; i <= 4; i++) {
                int h = hexval(p[i]);
                if (h < 0)
                    return NULL;
                v = v * 16 + h;
            }
            if (v >= 0xD800 && v <= 0xDFFF)
                return NULL;          /* surrogates: cJSON's pairing rules decide */
            p += 5;
            break;
        }
        default:
            return NULL;
        }
    }
    return NULL;
}

static const char *digits(const char *p, const char *e)
{
    const char *s = p;
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    return p > s ? p : NULL;
}

static const char *number(const char *p, const char *e)
{
    if (*p == '-')
        p++;
    if (p < e && *p == '0')
        p++;
    else if (!(p = digits(p, e)))
        return NULL;
    if (p < e && *p == '.' && !(p = digits(p + 1, e)))
        return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (!(p = digits(p, e)))
            return NULL;
    }
    return p;
}

static const char *literal(const char *p, const char *e, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(e - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* p at '{'. fn (may be NULL) sees every member. */
static const char *object(const char *p, const char *e, int depth, member_fn fn, void *ud)
{
    if (depth > MAX_DEPTH)
        return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == '}')
        return p + 1;
    const char *prev_comma = NULL;
    while (p < e && *p == '"') {
        member m = {.mstart = p, .key = p + 1, .prev_comma = prev_comma};
        bool esc = false;
        const char *k = string(p, e, &esc);
        if (!k)
            return NULL;
        m.klen = (size_t)(k - 1 - m.key);
        p = ws(k, e);
        if (p >= e || *p != ':')
            return NULL;
        m.vstart = ws(p + 1, e);
        m.vend = value(m.vstart, e, depth, fn && !esc ? child_of(fn, ud, &m) : NULL, ud);
        if (!m.vend)
            return NULL;
        p = ws(m.vend, e);
        if (p >= e || (*p != ',' && *p != '}'))
            return NULL;
        m.after = p;
        /* an escaped key might decode to one we look for: let cJSON decide */
        if (fn && (esc || fn(ud, &m)))
            return NULL;
        if (*p == '}')
            return p + 1;
        prev_comma = p;
        p = ws(p + 1, e);
    }
    return NULL;
}

/* p just after an array's element: the next element's first byte (*more set), or the
 * byte after the closing ']' (*more cleared); NULL when neither ',' nor ']' follows.
 * array() and items() step through their arrays alike, with this. */
static const char *array_next(const char *p, const char *e, bool *more)
{
    p = ws(p, e);
    *more = false;
    if (p < e && *p == ']')
        return p + 1;
    if (p >= e || *p != ',')
        return NULL;
    *more = true;
    return ws(p + 1, e);
}

static const char *array(const char *p, const char *e, int depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == ']')
        return p + 1;
    while (p < e) {
        bool more;
        if (!(p = value(p, e, depth, NULL, NULL)))
            return NULL;
        if (!(p = array_next(p, e, &more)) || !more)
            return p;
    }
    return NULL;
}

/* p at a value's first byte (no leading whitespace); returns the byte after it. */
static const char *value(const char *p, const char *e, int depth, member_fn fn, void *ud)
{
    if (p >= e)
        return NULL;
    bool esc = false;
    switch (*p) {
    case '{': return object(p, e, depth + 1, fn, ud);
    case '[': return fn == on_items ? items(p, e, depth + 1, ud) : array(p, e, depth + 1);
    case '"': return string(p, e, &esc);
    case 't': return literal(p, e, "true");
    case 'f': return literal(p, e, "false");
    case 'n': return literal(p, e, "null");
    default:
        return *p == '-' || (*p >= '0' && *p <= '9') ? number(p, e) : NULL;
    }
}

static bool key_is(const member *m, const char *k)
{
    return m->klen == strlen(k) && memcmp(m->key, k, m->klen) == 0;
}

typedef struct {
    const char *type, *type_end;       /* the type string's content */
    const char *obj, *obj_end;
    const char *meta, *meta_end;
    const char *cut, *cut_end;         /* the managedFields member and one comma */
    bool has_kind, has_api;            /* the object has "kind" / "apiVersion" (lists) */
} scan;

/* A list page being scanned (inf_list_page_scan). */
typedef struct {
    scan s;                            /* the item being scanned (first: visitors cast) */
    scan *v;                           /* every item's spans */
    size_t n, cap;
    const char *kind, *kind_end, *api, *api_end;       /* the page's, string contents */
    const char *rv, *rv_end, *cont, *cont_end;         /* its metadata's */
    bool meta_seen, items_seen;
} page;

static int on_meta(void *ud, const member *m)
{
    scan *s = ud;
    if (s->cut || !key_is(m, "managedFields"))
        return 0;
    if (m->prev_comma) {                       /* ,"managedFields":[...] */
        s->cut = m->prev_comma;
        s->cut_end = m->vend;
    } else {                                   /* {"managedFields":[...], or {"managedFields":[]} */
        s->cut = m->mstart;
        s->cut_end = *m->after == ',' ? m->after + 1 : m->vend;
    }
    return 0;
}

static int on_obj(void *ud, const member *m)
{
    scan *s = ud;
    s->has_kind = s->has_kind || key_is(m, "kind");
    s->has_api = s->has_api || key_is(m, "apiVersion");
    if (s->meta || !key_is(m, "metadata"))
        return 0;
    if (*m->vstart != '{')
        return 1;                              /* odd: the general path reports it */
    s->meta = m->vstart;
    s->meta_end = m->vend;
    return 0;
}

static int on_top(void *ud, const member *m)
{
    scan *s = ud;
    if (!s->type && key_is(m, "type")) {
        if (*m->vstart != '"')
            return 1;
        s->type = m->vstart + 1;
        s->type_end = m->vend - 1;
    } else if (!s->obj && key_is(m, "object")) {
        if (*m->vstart != '{')
            return 1;
        s->obj = m->vstart;
        s->obj_end = m->vend;
    }
    return 0;
}

/* The first "object" of the event and the first "metadata" of that object are looked into
 * (cJSON's lookups find the first of duplicate keys too). */
static int on_page_top(void *ud, const member *m);
static int on_page_meta(void *ud, const member *m);

static member_fn child_of(member_fn fn, void *ud, const member *m)
{
    const scan *s = ud;
    if (fn == on_top && !s->obj && key_is(m, "object"))
        return on_obj;
    if (fn == on_page_top) {
        const page *pg = ud;
        if (!pg->meta_seen && key_is(m, "metadata"))
            return on_page_meta;
        if (!pg->items_seen && key_is(m, "items"))
            return on_items;
    }
    if (fn == on_obj && !s->meta && key_is(m, "metadata"))
        return on_meta;
    return NULL;
}

static bool type_is(const scan *s, const char *t)
{
    size_t n = (size_t)(s->type_end - s->type);
    return n == strlen(t) && memcmp(s->type, t, n) == 0;
}

static __thread char *buf;       /* the body being cut together */
static __thread size_t buf_cap;

void inf_watch_line_release(void)
{
    free(buf);
    buf = NULL;
    buf_cap = 0;
}

/* The object s->obj with s->cut cut out and `tail` (members, each with its leading comma)
 * put before its closing brace, as an inf_obj whose key, rv and shard come from its
 * metadata (parsed alone, under a {"metadata":..} wrapper, for the usual helpers). NULL
 * when it has no name or memory is short. */
static inf_obj *make_obj(const char *kind, const scan *s, const char *tail)
{
    size_t olen = (size_t)(s->obj_end - s->obj), cut = s->cut ? (size_t)(s->cut_end - s->cut) : 0;
    size_t tl = strlen(tail), blen = olen - cut + tl;
    if (blen + 1 > buf_cap) {
        size_t nc = buf_cap ? buf_cap : 64 * 1024;
        while (nc < blen + 1)
            nc *= 2;
        char *nb = realloc(buf, nc);
        if (!nb)
            return NULL;
        buf = nb;
        buf_cap = nc;
    }
    size_t n = 0;
    if (cut) {
        n = (size_t)(s->cut - s->obj);
        memcpy(buf, s->obj, n);
        memcpy(buf + n, s->cut_end, (size_t)(s->obj_end - s->cut_end));
        n += (size_t)(s->obj_end - s->cut_end);
    } else {
        memcpy(buf, s->obj, olen);
        n = olen;
    }
    if (tl) {                                  /* before the closing brace */
        memcpy(buf + n - 1, tail, tl);
        buf[n - 1 + tl] = '}';
    }
    buf[blen] = '\0';
    size_t mo = (size_t)(s->meta - s->obj), ml = (size_t)(s->meta_end - s->meta) - cut;
    cJSON *meta = cJSON_ParseWithLength(buf + mo, ml);
    cJSON *w = meta ? cJSON_CreateObject() : NULL;
    if (!w) {
        cJSON_Delete(meta);
        return NULL;
    }
    cJSON_AddItemToObject(w, "metadata", meta);
    char key[512];
    inf_obj *o = NULL;
    if (gd_meta_key(w, key, sizeof key) >= 0)
        o = inf_obj_new(key, gd_meta_rv(w), gd_shard_of_object(kind, w), buf, blen);
    cJSON_Delete(w);
    return o;
}

int inf_obj_from_watch_line(const char *kind, const char *line, size_t n, gd_ev *ev,
                            inf_obj **out)
{
    *out = NULL;
    scan s = {0};
    const char *e = line + n, *p = ws(line, e);
    if (p >= e || *p != '{' || ws(object(p, e, 0, on_top, &s), e) != e || !s.type || !s.obj ||
        !s.meta)
        return 0;
    if (type_is(&s, "ADDED"))
        *ev = GD_EV_ADDED;
    else if (type_is(&s, "MODIFIED"))
        *ev = GD_EV_MODIFIED;
    else if (type_is(&s, "DELETED"))
        *ev = GD_EV_DELETED;
    else
        return 0;
    *out = make_obj(kind, &s, "");
    return *out ? 1 : 0;
}

/* ------------------------------------------------------------ list pages */


static int on_page_meta(void *ud, const member *m)
{
    page *pg = ud;
    bool rv = !pg->rv && key_is(m, "resourceVersion"), ct = !pg->cont && key_is(m, "continue");
    /* copied as they are: a string with an escape is cJSON's to decode */
    if ((rv || ct) && (*m->vstart != '"' ||
                       memchr(m->vstart, '\\', (size_t)(m->vend - m->vstart))))
        return 1;
    if (rv) {
        pg->rv = m->vstart + 1;
        pg->rv_end = m->vend - 1;
    } else if (ct) {
        pg->cont = m->vstart + 1;
        pg->cont_end = m->vend - 1;
    }
    return 0;
}

static int on_page_top(void *ud, const member *m)
{
    page *pg = ud;
    bool k = !pg->kind && key_is(m, "kind"), a = !pg->api && key_is(m, "apiVersion");
    if ((k || a) && *m->vstart != '"')
        return 1;
    if (k) {
        pg->kind = m->vstart + 1;
        pg->kind_end = m->vend - 1;
    } else if (a) {
        pg->api = m->vstart + 1;
        pg->api_end = m->vend - 1;
    } else if (key_is(m, "metadata")) {
        pg->meta_seen = true;
    } else if (key_is(m, "items")) {
        pg->items_seen = true;
    }
    return 0;
}

/* Only marks "items" for value(): an "items" that is an object is not for us. */
static int on_items(void *ud, const member *m)
{
    (void)ud;
    (void)m;
    return 1;
}

/* The items array: every item an object with a metadata object, its spans kept. */
static const char *items(const char *p, const char *e, int depth, void *ud)
{
    page *pg = ud;
    if (depth > MAX_DEPTH)
        return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == ']')
        return p + 1;
    while (p < e && *p == '{') {
        pg->s = (scan){0};
        const char *end = object(p, e, depth + 1, on_obj, ud);
        if (!end || !pg->s.meta)
            return NULL;
        pg->s.obj = p;
        pg->s.obj_end = end;
        if (pg->n == pg->cap) {
            size_t nc = pg->cap ? pg->cap * 2 : 512;
            scan *nv = realloc(pg->v, nc * sizeof *nv);
            if (!nv)
                return NULL;
            pg->v = nv;
            pg->cap = nc;
        }
        pg->v[pg->n++] = pg->s;
        bool more;
        if (!(p = array_next(end, e, &more)) || !more)
            return p;
    }
    return NULL;
}

/* A name that can go between quotes as it is. */
static bool plain_name(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '"' || p[i] == '\\' || (unsigned char)p[i] < 0x20)
            return false;
    return true;
}

static void copy_span(char *out, size_t cap, const char *p, const char *end)
{
    size_t n = p ? (size_t)(end - p) : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p ? p : "", n);
    out[n] = '\0';
}

int inf_list_page_scan(const char *kind, const char *res_kind, const char *body, size_t n,
                       inf_obj ***out, size_t *nout, char *rv, size_t rvcap, char *cont,
                       size_t contcap)
{
    *out = NULL;
    *nout = 0;
    page pg = {0};
    const char *e = body + n, *p = ws(body, e);
    int ok = 0;
    if (p >= e || *p != '{' || ws(object(p, e, 0, on_page_top, &pg), e) != e)
        goto done;
    if (pg.cont && (size_t)(pg.cont_end - pg.cont) >= contcap)
        goto done;                             /* the general path reports it */
    /* add_page's type meta: the item kind is the list's minus "List", else the resource's */
    char ik[128] = "", tail[320] = "";
    size_t lk = pg.kind ? (size_t)(pg.kind_end - pg.kind) : 0;
    if (lk > 4 && lk < sizeof ik && memcmp(pg.kind_end - 4, "List", 4) == 0)
        snprintf(ik, sizeof ik, "%.*s", (int)(lk - 4), pg.kind);
    else
        snprintf(ik, sizeof ik, "%s", res_kind ? res_kind : "");
    size_t la = pg.api ? (size_t)(pg.api_end - pg.api) : 0;
    if (!plain_name(ik, strlen(ik)) || la > 200 || (la && !plain_name(pg.api, la)))
        goto done;
    inf_obj **v = pg.n ? calloc(pg.n, sizeof *v) : NULL;
    if (pg.n && !v)
        goto done;
    for (size_t i = 0; i < pg.n; i++) {
        const scan *it = &pg.v[i];
        int t = 0;
        if (!it->has_kind && *ik)
            t += snprintf(tail + t, sizeof tail - (size_t)t, ",\"kind\":\"%s\"", ik);
        if (!it->has_api && la)
            snprintf(tail + t, sizeof tail - (size_t)t, ",\"apiVersion\":\"%.*s\"", (int)la, pg.api);
        if (!(v[i] = make_obj(kind, it, tail))) {      /* no name: the general path drops it */
            for (size_t j = 0; j < i; j++)
                inf_obj_unref(v[j]);
            free(v);
            goto done;
        }
    }
    copy_span(rv, rvcap, pg.rv, pg.rv_end);
    copy_span(cont, contcap, pg.cont, pg.cont_end);
    *out = v;
    *nout = pg.n;
    ok = 1;
done:
    free(pg.v);
    return ok;
}
