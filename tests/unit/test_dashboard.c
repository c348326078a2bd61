/* test_dashboard.c — deploy/grafana/godis-operator.json (issue 20.6) is valid JSON, every
 * panel has a query, and every metric its queries (and its template variables) name is one
 * the programs export: a family declared in the sources as `"name", "gauge"` (or counter,
 * histogram) — the shape every family takes, whether through gd_prom_header, a gd_prom_int
 * row, a family table or the reconciler set's key_metrics (there through a #define). A
 * dashboard built on a name nobody exports shows "No data" forever; this catches a rename.
 * Run from the repository root (make unit-test does). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <ftw.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#define DASHBOARD "deploy/grafana/godis-operator.json"
#define MAXN 512

typedef struct {
    char *v[MAXN];
    int n;
} names;

static void add(names *s, const char *p, size_t len)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == len && !strncmp(s->v[i], p, len)) return;
    if (s->n < MAXN) s->v[s->n++] = strndup(p, len);
}

static bool has(const names *s, const char *n)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], n)) return true;
    return false;
}

static void clear(names *s)
{
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    s->n = 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    if (b) b[got] = '\0';
    return b;
}

/* ---- what the programs export ---- */

static names defines, declared;
static regex_t re_define, re_family;

/* Pass 1 collects `#define X "metric_name"`, pass 2 the families. */
static int pass;

static void scan_text(const char *t)
{
    regmatch_t m[4];
    for (const char *p = t; !regexec(pass == 1 ? &re_define : &re_family, p, 4, m, 0); p += m[0].rm_eo) {
        if (pass == 1) {
            char def[128];
            snprintf(def, sizeof def, "%.*s=%.*s", (int)(m[1].rm_eo - m[1].rm_so), p + m[1].rm_so,
                     (int)(m[2].rm_eo - m[2].rm_so), p + m[2].rm_so);
            add(&defines, def, strlen(def));
            continue;
        }
        const char *tok = p + m[1].rm_so;
        size_t len = (size_t)(m[1].rm_eo - m[1].rm_so);
        if (*tok == '"') {
            add(&declared, tok + 1, len - 2);
            continue;
        }
        for (int i = 0; i < defines.n; i++)      /* a macro naming the family */
            if (!strncmp(defines.v[i], tok, len) && defines.v[i][len] == '=')
                add(&declared, defines.v[i] + len + 1, strlen(defines.v[i] + len + 1));
    }
}

static int scan_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t n = strlen(path);
    if (flag != FTW_F || n < 2 || path[n - 2] != '.' || (path[n - 1] != 'c' && path[n - 1] != 'h'))
        return 0;
    char *t = slurp(path);
    if (t) scan_text(t);
    free(t);
    return 0;
}

static void load_declared(void)
{
    static const char *dirs[] = {"manager", "informer", "worker", "webhook", "common"};
    assert_int_equal(regcomp(&re_define, "#define[ \t]+([A-Z_][A-Z0-9_]*)[ \t]+\"([a-z_:][a-z0-9_:]*)\"", REG_EXTENDED), 0);
    assert_int_equal(regcomp(&re_family, "(\"[a-z_:][a-z0-9_:]*\"|[A-Z_][A-Z0-9_]*),[ \t\n]*\"(gauge|counter|histogram|summary)\"",
                             REG_EXTENDED), 0);
    for (pass = 1; pass <= 2; pass++)
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
            assert_int_equal(nftw(dirs[i], scan_file, 16, FTW_PHYS), 0);
    regfree(&re_define);
    regfree(&re_family);
}

/* A histogram family exports name_bucket, name_sum and name_count. */
static bool exported(const char *n)
{
    if (has(&declared, n)) return true;
    static const char *suffix[] = {"_bucket", "_sum", "_count"};
    for (int i = 0; i < 3; i++) {
        size_t ln = strlen(n), ls = strlen(suffix[i]);
        if (ln > ls && !strcmp(n + ln - ls, suffix[i])) {
            char base[200];
            snprintf(base, sizeof base, "%.*s", (int)(ln - ls), n);
            if (has(&declared, base)) return true;
        }
    }
    return false;
}

/* ---- the metric names a PromQL expression reads ---- */

static const char *skip_group(const char *p, char open, char close)
{
    int depth = 0;
    for (; *p; p++) {
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1]) p++;
            if (!*p) return p;
        } else if (*p == open) {
            depth++;
        } else if (*p == close && --depth == 0) {
            return p + 1;
        }
    }
    return p;
}

static bool ident_char(char c, bool first)
{
    return isalpha((unsigned char)c) || c == '_' || c == ':' || (!first && isdigit((unsigned char)c));
}

