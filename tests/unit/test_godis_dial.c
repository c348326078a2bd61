/* test_godis_dial.c — where the GodisCluster controller sends `cluster meet` (issue 15.2):
 * to the member's pod IP from the Pod cache first, then to its Service name in the
 * cluster's DNS domain; and, when both fail, one Warning Event naming the member, every
 * address tried and the cause. Nothing listens on the port dialled (a loopback port just
 * closed) and the loopback guard is on, so the Service name is never sent to DNS: no
 * address outside 127.0.0.0/8 is dialled. The cache is a fixed set of objects; the API
 * server is the scriptable httpd helper, which records the Event. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "client_fixture.h"
#include "godis_fake.h"
#include "godis_client.h"
#include "godis_children.h"
#include "godis_plan.h"
#include "godis_status.h"
#include "godis_write.h"
#include "godis_status_check.h"
#include "godis_input.h"
#include "godis_place.h"
#include "godis_reconcile.h"
#include "godis_retire.h"
#include "gd_json.h"

#define OWNER "\"ownerReferences\":[{\"apiVersion\":\"kumkeehyun.github.com/v1\","      \
              "\"kind\":\"GodisCluster\",\"name\":\"c\",\"uid\":\"cu\",\"controller\":true}]"

/* Scaling out to 4: the intent recorded, the ConfigMap already listing 4, member 4's Godis
 * created (join=true) and its pod Ready: next is meet. */
static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    if (strcmp(kind, "GodisCluster") == 0 && strcmp(name, "c") == 0)
        return cJSON_Parse(
            "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
            "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"9\","
            "\"generation\":2},\"spec\":{\"replicas\":4},\"status\":{\"status\":\"Scaling\","
            "\"members\":[1,2,3],\"nextID\":5,\"scaleOutID\":4,\"scaleInID\":0,\"replicas\":3,"
            "\"observedGeneration\":2}}");
    if (strcmp(kind, "ConfigMap") == 0 && strcmp(name, "c-config") == 0) {
        char v[1024];
        int64_t ids[] = {1, 2, 3, 4};
        godis_initial_cluster(v, sizeof v, "ns", "c", ids, 4, NULL);
        char buf[2048];
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c-config\","
                 "\"namespace\":\"ns\",\"labels\":{\"cluster-name\":\"c\"}," OWNER "},"
                 "\"data\":{\"initial-cluster\":\"%s\"}}", v);
        return cJSON_Parse(buf);
    }
    return NULL;
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    cJSON *arr = cJSON_CreateArray();
    char buf[1024];
    if (strcmp(kind, "Godis") == 0) {
        for (int id = 1; id <= 4; id++) {
            snprintf(buf, sizeof buf,
                     "{\"metadata\":{\"name\":\"c-%d\",\"namespace\":\"ns\",\"uid\":\"g%d\","
                     "\"labels\":{\"cluster-name\":\"c\"}," OWNER "},\"spec\":{\"preferred\":%s}}",
                     id, id, id < 4 ? "true" : "false");
            cJSON_AddItemToArray(arr, cJSON_Parse(buf));
        }
    } else if (strcmp(kind, "Pod") == 0 && v) {   /* the member's Ready pod, IP 127.0.0.1 */
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"%s-x\",\"namespace\":\"ns\",\"labels\":{\"node-name\":\"%s\"}},"
                 "\"status\":{\"podIP\":\"127.0.0.1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 v, v);
        cJSON_AddItemToArray(arr, cJSON_Parse(buf));
    }
    return arr;
}

/* The Event the reconcile posted (its message), or NULL. */
static char *event_message(client_fixture *f)
{
    for (int i = 0; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "POST") || !strstr(q->uri, "/events")) continue;
        cJSON *ev = cJSON_Parse(q->body);
        char *m = strdup(gd_json_str_or(ev, "message", ""));
        assert_string_equal(gd_json_str_or(ev, "reason", ""), "MeetFailed");
        assert_string_equal(gd_json_str_or(ev, "type", ""), "Warning");
        cJSON_Delete(ev);
        return m;
    }
    return NULL;
}

static void meet_fails(client_fixture *f, const char *domain, const char *want_name)
{
    setenv(GODIS_LOOPBACK_ENV, "1", 1);       /* the test environment: never ask DNS */
    unsetenv("GODIS_HOSTS_FILE");
    int port = gf_closed_port();
    assert_true(port > 0);
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .godis_port = port,
                   .godis_timeout_ms = 200, .node_notready_grace_ms = 40000,
                   .cluster_domain = domain};
    godis_result r = godis_reconcile_cluster(&e, "ns/c");
    assert_int_equal(r.kind, GODIS_ERROR);
    char *msg = event_message(f);
    assert_non_null(msg);
    fprintf(stderr, "  event: %s\n", msg);
    char ip[64];
    snprintf(ip, sizeof ip, "connect 127.0.0.1:%d", port);
    /* the member, the pod IP first with its cause, then the Service name with its cause */
    assert_non_null(strstr(msg, "cluster meet 4 through member 1 failed"));
    char *at_ip = strstr(msg, ip), *at_name = strstr(msg, want_name);
    assert_non_null(at_ip);
    assert_non_null(strstr(msg, "refused"));
    assert_non_null(at_name);
    assert_true(at_ip < at_name);
    assert_non_null(strstr(msg, "does not ask DNS"));
    free(msg);
}

static void test_pod_ip_then_service_name(void **state)
{
    meet_fails(*state, NULL, "c-1-endpoint.ns.svc.cluster.local");
}

static void test_cluster_domain_flag(void **state)
{
    meet_fails(*state, "corp.example", "c-1-endpoint.ns.svc.corp.example");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pod_ip_then_service_name, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_cluster_domain_flag, client_setup, client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
