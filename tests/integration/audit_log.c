/* audit_log.c — see audit_log.h. */
#include "audit_log.h"
#include <ctype.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

int64_t audit_time_us(const char *s)
{
    struct tm tm = {0};
    int n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const char *p = s + n;
    int64_t frac = 0;
    int digits = 0;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            if (digits < 6) { frac = frac * 10 + (*p - '0'); digits++; }
    if (strcmp(p, "Z") != 0)                /* the API server writes UTC */
        return -1;
    for (; digits < 6; digits++) frac *= 10;
    time_t t = timegm(&tm);
    return t < 0 ? -1 : (int64_t)t * 1000000 + frac;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* One line → ev; false when it is not a well-formed ResponseComplete event. */
static bool parse_event(const char *line, audit_event *ev)
{
    cJSON *o = cJSON_Parse(line);
    if (!o) return false;
    memset(ev, 0, sizeof *ev);
    bool ok = !strcmp(str_at(o, "stage", NULL), "ResponseComplete");
    ev->recv_us = audit_time_us(str_at(o, "requestReceivedTimestamp", NULL));
    ev->done_us = audit_time_us(str_at(o, "stageTimestamp", NULL));
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "responseStatus"), "code");
    ev->code = cJSON_IsNumber(code) ? code->valueint : 0;
    snprintf(ev->verb, sizeof ev->verb, "%s", str_at(o, "verb", NULL));
    const char *sub = str_at(o, "objectRef", "subresource");
    snprintf(ev->resource, sizeof ev->resource, "%s%s%s", str_at(o, "objectRef", "resource"),
             *sub ? "/" : "", sub);
    snprintf(ev->name, sizeof ev->name, "%s", str_at(o, "objectRef", "name"));
    snprintf(ev->user_agent, sizeof ev->user_agent, "%s", str_at(o, "userAgent", NULL));
    cJSON_Delete(o);
    return ok && ev->recv_us > 0 && ev->done_us > 0;
}

/* Appends the matching events of one file; false when it cannot be read or memory ends. */
static bool read_file_events(const char *file, const char *ua_part, audit_event **out, int *n,
                             int *cap, int *bad)
{
    FILE *f = fopen(file, "r");
    if (!f) return false;
    char *line = NULL;
    size_t lcap = 0;
    bool ok = true;
    while (ok && getline(&line, &lcap, f) > 0) {
        if (!strstr(line, ua_part)) continue;       /* cheap filter before parsing */
        audit_event ev;
        if (!parse_event(line, &ev) || !strstr(ev.user_agent, ua_part)) {
            if (bad && !strstr(line, "\"stage\":\"RequestReceived\"")) (*bad)++;
            continue;
        }
        if (*n == *cap) {
            int nc = *cap ? *cap * 2 : 256;
            audit_event *g = realloc(*out, (size_t)nc * sizeof *g);
            if (!g) { ok = false; break; }
            *out = g;
            *cap = nc;
        }
        (*out)[(*n)++] = ev;
    }
    free(line);
    fclose(f);
    return ok;
}

int audit_events(const char *path, const char *ua_part, audit_event **out, int *bad)
{
    *out = NULL;
    if (bad) *bad = 0;
    if (!path || !*path || !ua_part) return -1;
    int n = 0, cap = 0;
    if (!read_file_events(path, ua_part, out, &n, &cap, bad)) {
        free(*out);
        *out = NULL;
        return -1;
    }
    /* lumberjack's rotated files: <stem>-<timestamp><ext> beside the live one */
    char pat[1100];
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) dot = path + strlen(path);
    snprintf(pat, sizeof pat, "%.*s-*%s", (int)(dot - path), path, dot);
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            read_file_events(g.gl_pathv[i], ua_part, out, &n, &cap, bad);
        globfree(&g);
    }
    return n;
}
