/* test_proto.c — FNV-1a, shard of objects per docs/PROTOCOL.md, topic strings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "gd_proto.h"
#include "gd_json.h"

static void test_fnv(void **state)
{
    /* reference vectors of FNV-1a 64 */
    assert_true(gd_fnv1a64("", 0) == 0xcbf29ce484222325ULL);
    assert_true(gd_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(gd_fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_cluster_shard(void **state)
{
    int s = gd_shard_of_cluster("prod", "web");
    assert_int_equal(s, (int)(gd_fnv1a64("prod/web", 8) % GD_NSHARDS));
    assert_in_range(s, 0, GD_NSHARDS - 1);
    assert_int_equal(gd_shard_of_cluster(NULL, "x"), GD_SHARD_BROADCAST);
    /* spread: 1000 clusters hit most shards */
    int seen[GD_NSHARDS] = { 0 }, distinct = 0;
    for (int i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%d", i);
        int sh = gd_shard_of_cluster("default", name);
        if (!seen[sh]++)
            distinct++;
    }
    assert_true(distinct > 200);
}

static int shard_of(const char *kind, const char *json)
{
    cJSON *o = gd_json_parse(json, strlen(json));
    assert_non_null(o);
    int s = gd_shard_of_object(kind, o);
    cJSON_Delete(o);
    return s;
}

static void test_object_shard(void **state)
{
    int web = gd_shard_of_cluster("prod", "web");
    assert_int_equal(shard_of("GodisCluster", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"web\"}}"), web);
    /* label wins */
    assert_int_equal(shard_of("Godis", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"web-3\","
                                       "\"labels\":{\"cluster-name\":\"web\"}}}"), web);
    /* controller owner GodisCluster */
    assert_int_equal(shard_of("ConfigMap", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"web-config\","
                                           "\"ownerReferences\":[{\"kind\":\"GodisCluster\",\"name\":\"web\",\"controller\":true}]}}"), web);
    /* controller owner Godis, no label: strip -<id> */
    assert_int_equal(shard_of("Service", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"web-12-endpoint\","
                                         "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"web-12\",\"controller\":true}]}}"), web);
    assert_int_equal(shard_of("ReplicaSet", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"my-web-2\","
                                            "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"my-web-2\",\"controller\":true}]}}"),
                     gd_shard_of_cluster("prod", "my-web"));
    /* Godis owner whose name has no numeric id: no cluster */
    assert_int_equal(shard_of("Service", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"x\","
                                         "\"ownerReferences\":[{\"kind\":\"Godis\",\"name\":\"web-x\",\"controller\":true}]}}"),
                     GD_SHARD_BROADCAST);
    /* non-controller owner does not count */
    assert_int_equal(shard_of("ConfigMap", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"c\","
                                           "\"ownerReferences\":[{\"kind\":\"GodisCluster\",\"name\":\"web\"}]}}"),
                     GD_SHARD_BROADCAST);
    /* foreign owner, Node, cluster-scoped, hostile */
    assert_int_equal(shard_of("Pod", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"p\","
                                     "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-1\",\"controller\":true}]}}"),
                     GD_SHARD_BROADCAST);
    assert_int_equal(shard_of("Node", "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"cluster-name\":\"web\"}}}"),
                     GD_SHARD_BROADCAST);
    assert_int_equal(shard_of("Pod", "{\"metadata\":{\"name\":\"p\"}}"), GD_SHARD_BROADCAST);
    assert_int_equal(shard_of("Pod", "{}"), GD_SHARD_BROADCAST);
    assert_int_equal(shard_of("Pod", "{\"metadata\":{\"namespace\":\"prod\",\"name\":\"p\",\"labels\":{\"cluster-name\":\"\"}}}"),
                     GD_SHARD_BROADCAST);
    assert_int_equal(shard_of(NULL, "{}"), GD_SHARD_BROADCAST);
    assert_int_equal(gd_shard_of_object("Pod", NULL), GD_SHARD_BROADCAST);
}

/* The change kinds round-trip through their names; other watch types are not changes. */
static void test_event_kinds(void **state)
{
    for (gd_ev ev = GD_EV_ADDED; ev <= GD_EV_SYNCED; ev++)
        assert_int_equal(gd_ev_parse(gd_ev_name(ev)), ev);
    assert_string_equal(gd_ev_name(GD_EV_MODIFIED), "MODIFIED");
    assert_int_equal(gd_ev_parse("BOOKMARK"), 0);
    assert_int_equal(gd_ev_parse("ERROR"), 0);
    assert_int_equal(gd_ev_parse("added"), 0);
    assert_int_equal(gd_ev_parse(NULL), 0);
    assert_string_equal(gd_ev_name((gd_ev)0), "?");
}

static void test_topics(void **state)
{
    char buf[8];
    gd_shard_topic(0, buf, sizeof buf);
    assert_string_equal(buf, "S000");
    gd_shard_topic(42, buf, sizeof buf);
    assert_string_equal(buf, "S042");
    gd_shard_topic(255, buf, sizeof buf);
    assert_string_equal(buf, "S255");
    gd_shard_topic(GD_SHARD_BROADCAST, buf, sizeof buf);
    assert_string_equal(buf, "B");
    gd_shard_topic(256, buf, sizeof buf);
    assert_string_equal(buf, "B");
    for (int i = 0; i < GD_NSHARDS; i++) {
        gd_shard_topic(i, buf, sizeof buf);
        assert_int_equal(gd_shard_parse_topic(buf), i);
    }
    assert_int_equal(gd_shard_parse_topic("B"), GD_SHARD_BROADCAST);
    assert_int_equal(gd_shard_parse_topic("S256"), -2);
    assert_int_equal(gd_shard_parse_topic("S42"), -2);
    assert_int_equal(gd_shard_parse_topic("S0420"), -2);
    assert_int_equal(gd_shard_parse_topic("s042"), -2);
    assert_int_equal(gd_shard_parse_topic("S-42"), -2);
    assert_int_equal(gd_shard_parse_topic(""), -2);
    assert_int_equal(gd_shard_parse_topic("BB"), -2);
    assert_int_equal(gd_shard_parse_topic(NULL), -2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv),
        cmocka_unit_test(test_cluster_shard),
        cmocka_unit_test(test_object_shard),
        cmocka_unit_test(test_topics),
        cmocka_unit_test(test_event_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
