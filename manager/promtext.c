/* promtext.c — merging Prometheus text expositions; see promtext.h. */
#include "promtext.h"
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUT (4u << 20)

typedef struct { char *s; size_t len, cap; } sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) return;            /* out of memory: the line is lost, never half-written */
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

typedef struct {
    char name[160];
    bool typed;
    sbuf help, type, samples;
} family;

struct mgr_promtext {
    family *f;
    int n, cap;
};

mgr_promtext *mgr_promtext_new(void) { return calloc(1, sizeof(mgr_promtext)); }

void mgr_promtext_destroy(mgr_promtext **pp)
{
    if (!pp || !*pp) return;
    mgr_promtext *p = *pp;
    for (int i = 0; i < p->n; i++) {
        free(p->f[i].help.s);
        free(p->f[i].type.s);
        free(p->f[i].samples.s);
    }
    free(p->f);
    free(p);
    *pp = NULL;
}

static family *family_get(mgr_promtext *p, const char *name, size_t len)
{
    if (len == 0 || len >= sizeof p->f[0].name) return NULL;
    for (int i = 0; i < p->n; i++)
        if (strlen(p->f[i].name) == len && memcmp(p->f[i].name, name, len) == 0) return &p->f[i];
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 32;
        family *nf = realloc(p->f, (size_t)cap * sizeof *nf);
        if (!nf) return NULL;
        p->f = nf;
        p->cap = cap;
    }
    family *f = &p->f[p->n++];
    memset(f, 0, sizeof *f);
    memcpy(f->name, name, len);
    return f;
}

/* The family of a sample: a typed family whose name plus a known suffix is the sample's. */
static family *family_of_sample(mgr_promtext *p, const char *name, size_t len)
{
    static const char *suffixes[] = {"", "_bucket", "_sum", "_count", "_total", "_created"};
    for (int i = 0; i < p->n; i++) {
        size_t fl = strlen(p->f[i].name);
        if (!p->f[i].typed || fl > len || memcmp(p->f[i].name, name, fl) != 0) continue;
        for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++)
            if (len - fl == strlen(suffixes[s]) && memcmp(name + fl, suffixes[s], len - fl) == 0)
                return &p->f[i];
    }
    return family_get(p, name, len);
}

static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == ':'; }

static void add_comment(mgr_promtext *p, const char *line, size_t len)
{
    /* "# HELP name text" / "# TYPE name type"; other comments are dropped */
    bool help = len > 7 && !memcmp(line, "# HELP ", 7);
    bool type = len > 7 && !memcmp(line, "# TYPE ", 7);
    if (!help && !type) return;
    const char *n = line + 7;
    size_t nl = 0;
    while (7 + nl < len && name_char(n[nl])) nl++;
    family *f = family_get(p, n, nl);
    if (!f) return;
    sbuf *dst = help ? &f->help : &f->type;
    if (dst->len) return;                       /* first wins */
    sb_add(dst, line, len);
    sb_add(dst, "\n", 1);
    if (type) f->typed = true;
}

/* After the name (and its {labels}), a space then a number (strtod: also NaN, +Inf). */
static bool valid_value(const char *line, size_t len, size_t nl)
{
    size_t i = nl;
    if (line[i] == '{') {
        const char *close = memchr(line + i, '}', len - i);
        if (!close) return false;
        i = (size_t)(close - line) + 1;
    }
    if (i >= len || line[i] != ' ') return false;
    while (i < len && line[i] == ' ') i++;
    char num[64];
    size_t k = 0;
    while (i < len && line[i] != ' ' && k < sizeof num - 1) num[k++] = line[i++];
    num[k] = '\0';
    if (!k) return false;
    char *end;
    strtod(num, &end);
    return *end == '\0';
}

static void add_sample(mgr_promtext *p, const char *line, size_t len, const char *label)
{
    size_t nl = 0;
    while (nl < len && name_char(line[nl])) nl++;
    if (nl == 0 || nl == len || (line[nl] != '{' && line[nl] != ' ')) return;
    if (!valid_value(line, len, nl)) return;
    family *f = family_of_sample(p, line, nl);
    if (!f) return;
    sbuf *b = &f->samples;
    sb_add(b, line, nl);
    if (label && line[nl] == '{') {
        sb_add(b, "{", 1);
        sb_add(b, label, strlen(label));
        if (nl + 1 < len && line[nl + 1] != '}') sb_add(b, ",", 1);
        sb_add(b, line + nl + 1, len - nl - 1);
    } else if (label) {
        sb_add(b, "{", 1);
        sb_add(b, label, strlen(label));
        sb_add(b, "}", 1);
        sb_add(b, line + nl, len - nl);
    } else {
        sb_add(b, line + nl, len - nl);
    }
    sb_add(b, "\n", 1);
}

void mgr_promtext_add(mgr_promtext *p, const char *text, size_t len, const char *label_name,
                     const char *label_value)
{
    if (!p || !text) return;
    if (len > MAX_INPUT) len = MAX_INPUT;
    char label[256] = "";
    if (label_name && label_value) {
        size_t o = (size_t)snprintf(label, sizeof label, "%s=\"", label_name);
        for (const char *v = label_value; *v && o + 4 < sizeof label; v++) {
            if (*v == '"' || *v == '\\') label[o++] = '\\';
            if (*v == '\n') { label[o++] = '\\'; label[o++] = 'n'; continue; }
            label[o++] = *v;
        }
        label[o++] = '"';
        label[o] = '\0';
    }
    const char *end = text + len;
    while (text < end) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        size_t l = nl ? (size_t)(nl - text) : (size_t)(end - text);
        if (l && text[l - 1] == '\r') l--;
        if (l > 0 && text[0] == '#') add_comment(p, text, l);
        else if (l > 0) add_sample(p, text, l, label[0] ? label : NULL);
        text = nl ? nl + 1 : end;
    }
}

char *mgr_promtext_render(mgr_promtext *p)
{
    sbuf out = {0};
    sb_add(&out, "", 0);
    for (int i = 0; i < p->n; i++) {
        family *f = &p->f[i];
        if (!f->samples.len) continue;          /* HELP/TYPE without samples: omit */
        if (f->help.len) sb_add(&out, f->help.s, f->help.len);
        if (f->type.len) sb_add(&out, f->type.s, f->type.len);
        sb_add(&out, f->samples.s, f->samples.len);
    }
    return out.s ? out.s : strdup("");
}
