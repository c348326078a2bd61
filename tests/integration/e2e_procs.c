/* e2e_procs.c — see e2e_procs.h. */
#include "e2e_procs.h"
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdbool.h>
#include "gd_time.h"

pid_t e2e_spawn(const char *const *argv, const char *log_path)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (log_path) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
    }
    execv(argv[0], (char *const *)argv);
    perror(argv[0]);
    _exit(127);
}

int e2e_children(pid_t parent, const char *comm, pid_t *out, int cap)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d)) && n < cap) {
        char path[300], buf[512], c[64], st;
        int pid, ppid;
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        if (sscanf(buf, "%d (%63[^)]) %c %d", &pid, c, &st, &ppid) == 4 && ppid == parent &&
            st != 'Z' && !strcmp(c, comm))
            out[n++] = pid;
    }
    if (d) closedir(d);
    return n;
}

int e2e_stop(pid_t pid, int grace_ms)
{
    if (pid <= 0) return -1;
    kill(pid, SIGTERM);
    int st;
    int64_t deadline = gd_mono_ms() + grace_ms;
    while (gd_mono_ms() < deadline) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return st;
        if (r < 0) return -1;
        gd_sleep_ms(20);
    }
    kill(pid, SIGKILL);
    return waitpid(pid, &st, 0) == pid ? st : -1;
}

int e2e_start_informers(const char *runtime_dir, const char *log_dir, pid_t *pids)
{
    static const struct { const char *kind; bool labelled; } kinds[] = {
        {"GodisCluster", false}, {"Godis", false}, {"ConfigMap", true}, {"ReplicaSet", true},
        {"Service", true}, {"PersistentVolumeClaim", true}, {"Pod", true}, {"Node", false},
        {"PersistentVolume", false}};
    const char *kc = getenv("KUBECONFIG");
    int n = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        char log[512];
        snprintf(log, sizeof log, "%s/informer-%s.log", log_dir, kinds[i].kind);
        const char *argv[16] = {"bin/godis-informer", "--kind", kinds[i].kind, "--runtime-dir",
                                runtime_dir, "--kubeconfig", kc, "--log-level", "warn"};
        int a = 9;
        if (kinds[i].labelled) {
            argv[a++] = "--label-selector";
            argv[a++] = "cluster-name";
        }
        argv[a] = NULL;
        pids[n++] = e2e_spawn(argv, log);
    }
    return n;
}

void e2e_log_dir(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "build/itest-logs/%s-%d", name, (int)getpid());
    mkdir("build/itest-logs", 0755);
    mkdir(buf, 0755);
}

bool e2e_remove_dir(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) == 0)
        return true;
    fprintf(stderr, "could not remove %s\n", dir);
    return false;
}
