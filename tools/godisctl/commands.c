/* commands.c — get, scale, events, clusters, and the helpers every command shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godisctl.h"
#include "gd_flags.h"
#include "gd_json.h"
#include "gd_time.h"

int gdctl_api_fail(ctl *x, const char *what, gd_err e, const k8s_status *st)
{
    const char *server = x->c ? k8s_client_config(x->c)->server : "?";
    if (st->http_status == 0 && !strncmp(st->message, "getting credentials: ", 21)) {
        x->unreachable = true;          /* the kubeconfig's exec plugin failed: it says why */
        fprintf(stderr, "%s: %s: %s\n", x->prog, what, st->message);
    } else if (st->http_status == 0) {
        x->unreachable = true;
        fprintf(stderr, "%s: %s: cannot reach the API server at %s: %s\n", x->prog, what, server,
                st->message[0] ? st->message : gd_strerror(e));
    } else if (e == GD_ERR_PARSE || st->foreign) {
        /* a body that is not Kubernetes JSON, a 2xx or an error: a proxy's or a login page,
         * not an API server; its start is enough to recognise it */
        x->unreachable = true;
        fprintf(stderr, "%s: %s: %s answered HTTP %ld but not with Kubernetes JSON (is it an API "
                "server? a proxy or login page?): %.160s%s\n", x->prog, what, server,
                st->http_status, st->message, strlen(st->message) > 160 ? "..." : "");
    } else {
        fprintf(stderr, "%s: %s: %ld %s: %s\n", x->prog, what, st->http_status,
                st->reason[0] ? st->reason : gd_strerror(e), st->message);
    }
    return 1;
}

bool gdctl_replicas(const ctl *x, const char *cmd, const char *s, int *out)
{
    int64_t v;
    gd_err e = gd_parse_int(s, GDCTL_REPLICAS_MIN, GDCTL_REPLICAS_MAX, &v);
    if (e != GD_OK) {
        fprintf(stderr, "%s: %s: REPLICAS must be %sbetween %d and %d (what the GodisCluster CRD "
                "allows), got \"%s\" (see %s --help)\n", x->prog, cmd,
                e == GD_ERR_PARSE ? "a whole number " : "", GDCTL_REPLICAS_MIN,
                GDCTL_REPLICAS_MAX, s, x->prog);
        return false;
    }
    *out = (int)v;
    return true;
}

void gdctl_age(const char *t, char *out, size_t cap)
{
    int64_t then;
    if (!t || !*t || gd_parse_rfc3339_ms(t, &then) != GD_OK) {
        snprintf(out, cap, "-");
        return;
    }
    int64_t s = (gd_wall_ms() - then) / 1000;
    if (s < 0) s = 0;
    if (s < 120) snprintf(out, cap, "%llds", (long long)s);
    else if (s < 600) snprintf(out, cap, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 3 * 3600) snprintf(out, cap, "%lldm", (long long)(s / 60));
    else if (s < 8 * 3600) snprintf(out, cap, "%lldh%lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
    else if (s < 48 * 3600) snprintf(out, cap, "%lldh", (long long)(s / 3600));
    else snprintf(out, cap, "%lldd", (long long)(s / 86400));
}

int gdctl_get(ctl *x, const char *kind, const char *name)
{
    const k8s_resource *r = k8s_resource_lookup(kind);
    cJSON *out = NULL;
    k8s_status st = {0};
    const char *ns = r->namespaced ? x->ns : NULL;
    gd_err e;
    if (name) {
        e = k8s_get(x->c, r, ns, name, &out, &st);
    } else {
        k8s_list_opts lo = {0};
        e = k8s_list(x->c, r, ns, &lo, &out, &st);
    }
    if (e) {
        char what[300];
        snprintf(what, sizeof what, "get %s%s%s", r->resource, name ? " " : "", name ? name : "");
        cJSON_Delete(out);
        return gdctl_api_fail(x, what, e, &st);
    }
    char *s = cJSON_Print(out);
    puts(s);
    free(s);
    cJSON_Delete(out);
    return 0;
}

int gdctl_scale(ctl *x, const char *name, int replicas)
{
    char patch[80], what[300];
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%d}}", replicas);
    k8s_status st = {0};
    cJSON *gc = NULL;
    gd_err e = k8s_patch(x->c, &K8S_RES_GODISCLUSTERS, x->ns, name, K8S_PATCH_MERGE, patch, NULL,
                         &gc, &st);
    snprintf(what, sizeof what, "scale %s/%s", x->ns, name);
    if (e)
        return gdctl_api_fail(x, what, e, &st);
    /* what the server now holds, not what we asked for: a 2xx from something that is not
     * the API server must not read as done */
    long long now = gd_json_int_or(gc, "spec.replicas", -1);
    bool ok = !strcmp(gd_json_str_or(gc, "kind", ""), "GodisCluster") && now == replicas;
    if (!ok)
        fprintf(stderr, "%s: %s: the answer is not the GodisCluster with spec.replicas %d "
                "(kind \"%s\", replicas %lld)\n", x->prog, what, replicas,
                gd_json_str_or(gc, "kind", ""), now);
    cJSON_Delete(gc);
    if (!ok)
        return 1;
    printf("godiscluster/%s scaled to %d\n", name, replicas);
    return 0;
}

