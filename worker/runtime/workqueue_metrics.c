/* workqueue_metrics.c — client-go's workqueue metrics (queueMetrics) in Prometheus text,
 * read from the queue's state under its mutex. */
#include "workqueue_internal.h"
#include <stdio.h>
#include "gd_time.h"

static const struct {
    const char *name, *type, *help;
} families[] = {
    {"workqueue_depth", "gauge", "Current depth of workqueue"},
    {"workqueue_adds_total", "counter", "Total number of adds handled by workqueue"},
    {"workqueue_queue_duration_seconds", "histogram",
     "How long in seconds an item stays in workqueue before being requested"},
    {"workqueue_work_duration_seconds", "histogram",
     "How long in seconds processing an item from workqueue takes."},
    {"workqueue_unfinished_work_seconds", "gauge",
     "How many seconds of work has been done that is in progress and hasn't been observed by "
     "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
     "threads by observing the rate at which this increases."},
    {"workqueue_longest_running_processor_seconds", "gauge",
     "How many seconds has the longest running processor for workqueue been running."},
    {"workqueue_retries_total", "counter", "Total number of retries handled by workqueue"},
};
#define NFAMILIES ((int)(sizeof families / sizeof families[0]))

const char *wq_metrics_family(int fam, gd_sbuf *out)
{
    if (fam < 0 || fam >= NFAMILIES)
        return NULL;
    if (out)
        gd_prom_header(out, families[fam].name, families[fam].type, families[fam].help);
    return families[fam].name;
}

typedef struct {
    int64_t now;
    double total, longest;
} unfinished_ctx;

static int sum_unfinished(void *ud, const char *key, void *val)
{
    unfinished_ctx *u = ud;
    const entry *e = val;
    if (e->processing) {
        double s = (double)(u->now - e->start_ns) / 1e9;
        u->total += s;
        if (s > u->longest)
            u->longest = s;
    }
    return 0;
}

void wq_metrics_render_family(wq *q, int fam, gd_sbuf *out)
{
    char esc[160], labels[180];
    gd_prom_escape(q->cfg.name, esc, sizeof esc);
    snprintf(labels, sizeof labels, "name=\"%s\"", esc);
    const char *n = wq_metrics_family(fam, NULL);
    if (!n)
        return;
    pthread_mutex_lock(&q->mu);
    switch (fam) {
    case 0: gd_prom_sample(out, n, labels, (double)q->depth); break;
    case 1: gd_prom_sample(out, n, labels, (double)q->adds); break;
    case 2: gd_prom_hist(out, n, labels, &q->queue_dur); break;
    case 3: gd_prom_hist(out, n, labels, &q->work_dur); break;
    case 4:
    case 5: {
        unfinished_ctx u = {.now = gd_mono_ns()};
        gd_map_each(q->entries, sum_unfinished, &u);
        gd_prom_sample(out, n, labels, fam == 4 ? u.total : u.longest);
        break;
    }
    case 6: gd_prom_sample(out, n, labels, (double)q->retries); break;
    }
    pthread_mutex_unlock(&q->mu);
}

void wq_metrics_render(wq *q, gd_sbuf *out)
{
    for (int f = 0; f < NFAMILIES; f++) {
        wq_metrics_family(f, out);
        wq_metrics_render_family(q, f, out);
    }
}

void wq_get_stats(wq *q, wq_stats *s)
{
    pthread_mutex_lock(&q->mu);
    s->depth = q->depth;
    s->adds = q->adds;
    s->retries = q->retries;
    s->gets = q->gets;
    s->dones = q->dones;
    s->wakeups = q->wakeups;
    pthread_mutex_unlock(&q->mu);
}
