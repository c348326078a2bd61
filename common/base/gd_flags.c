/* gd_flags.c — see gd_flags.h. A table of flags, pflag's syntax, one --help layout. */
#include "gd_flags.h"
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "gd_log.h"
#include "gd_time.h"
#include "gd_version.h"

#define HELP_WIDTH 80
#define HELP_INDENT 10

gd_err gd_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return GD_ERR_PARSE;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return GD_ERR_PARSE;
    if (v < min || v > max)
        return GD_ERR_ARG;
    *out = v;
    return GD_OK;
}

gd_err gd_flags_log_level(void *ud, const char *value, char *why, size_t whycap)
{
    if (gd_log_level_parse(value) < 0) {
        snprintf(why, whycap, "expected debug, info, warn or error, got \"%.60s\"", value);
        return GD_ERR_CONFIG;
    }
    *(const char **)ud = value;
    return GD_OK;
}

gd_err gd_flags_log_format(void *ud, const char *value, char *why, size_t whycap)
{
    if (strcmp(value, "text") != 0 && strcmp(value, "json") != 0) {
        snprintf(why, whycap, "expected text or json, got \"%.60s\"", value);
        return GD_ERR_CONFIG;
    }
    *(const char **)ud = value;
    return GD_OK;
}

/* Go's strconv.ParseBool, which pflag uses. */
static int parse_bool(const char *s)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcmp(s, yes[i])) return 1;
        if (!strcmp(s, no[i])) return 0;
    }
    return -1;
}

static const char *metavar(const gd_flag *f)
{
    if (f->metavar) return f->metavar;
    switch (f->type) {
    case GD_FLAG_INT: return "int";
    case GD_FLAG_DURATION: return "duration";
    case GD_FLAG_MILLIS: return "ms";
    default: return "string";
    }
}

static void fmt_dur(int64_t ms, char *buf, size_t cap) { gd_format_duration_ms(ms, buf, cap); }

/* Sets f from text; who is "--workers" or "file.yaml: workers". */
static gd_err set_value(gd_flag *f, const char *val, const char *who, char *err, size_t errlen)
{
    int64_t v;
    gd_err e;
    char lo[32], hi[32];
    switch (f->type) {
    case GD_FLAG_SECTION:
        break;
    case GD_FLAG_STRING:
        if (f->cap == 0) {
            *(const char **)f->dst = val;
            return GD_OK;
        }
        if (strlen(val) >= f->cap) {
            snprintf(err, errlen, "%s: value too long (at most %zu bytes)", who, f->cap - 1);
            return GD_ERR_CONFIG;
        }
        snprintf((char *)f->dst, f->cap, "%s", val);
        return GD_OK;
    case GD_FLAG_BOOL: {
        int b = parse_bool(val);
        if (b < 0) {
            snprintf(err, errlen, "%s: expected true or false, got \"%.100s\"", who, val);
            return GD_ERR_CONFIG;
        }
        *(bool *)f->dst = b;
        return GD_OK;
    }
    case GD_FLAG_INT:
    case GD_FLAG_MILLIS: {
        int64_t min = f->min, max = f->max;
        if (min == 0 && max == 0) {
            min = f->type == GD_FLAG_INT ? -2147483647 - 1 : 0;
            max = f->type == GD_FLAG_INT ? 2147483647 : INT64_MAX;
        }
        e = gd_parse_int(val, min, max, &v);
        if (e == GD_ERR_PARSE) {
            snprintf(err, errlen, "%s: expected an integer%s, got \"%.100s\"", who,
                     f->type == GD_FLAG_MILLIS ? " (milliseconds)" : "", val);
            return GD_ERR_CONFIG;
        }
        if (e != GD_OK) {
            snprintf(err, errlen, "%s: must be between %lld and %lld, got %.100s", who,
                     (long long)min, (long long)max, val);
            return GD_ERR_CONFIG;
        }
        if (f->type == GD_FLAG_INT) *(int *)f->dst = (int)v;
        else *(int64_t *)f->dst = v;
        return GD_OK;
    }
    case GD_FLAG_DURATION:
        if (gd_parse_duration_ms(val, &v) != GD_OK) {
            bool bare = gd_parse_int(val, INT64_MIN, INT64_MAX, &v) == GD_OK;
            snprintf(err, errlen, "%s: expected a duration like 15s, 500ms or 2m, got \"%.100s\"%s",
                     who, val, bare ? " (a number needs a unit)" : "");
            return GD_ERR_CONFIG;
        }
        if ((f->min || f->max) && (v < f->min || v > f->max)) {
            fmt_dur(f->min, lo, sizeof lo);
            fmt_dur(f->max, hi, sizeof hi);
            snprintf(err, errlen, "%s: must be between %s and %s, got %.100s", who, lo, hi, val);
            return GD_ERR_CONFIG;
        }
        *(int64_t *)f->dst = v;
        return GD_OK;
    case GD_FLAG_FUNC: {
        char why[300] = "";
        e = f->fn(f->ud, val, why, sizeof why);
        if (e != GD_OK) {
            snprintf(err, errlen, "%s: %s", who, why[0] ? why : "invalid value");
            return GD_ERR_CONFIG;
        }
        return GD_OK;
    }
    }
    snprintf(err, errlen, "%s: cannot be set", who);
    return GD_ERR_CONFIG;
}

