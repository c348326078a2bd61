/* gd_quantity.h — Kubernetes resource quantities ("1Gi", "500m", "2e3", 1024), as the
 * API server writes them, read into a number. The operator compares them (resources drift,
 * volume sizes) and the node agent's volume resizer does too; one parser for both. */
#ifndef GD_QUANTITY_H
#define GD_QUANTITY_H
#include <stdbool.h>
#include <cjson/cJSON.h>

/* q a JSON string or number; false when it is not a quantity (then *out is untouched). */
bool gd_quantity_parse(const cJSON *q, long double *out);

#endif
