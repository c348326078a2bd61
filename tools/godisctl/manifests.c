/* manifests.c — apply/delete -f: files, directories (their .yaml, .yml and .json files in
 * name order, as kubectl; -R also below), and - for stdin. Every file is read and parsed,
 * and every object's kind checked, before the first request: a bad file anywhere means
 * nothing is applied. A file or directory without objects is an error, as in kubectl ("no
 * objects passed to apply"), never a silent success. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "godisctl.h"
#include "gd_json.h"
#include "gd_time.h"
#include "gd_yaml.h"

#define MANIFEST_MAX (16u << 20)

/* The whole file; NULL with the reason in why. */
static char *read_all(FILE *f, size_t *len, char *why, size_t cap)
{
    size_t n = 0, sz = 65536;
    char *buf = malloc(sz + 1);
    for (size_t r; buf && (r = fread(buf + n, 1, sz - n, f)) > 0;) {
        n += r;
        if (n > MANIFEST_MAX) {
            snprintf(why, cap, "larger than %u bytes", MANIFEST_MAX);
            free(buf);
            return NULL;
        }
        if (n == sz) {
            char *nb = realloc(buf, (sz *= 2) + 1);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    if (!buf) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    if (ferror(f)) {
        snprintf(why, cap, "%s", strerror(errno ? errno : EIO));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Parses one file into x->docs; an empty one is an error. */
static int load_file(ctl *x, const char *cmd, const char *path)
{
    char why[256];
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "%s: %s: %s: cannot read: %s\n", x->prog, cmd, path, strerror(errno));
        return 1;
    }
    size_t len = 0;
    char *buf = read_all(f, &len, why, sizeof why);
    if (f != stdin) fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: %s: %s: cannot read: %s\n", x->prog, cmd, path, why);
        return 1;
    }
    cJSON *docs = NULL;
    gd_err e = gd_yaml_to_json(buf, len, &docs, why, sizeof why);
    free(buf);
    if (e != GD_OK) {
        fprintf(stderr, "%s: %s: %s: %s\n", x->prog, cmd, path, why);
        return 1;
    }
    int n = 0;
    cJSON *d;
    while ((d = cJSON_DetachItemFromArray(docs, 0))) {
        if (cJSON_IsNull(d)) { cJSON_Delete(d); continue; }
        const char *kind = gd_json_str_or(d, "kind", "");
        const char *what = !cJSON_IsObject(d) ? "a document that is not a mapping"
                         : !*kind ? "an object without kind"
                         : !k8s_resource_lookup(kind) ? "an object of a kind godisctl does not know"
                         : !*gd_meta_name(d) ? "an object without metadata.name" : NULL;
        if (what) {
            fprintf(stderr, "%s: %s: %s: document %d is %s%s%s%s\n", x->prog, cmd, path, n + 1, what,
                    *kind ? " (kind \"" : "", kind, *kind ? "\")" : "");
            cJSON_Delete(d);
            cJSON_Delete(docs);
            return 1;
        }
        cJSON_AddItemToArray(x->docs, d);
        cJSON_AddItemToArray(x->doc_files, cJSON_CreateString(path));
        n++;
    }
    cJSON_Delete(docs);
    if (n == 0) {
        fprintf(stderr, "%s: %s: %s: no objects in the file\n", x->prog, cmd, path);
        return 1;
    }
    return 0;
}

static bool manifest_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return name[0] != '.' && dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml") || !strcmp(dot, ".json"));
}

static int filter_entry(const struct dirent *d) { return d->d_name[0] != '.'; }

/* A directory's manifests in name order (kubectl walks it the same way). *found counts. */
static int load_dir(ctl *x, const char *cmd, const char *dir, int *found, int depth)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, filter_entry, alphasort);
    if (n < 0) {
        fprintf(stderr, "%s: %s: %s: cannot read the directory: %s\n", x->prog, cmd, dir, strerror(errno));
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", ents[i]->d_name);
        struct stat st;
        if (rc == 0 && stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode) && x->recursive && depth < 32)
                rc = load_dir(x, cmd, path, found, depth + 1);
            else if (S_ISREG(st.st_mode) && manifest_name(ents[i]->d_name)) {
                rc = load_file(x, cmd, path);
                (*found)++;
            }
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

