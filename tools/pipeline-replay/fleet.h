/* fleet.h — pipeline-replay's --fleet lists (fleet.c). */
#ifndef PIPELINE_REPLAY_FLEET_H
#define PIPELINE_REPLAY_FLEET_H
#include <stdbool.h>
#include <stddef.h>

/* The list body (malloc'd, length in *len) for the resource in the request line `req`:
 * every object of that kind for `clusters` GodisClusters of `members` members each; NULL
 * for a resource the operator does not watch. */
char *fleet_list(const char *req, long clusters, long members, size_t *len);

#endif