gd_flag *gd_flags_find(gd_flagset *fs, const char *name)
{
    for (size_t i = 0; i < fs->nflags; i++)
        if (fs->flags[i].type != GD_FLAG_SECTION && !strcmp(fs->flags[i].name, name))
            return &fs->flags[i];
    return NULL;
}

static gd_flag *find_len(gd_flagset *fs, const char *name, size_t len)
{
    for (size_t i = 0; i < fs->nflags; i++) {
        gd_flag *f = &fs->flags[i];
        if (f->type != GD_FLAG_SECTION && strlen(f->name) == len && !strncmp(f->name, name, len))
            return f;
    }
    return NULL;
}

static gd_flag *find_short(gd_flagset *fs, char c)
{
    for (size_t i = 0; i < fs->nflags; i++)
        if (fs->flags[i].type != GD_FLAG_SECTION && fs->flags[i].shorthand == c)
            return &fs->flags[i];
    return NULL;
}

gd_err gd_flags_set(gd_flagset *fs, const char *name, const char *value, const char *where,
                    char *err, size_t errlen)
{
    gd_flag *f = gd_flags_find(fs, name);
    if (!f) {
        snprintf(err, errlen, "%s: unknown key \"%.100s\" (keys are the flag names, see --help)",
                 where, name);
        return GD_ERR_CONFIG;
    }
    return set_value(f, value, where, err, errlen);
}

