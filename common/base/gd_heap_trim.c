/* gd_heap_trim.c — see gd_heap_trim.h. */
#include "gd_heap_trim.h"
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

bool gd_heap_trim_due(gd_heap_trim *t, uint64_t received, uint64_t work, int64_t now_ms)
{
    if (!t->started || received < t->seen || work < t->work) {  /* start, or a counter reset */
        *t = (gd_heap_trim){.seen = received, .base = received, .work = work,
                            .quiet_since_ms = now_ms, .started = true};
        return false;
    }
    if (received != t->seen || work != t->work) {   /* busy: a new quiet spell starts */
        t->seen = received;
        t->work = work;
        t->quiet_since_ms = now_ms;
        t->done = 0;
        return false;
    }
    if (t->seen - t->base < GD_HEAP_TRIM_MIN_BYTES)
        return false;
    int64_t quiet = now_ms - t->quiet_since_ms;
    if (t->done == 0 && quiet >= GD_HEAP_TRIM_QUIET1_MS) {
        t->done = 1;
        /* stays armed: work after this trim (queued keys reconciled) may free more */
        if (++t->trims >= GD_HEAP_TRIM_MAX_EARLY) {     /* enough: wait for new input */
            t->base = t->seen;
            t->trims = 0;
        }
        return true;
    }
    if (t->done == 1 && quiet >= GD_HEAP_TRIM_QUIET2_MS) {
        t->done = 2;
        t->base = t->seen;      /* the next trim needs as much input again */
        t->trims = 0;
        return true;
    }
    return false;
}

static int64_t resident_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%ld %ld", &pages, &rss);
    fclose(f);
    return n == 2 ? (int64_t)rss * sysconf(_SC_PAGESIZE) : 0;
}

int64_t gd_heap_trim_tick(gd_heap_trim *t, uint64_t received, uint64_t work, int64_t now_ms)
{
    if (!gd_heap_trim_due(t, received, work, now_ms))
        return 0;
    int64_t before = resident_bytes();
    malloc_trim(0);
    int64_t freed = before - resident_bytes();
    return freed > 0 ? freed : 0;
}
