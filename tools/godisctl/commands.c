/* commands.c — godisctl's commands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "godisctl.h"
#include "gd_json.h"
#include "gd_time.h"
#include "gd_yaml.h"
#include "k8s_client.h"

typedef struct {
    k8s_client *c;
    const char *ns;
} ctl;

static char *read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; }
            else buf = nb;
        }
    }
    if (buf && ferror(f)) {   /* a directory reads as an error, not as an empty file */
        free(buf);
        buf = NULL;
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

static const k8s_resource *resource_of(const cJSON *obj, char *err, size_t cap)
{
    const char *kind = gd_json_str_or(obj, "kind", "");
    const k8s_resource *r = k8s_resource_lookup(kind);
    if (!r) snprintf(err, cap, "unknown kind \"%s\"", kind);
    return r;
}

static const char *ns_of(ctl *x, const k8s_resource *r, const cJSON *obj)
{
    if (!r->namespaced) return NULL;
    const char *ns = gd_meta_namespace(obj);
    return *ns ? ns : x->ns;
}

static int wait_crd_established(ctl *x, const char *name)
{
    int64_t deadline = gd_mono_ms() + 30000;
    while (gd_mono_ms() < deadline) {
        cJSON *crd = NULL;
        if (k8s_get(x->c, &K8S_RES_CRDS, NULL, name, &crd, NULL) == GD_OK) {
            const cJSON *cond;
            bool ok = false;
            cJSON_ArrayForEach(cond, gd_json_path(crd, "status.conditions"))
                ok |= !strcmp(gd_json_str_or(cond, "type", ""), "Established") &&
                      !strcmp(gd_json_str_or(cond, "status", ""), "True");
            cJSON_Delete(crd);
            if (ok) return 0;
        }
        gd_sleep_ms(100);
    }
    fprintf(stderr, "godisctl: CustomResourceDefinition %s not Established after 30 s\n", name);
    return 1;
}

static int apply_one(ctl *x, cJSON *obj, const char *file)
{
    char err[256];
    const k8s_resource *r = resource_of(obj, err, sizeof err);
    const char *name = gd_meta_name(obj);
    if (!r || !*name) {
        fprintf(stderr, "godisctl: %s: %s\n", file, r ? "object without metadata.name" : err);
        return 1;
    }
    const char *ns = ns_of(x, r, obj);
    /* ns may point into obj: setting the field frees it, so read it back from obj. */
    if (ns) {
        gd_json_set(obj, "metadata.namespace", cJSON_CreateString(ns));
        ns = gd_meta_namespace(obj);
    }
    cJSON *cur = NULL;
    k8s_status st = {0};
    gd_err e = k8s_get(x->c, r, ns, name, &cur, &st);
    const char *verb = "created";
    if (e == GD_OK) {
        gd_json_set(obj, "metadata.resourceVersion", cJSON_CreateString(gd_meta_rv(cur)));
        e = k8s_update(x->c, r, obj, NULL, &st);
        verb = "configured";
    } else if (e == GD_ERR_NOT_FOUND) {
        e = k8s_create(x->c, r, ns, obj, NULL, &st);
    }
    cJSON_Delete(cur);
    if (e) {
        fprintf(stderr, "godisctl: %s: %s %s: %s: %s\n", file, r->kind, name, gd_strerror(e), st.message);
        return 1;
    }
    printf("%s/%s %s\n", r->resource, name, verb);
    if (r == &K8S_RES_CRDS) return wait_crd_established(x, name);
    return 0;
}

static int delete_one(ctl *x, cJSON *obj, const char *file)
{
    char err[256];
    const k8s_resource *r = resource_of(obj, err, sizeof err);
    if (!r) {
        fprintf(stderr, "godisctl: %s: %s\n", file, err);
        return 1;
    }
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.propagation_policy = "Background";
    k8s_status st = {0};
    gd_err e = k8s_delete(x->c, r, ns_of(x, r, obj), gd_meta_name(obj), &o, &st);
    if (e && e != GD_ERR_NOT_FOUND) {
        fprintf(stderr, "godisctl: %s: %s %s: %s: %s\n", file, r->kind, gd_meta_name(obj),
                gd_strerror(e), st.message);
        return 1;
    }
    printf("%s/%s deleted\n", r->resource, gd_meta_name(obj));
    return 0;
}

