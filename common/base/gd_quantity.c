/* gd_quantity.c — see gd_quantity.h. */
#include "gd_quantity.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* <number><suffix> with the suffixes of Kubernetes' resource.Quantity. */
bool gd_quantity_parse(const cJSON *q, long double *out)
{
    if (cJSON_IsNumber(q)) { *out = q->valuedouble; return true; }
    if (!cJSON_IsString(q) || !*q->valuestring) return false;
    char *end;
    errno = 0;
    long double v = strtold(q->valuestring, &end);
    if (errno || end == q->valuestring) return false;
    static const struct { const char *sfx; long double mul; } units[] = {
        {"Ki", 1024.0L}, {"Mi", 1048576.0L}, {"Gi", 1073741824.0L}, {"Ti", 1099511627776.0L},
        {"Pi", 1125899906842624.0L}, {"Ei", 1152921504606846976.0L}, {"n", 1e-9L},
        {"u", 1e-6L}, {"m", 1e-3L}, {"", 1.0L}, {"k", 1e3L}, {"M", 1e6L}, {"G", 1e9L},
        {"T", 1e12L}, {"P", 1e15L}, {"E", 1e18L}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(end, units[i].sfx) == 0) { *out = v * units[i].mul; return true; }
    return false;      /* strtold took an exponent ("1e3") already; anything else is not ours */
}