/* One flag word at argv[*i]: "--name[=v]" or "-x[v]". Moves *i past its value. */
static gd_flags_result one_flag(gd_flagset *fs, int argc, char **argv, int *i, char *err,
                                size_t errlen)
{
    const char *a = argv[*i], *name, *val = NULL;
    size_t nlen;
    gd_flag *f;
    char who[128];
    if (a[1] == '-') {
        name = a + 2;
        const char *eq = strchr(name, '=');
        nlen = eq ? (size_t)(eq - name) : strlen(name);
        if (eq) val = eq + 1;
        if ((nlen == 4 && !strncmp(name, "help", 4)) || (nlen == 7 && !strncmp(name, "version", 7))) {
            if (val) {
                snprintf(err, errlen, "--%.*s takes no value", (int)nlen, name);
                return GD_FLAGS_ERROR;
            }
            return nlen == 4 ? GD_FLAGS_HELP : GD_FLAGS_VERSION;
        }
        if (!(f = find_len(fs, name, nlen))) {
            snprintf(err, errlen, "unknown flag --%.*s", (int)(nlen > 100 ? 100 : nlen), name);
            return GD_FLAGS_ERROR;
        }
        snprintf(who, sizeof who, "--%s", f->name);
    } else {
        if (a[1] == 'h' && a[2] == '\0') return GD_FLAGS_HELP;
        if (!(f = find_short(fs, a[1]))) {
            snprintf(err, errlen, "unknown shorthand flag -%c in \"%.100s\"%s", a[1], a,
                     isdigit((unsigned char)a[1]) ? " (a number? put -- before it)" : "");
            return GD_FLAGS_ERROR;
        }
        if (a[2]) val = a[2] == '=' ? a + 3 : a + 2;
        snprintf(who, sizeof who, "-%c", f->shorthand);
    }
    if (!val && f->type == GD_FLAG_BOOL) {
        /* `--leader-elect false`: take the next word only when it is a boolean literal */
        val = *i + 1 < argc && parse_bool(argv[*i + 1]) >= 0 ? argv[++*i] : "true";
    } else if (!val) {
        if (*i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", who);
            return GD_FLAGS_ERROR;
        }
        val = argv[++*i];
    }
    f->given = true;
    return set_value(f, val, who, err, errlen) == GD_OK ? GD_FLAGS_OK : GD_FLAGS_ERROR;
}

gd_flags_result gd_flags_parse(gd_flagset *fs, int argc, char **argv, char *err, size_t errlen)
{
    fs->nargs = 0;
    bool flags_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool positional = flags_done || a[0] != '-' || a[1] == '\0';
        if (!positional && !strcmp(a, "--")) {
            flags_done = true;
            continue;
        }
        if (positional) {
            if (!fs->allow_args) {
                snprintf(err, errlen, "unexpected argument \"%.100s\"%s", a,
                         a[0] == '-' ? "" : " (flags start with --)");
                return GD_FLAGS_ERROR;
            }
            if (fs->nargs >= GD_FLAGS_MAX_ARGS) {
                snprintf(err, errlen, "too many arguments (at most %d)", GD_FLAGS_MAX_ARGS);
                return GD_FLAGS_ERROR;
            }
            fs->args[fs->nargs++] = argv[i];
            if (fs->stop_at_first_arg) flags_done = true;
            continue;
        }
        gd_flags_result r = one_flag(fs, argc, argv, &i, err, errlen);
        if (r != GD_FLAGS_OK) return r;
    }
    return GD_FLAGS_OK;
}

/* ---- --help ---- */

/* Writes text wrapped at HELP_WIDTH, every line indented by indent spaces plus its own
 * leading spaces (continuation lines keep them, so an indented list stays indented). */
static void wrap(FILE *out, const char *text, int indent)
{
    const char *p = text;
    while (*p) {
        int own = 0;
        while (p[own] == ' ') own++;
        p += own;
        const char *nl = strchr(p, '\n');
        size_t left = nl ? (size_t)(nl - p) : strlen(p);
        int width = HELP_WIDTH - indent - own;
        if (width < 20) width = 20;
        do {
            size_t take = left;
            if ((int)left > width) {
                take = (size_t)width;
                while (take > 0 && p[take] != ' ') take--;
                if (take == 0) take = (size_t)width;   /* one long word: cut it */
            }
            fprintf(out, "%*s%.*s\n", indent + own, "", (int)take, p);
            p += take;
            left -= take;
            while (left > 0 && *p == ' ') { p++; left--; }
        } while (left > 0);
        if (*p == '\n') p++;
    }
}

static void default_of(const gd_flag *f, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (f->def) snprintf(buf, cap, "%s", f->def);
    if (f->def || f->no_default || !f->dst) return;
    switch (f->type) {
    case GD_FLAG_STRING: {
        const char *s = f->cap ? (const char *)f->dst : *(const char *const *)f->dst;
        if (s && *s) snprintf(buf, cap, "%s", s);
        break;
    }
    case GD_FLAG_BOOL:
        if (*(const bool *)f->dst) snprintf(buf, cap, "true");
        break;
    case GD_FLAG_INT:
        if (*(const int *)f->dst) snprintf(buf, cap, "%d", *(const int *)f->dst);
        break;
    case GD_FLAG_DURATION:
        if (*(const int64_t *)f->dst) fmt_dur(*(const int64_t *)f->dst, buf, cap);
        break;
    case GD_FLAG_MILLIS:
        if (*(const int64_t *)f->dst) snprintf(buf, cap, "%lld", (long long)*(const int64_t *)f->dst);
        break;
    default:
        break;
    }
}