int gdctl_load_manifests(ctl *x, const char *cmd)
{
    x->docs = cJSON_CreateArray();
    x->doc_files = cJSON_CreateArray();
    for (int i = 0; i < x->nfiles; i++) {
        const char *p = x->files[i];
        struct stat st;
        int rc;
        if (strcmp(p, "-") && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            int found = 0;
            if ((rc = load_dir(x, cmd, p, &found, 0))) return rc;
            if (!found) {
                fprintf(stderr, "%s: %s: %s: no .yaml, .yml or .json files in the directory%s\n",
                        x->prog, cmd, p, x->recursive ? " or below it" : " (-R looks below it)");
                return 1;
            }
        } else if ((rc = load_file(x, cmd, p))) {
            return rc;
        }
    }
    return 0;
}

/* ---- sending them ---- */

static int wait_crd_established(ctl *x, const char *name)
{
    int64_t deadline = gd_mono_ms() + 30000;
    while (gd_mono_ms() < deadline) {
        cJSON *crd = NULL;
        k8s_status st;
        gd_err e = k8s_get(x->c, &K8S_RES_CRDS, NULL, name, &crd, &st);
        if (e != GD_OK && e != GD_ERR_NOT_FOUND) {
            char what[300];
            snprintf(what, sizeof what, "waiting for CustomResourceDefinition %s", name);
            return gdctl_api_fail(x, what, e, &st);
        }
        bool ok = false;
        const cJSON *cond;
        cJSON_ArrayForEach(cond, gd_json_path(crd, "status.conditions"))
            ok |= !strcmp(gd_json_str_or(cond, "type", ""), "Established") &&
                  !strcmp(gd_json_str_or(cond, "status", ""), "True");
        cJSON_Delete(crd);
        if (ok) return 0;
        gd_sleep_ms(100);
    }
    fprintf(stderr, "%s: CustomResourceDefinition %s not Established after 30 s\n", x->prog, name);
    return 1;
}

static const char *ns_of(ctl *x, const k8s_resource *r, cJSON *obj)
{
    if (!r->namespaced) return NULL;
    if (!*gd_meta_namespace(obj))
        gd_json_set(obj, "metadata.namespace", cJSON_CreateString(x->ns));
    return gd_meta_namespace(obj);
}

static int apply_one(ctl *x, cJSON *obj, const char *file)
{
    const k8s_resource *r = k8s_resource_lookup(gd_json_str_or(obj, "kind", ""));
    const char *name = gd_meta_name(obj), *ns = ns_of(x, r, obj);
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
        char what[600];
        snprintf(what, sizeof what, "apply: %s: %s %s", file, r->kind, name);
        return gdctl_api_fail(x, what, e, &st);
    }
    printf("%s/%s %s\n", r->resource, name, verb);
    fflush(stdout);
    return r == &K8S_RES_CRDS ? wait_crd_established(x, name) : 0;
}

static int delete_one(ctl *x, cJSON *obj, const char *file)
{
    const k8s_resource *r = k8s_resource_lookup(gd_json_str_or(obj, "kind", ""));
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.propagation_policy = "Background";
    k8s_status st = {0};
    gd_err e = k8s_delete(x->c, r, ns_of(x, r, obj), gd_meta_name(obj), &o, &st);
    if (e && e != GD_ERR_NOT_FOUND) {
        char what[600];
        snprintf(what, sizeof what, "delete: %s: %s %s", file, r->kind, gd_meta_name(obj));
        return gdctl_api_fail(x, what, e, &st);
    }
    printf("%s/%s %s\n", r->resource, gd_meta_name(obj), e ? "not found" : "deleted");
    fflush(stdout);
    return 0;
}

/* Goes on after a refused object (as kubectl does), so one bad object does not hide the
 * state of the others; the exit code says something failed. */
static int each(ctl *x, int (*fn)(ctl *, cJSON *, const char *))
{
    int rc = 0, n = cJSON_GetArraySize(x->docs);
    for (int i = 0; i < n && !x->unreachable; i++)
        rc |= fn(x, cJSON_GetArrayItem(x->docs, i), cJSON_GetArrayItem(x->doc_files, i)->valuestring);
    return rc;
}

int gdctl_apply(ctl *x) { return each(x, apply_one); }
int gdctl_delete(ctl *x) { return each(x, delete_one); }