static int for_each_doc(ctl *x, int argc, char **argv, int (*fn)(ctl *, cJSON *, const char *))
{
    int rc = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0) continue;
        files++;
        size_t len;
        char *buf = read_file(argv[i], &len);
        if (!buf) {
            fprintf(stderr, "godisctl: %s: cannot read\n", argv[i]);
            return 1;
        }
        cJSON *docs = NULL;
        char err[256];
        if (gd_yaml_to_json(buf, len, &docs, err, sizeof err) != GD_OK) {
            fprintf(stderr, "godisctl: %s: %s\n", argv[i], err);
            free(buf);
            return 1;
        }
        free(buf);
        cJSON *d;
        cJSON_ArrayForEach(d, docs) rc |= fn(x, d, argv[i]);
        cJSON_Delete(docs);
    }
    if (!files) {
        fprintf(stderr, "godisctl: %s needs -f FILE\n", argv[0]);
        return 2;
    }
    return rc;
}

static int cmd_get(ctl *x, int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "godisctl: get KIND [NAME]\n");
        return 2;
    }
    const k8s_resource *r = k8s_resource_lookup(argv[1]);
    if (!r) {
        fprintf(stderr, "godisctl: unknown kind \"%s\"\n", argv[1]);
        return 2;
    }
    cJSON *out = NULL;
    k8s_status st = {0};
    const char *ns = r->namespaced ? x->ns : NULL;
    gd_err e;
    if (argc > 2) e = k8s_get(x->c, r, ns, argv[2], &out, &st);
    else {
        k8s_list_opts lo = {0};
        e = k8s_list(x->c, r, ns, &lo, &out, &st);
    }
    if (e) {
        fprintf(stderr, "godisctl: %s: %s\n", gd_strerror(e), st.message);
        return 1;
    }
    char *s = cJSON_Print(out);
    puts(s);
    free(s);
    cJSON_Delete(out);
    return 0;
}

static void members_str(const cJSON *gc, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members")) {
        int w = snprintf(buf + off, cap - off, "%s%lld", off ? "," : "", (long long)m->valuedouble);
        if (w < 0 || (size_t)w >= cap - off) break;
        off += w;
    }
}

static int cmd_clusters(ctl *x)
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    k8s_status st = {0};
    if (k8s_list(x->c, &K8S_RES_GODISCLUSTERS, x->ns, &lo, &list, &st) != GD_OK) {
        fprintf(stderr, "godisctl: %s\n", st.message);
        return 1;
    }
    printf("%-24s %-13s %-8s %-6s %-18s %s\n", "NAME", "STATUS", "REPLICAS", "READY", "MEMBERS", "NEXTID");
    const cJSON *gc;
    cJSON_ArrayForEach(gc, gd_json_path(list, "items")) {
        char members[128];
        members_str(gc, members, sizeof members);
        printf("%-24s %-13s %-8lld %-6lld %-18s %lld\n", gd_meta_name(gc),
               gd_json_str_or(gc, "status.status", ""), (long long)gd_json_int_or(gc, "spec.replicas", 0),
               (long long)gd_json_int_or(gc, "status.readyReplicas", 0), members,
               (long long)gd_json_int_or(gc, "status.nextID", 0));
    }
    cJSON_Delete(list);
    return 0;
}

/* Prints Events of the namespace not printed yet (tracked by name), oldest first. */
static void print_new_events(ctl *x, const char *about, cJSON *seen, bool print)
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    char sel[300];
    if (about) {
        snprintf(sel, sizeof sel, "involvedObject.name=%s", about);
        lo.field_selector = sel;
    }
    if (k8s_list(x->c, &K8S_RES_EVENTS, x->ns, &lo, &list, NULL) != GD_OK) return;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, gd_json_path(list, "items")) {
        if (cJSON_GetObjectItemCaseSensitive(seen, gd_meta_name(ev))) continue;
        cJSON_AddTrueToObject(seen, gd_meta_name(ev));
        if (print) printf("    event  %-7s %-18s %s\n", gd_json_str_or(ev, "type", ""),
               gd_json_str_or(ev, "reason", ""), gd_json_str_or(ev, "message", ""));
    }
    cJSON_Delete(list);
}

