/* godis_status_check.c — see godis_status_check.h. */
#include "godis_status_check.h"
#include <stdio.h>
#include "gd_json.h"
#include "godis_client.h"
#include "godis_plan.h"

/* An integer field of status in [min, max] when present; false with msg otherwise. */
static bool int_field(const cJSON *st, const char *field, int64_t min, int64_t max, int64_t *out,
                      bool *present, char *msg, int cap)
{
    *present = false;
    *out = 0;
    gd_err e = gd_json_int(st, field, out);
    if (e == GD_ERR_MISSING) return true;
    if (e != GD_OK || *out < min || *out > max) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, field);
        char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
        snprintf(msg, cap, "status.%s must be an integer from %lld to %lld, got %.40s", field,
                 (long long)min, (long long)max, txt ? txt : "?");
        cJSON_free(txt);
        return false;
    }
    *present = true;
    return true;
}

/* status.members: distinct member ids. Sets *max_id. */
static bool members_field(const cJSON *st, int64_t *max_id, bool *present, char *msg, int cap)
{
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(st, "members");
    *max_id = 0;
    *present = members && !cJSON_IsNull(members);
    if (!*present) return true;
    if (!cJSON_IsArray(members)) {
        snprintf(msg, cap, "status.members must be a list of member ids");
        return false;
    }
    int64_t seen[GODIS_MAX_MEMBERS];
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, members) {
        double d = cJSON_IsNumber(m) ? m->valuedouble : 0;
        if (!(d >= 1 && d <= (double)GODIS_MAX_ID && d == (double)(int64_t)d)) {
            char *txt = cJSON_PrintUnformatted(m);
            snprintf(msg, cap, "status.members holds %.40s, not a member id (1 to %lld)",
                     txt ? txt : "?", (long long)GODIS_MAX_ID);
            cJSON_free(txt);
            return false;
        }
        int64_t id = (int64_t)d;
        for (int i = 0; i < n; i++) {
            if (seen[i] == id) {
                snprintf(msg, cap, "status.members lists member %lld twice", (long long)id);
                return false;
            }
        }
        if (n == GODIS_MAX_MEMBERS) {
            snprintf(msg, cap, "status.members lists more than %d members", GODIS_MAX_MEMBERS);
            return false;
        }
        seen[n++] = id;
        if (id > *max_id) *max_id = id;
    }
    return true;
}

bool godis_status_check(const cJSON *cluster, char *msg, int msgcap)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(cluster, "status");
    if (!st || cJSON_IsNull(st)) return true;
    if (!cJSON_IsObject(st)) {
        snprintf(msg, msgcap, "status must be an object");
        return false;
    }
    int64_t next, out_id, in_id, initial, max_member;
    bool has_next, has_out, has_in, has_initial, has_members;
    if (!int_field(st, "nextID", 0, GODIS_MAX_ID, &next, &has_next, msg, msgcap) ||
        !int_field(st, "scaleOutID", 0, GODIS_MAX_ID, &out_id, &has_out, msg, msgcap) ||
        !int_field(st, "scaleInID", 0, GODIS_MAX_ID, &in_id, &has_in, msg, msgcap) ||
        !int_field(st, "initialReplicas", 0, GODIS_MAX_MEMBERS, &initial, &has_initial, msg, msgcap) ||
        !members_field(st, &max_member, &has_members, msg, msgcap))
        return false;
    if (!has_members) return true;            /* adoption derives members and nextID */
    /* The operator hands out nextID and then raises it past every id it gave, so the next
     * member's id is new. A nextID at or below a recorded id would give that id again. */
    int64_t highest = max_member > out_id ? max_member : out_id;
    if (highest > 0 && (!has_next || next <= highest)) {
        if (has_next)
            snprintf(msg, msgcap, "status.nextID %lld is not above member id %lld: the next "
                     "member would reuse an id; set status.nextID above every id ever used",
                     (long long)next, (long long)highest);
        else
            snprintf(msg, msgcap, "status.nextID is missing while status.members is recorded; "
                     "set it above every member id ever used");
        return false;
    }
    return true;
}
