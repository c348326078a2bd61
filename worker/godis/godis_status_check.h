/* godis_status_check.h — is a GodisCluster's recorded status something the planner may act
 * on? The status is the operator's own record of membership (docs/reconcile.md rules 1,
 * 2: intent before side effects, ids never reused), but anyone with access to the status
 * subresource can write it, and a value that is not what the operator writes would make
 * the planner act on nonsense: a member id of 1e300, a nextID below a member's id (the
 * next scale-out would reuse that id: two Raft members with one id), a member listed
 * twice. Such a status gets a condition and an Event (reason InvalidStatus) and no
 * membership change, until someone repairs it by hand; the message names the field and
 * what is wrong. */
#ifndef GODIS_STATUS_CHECK_H
#define GODIS_STATUS_CHECK_H
#include <stdbool.h>
#include <cjson/cJSON.h>

/* True when status is absent or usable; else false with one line in msg. */
bool godis_status_check(const cJSON *cluster, char *msg, int msgcap);

#endif
