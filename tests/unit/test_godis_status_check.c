/* test_godis_status_check.c — a GodisCluster status the planner must not act on (issue 21.4:
 * objects that pass the CRD schema but are nonsense to the operator): ids that are not ids,
 * a member listed twice, a nextID that would hand out an id again. Each is refused with a
 * message naming the field; what the operator itself writes passes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "godis_status_check.h"

static bool check(const char *status_json, char *msg)
{
    char doc[1024];
    snprintf(doc, sizeof doc, "{\"spec\":{\"replicas\":3}%s%s}", status_json ? ",\"status\":" : "",
             status_json ? status_json : "");
    cJSON *c = cJSON_Parse(doc);
    assert_non_null(c);
    msg[0] = '\0';
    bool ok = godis_status_check(c, msg, 256);
    cJSON_Delete(c);
    return ok;
}

static void what_the_operator_writes_passes(void **state)
{
    (void)state;
    char msg[256];
    assert_true(check(NULL, msg));                                           /* new cluster */
    assert_true(check("{}", msg));
    assert_true(check("{\"status\":\"Running\",\"members\":[1,2,3],\"nextID\":4}", msg));
    assert_true(check("{\"status\":\"Scaling\",\"members\":[1,2,3],\"nextID\":5,\"scaleOutID\":4}", msg));
    assert_true(check("{\"status\":\"Scaling\",\"members\":[2,5],\"nextID\":9,\"scaleInID\":2}", msg));
    assert_true(check("{\"members\":[],\"nextID\":7}", msg));                /* all lost */
    /* seed 000's Go controller: no members recorded yet, adoption derives them */
    assert_true(check("{\"status\":\"Running\",\"nextID\":4,\"replicas\":3}", msg));
}

static void ids_that_are_not_ids_are_refused(void **state)
{
    (void)state;
    char msg[256];
    assert_false(check("{\"members\":[1,2,1e300],\"nextID\":4}", msg));
    assert_non_null(strstr(msg, "status.members"));
    assert_non_null(strstr(msg, "1e+300"));
    assert_false(check("{\"members\":[1,-3],\"nextID\":4}", msg));
    assert_false(check("{\"members\":[1,2.5],\"nextID\":4}", msg));
    assert_false(check("{\"members\":[1,\"2\"],\"nextID\":4}", msg));
    assert_false(check("{\"members\":[0],\"nextID\":4}", msg));
    assert_false(check("{\"members\":[2147483648],\"nextID\":4}", msg));
    assert_false(check("{\"members\":\"1,2,3\",\"nextID\":4}", msg));
    assert_non_null(strstr(msg, "list of member ids"));
    assert_false(check("[1,2]", msg));
    assert_non_null(strstr(msg, "status must be an object"));
}

static void a_member_twice_is_refused(void **state)
{
    (void)state;
    char msg[256];
    assert_false(check("{\"members\":[1,2,2],\"nextID\":4}", msg));
    assert_non_null(strstr(msg, "member 2 twice"));
}

static void a_nextid_that_would_reuse_an_id_is_refused(void **state)
{
    (void)state;
    char msg[256];
    assert_false(check("{\"members\":[1,2,3],\"nextID\":3}", msg));
    assert_non_null(strstr(msg, "status.nextID 3 is not above member id 3"));
    assert_false(check("{\"members\":[1,2],\"nextID\":4,\"scaleOutID\":4}", msg));
    assert_non_null(strstr(msg, "member id 4"));
    assert_false(check("{\"members\":[1,2,3]}", msg));
    assert_non_null(strstr(msg, "status.nextID is missing"));
    assert_false(check("{\"members\":[1],\"nextID\":\"9\"}", msg));
    assert_non_null(strstr(msg, "status.nextID must be an integer"));
    assert_false(check("{\"members\":[1],\"nextID\":5,\"scaleInID\":-1}", msg));
    assert_non_null(strstr(msg, "status.scaleInID"));
    assert_false(check("{\"members\":[1],\"nextID\":5,\"initialReplicas\":1e9}", msg));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(what_the_operator_writes_passes),
        cmocka_unit_test(ids_that_are_not_ids_are_refused),
        cmocka_unit_test(a_member_twice_is_refused),
        cmocka_unit_test(a_nextid_that_would_reuse_an_id_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
