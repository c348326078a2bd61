/* gd_domain.c — see gd_domain.h. */
#include "gd_domain.h"
#include <ctype.h>
#include <stdio.h>
#include <string.h>

const gd_watched_kind *gd_domain_kind(const gd_domain *d, const char *kind)
{
    for (int i = 0; d && kind && i < d->nkinds; i++)
        if (strcmp(d->kinds[i].kind, kind) == 0)
            return &d->kinds[i];
    return NULL;
}

int gd_domain_kind_list(const gd_domain *d, char *buf, size_t cap)
{
    size_t used = 0;
    if (!buf || cap == 0)
        return -1;
    buf[0] = '\0';
    for (int i = 0; d && i < d->nkinds; i++) {
        int n = snprintf(buf + used, cap - used, "%s%s", i ? "," : "", d->kinds[i].kind);
        if (n < 0 || (size_t)n >= cap - used)
            return -1;
        used += (size_t)n;
    }
    return (int)used;
}

size_t gd_domain_member_cluster_len(const char *member)
{
    const char *dash = member ? strrchr(member, '-') : NULL;
    if (!dash || dash == member || !dash[1])
        return 0;
    for (const char *p = dash + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    return (size_t)(dash - member);
}
