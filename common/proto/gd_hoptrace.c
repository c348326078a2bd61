/* gd_hoptrace.c — see gd_hoptrace.h. */
#include "gd_hoptrace.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "gd_time.h"

#define MAX_RECORDS (4u * 1024 * 1024)

typedef struct {
    uint64_t id;
    int64_t ns;
    uint32_t hop;
} record;

bool gd_hoptrace_enabled;
static record *records;
static atomic_uint nrecords;
static atomic_bool dumped;
static char path[512];

void gd_hoptrace_dump(void)
{
    if (!records || atomic_exchange(&dumped, true))
        return;
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    unsigned n = atomic_load(&nrecords);
    if (n > MAX_RECORDS)
        n = MAX_RECORDS;
    for (unsigned i = 0; i < n; i++)
        if (records[i].ns)
            fprintf(f, "%llu %u %lld\n", (unsigned long long)records[i].id, records[i].hop,
                    (long long)records[i].ns);
    fclose(f);
}

void gd_hoptrace_init(const char *proc)
{
    const char *dir = getenv("GD_HOPTRACE");
    if (!dir || !*dir || records)
        return;
    /* calloc: pages are touched only as records arrive */
    records = calloc(MAX_RECORDS, sizeof *records);
    if (!records)
        return;
    snprintf(path, sizeof path, "%s/%s.%d.hops", dir, proc, (int)getpid());
    atexit(gd_hoptrace_dump);
    gd_hoptrace_enabled = true;
}

void gd_hoptrace_record(uint64_t id, gd_hop hop, int64_t ns)
{
    if (!records)
        return;
    unsigned i = atomic_fetch_add_explicit(&nrecords, 1, memory_order_relaxed);
    if (i >= MAX_RECORDS)
        return;
    records[i].id = id;
    records[i].hop = (uint32_t)hop;
    records[i].ns = ns;
}

void gd_hoptrace_rv(const char *rv, gd_hop hop)
{
    if (!rv || !*rv)
        return;
    char *end;
    unsigned long long id = strtoull(rv, &end, 10);
    if (*end == '\0')
        gd_hoptrace_record(id, hop, gd_mono_ns());
}
