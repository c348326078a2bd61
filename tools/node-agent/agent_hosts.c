/* agent_hosts.c — the opt-in hosts-file block (--hosts-file): every Service whose selector
 * matches a running pod of this agent gets a line "<podIP> <svc>.<ns>.svc.cluster.local
 * <svc>.<ns>.svc", so programs that dial Service names (godis's initial-cluster URLs) reach
 * the pod. A ready pod is preferred when several match. Only the marked block
 * ("# BEGIN godis-node-agent" … "# END godis-node-agent", with --hosts-block NAME after each
 * marker, so several agents can share one file) is ever rewritten; the file is
 * replaced atomically when possible and written in place when not (a bind-mounted
 * /etc/hosts cannot be renamed over). */
#include "agent.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

#define HOSTS_MAX (1 << 20)

typedef struct {
    const cJSON *svc;
    char ip[16];
    bool ready;
} match_ctx;

static void visit(void *ud, const cJSON *pod, const char *ip, bool ready)
{
    match_ctx *m = ud;
    if (strcmp(gd_meta_namespace(pod), gd_meta_namespace(m->svc)) != 0) return;
    if (!na_selector_matches(gd_json_path(m->svc, "spec.selector"), gd_json_path(pod, "metadata.labels")))
        return;
    if (*m->ip && (m->ready || !ready)) return;   /* keep the first ready one */
    snprintf(m->ip, sizeof m->ip, "%s", ip);
    m->ready = ready;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? strdup("") : NULL;
    char *buf = malloc(HOSTS_MAX + 1);
    size_t n = buf ? fread(buf, 1, HOSTS_MAX, f) : 0;
    bool too_big = buf && n == HOSTS_MAX;
    fclose(f);
    if (!buf || too_big) { free(buf); return NULL; }
    buf[n] = '\0';
    return buf;
}

static bool write_file(const char *path, const char *content)
{
    char tmp[NA_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.node-agent.tmp", path);
    size_t len = strlen(content);
    FILE *f = fopen(tmp, "w");
    if (f) {
        bool ok = fwrite(content, 1, len, f) == len;
        ok &= fclose(f) == 0;
        if (ok && rename(tmp, path) == 0) return true;
        unlink(tmp);
    }
    f = fopen(path, "w");     /* in place: a bind-mounted file cannot be replaced */
    if (!f) return false;
    bool ok = fwrite(content, 1, len, f) == len;
    return (fclose(f) == 0) && ok;
}

void na_hosts_sync(na_agent *a)
{
    if (!a->hosts_file) return;
    cJSON *list = NULL;
    k8s_status st;
    k8s_list_opts lo = { 0 };
    gd_err e = k8s_list(a->api, &K8S_RES_SERVICES, NULL, &lo, &list, &st);
    if (e != GD_OK) {
        gd_log(GD_LOG_WARN, "listing services for the hosts file failed", "err", gd_strerror(e), NULL);
        return;
    }
    size_t cap = 4096, len = 0;
    char *lines = malloc(cap);
    if (!lines) { cJSON_Delete(list); return; }
    lines[0] = '\0';
    const cJSON *svc;
    cJSON_ArrayForEach(svc, gd_json_path(list, "items")) {
        match_ctx m = { .svc = svc };
        na_pods_visit(a, visit, &m);
        if (!*m.ip) continue;
        char line[700];
        int n = snprintf(line, sizeof line, "%s %s.%s.svc.cluster.local %s.%s.svc\n", m.ip,
                         gd_meta_name(svc), gd_meta_namespace(svc), gd_meta_name(svc), gd_meta_namespace(svc));
        if (n <= 0 || n >= (int)sizeof line) continue;
        if (len + (size_t)n + 1 > cap) {
            char *t = realloc(lines, cap * 2);
            if (!t) break;
            lines = t;
            cap *= 2;
        }
        memcpy(lines + len, line, (size_t)n + 1);
        len += (size_t)n;
    }
    cJSON_Delete(list);
    if (len < sizeof a->last_hosts && strcmp(lines, a->last_hosts) == 0) { free(lines); return; }
    /* Several agents may share the file (--hosts-block): the read-modify-write is done under
     * an exclusive lock on PATH.lock, or one agent's rewrite could drop another's fresh
     * block (both read, both write). */
    char lockpath[NA_PATH_MAX + 8];
    snprintf(lockpath, sizeof lockpath, "%s.lock", a->hosts_file);
    int lfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lfd >= 0) flock(lfd, LOCK_EX);
    char *old = read_file(a->hosts_file);
    gd_err pe = GD_OK;
    char *updated = old ? na_hosts_rewrite(old, lines, a->hosts_block, &pe) : NULL;
    if (!updated) {
        gd_log(GD_LOG_ERROR, "hosts file not updated", "file", a->hosts_file,
               "error", !old ? "unreadable or larger than 1 MiB" : pe == GD_ERR_PARSE
               ? "a '# BEGIN godis-node-agent' line has no matching '# END godis-node-agent'" : "out of memory", NULL);
    } else if (!write_file(a->hosts_file, updated)) {
        gd_log(GD_LOG_ERROR, "hosts file not writable", "file", a->hosts_file, "error", strerror(errno), NULL);
    } else {
        snprintf(a->last_hosts, sizeof a->last_hosts, "%s", len < sizeof a->last_hosts ? lines : "");
        gd_log(GD_LOG_DEBUG, "hosts file updated", "file", a->hosts_file, NULL);
    }
    if (lfd >= 0) close(lfd);       /* releases the lock */
    free(old);
    free(updated);
    free(lines);
}
