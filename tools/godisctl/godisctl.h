/* godisctl.h — the project's small kubectl, shared by its files:
 *   main.c       flags, the command table, `kubectl godis` (plugin) mode, dispatch
 *   manifests.c  apply/delete -f FILE|DIR|-: every file read and parsed before any request
 *   commands.c   get, scale, events, clusters, and the one way API errors are printed
 *   status.c     status (per cluster: members, ids, pods, nodes, Ready, conditions), follow
 * Every argument is checked before the kubeconfig is read, so a typo never reaches a
 * cluster; every API error is printed with the server's status and message, exit 1. */
#ifndef GODISCTL_H
#define GODISCTL_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "k8s_client.h"

/* What the CRD allows for spec.replicas (deploy/base/crds/godisclusters.yaml: minimum 1,
 * maximum 9); checked here too so a typo is refused before anything is sent. */
#define GDCTL_REPLICAS_MIN 1
#define GDCTL_REPLICAS_MAX 9

typedef struct {
    const char *prog;             /* "godisctl" or "kubectl godis" */
    k8s_client *c;
    const char *ns;               /* the namespace to act in */
    bool all_ns;                  /* -A */
    const char *files[64];        /* -f, in order */
    int nfiles;
    bool recursive;               /* -R */
    int64_t timeout_ms;           /* follow --timeout */
    cJSON *docs;                  /* apply/delete: every object of every file, parsed */
    cJSON *doc_files;             /* ... and the file each came from (strings) */
    bool unreachable;             /* a request found no API server: stop sending more */
} ctl;

/* Prints "<prog>: <what>: <status> <reason>: <message>" (or why the server could not be
 * reached, or that it did not answer like an API server) and returns 1. */
int gdctl_api_fail(ctl *x, const char *what, gd_err e, const k8s_status *st);
/* "5s", "3m12s", "2h", "4d": how long ago an RFC 3339 time was ("-" when absent). */
void gdctl_age(const char *rfc3339, char *out, size_t cap);
/* Strict REPLICAS (GDCTL_REPLICAS_MIN..MAX); prints the error and returns false. */
bool gdctl_replicas(const ctl *x, const char *cmd, const char *s, int *out);

/* manifests.c: reads the -f files (before any request); 0 or an exit code. */
int gdctl_load_manifests(ctl *x, const char *cmd);
int gdctl_apply(ctl *x);
int gdctl_delete(ctl *x);

/* commands.c */
int gdctl_get(ctl *x, const char *kind, const char *name);
int gdctl_scale(ctl *x, const char *name, int replicas);
int gdctl_events(ctl *x, const char *name);
int gdctl_clusters(ctl *x);

/* status.c */
int gdctl_status(ctl *x, const char *name);
int gdctl_follow(ctl *x, const char *name, int replicas);

#endif
