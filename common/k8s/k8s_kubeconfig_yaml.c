/* k8s_kubeconfig_yaml.c — kubeconfig YAML (libyaml document API) to typed entries.
 *
 * The document API keeps aliases as shared node ids rather than expanding them, and we only
 * walk the fixed kubeconfig shape (never recursing over arbitrary nodes), so an alias bomb
 * costs nothing. Every complaint names the file, the entry and the field. */
#include "k8s_kubeconfig_yaml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KC_MAX_FILES 64

void kc_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* One line whatever names and paths contain: a newline in a YAML key stays visible. */
    for (char *c = err; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

static const char *node_kind(const yaml_node_t *n)
{
    if (!n)
        return "nothing";
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a sequence";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static bool is_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE)
        return false;
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return true;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* One entry being read: where it is, for messages. */
typedef struct {
    const kc_file *file;
    const char *list;   /* "clusters", "users", "contexts" */
    int index;
    const char *name;
    char *err;
    size_t errlen;
    const char *prefix; /* put before field names in messages ("exec."), or NULL */
} entry_ctx;

static void entry_err(const entry_ctx *e, const char *field, const char *what)
{
    const char *pre = e->prefix ? e->prefix : "";
    if (e->name)
        kc_err(e->err, e->errlen, "%s: %s[%d] (name=%s): %s%s: %s", e->file->path, e->list,
               e->index, e->name, pre, field, what);
    else
        kc_err(e->err, e->errlen, "%s: %s[%d]: %s%s: %s", e->file->path, e->list, e->index,
               pre, field, what);
}

/* Looks up key in a mapping. A key given twice is an error (Go's YAML decoder refuses it
 * too), so a pasted duplicate cannot silently pick the wrong credentials. */
static gd_err map_get(yaml_document_t *doc, const yaml_node_t *map, const char *key,
                      yaml_node_t **out, const entry_ctx *e)
{
    *out = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (!k || k->type != YAML_SCALAR_NODE || strcmp(scalar(k), key) != 0)
            continue;
        if (*out) {
            entry_err(e, key, "duplicate key");
            return GD_ERR_CONFIG;
        }
        *out = yaml_document_get_node(doc, p->value);
    }
    return GD_OK;
}

/* A string field: absent or null → NULL; a mapping or sequence → error. */
static gd_err get_str(yaml_document_t *doc, const yaml_node_t *map, const char *key,
                      const char **out, const entry_ctx *e)
{
    yaml_node_t *v;
    *out = NULL;
    if (map_get(doc, map, key, &v, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (is_null(v))
        return GD_OK;
    if (v->type != YAML_SCALAR_NODE) {
        char what[64];
        snprintf(what, sizeof what, "expected a string, got %s", node_kind(v));
        entry_err(e, key, what);
        return GD_ERR_CONFIG;
    }
    if (strlen(scalar(v)) != v->data.scalar.length) {
        entry_err(e, key, "contains a NUL byte");
        return GD_ERR_CONFIG;
    }
    *out = scalar(v);
    return GD_OK;
}

static gd_err get_bool(yaml_document_t *doc, const yaml_node_t *map, const char *key,
                       int *out, const entry_ctx *e)
{
    const char *s;
    *out = -1;
    if (get_str(doc, map, key, &s, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (!s)
        return GD_OK;
    static const char *const yes[] = { "true", "yes", "on", "y" };
    static const char *const no[] = { "false", "no", "off", "n" };
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return GD_OK; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return GD_OK; }
    }
    entry_err(e, key, "expected true or false");
    return GD_ERR_CONFIG;
}

/* A field that must be a node of one type (a mapping or a sequence): absent or null →
 * NULL, anything else an error naming the field. */
static gd_err get_typed(yaml_document_t *doc, const yaml_node_t *map, const char *key,
                        yaml_node_type_t type, yaml_node_t **out, const entry_ctx *e)
{
    if (map_get(doc, map, key, out, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (is_null(*out)) {
        *out = NULL;
        return GD_OK;
    }
    if ((*out)->type != type) {
        char what[64];
        snprintf(what, sizeof what, "expected %s, got %s",
                 type == YAML_MAPPING_NODE ? "a mapping" : "a sequence", node_kind(*out));
        entry_err(e, key, what);
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

/* The inner mapping of a named entry ("cluster:", "user:", "context:"). Null → NULL. */
static gd_err get_map(yaml_document_t *doc, const yaml_node_t *map, const char *key,
                      yaml_node_t **out, const entry_ctx *e)
{
    return get_typed(doc, map, key, YAML_MAPPING_NODE, out, e);
}

static bool has_key(yaml_document_t *doc, const yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp(scalar(k), key) == 0) {
            return !is_null(yaml_document_get_node(doc, p->value));
        }
    }
    return false;
}

/* ---- the three lists ---- */

static gd_err read_cluster(yaml_document_t *doc, const yaml_node_t *m, kc_cluster *c,
                           const entry_ctx *e)
{
    if (!m)
        return GD_OK;
    if (get_str(doc, m, "server", &c->server, e) || get_str(doc, m, "certificate-authority", &c->ca, e) ||
        get_str(doc, m, "certificate-authority-data", &c->ca_data, e) ||
        get_str(doc, m, "tls-server-name", &c->tls_server_name, e) ||
        get_bool(doc, m, "insecure-skip-tls-verify", &c->insecure, e))
        return GD_ERR_CONFIG;
    return GD_OK;
}

static void exec_free(kc_exec *x)
{
    free(x->args);
    free(x->env_names);
    free(x->env_values);
    memset(x, 0, sizeof *x);
}

/* A sequence field and its length (0 when absent or null). */
static gd_err get_seq(yaml_document_t *doc, const yaml_node_t *map, const char *key,
                      yaml_node_t **out, size_t *n, const entry_ctx *e)
{
    *n = 0;
    if (get_typed(doc, map, key, YAML_SEQUENCE_NODE, out, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (*out)
        *n = (size_t)((*out)->data.sequence.items.top - (*out)->data.sequence.items.start);
    return GD_OK;
}

/* args: a list of strings. env: a list of {name, value}. e carries the "exec." prefix. */
static gd_err read_exec_lists(yaml_document_t *doc, const yaml_node_t *ex, kc_exec *x,
                              const entry_ctx *e)
{
    yaml_node_t *seq;
    size_t n;
    char field[48];
    if (get_seq(doc, ex, "args", &seq, &n, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (n && !(x->args = calloc(n, sizeof *x->args)))
        return GD_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *v = yaml_document_get_node(doc, seq->data.sequence.items.start[i]);
        snprintf(field, sizeof field, "args[%zu]", i);
        if (!v || v->type != YAML_SCALAR_NODE || strlen(scalar(v)) != v->data.scalar.length) {
            entry_err(e, field, "expected a string");
            return GD_ERR_CONFIG;
        }
        x->args[x->nargs++] = scalar(v);
    }
    if (get_seq(doc, ex, "env", &seq, &n, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (n && (!(x->env_names = calloc(n, sizeof *x->env_names)) ||
              !(x->env_values = calloc(n, sizeof *x->env_values))))
        return GD_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *v = yaml_document_get_node(doc, seq->data.sequence.items.start[i]);
        const char *name = NULL, *value = NULL;
        snprintf(field, sizeof field, "env[%zu]", i);
        if (!v || v->type != YAML_MAPPING_NODE) {
            entry_err(e, field, "expected a mapping with name and value");
            return GD_ERR_CONFIG;
        }
        if (get_str(doc, v, "name", &name, e) || get_str(doc, v, "value", &value, e))
            return GD_ERR_CONFIG;
        if (!name || !*name || strchr(name, '=')) {
            entry_err(e, field, "name is missing or contains '='");
            return GD_ERR_CONFIG;
        }
        x->env_names[x->nenv] = name;
        x->env_values[x->nenv++] = value ? value : "";
    }
    return GD_OK;
}

/* Structure and types only; what the values mean is checked by k8s_config.c for the user
 * actually chosen. */
static gd_err read_exec(yaml_document_t *doc, const yaml_node_t *m, kc_user *u, const entry_ctx *e)
{
    yaml_node_t *ex;
    if (get_map(doc, m, "exec", &ex, e) != GD_OK)
        return GD_ERR_CONFIG;
    if (!ex)
        return GD_OK;
    kc_exec *x = &u->exec;
    u->has_exec = true;
    entry_ctx ec = *e;
    ec.prefix = "exec.";
    if (get_str(doc, ex, "command", &x->command, &ec) ||
        get_str(doc, ex, "apiVersion", &x->api_version, &ec) ||
        get_str(doc, ex, "installHint", &x->install_hint, &ec) ||
        get_str(doc, ex, "interactiveMode", &x->interactive_mode, &ec) ||
        get_bool(doc, ex, "provideClusterInfo", &x->provide_cluster_info, &ec))
        return GD_ERR_CONFIG;
    return read_exec_lists(doc, ex, x, &ec);
}

static gd_err read_user(yaml_document_t *doc, const yaml_node_t *m, kc_user *u, const entry_ctx *e)
{
    if (!m)
        return GD_OK;
    if (get_str(doc, m, "token", &u->token, e) || get_str(doc, m, "tokenFile", &u->token_file, e) ||
        get_str(doc, m, "client-certificate", &u->cert, e) ||
        get_str(doc, m, "client-certificate-data", &u->cert_data, e) ||
        get_str(doc, m, "client-key", &u->key, e) || get_str(doc, m, "client-key-data", &u->key_data, e))
        return GD_ERR_CONFIG;
    gd_err rc = read_exec(doc, m, u, e);
    if (rc != GD_OK)
        return rc;
    u->has_auth_provider = has_key(doc, m, "auth-provider");
    u->has_basic = has_key(doc, m, "username") || has_key(doc, m, "password");
    return GD_OK;
}

static gd_err read_context(yaml_document_t *doc, const yaml_node_t *m, kc_context *c,
                           const entry_ctx *e)
{
    if (!m)
        return GD_OK;
    if (get_str(doc, m, "cluster", &c->cluster, e) || get_str(doc, m, "user", &c->user, e) ||
        get_str(doc, m, "namespace", &c->namespace_, e))
        return GD_ERR_CONFIG;
    return GD_OK;
}

typedef enum { L_CLUSTERS, L_USERS, L_CONTEXTS } list_kind;
static const char *const list_names[] = { "clusters", "users", "contexts" };
static const char *const inner_names[] = { "cluster", "user", "context" };

static const char *entry_name_at(const kc_set *s, list_kind k, size_t i)
{
    switch (k) {
    case L_CLUSTERS: return s->clusters[i].name;
    case L_USERS: return s->users[i].name;
    default: return s->contexts[i].name;
    }
}

static size_t list_len(const kc_set *s, list_kind k)
{
    return k == L_CLUSTERS ? s->nclusters : k == L_USERS ? s->nusers : s->ncontexts;
}

/* Reads one list and appends the entries not already present (first file wins). Names
 * repeated within one file are an error, as in client-go's v1 conversion. */
static gd_err read_list(kc_set *set, kc_file *f, const yaml_node_t *root, list_kind k,
                        char *err, size_t errlen)
{
    yaml_document_t *doc = &f->doc;
    entry_ctx top = { f, "kubeconfig", 0, NULL, err, errlen, NULL };
    yaml_node_t *seq;
    if (map_get(doc, root, list_names[k], &seq, &top) != GD_OK) {
        kc_err(err, errlen, "%s: duplicate key \"%s\"", f->path, list_names[k]);
        return GD_ERR_CONFIG;
    }
    if (is_null(seq))
        return GD_OK;
    if (seq->type != YAML_SEQUENCE_NODE) {
        kc_err(err, errlen, "%s: %s: expected a sequence, got %s", f->path, list_names[k],
               node_kind(seq));
        return GD_ERR_CONFIG;
    }
    size_t first_of_file = list_len(set, k);
    int index = 0;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++, index++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        entry_ctx e = { f, list_names[k], index, NULL, err, errlen, NULL };
        if (!n || n->type != YAML_MAPPING_NODE) {
            kc_err(err, errlen, "%s: %s[%d]: expected a mapping, got %s", f->path, list_names[k],
                   index, node_kind(n));
            return GD_ERR_CONFIG;
        }
        const char *name;
        if (get_str(doc, n, "name", &name, &e) != GD_OK)
            return GD_ERR_CONFIG;
        if (!name || !*name) {
            kc_err(err, errlen, "%s: %s[%d]: name is missing", f->path, list_names[k], index);
            return GD_ERR_CONFIG;
        }
        e.name = name;
        yaml_node_t *inner;
        if (get_map(doc, n, inner_names[k], &inner, &e) != GD_OK)
            return GD_ERR_CONFIG;

        bool seen = false;
        for (size_t i = 0; i < list_len(set, k) && !seen; i++) {
            if (strcmp(entry_name_at(set, k, i), name) != 0)
                continue;
            if (i >= first_of_file) {
                entry_err(&e, "name", "duplicate name in this file");
                return GD_ERR_CONFIG;
            }
            seen = true;
        }
        /* Type-check even entries a previous file shadows: a broken file is broken. */
        gd_err rc;
        void *grown;
        switch (k) {
        case L_CLUSTERS: {
            kc_cluster c = { .name = name, .index = index, .file = f, .insecure = -1 };
            if ((rc = read_cluster(doc, inner, &c, &e)) != GD_OK)
                return rc;
            if (seen)
                break;
            if (!(grown = realloc(set->clusters, (set->nclusters + 1) * sizeof c)))
                return GD_ERR_NOMEM;
            set->clusters = grown;
            set->clusters[set->nclusters++] = c;
            break;
        }
        case L_USERS: {
            kc_user u = { .name = name, .index = index, .file = f };
            if ((rc = read_user(doc, inner, &u, &e)) != GD_OK || seen) {
                exec_free(&u.exec);
                if (rc != GD_OK)
                    return rc;
                break;
            }
            if (!(grown = realloc(set->users, (set->nusers + 1) * sizeof u))) {
                exec_free(&u.exec);
                return GD_ERR_NOMEM;
            }
            set->users = grown;
            set->users[set->nusers++] = u;
            break;
        }
        case L_CONTEXTS: {
            kc_context c = { .name = name, .index = index, .file = f };
            if ((rc = read_context(doc, inner, &c, &e)) != GD_OK)
                return rc;
            if (seen)
                break;
            if (!(grown = realloc(set->contexts, (set->ncontexts + 1) * sizeof c)))
                return GD_ERR_NOMEM;
            set->contexts = grown;
            set->contexts[set->ncontexts++] = c;
            break;
        }
        }
    }
    return GD_OK;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static void file_free(kc_file *f)
{
    if (!f)
        return;
    if (f->has_doc) {
        /* The document holds key material (client-key-data): wipe it before freeing. */
        for (yaml_node_t *n = f->doc.nodes.start; n < f->doc.nodes.top; n++)
            if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
                explicit_bzero(n->data.scalar.value, n->data.scalar.length);
        yaml_document_delete(&f->doc);
    }
    free(f->path);
    free(f->dir);
    free(f);
}

/* libyaml reports 0-based marks; people count from 1. */
static void syntax_error(const yaml_parser_t *p, const char *path, char *err, size_t errlen)
{
    const yaml_mark_t *m = p->problem ? &p->problem_mark : &p->context_mark;
    const char *what = p->error == YAML_MEMORY_ERROR ? "out of memory" : "YAML syntax error";
    if (p->context)
        kc_err(err, errlen, "%s: line %zu column %zu: %s: %s %s", path, m->line + 1,
               m->column + 1, what, p->problem ? p->problem : "?", p->context);
    else
        kc_err(err, errlen, "%s: line %zu column %zu: %s: %s", path, m->line + 1, m->column + 1,
               what, p->problem ? p->problem : "?");
}

static gd_err load_doc(kc_file *f, const char *text, size_t len, char *err, size_t errlen)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return GD_ERR_NOMEM;
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    gd_err rc = GD_OK;
    if (!yaml_parser_load(&p, &f->doc)) {
        syntax_error(&p, f->path, err, errlen);
        rc = p.error == YAML_MEMORY_ERROR ? GD_ERR_NOMEM : GD_ERR_CONFIG;
        goto out;
    }
    f->has_doc = true;
    if (yaml_document_get_root_node(&f->doc)) {
        /* One kubeconfig per file: a second document is a mistake, not something to merge. */
        yaml_document_t extra;
        if (!yaml_parser_load(&p, &extra)) {
            syntax_error(&p, f->path, err, errlen);
            rc = GD_ERR_CONFIG;
            goto out;
        }
        bool more = yaml_document_get_root_node(&extra) != NULL;
        yaml_document_delete(&extra);
        if (more) {
            kc_err(err, errlen, "%s: more than one YAML document", f->path);
            rc = GD_ERR_CONFIG;
        }
    }
out:
    yaml_parser_delete(&p);
    return rc;
}

gd_err kc_set_add(kc_set *set, const char *text, size_t len, const char *path, char *err,
                  size_t errlen)
{
    if (set->nfiles >= KC_MAX_FILES) {
        kc_err(err, errlen, "%s: too many kubeconfig files (max %d)", path, KC_MAX_FILES);
        return GD_ERR_CONFIG;
    }
    kc_file *f = calloc(1, sizeof *f);
    kc_file **files = realloc(set->files, (set->nfiles + 1) * sizeof *files);
    if (!f || !files) {
        free(f);
        if (files)
            set->files = files;
        return GD_ERR_NOMEM;
    }
    set->files = files;
    f->path = strdup(path ? path : "<kubeconfig>");
    f->dir = dir_of(f->path ? f->path : ".");
    if (!f->path || !f->dir) {
        file_free(f);
        return GD_ERR_NOMEM;
    }
    gd_err rc = load_doc(f, text, len, err, errlen);
    if (rc != GD_OK) {
        file_free(f);
        return rc;
    }
    /* Owned by the set from here on, so entries can borrow from it even on failure paths. */
    set->files[set->nfiles++] = f;

    yaml_node_t *root = yaml_document_get_root_node(&f->doc);
    if (!root || is_null(root))
        return GD_OK;  /* an empty file is an empty config, as in clientcmd */
    if (root->type != YAML_MAPPING_NODE) {
        kc_err(err, errlen, "%s: expected a mapping at the top, got %s", f->path, node_kind(root));
        return GD_ERR_CONFIG;
    }
    entry_ctx top = { f, "kubeconfig", 0, NULL, err, errlen, NULL };
    const char *cur;
    if (get_str(&f->doc, root, "current-context", &cur, &top) != GD_OK) {
        kc_err(err, errlen, "%s: current-context: expected a string", f->path);
        return GD_ERR_CONFIG;
    }
    f->current_context = cur;
    if (cur && *cur && !set->current_context)
        set->current_context = cur;
    for (int k = L_CLUSTERS; k <= L_CONTEXTS; k++)
        if ((rc = read_list(set, f, root, (list_kind)k, err, errlen)) != GD_OK)
            return rc;
    return GD_OK;
}

const kc_cluster *kc_find_cluster(const kc_set *set, const char *name)
{
    for (size_t i = 0; name && i < set->nclusters; i++)
        if (strcmp(set->clusters[i].name, name) == 0)
            return &set->clusters[i];
    return NULL;
}

const kc_user *kc_find_user(const kc_set *set, const char *name)
{
    for (size_t i = 0; name && i < set->nusers; i++)
        if (strcmp(set->users[i].name, name) == 0)
            return &set->users[i];
    return NULL;
}

const kc_context *kc_find_context(const kc_set *set, const char *name)
{
    for (size_t i = 0; name && i < set->ncontexts; i++)
        if (strcmp(set->contexts[i].name, name) == 0)
            return &set->contexts[i];
    return NULL;
}

char *kc_set_sources(const kc_set *set)
{
    size_t n = 1;
    for (size_t i = 0; i < set->nfiles; i++)
        n += strlen(set->files[i]->path) + 1;
    char *s = malloc(n);
    if (!s)
        return NULL;
    s[0] = 0;
    for (size_t i = 0; i < set->nfiles; i++) {
        if (i)
            strcat(s, ":");
        strcat(s, set->files[i]->path);
    }
    return s;
}

void kc_set_free(kc_set *set)
{
    for (size_t i = 0; i < set->nfiles; i++)
        file_free(set->files[i]);
    free(set->files);
    free(set->clusters);
    for (size_t i = 0; i < set->nusers; i++)
        exec_free(&set->users[i].exec);
    free(set->users);
    free(set->contexts);
    memset(set, 0, sizeof *set);
}
