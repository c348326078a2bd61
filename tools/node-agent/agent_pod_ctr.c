/* agent_pod_ctr.c — a container's process, as a kubelet's container runtime would run it:
 * started from the image map with the pod's env and argv, probed for readiness, and on exit
 * restarted per restartPolicy with exponential backoff (CrashLoopBackOff).
 *
 * Apart from the pod table because it is the part that forks and connects: na_ctr_start and
 * na_ctr_probe run on a pod worker, na_ctr_exited on the main loop after a reap. */
#include "agent_pod.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "gd_log.h"
#include "godis_client.h"

void na_ctr_set_waiting(const na_pod *p, na_ctr *c, const char *reason, const char *msg)
{
    if (strcmp(c->waiting_reason, reason) != 0 || strcmp(c->waiting_message, msg) != 0)
        gd_log(GD_LOG_WARN, "container waiting", "pod", p->name, "container", c->name, "reason", reason,
               "message", msg, NULL);
    snprintf(c->waiting_reason, sizeof c->waiting_reason, "%s", reason);
    snprintf(c->waiting_message, sizeof c->waiting_message, "%s", msg);
}

/* The program's environment and argv: the pod's env, the image's program, the mounts. On
 * failure the container waits (CreateContainerConfigError) and false is returned. */
static bool container_command(na_agent *a, na_pod *p, na_ctr *c, const cJSON *ctr,
                              const char *program, na_env *env, char ***argv, char *err,
                              size_t errlen, int64_t now)
{
    na_mount mounts[NA_MAX_VOLUMES];
    size_t nm = na_pod_mounts(p, ctr, mounts, NA_MAX_VOLUMES);
    const char *base_path = getenv("PATH");
    na_env_set(env, "PATH", base_path ? base_path : "/usr/local/bin:/usr/bin:/bin");
    na_env_set(env, "HOSTNAME", p->name);
    /* Programs that resolve Service names through our hosts block without it being
     * /etc/hosts (the godis stand-in and common/godis_client read GODIS_HOSTS_FILE). */
    if (a->hosts_file) na_env_set(env, "GODIS_HOSTS_FILE", a->hosts_file);
    /* ... and the test environment's loopback guard, when the agent runs under it. */
    if (godis_loopback_guard_env()) na_env_set(env, GODIS_LOOPBACK_ENV, "1");
    na_env_ctx ctx = { .pod_ip = p->ip, .host_ip = "127.0.0.1", .node_name = p->node,
                       .cm_lookup = na_pod_cm_lookup, .ud = a };
    gd_err e = na_env_build(p->obj, ctr, c->image, &ctx, mounts, nm, env, err, errlen);
    /* its ServiceAccount, where in-cluster configuration would find it in a real pod */
    if (e == GD_OK && p->kubeconfig[0] && !na_env_get(env, "KUBECONFIG"))
        e = na_env_set(env, "KUBECONFIG", p->kubeconfig);
    if (e == GD_OK) e = na_argv_build(ctr, program, env, argv, err, errlen);
    if (e == GD_OK) e = na_argv_rewrite_paths(*argv, mounts, nm);
    if (e != GD_OK) {
        na_ctr_set_waiting(p, c, "CreateContainerConfigError", err);
        c->next_start_ms = now + NA_RETRY_MS;
        return false;
    }
    return true;
}

/* The container's process runs as pid from now (monotonic ms). */
static void mark_started(na_pod *p, na_ctr *c, pid_t pid, const char *path, int64_t now)
{
    c->pid = pid;
    /* restartCount counts restarts that happened, as kubelet's does: a container that
     * exited and was stopped before its back-off ran out was never restarted. */
    if (c->started_once) c->restart_count++;
    c->started_once = true;
    c->started_wall_ms = gd_wall_ms();
    c->started_mono_ms = now;
    c->waiting_reason[0] = c->waiting_message[0] = '\0';
    c->ok_streak = c->fail_streak = 0;
    c->ready = c->probe.kind == NA_PROBE_NONE || c->probe.kind == NA_PROBE_UNSUPPORTED;
    c->next_probe_ms = now + (int64_t)c->probe.initial_delay_s * 1000;
    char spid[16], rc[16];
    snprintf(spid, sizeof spid, "%d", (int)pid);
    snprintf(rc, sizeof rc, "%d", c->restart_count);
    gd_log(GD_LOG_INFO, "container started", "pod", p->name, "container", c->name, "pid", spid,
           "program", path, "ip", p->ip, "restarts", rc, NULL);
}