static void expr_names(const char *e, names *out)
{
    static const char *label_lists[] = {"by", "without", "on", "ignoring", "group_left", "group_right"};
    static const char *keywords[] = {"and", "or", "unless", "bool", "offset", "inf", "nan"};
    const char *p = e;
    while (*p) {
        if (*p == '"') {                                     /* a string: skipped */
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1]) p++;
            if (*p) p++;
            continue;
        }
        if (*p == '{') { p = skip_group(p, '{', '}'); continue; }   /* label matchers */
        if (*p == '[') { p = skip_group(p, '[', ']'); continue; }   /* ranges */
        if (*p == '$') { for (p++; ident_char(*p, false); p++) {} continue; }
        if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            while (isalnum((unsigned char)*p) || *p == '.') p++;
            continue;
        }
        if (!ident_char(*p, true)) { p++; continue; }
        const char *s = p;
        while (ident_char(*p, false)) p++;
        size_t len = (size_t)(p - s);
        const char *q = p;
        while (*q == ' ') q++;
        bool listed = false, keyword = false;
        for (size_t i = 0; i < sizeof label_lists / sizeof label_lists[0]; i++)
            listed |= strlen(label_lists[i]) == len && !strncmp(s, label_lists[i], len);
        for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
            keyword |= strlen(keywords[i]) == len && !strncasecmp(s, keywords[i], len);
        if (listed && *q == '(') { p = skip_group(q, '(', ')'); continue; }
        bool grouped = (!strncmp(q, "by", 2) && !ident_char(q[2], false)) ||
                       (!strncmp(q, "without", 7) && !ident_char(q[7], false));
        if (keyword || *q == '(' || grouped) continue;         /* a function or aggregation */
        add(out, s, len);
    }
}

/* label_values(METRIC_EXPR, label): only the first argument names metrics. */
static void template_names(const char *q, names *out)
{
    const char *lv = strstr(q, "label_values(");
    if (!lv) { expr_names(q, out); return; }
    const char *a = lv + strlen("label_values("), *p = a;
    int depth = 0;
    for (; *p && !(depth == 0 && (*p == ',' || *p == ')')); p++) {
        if (*p == '{' || *p == '(') depth++;
        else if (*p == '}' || *p == ')') depth--;
    }
    char *first = strndup(a, (size_t)(p - a));
    expr_names(first, out);
    free(first);
}

/* ---- the tests ---- */

static void test_expression_names(void **state)
{
    (void)state;
    names n = {0};
    expr_names("histogram_quantile(0.99, sum by (controller, le) (rate(x_seconds_bucket{a=\"b(c)\"}[5m])))"
               " / on (ns) group_left (c) y_total offset 5m > bool 2 and $var", &n);
    assert_int_equal(n.n, 2);
    assert_true(has(&n, "x_seconds_bucket"));
    assert_true(has(&n, "y_total"));
    clear(&n);
    template_names("label_values(godis_cluster_members{namespace=~\"$namespace\"}, cluster)", &n);
    assert_int_equal(n.n, 1);
    assert_true(has(&n, "godis_cluster_members"));
    clear(&n);
}

static void test_dashboard_queries_exported_metrics(void **state)
{
    (void)state;
    load_declared();
    /* the scanner finds what the programs export (or this test could never fail) */
    static const char *known[] = {"controller_runtime_reconcile_total", "workqueue_depth",
                                  "leader_election_master_status", "godis_cluster_members",
                                  "godis_cluster_membership_changes_total",
                                  "controller_runtime_reconcile_time_seconds"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!has(&declared, known[i])) fail_msg("the source scan did not find %s", known[i]);
    assert_false(exported("godis_cluster_nonexistent"));

    char *text = slurp(DASHBOARD);
    if (!text) fail_msg("cannot read %s (run from the repository root)", DASHBOARD);
    cJSON *d = cJSON_Parse(text);
    free(text);
    if (!d) fail_msg("%s is not valid JSON", DASHBOARD);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(d, "title")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(d, "uid")));
    names used = {0};
    int queries = 0;
    const cJSON *p, *t, *v;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(d, "panels")) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
        assert_non_null(type);
        if (!strcmp(type, "row")) continue;
        int here = 0;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(p, "targets")) {
            const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(t, "expr"));
            if (!e || !*e) continue;
            expr_names(e, &used);
            here++;
        }
        if (!here) fail_msg("panel \"%s\" has no query", cJSON_GetStringValue(cJSON_GetObjectItem(p, "title")));
        queries += here;
    }
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(d, "templating"), "list")) {
        const char *q = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "query"), "query"));
        if (q) template_names(q, &used);
    }
    assert_true(queries >= 10);
    for (int i = 0; i < used.n; i++)
        if (!exported(used.v[i])) fail_msg("the dashboard queries %s, which no program exports", used.v[i]);
    /* what the issue asks the dashboard to show */
    static const char *wanted[] = {"godis_cluster_members", "godis_cluster_ready_members",
                                   "godis_cluster_quorum", "godis_cluster_membership_changes_total",
                                   "godis_cluster_rollout_in_progress", "controller_runtime_reconcile_total",
                                   "controller_runtime_reconcile_errors_total", "workqueue_depth",
                                   "leader_election_master_status"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        if (!has(&used, wanted[i])) fail_msg("the dashboard does not show %s", wanted[i]);
    clear(&used);
    cJSON_Delete(d);
    clear(&defines);
    clear(&declared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expression_names),
        cmocka_unit_test(test_dashboard_queries_exported_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
