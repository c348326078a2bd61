/* reconciler.c — the registry of reconciler sets (filled by constructors before main). */
#include "reconciler.h"
#include <string.h>

static gd_reconciler_set *registry;

void gd_reconciler_register(gd_reconciler_set *s)
{
    gd_reconciler_set **pp = &registry;   /* keep registration order: stable --help */
    while (*pp)
        pp = &(*pp)->next;
    s->next = NULL;
    *pp = s;
}

const gd_reconciler_set *gd_reconciler_find(const char *name)
{
    for (const gd_reconciler_set *s = registry; s && name; s = s->next)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

const gd_reconciler_set *gd_reconciler_first(void) { return registry; }