void na_ctr_start(na_agent *a, na_pod *p, na_ctr *c, const cJSON *ctr)
{
    int64_t now = gd_mono_ms();
    const na_image_entry *img = na_image_map_find(&a->images, c->image);
    if (!img) {
        char msg[700];
        snprintf(msg, sizeof msg, "no program is mapped to image %s (see --image-map)", c->image);
        na_ctr_set_waiting(p, c, "ErrImagePull", msg);
        c->next_start_ms = now + 5 * NA_RETRY_MS;
        return;
    }
    char err[512] = "", path[NA_PATH_MAX];
    na_env env = { 0 };
    char **argv = NULL, **envp = NULL;
    if (!container_command(a, p, c, ctr, img->program, &env, &argv, err, sizeof err, now))
        goto out;
    if (!na_resolve_program(argv[0], path, sizeof path)) {
        snprintf(err, sizeof err, "program %s not found or not executable", argv[0]);
        na_ctr_set_waiting(p, c, "CreateContainerError", err);
        c->next_start_ms = now + 5 * NA_RETRY_MS;
        goto out;
    }
    envp = na_env_to_envp(&env);
    char log_path[NA_PATH_MAX + 300];
    snprintf(log_path, sizeof log_path, "%s/%s.log", p->dir, c->name);
    pid_t pid = envp ? na_spawn(path, argv, envp, p->dir, log_path, err, sizeof err) : -1;
    if (pid < 0) {
        na_ctr_set_waiting(p, c, "RunContainerError", err);
        c->next_start_ms = now + NA_RETRY_MS;
        goto out;
    }
    mark_started(p, c, pid, path, now);
out:
    na_env_free(&env);
    na_strv_free(&argv);
    na_strv_free(&envp);
}

void na_ctr_probe(na_pod *p, na_ctr *c)
{
    int64_t now = gd_mono_ms();
    if (c->pid <= 0 || c->probe.kind == NA_PROBE_NONE || c->probe.kind == NA_PROBE_UNSUPPORTED ||
        now < c->next_probe_ms)
        return;
    c->next_probe_ms = now + (int64_t)c->probe.period_s * 1000;
    int tmo = c->probe.timeout_s * 1000;
    bool ok = c->probe.kind == NA_PROBE_TCP ? na_probe_tcp(p->ip, c->probe.port, tmo)
                                            : na_probe_http(p->ip, c->probe.port, c->probe.path, tmo);
    if (ok) { c->ok_streak++; c->fail_streak = 0; }
    else { c->fail_streak++; c->ok_streak = 0; }
    bool was = c->ready;
    if (!c->ready && c->ok_streak >= c->probe.success_threshold) c->ready = true;
    if (c->ready && c->fail_streak >= c->probe.failure_threshold) c->ready = false;
    if (was != c->ready)
        gd_log(GD_LOG_INFO, "readiness changed", "pod", p->name, "container", c->name,
               "ready", c->ready ? "true" : "false", NULL);
}

/* A container's process ended (reaped by na_pods_tick). */
void na_ctr_exited(na_pod *p, na_ctr *c, int wstatus)
{
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + (WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
    c->pid = 0;
    c->ready = false;
    c->has_last = true;
    c->last_exit = code;
    c->last_started_wall_ms = c->started_wall_ms;
    c->last_finished_wall_ms = gd_wall_ms();
    char scode[16];
    snprintf(scode, sizeof scode, "%d", code);
    gd_log(p->terminating ? GD_LOG_INFO : GD_LOG_WARN, "container exited", "pod", p->name,
           "container", c->name, "exit-code", scode, NULL);
    if (p->terminating) { c->finished = true; return; }
    bool restart = strcmp(p->restart_policy, "Never") != 0 &&
                   (strcmp(p->restart_policy, "OnFailure") != 0 || code != 0);
    if (!restart) { c->finished = true; return; }
    if (gd_mono_ms() - c->started_mono_ms > 600000) gd_backoff_reset(&c->backoff);
    c->next_start_ms = gd_mono_ms() + gd_backoff_next(&c->backoff);
    na_ctr_set_waiting(p, c, "CrashLoopBackOff", "back-off restarting failed container");
}