static int cmd_follow(ctl *x, int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "godisctl: follow NAME REPLICAS [SECONDS]\n");
        return 2;
    }
    const char *name = argv[1];
    long want = strtol(argv[2], NULL, 10);
    int64_t deadline = gd_mono_ms() + (argc > 3 ? atol(argv[3]) : 120) * 1000;
    int64_t t0 = gd_mono_ms();
    cJSON *seen = cJSON_CreateObject();
    char last[256] = "";
    int rc = 1;
    print_new_events(x, name, seen, false);   /* old events are not news: mark them seen */
    while (gd_mono_ms() < deadline) {
        cJSON *gc = NULL;
        if (k8s_get(x->c, &K8S_RES_GODISCLUSTERS, x->ns, name, &gc, NULL) == GD_OK) {
            char members[128], line[256];
            members_str(gc, members, sizeof members);
            snprintf(line, sizeof line, "phase=%-12s members=[%s] ready=%lld/%lld scaleOut=%lld scaleIn=%lld",
                     gd_json_str_or(gc, "status.status", "-"), members,
                     (long long)gd_json_int_or(gc, "status.readyReplicas", 0),
                     (long long)gd_json_int_or(gc, "spec.replicas", 0),
                     (long long)gd_json_int_or(gc, "status.scaleOutID", 0),
                     (long long)gd_json_int_or(gc, "status.scaleInID", 0));
            if (strcmp(line, last)) {
                printf("%6.1fs %s\n", (gd_mono_ms() - t0) / 1000.0, line);
                snprintf(last, sizeof last, "%s", line);
            }
            print_new_events(x, name, seen, true);
            fflush(stdout);
            int n = cJSON_GetArraySize(gd_json_path(gc, "status.members"));
            bool done = !strcmp(gd_json_str_or(gc, "status.status", ""), "Running") && n == want &&
                        gd_json_int_or(gc, "status.readyReplicas", -1) == want;
            cJSON_Delete(gc);
            if (done) { rc = 0; break; }
        }
        gd_sleep_ms(250);
    }
    if (rc) fprintf(stderr, "godisctl: %s did not reach %ld Ready members in time\n", name, want);
    cJSON_Delete(seen);
    return rc;
}

static int cmd_scale(ctl *x, int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "godisctl: scale NAME REPLICAS\n");
        return 2;
    }
    char patch[80];
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%ld}}", strtol(argv[2], NULL, 10));
    k8s_status st = {0};
    if (k8s_patch(x->c, &K8S_RES_GODISCLUSTERS, x->ns, argv[1], K8S_PATCH_MERGE, patch, NULL, NULL, &st)) {
        fprintf(stderr, "godisctl: scale %s: %s\n", argv[1], st.message);
        return 1;
    }
    printf("godiscluster/%s scaled to %s\n", argv[1], argv[2]);
    return 0;
}

int gdctl_run(const gdctl_opts *o, int argc, char **argv)
{
    k8s_config_opts co = {.kubeconfig = o->kubeconfig, .context = o->context, .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godisctl: %s\n", err);
        return 2;
    }
    ctl x = {.ns = o->ns ? o->ns : NULL};
    char *ns_copy = strdup(cfg->namespace_ ? cfg->namespace_ : "default");
    if (!x.ns) x.ns = ns_copy;
    k8s_client_opts copts;
    k8s_client_opts_default(&copts);
    copts.user_agent = "godisctl";
    x.c = k8s_client_new(&cfg, &copts);
    if (!x.c) {
        fprintf(stderr, "godisctl: cannot create the Kubernetes client\n");
        free(ns_copy);
        return 1;
    }
    int rc;
    const char *cmd = argv[0];
    if (!strcmp(cmd, "apply")) rc = for_each_doc(&x, argc, argv, apply_one);
    else if (!strcmp(cmd, "delete")) rc = for_each_doc(&x, argc, argv, delete_one);
    else if (!strcmp(cmd, "get")) rc = cmd_get(&x, argc, argv);
    else if (!strcmp(cmd, "clusters")) rc = cmd_clusters(&x);
    else if (!strcmp(cmd, "events")) {
        cJSON *seen = cJSON_CreateObject();
        print_new_events(&x, argc > 1 ? argv[1] : NULL, seen, true);
        cJSON_Delete(seen);
        rc = 0;
    } else if (!strcmp(cmd, "follow")) rc = cmd_follow(&x, argc, argv);
    else if (!strcmp(cmd, "scale")) rc = cmd_scale(&x, argc, argv);
    else {
        fprintf(stderr, "godisctl: unknown command \"%s\" (see --help)\n", cmd);
        rc = 2;
    }
    k8s_client_destroy(&x.c);
    free(ns_copy);
    return rc;
}
