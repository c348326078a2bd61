/* k8s_kubeconfig_yaml.h — private to k8s_config.c: a kubeconfig file read through libyaml
 * into typed, borrowed entries, and several files merged first-wins as clientcmd does.
 *
 * Only structure and types are checked here (a mapping where a string belongs, a duplicate
 * name); the values of the entries actually used (base64, files, server) are checked by
 * k8s_config.c, which knows which context was chosen. */
#ifndef K8S_KUBECONFIG_YAML_H
#define K8S_KUBECONFIG_YAML_H
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>
#include "gd_err.h"

typedef struct kc_file {
    char *path;                 /* as given, for messages */
    char *dir;                  /* relative paths inside resolve against this */
    yaml_document_t doc;
    bool has_doc;
    const char *current_context;
} kc_file;

/* All strings below are borrowed from the owning file's YAML document; NULL = not set. */
typedef struct {
    const char *name;
    int index;                  /* position in its file's list, for messages */
    const kc_file *file;
    const char *server, *ca, *ca_data, *tls_server_name;
    int insecure;               /* -1 unset, 0 false, 1 true */
} kc_cluster;

/* users[].user.exec: client-go's ExecConfig (clientcmd/api/v1). Strings borrowed; the
 * arrays are owned by the set. */
typedef struct {
    const char *command, *api_version, *install_hint, *interactive_mode;
    const char **args;
    size_t nargs;
    const char **env_names, **env_values;
    size_t nenv;
    int provide_cluster_info;   /* -1 unset, 0 false, 1 true */
} kc_exec;

typedef struct {
    const char *name;
    int index;
    const kc_file *file;
    const char *token, *token_file, *cert, *cert_data, *key, *key_data;
    bool has_exec, has_auth_provider, has_basic;
    kc_exec exec;               /* valid when has_exec */
} kc_user;

typedef struct {
    const char *name;
    int index;
    const kc_file *file;
    const char *cluster, *user, *namespace_;
} kc_context;

typedef struct {
    kc_file **files;   size_t nfiles;
    kc_cluster *clusters; size_t nclusters;
    kc_user *users;       size_t nusers;
    kc_context *contexts; size_t ncontexts;
    const char *current_context;   /* from the first file that sets one */
} kc_set;

/* Parses one kubeconfig text and merges it into set (entries whose name is already there
 * are dropped: first file wins). path names it in messages; relative paths inside resolve
 * against path's directory. Errors: GD_ERR_CONFIG with one line in err. */
gd_err kc_set_add(kc_set *set, const char *text, size_t len, const char *path,
                  char *err, size_t errlen);
const kc_cluster *kc_find_cluster(const kc_set *set, const char *name);
const kc_user *kc_find_user(const kc_set *set, const char *name);
const kc_context *kc_find_context(const kc_set *set, const char *name);
/* "a:b:c" list of the files read, malloc'd. */
char *kc_set_sources(const kc_set *set);
void kc_set_free(kc_set *set);

/* Writes a one-line error (control characters shown as '?') into err; shared by the
 * kubeconfig parser and the loader so every configuration error reads the same way. */
void kc_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
