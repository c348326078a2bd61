/* fuzz_review.c — the eviction webhook's input from the network (issue 19; anything in the
 * cluster network can reach the endpoint): an AdmissionReview body into webhook/review.c,
 * and, when it parses, the decision of webhook/decide.c over a pod given as the input's
 * second record (the pod the API server would return; an empty record: no such pod).
 *
 * Checked: a body that does not parse has a reason; one that parses yields a response that
 * is JSON, echoes the uid and allows or denies with a 404/429 code; an allowed answer never
 * goes with a mark, and only member pods are ever marked. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "../../webhook/review.c"
#include "../../webhook/decide.c"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    const uint8_t *rs = memchr(d, FZ_RS, len);
    size_t blen = rs ? (size_t)(rs - d) : len;
    wh_review r;
    char why[300] = "";
    if (wh_review_parse((const char *)d, blen, &r, why, sizeof why) != GD_OK) {
        if (!why[0]) abort();
        return 0;
    }
    cJSON *pod = rs ? gd_json_parse((const char *)rs + 1, len - blen - 1) : NULL;
    static wh_limiter *lim;
    if (!lim) lim = wh_limiter_new(1000, 4);
    static int64_t now;
    now += 300;
    wh_verdict v;
    wh_action a = wh_decide(&r, pod, lim, now, &v);
    if (a == WH_ACT_MARK && (!pod || !wh_pod_member(pod, NULL, 0))) abort();
    if (v.allowed != (a == WH_ACT_ALLOW)) abort();
    if (!v.allowed && v.code != 404 && v.code != 429) abort();
    char *out = wh_review_response(&r, &v);
    cJSON *o = out ? cJSON_Parse(out) : NULL;
    if (!o || strcmp(gd_json_str_or(o, "response.uid", ""), r.uid)) abort();
    cJSON_Delete(o);
    free(out);
    cJSON_Delete(pod);
    return 0;
}
