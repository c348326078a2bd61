/* gd_heap_trim.c — see gd_heap_trim.h. */
#include "gd_heap_trim.h"
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
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

int64_t gd_heap_resident_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%ld %ld", &pages, &rss);
    fclose(f);
    return n == 2 ? (int64_t)rss * sysconf(_SC_PAGESIZE) : 0;
}

/* jemalloc's control entry point, when the program links jemalloc (its malloc then serves
 * every library too); looked up rather than linked, so programs on glibc's malloc share
 * this code. */
typedef int (*mallctl_fn)(const char *name, void *old, size_t *oldlen, void *new_val,
                          size_t newlen);
static mallctl_fn je_mallctl;
static pthread_once_t je_once = PTHREAD_ONCE_INIT;

static void find_jemalloc(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "mallctl");
    je_mallctl = *(mallctl_fn *)&sym;   /* POSIX: a dlsym result may hold a function */
}

bool gd_heap_on_jemalloc(void)
{
    pthread_once(&je_once, find_jemalloc);
    return je_mallctl != NULL;
}

const char *gd_heap_allocator(void)
{
    return gd_heap_on_jemalloc() ? "jemalloc" : "glibc";
}

uint64_t gd_heap_jemalloc_allocated(void)
{
    if (!gd_heap_on_jemalloc())
        return 0;
    uint64_t epoch = 1;     /* the statistics are a snapshot taken at each new epoch */
    size_t len = sizeof epoch, allocated = 0;
    je_mallctl("epoch", &epoch, &len, &epoch, len);
    len = sizeof allocated;
    return je_mallctl("stats.allocated", &allocated, &len, NULL, 0) == 0 ? allocated : 0;
}

void gd_heap_release(void)
{
    if (gd_heap_on_jemalloc())     /* 4096 is MALLCTL_ARENAS_ALL (jemalloc 5): every arena at once */
        je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
    else
        malloc_trim(0);
}

int64_t gd_heap_trim_tick(gd_heap_trim *t, uint64_t received, uint64_t work, int64_t now_ms)
{
    if (!gd_heap_trim_due(t, received, work, now_ms))
        return 0;
    int64_t before = gd_heap_resident_bytes();
    gd_heap_release();
    int64_t freed = before - gd_heap_resident_bytes();
    return freed > 0 ? freed : 0;
}
