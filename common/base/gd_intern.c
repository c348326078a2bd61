/* gd_intern.c — see gd_intern.h. */
#include "gd_intern.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "gd_hash.h"

/* A slot goes from NULL to a name once, by compare-and-swap, and never back: a reader that
 * sees a name may compare it without a lock, and a probe that meets NULL knows the name is
 * absent (nothing is ever removed). .bss: pages of slots never probed cost no memory. */
static _Atomic(char *) slots[GD_INTERN_SLOTS];
static atomic_size_t used;

size_t gd_intern_count(void)
{
    return atomic_load_explicit(&used, memory_order_relaxed);
}

const char *gd_intern(const char *s)
{
    if (!s)
        return NULL;
    size_t len = strnlen(s, GD_INTERN_MAX_LEN + 1);
    if (len > GD_INTERN_MAX_LEN)
        return NULL;
    char *mine = NULL;          /* our copy, made once we know the name is new */
    size_t mask = GD_INTERN_SLOTS - 1, i = (size_t)gd_fnv1a64(s, len) & mask;
    for (size_t probes = 0; probes < GD_INTERN_SLOTS; probes++, i = (i + 1) & mask) {
        char *have = atomic_load_explicit(&slots[i], memory_order_acquire);
        if (!have) {
            /* Reserve room first: the count, not the slots, bounds the table, so a probe
             * sequence always ends at a NULL slot. */
            if (!mine) {
                if (atomic_fetch_add_explicit(&used, 1, memory_order_relaxed) >= GD_INTERN_MAX) {
                    atomic_fetch_sub_explicit(&used, 1, memory_order_relaxed);
                    return NULL;
                }
                if (!(mine = malloc(len + 1))) {
                    atomic_fetch_sub_explicit(&used, 1, memory_order_relaxed);
                    return NULL;
                }
                memcpy(mine, s, len + 1);
            }
            if (atomic_compare_exchange_strong_explicit(&slots[i], &have, mine,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire))
                return mine;
            /* another thread filled this slot first: have is its name */
        }
        if (strcmp(have, s) == 0) {
            if (mine) {         /* it published the same name: ours is not needed */
                free(mine);
                atomic_fetch_sub_explicit(&used, 1, memory_order_relaxed);
            }
            return have;
        }
    }
    if (mine) {                 /* unreachable while used < slots; kept for safety */
        free(mine);
        atomic_fetch_sub_explicit(&used, 1, memory_order_relaxed);
    }
    return NULL;
}

static bool intern_name(cJSON *j)
{
    if (!j->string || (j->type & cJSON_StringIsConst))
        return false;
    const char *shared = gd_intern(j->string);
    if (!shared)
        return false;
    cJSON_free(j->string);
    j->string = (char *)shared;       /* cJSON's field is not const; it is never written */
    j->type |= cJSON_StringIsConst;
    return true;
}

size_t gd_json_intern_names(cJSON *j)
{
    if (!j)
        return 0;
    size_t n = intern_name(j);
    for (cJSON *c = j->child; c; c = c->next)
        n += gd_json_intern_names(c);
    return n;
}
