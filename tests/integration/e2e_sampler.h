/* e2e_sampler.h — a thread that samples a godis cluster through RESP every 100 ms, the way a
 * client sees it: the membership Raft counts (a live member's own list), how many of those
 * members answer `hello` on their client port (pods listed by label, not being deleted),
 * whether a majority does, and whether the membership changed by more than one id between
 * two samples. Tests assert from it that an operation (a rollout, a drain) kept the quorum at
 * every sample, took at most one member away at a time and changed one member at a time. */
#ifndef E2E_SAMPLER_H
#define E2E_SAMPLER_H
#include <pthread.h>
#include <stdint.h>
#include "k8s_client.h"

#define E2E_SAMPLER_MAXM 16

typedef struct {
    pthread_t t;
    char ns[128], cluster[64];
    volatile int stop;
    k8s_client *k;
    int samples, no_quorum;
    int multi_change;           /* samples with two ids added, or two removed, at once */
    int max_unavailable;        /* Raft members not answering, at most */
    char violation[256];
    int64_t last_ids[E2E_SAMPLER_MAXM];   /* the previous sample's membership, sorted */
    int nlast;
} e2e_sampler;

/* Takes one sample (which must show the quorum) and starts the thread; false on failure. */
bool e2e_sampler_start(e2e_sampler *s, const char *ns, const char *cluster);
/* Stops the thread and prints a summary line prefixed by what. */
void e2e_sampler_stop(e2e_sampler *s, const char *what);

#endif
