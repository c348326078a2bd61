/* gd_heap_trim.h — gives the freed heap back to the system once a burst of input has
 * settled.
 *
 * Why: a large load (the initial lists, a relist, shards arriving in snapshots) passes
 * hundreds of megabytes through malloc in messages, parse trees and queues, and what is
 * freed afterwards stays in the arenas as half-used pages glibc does not return by itself
 * (it only trims the top of the main heap). malloc_trim(0) returns every free page, but it
 * walks every free chunk under the arena locks (40 ms on the 10 000-cluster load), so it
 * runs only once the process has gone quiet (no input and no work done: on that load the
 * worker's reconciles of every new key came 8 s after the last object and took 130 MB more
 * while they ran), never during a steady stream of events, and only after enough input to
 * be worth it. Once armed by the input, it trims 1 s into each quiet spell and 5 s into
 * one, then waits for as much input again; spells broken by work within 5 s get at most
 * GD_HEAP_TRIM_MAX_EARLY trims, so work in bursts cannot make it trim forever.
 * The figures are glibc's. The worker runs on jemalloc (the Makefile says why), which
 * returns free pages by itself, but only 10 s after they were freed (dirty_decay_ms) and
 * only while the process keeps allocating: the same policy purges its arenas instead. */
#ifndef GD_HEAP_TRIM_H
#define GD_HEAP_TRIM_H
#include <stdbool.h>
#include <stdint.h>

enum {
    GD_HEAP_TRIM_MIN_BYTES = 16 << 20,  /* input since the last trim that arms one */
    GD_HEAP_TRIM_QUIET1_MS = 1000,      /* the first trim, this long into the quiet */
    GD_HEAP_TRIM_QUIET2_MS = 5000,      /* the second, after which it needs new input */
    GD_HEAP_TRIM_MAX_EARLY = 4,         /* first trims (spells of 1-5 s) per input burst */
};

typedef struct {
    uint64_t seen;          /* the input counter at its last change */
    uint64_t base;          /* ... when the last trim ran (or at the start) */
    uint64_t work;          /* the work counter at its last change */
    int64_t quiet_since_ms; /* when either last changed */
    int done;               /* trims run in this quiet spell (0, 1, 2) */
    int trims;              /* first trims since the input armed it */
    bool started;
} gd_heap_trim;

/* Feeds the input counter (bytes received so far) and the work counter (e.g. reconciles
 * finished so far), both only ever growing, at now_ms; true when the heap should be trimmed
 * now. Call it often (every loop turn); it does no work itself. */
bool gd_heap_trim_due(gd_heap_trim *t, uint64_t received, uint64_t work, int64_t now_ms);

/* gd_heap_trim_due, and when due gives the free memory back (gd_heap_release); returns the
 * bytes of resident memory that gave back (0 when it did not run). */
int64_t gd_heap_trim_tick(gd_heap_trim *t, uint64_t received, uint64_t work, int64_t now_ms);

/* Whether this process's malloc is jemalloc's, found at run time: true when the program was
 * linked with it (the worker is, see the Makefile), false on glibc's. */
bool gd_heap_on_jemalloc(void);
/* The same as a name for logs: "jemalloc" or "glibc". */
const char *gd_heap_allocator(void);

/* The process's resident memory now (/proc/self/statm), in bytes; 0 when unreadable. */
int64_t gd_heap_resident_bytes(void);
/* Bytes jemalloc's heap serves now (its "stats.allocated", refreshed); 0 on glibc, or where
 * another allocator (valgrind's) took jemalloc's place and it has nothing to say. */
uint64_t gd_heap_jemalloc_allocated(void);

/* Gives the allocator's free memory back to the system now: glibc's malloc_trim(0), or
 * jemalloc's purge of every arena (its own decay would return it only 10 s later, and only
 * while the process keeps allocating). */
void gd_heap_release(void);

#endif