static void flag_usage(FILE *out, const gd_flag *f)
{
    char head[160], def[600], help[2048];
    int n = f->shorthand ? snprintf(head, sizeof head, "  -%c, --%s", f->shorthand, f->name)
                         : snprintf(head, sizeof head, "      --%s", f->name);
    if (f->type == GD_FLAG_BOOL)
        snprintf(head + n, sizeof head - (size_t)n, " [true|false]");
    else
        snprintf(head + n, sizeof head - (size_t)n, " %s", metavar(f));
    fprintf(out, "%s\n", head);
    default_of(f, def, sizeof def);
    snprintf(help, sizeof help, "%s%s%s%s", f->help ? f->help : "", def[0] ? " (default " : "",
             def, def[0] ? ")" : "");
    wrap(out, help, HELP_INDENT);
}

void gd_flags_usage(const gd_flagset *fs, FILE *out)
{
    fprintf(out, "Usage:\n");
    wrap(out, fs->usage, 2);
    if (fs->about) {
        fputc('\n', out);
        wrap(out, fs->about, 0);
    }
    bool heading = false;
    for (size_t i = 0; i < fs->nflags; i++) {
        const gd_flag *f = &fs->flags[i];
        if (f->type == GD_FLAG_SECTION) {
            fprintf(out, "\n%s:\n", f->name);
            heading = true;
            continue;
        }
        if (f->deprecated || f->hidden) continue;
        if (!heading) {
            fprintf(out, "\nFlags:\n");
            heading = true;
        }
        flag_usage(out, f);
    }
    if (!heading) fprintf(out, "\nFlags:\n");
    fprintf(out, "  -h, --help\n");
    wrap(out, "print this help and exit", HELP_INDENT);
    fprintf(out, "      --version\n");
    wrap(out, "print the version, git commit and build date, and exit", HELP_INDENT);
    if (fs->footer) {
        fputc('\n', out);
        wrap(out, fs->footer, 0);
    }
}

int gd_flags_fail(const gd_flagset *fs, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)            /* one line, whatever the value held */
        if ((unsigned char)*c < 0x20) *c = '?';
    fprintf(stderr, "%s: %s (see %s --help)\n", fs->prog, msg, fs->prog);
    return GD_EXIT_FATAL_CONFIG;
}

int gd_flags_main(gd_flagset *fs, int argc, char **argv)
{
    char err[1024];
    char line[512];
    switch (gd_flags_parse(fs, argc, argv, err, sizeof err)) {
    case GD_FLAGS_HELP:
        gd_flags_usage(fs, stdout);
        return GD_EXIT_OK;
    case GD_FLAGS_VERSION:
        gd_version_line(fs->prog, line, sizeof line);
        fputs(line, stdout);
        return GD_EXIT_OK;
    case GD_FLAGS_ERROR:
        return gd_flags_fail(fs, "%s", err);
    case GD_FLAGS_OK:
        break;
    }
    return -1;
}

void gd_flags_warn_deprecated(const gd_flagset *fs)
{
    for (size_t i = 0; i < fs->nflags; i++) {
        const gd_flag *f = &fs->flags[i];
        if (f->type == GD_FLAG_SECTION || !f->given || !f->deprecated) continue;
        char flag[128];
        snprintf(flag, sizeof flag, "--%s", f->name);
        gd_log(GD_LOG_WARN, "flag is deprecated", "flag", flag, "instead", f->deprecated, NULL);
    }
}
