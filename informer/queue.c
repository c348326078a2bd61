/* queue.c — hands work from the reflector thread to the publisher thread.
 *
 * A mutex-protected FIFO plus an eventfd the publisher polls next to its ZeroMQ sockets
 * (zmq_poll accepts plain file descriptors), so one poll wakes it for either. The queue is
 * bounded: when the publisher falls behind, the reflector blocks inside the watch callback
 * and TCP backpressure slows the API server's stream instead of our memory growing. */
#include "informer.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct inf_queue {
    pthread_mutex_t mu;
    pthread_cond_t not_full;
    inf_q_item *head, *tail;
    size_t len, cap;
    int efd;
};

void inf_q_item_destroy(inf_q_item **itp)
{
    if (!itp || !*itp)
        return;
    inf_q_item *it = *itp;
    inf_obj_unref(it->obj);
    for (size_t i = 0; i < it->nitems; i++)
        inf_obj_unref(it->items[i]);
    free(it->items);
    free(it);
    *itp = NULL;
}

inf_queue *inf_queue_new(size_t cap)
{
    inf_queue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) {
        free(q);
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->cap = cap ? cap : 1;
    return q;
}

void inf_queue_destroy(inf_queue **qp)
{
    if (!qp || !*qp)
        return;
    inf_queue *q = *qp;
    inf_q_item *it = q->head;
    while (it) {
        inf_q_item *next = it->next;
        inf_q_item_destroy(&it);
        it = next;
    }
    close(q->efd);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->mu);
    free(q);
    *qp = NULL;
}

static void signal_fd(int fd)
{
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof one);
    (void)r;  /* EAGAIN only when the counter is saturated: it is readable anyway */
}

gd_err inf_queue_push(inf_queue *q, inf_q_item **itp, const volatile int *stop)
{
    inf_q_item *it = *itp;
    it->next = NULL;
    pthread_mutex_lock(&q->mu);
    while (q->len >= q->cap && !(stop && *stop)) {
        /* Timed wait so a stop request is noticed even if the publisher is gone. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&q->not_full, &q->mu, &ts);
    }
    if (stop && *stop) {
        pthread_mutex_unlock(&q->mu);
        inf_q_item_destroy(itp);
        return GD_ERR_CANCELLED;
    }
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    /* Only the empty → non-empty transition needs a wake-up: the fd stays readable until
     * a pop finds the queue empty (and drains it under this same lock). One syscall per
     * burst instead of one per event. */
    bool wake = q->len++ == 0;
    pthread_mutex_unlock(&q->mu);
    *itp = NULL;
    if (wake)
        signal_fd(q->efd);
    return GD_OK;
}

inf_q_item *inf_queue_pop(inf_queue *q)
{
    pthread_mutex_lock(&q->mu);
    inf_q_item *it = q->head;
    if (it) {
        q->head = it->next;
        if (!q->head)
            q->tail = NULL;
        q->len--;
        pthread_cond_signal(&q->not_full);
    } else {
        /* Drain the eventfd while holding the lock: a push after this re-arms it. */
        uint64_t v;
        while (read(q->efd, &v, sizeof v) > 0)
            ;
    }
    pthread_mutex_unlock(&q->mu);
    if (it)
        it->next = NULL;
    return it;
}

int inf_queue_fd(const inf_queue *q) { return q->efd; }

void inf_queue_wake(inf_queue *q) { signal_fd(q->efd); }
