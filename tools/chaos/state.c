/* state.c — what every part of the chaos suite shares: the log, violations and checks, the
 * seeded random numbers, names (see chaos.h). */
#include "chaos.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_time.h"
#include "k8s_config.h"

int64_t ch_now(const chaos *x) { return gd_mono_ms() - x->t0; }

static void vlog_line(chaos *x, const char *prefix, const char *fmt, va_list ap)
{
    char msg[1200];
    vsnprintf(msg, sizeof msg, fmt, ap);
    int64_t t = ch_now(x);
    pthread_mutex_lock(&x->mu);
    if (!x->quiet) {
        printf("[chaos %7.1fs] %s%s\n", (double)t / 1000, prefix, msg);
        fflush(stdout);
    }
    if (x->log) {
        fprintf(x->log, "[chaos %7.1fs] %s%s\n", (double)t / 1000, prefix, msg);
        fflush(x->log);
    }
    pthread_mutex_unlock(&x->mu);
}

void ch_log(chaos *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog_line(x, "", fmt, ap);
    va_end(ap);
}

void ch_violation(chaos *x, ch_invariant inv, const char *fmt, ...)
{
    char msg[1000], last[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&x->mu);
    x->violations[inv]++;
    snprintf(last, sizeof last, "%s", x->last_fault[0] ? x->last_fault : "none yet");
    int64_t at = x->last_fault_at;
    pthread_mutex_unlock(&x->mu);
    ch_log(x, "VIOLATION [%s] %s; last fault: %s at %.1fs; reproduce: make chaos "
           "CHAOS_FAULTS=%d CHAOS_SEED=%u", ch_invariant_name(inv), msg, last,
           (double)at / 1000, x->faults, x->seed);
}

void ch_check(chaos *x, ch_invariant inv) { atomic_fetch_add(&x->checks[inv], 1); }

/* splitmix64: small, good enough, and the same sequence for the same seed everywhere. */
uint64_t ch_rand(chaos *x)
{
    pthread_mutex_lock(&x->mu);
    uint64_t z = (x->rng += 0x9e3779b97f4a7c15ULL);
    pthread_mutex_unlock(&x->mu);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int ch_rand_int(chaos *x, int lo, int hi)
{
    return hi <= lo ? lo : lo + (int)(ch_rand(x) % (uint64_t)(hi - lo + 1));
}

const char *ch_fault_name(ch_fault f)
{
    static const char *n[F__COUNT] = {
        "kill-leader-manager", "stop-leader-manager", "kill-informer", "kill-worker",
        "kill-member-process", "restart-apiserver", "restart-etcd", "kill-node-agent",
        "delete-godis", "delete-configmap", "delete-member-pod", "expire-watches"};
    return f < F__COUNT ? n[f] : "?";
}

const char *ch_invariant_name(ch_invariant i)
{
    static const char *n[I__COUNT] = {"quorum", "one-change", "id-reuse", "exclusive",
                                      "fenced", "converge"};
    return i < I__COUNT ? n[i] : "?";
}

void ch_cluster_name(int i, char *buf, size_t cap) { snprintf(buf, cap, "c%02d", i); }

int ch_cluster_index(const chaos *x, const char *name)
{
    if (!name || name[0] != 'c' || strlen(name) != 3) return -1;
    int i = (name[1] - '0') * 10 + (name[2] - '0');
    return i >= 0 && i < x->nclusters ? i : -1;
}

k8s_client *ch_client(const chaos *x)
{
    k8s_config_opts o = {.kubeconfig = x->kubeconfig};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&o, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "chaos: %s\n", err);
        return NULL;
    }
    k8s_client_opts co;
    k8s_client_opts_default(&co);
    co.qps = -1;
    co.request_timeout_ms = 15000;
    co.user_agent = "godis-chaos";
    return k8s_client_new(&cfg, &co);
}