/* ---- events ---- */

/* When it last happened, as the Event says it (newer fields first). */
static const char *event_time(const cJSON *ev)
{
    const char *t = gd_json_str_or(ev, "lastTimestamp", "");
    if (!*t) t = gd_json_str_or(ev, "eventTime", "");
    if (!*t) t = gd_json_str_or(ev, "firstTimestamp", "");
    if (!*t) t = gd_json_str_or(ev, "metadata.creationTimestamp", "");
    return t;
}

static int by_time(const void *a, const void *b)
{
    int64_t ta = 0, tb = 0;
    gd_parse_rfc3339_ms(event_time(*(const cJSON *const *)a), &ta);
    gd_parse_rfc3339_ms(event_time(*(const cJSON *const *)b), &tb);
    return ta < tb ? -1 : ta > tb;
}

int gdctl_events(ctl *x, const char *name)
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    char sel[300];
    if (name) {
        snprintf(sel, sizeof sel, "involvedObject.name=%s", name);
        lo.field_selector = sel;
    }
    k8s_status st = {0};
    gd_err e = k8s_list(x->c, &K8S_RES_EVENTS, x->all_ns ? NULL : x->ns, &lo, &list, &st);
    if (e) {
        cJSON_Delete(list);
        return gdctl_api_fail(x, "events", e, &st);
    }
    const cJSON *items = gd_json_path(list, "items");
    int n = cJSON_GetArraySize(items), i = 0;
    const cJSON **v = calloc((size_t)n + 1, sizeof *v);
    const cJSON *ev;
    cJSON_ArrayForEach(ev, items) v[i++] = ev;
    qsort(v, (size_t)n, sizeof *v, by_time);
    if (n == 0)
        printf("No events%s%s in %s.\n", name ? " about " : "", name ? name : "",
               x->all_ns ? "any namespace" : x->ns);
    else if (x->all_ns)
        printf("%-14s ", "NAMESPACE");
    if (n) printf("%-9s %-8s %-22s %-34s %s\n", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE");
    for (i = 0; i < n; i++) {
        char age[32], obj[300];
        gdctl_age(event_time(v[i]), age, sizeof age);
        snprintf(obj, sizeof obj, "%s/%s", gd_json_str_or(v[i], "involvedObject.kind", "?"),
                 gd_json_str_or(v[i], "involvedObject.name", "?"));
        if (x->all_ns) printf("%-14s ", gd_meta_namespace(v[i]));
        printf("%-9s %-8s %-22s %-34s %s\n", age, gd_json_str_or(v[i], "type", ""),
               gd_json_str_or(v[i], "reason", ""), obj, gd_json_str_or(v[i], "message", ""));
    }
    free(v);
    cJSON_Delete(list);
    return 0;
}

/* ---- clusters ---- */

static void members_str(const cJSON *gc, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members")) {
        int w = snprintf(buf + off, cap - off, "%s%lld", off ? "," : "", (long long)m->valuedouble);
        if (w < 0 || (size_t)w >= cap - off) break;
        off += (size_t)w;
    }
}

int gdctl_clusters(ctl *x)
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    k8s_status st = {0};
    gd_err e = k8s_list(x->c, &K8S_RES_GODISCLUSTERS, x->all_ns ? NULL : x->ns, &lo, &list, &st);
    if (e) {
        cJSON_Delete(list);
        return gdctl_api_fail(x, "clusters", e, &st);
    }
    if (x->all_ns) printf("%-14s ", "NAMESPACE");
    printf("%-24s %-13s %-8s %-6s %-18s %s\n", "NAME", "STATUS", "REPLICAS", "READY", "MEMBERS", "NEXTID");
    const cJSON *gc;
    cJSON_ArrayForEach(gc, gd_json_path(list, "items")) {
        char members[128];
        members_str(gc, members, sizeof members);
        if (x->all_ns) printf("%-14s ", gd_meta_namespace(gc));
        printf("%-24s %-13s %-8lld %-6lld %-18s %lld\n", gd_meta_name(gc),
               gd_json_str_or(gc, "status.status", ""), (long long)gd_json_int_or(gc, "spec.replicas", 0),
               (long long)gd_json_int_or(gc, "status.readyReplicas", 0), members,
               (long long)gd_json_int_or(gc, "status.nextID", 0));
    }
    cJSON_Delete(list);
    return 0;
}
