/* test_chaos_checks.c — the chaos suite's invariant checks (tools/chaos) catch what they
 * are there to catch: fed the states, trace lines and audit lines of a broken operator they
 * report violations, and stay silent on a correct one. Without this, a campaign ending with
 * "0 violations" would prove nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "gd_map.h"
#include "gd_time.h"
#include "../../tools/chaos/chaos_internal.h"

static chaos x;

static int setup(void **state)
{
    (void)state;
    memset(&x, 0, sizeof x);
    pthread_mutex_init(&x.mu, NULL);
    x.nclusters = 10;
    x.faults = 30;
    x.seed = 21;
    snprintf(x.ns, sizeof x.ns, "chaos");
    x.t0 = gd_mono_ms();
    x.quiet = true;                 /* the violation lines are expected here */
    ch_membership_reset();
    return 0;
}

static int total(void)
{
    int n = 0;
    for (int i = 0; i < I__COUNT; i++) n += x.violations[i];
    return n;
}

static void cluster(const char *type, const char *status_json, bool gap)
{
    char doc[600];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"c03\",\"resourceVersion\":\"9\"},\"status\":%s}", status_json);
    cJSON *o = cJSON_Parse(doc);
    assert_non_null(o);
    ch_on_cluster(&x, type, o, gap);
    cJSON_Delete(o);
}

static void configmap(const char *value)
{
    char doc[600];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"c03-config\"},\"data\":{\"initial-cluster\":\"%s\"}}", value);
    cJSON *o = cJSON_Parse(doc);
    ch_on_configmap(&x, "MODIFIED", o, false);
    cJSON_Delete(o);
}

static void one_change_at_a_time(void **state)
{
    (void)state;
    cluster("ADDED", "{\"members\":[1,2,3],\"nextID\":4}", false);
    cluster("MODIFIED", "{\"members\":[1,2,3],\"nextID\":5,\"scaleOutID\":4}", false);
    cluster("MODIFIED", "{\"members\":[1,2,3,4],\"nextID\":5}", false);
    cluster("MODIFIED", "{\"members\":[1,2,3],\"nextID\":5,\"scaleInID\":4}", false);
    assert_int_equal(total(), 0);                           /* a correct operator */
    cluster("MODIFIED", "{\"members\":[1],\"nextID\":5}", false);        /* two at once */
    assert_int_equal(x.violations[I_ONE_CHANGE], 1);
    cluster("MODIFIED", "{\"members\":[1],\"nextID\":6,\"scaleOutID\":5,\"scaleInID\":1}", false);
    assert_int_equal(x.violations[I_ONE_CHANGE], 2);         /* two in flight */
    /* after a gap (a relist) several changes may have been missed: not one step */
    cluster("SYNC", "{\"members\":[1,6,7],\"nextID\":8}", true);
    assert_int_equal(x.violations[I_ONE_CHANGE], 2);
    configmap("1@u,6@u,7@u");
    configmap("1@u,6@u,7@u,8@u");
    assert_int_equal(x.violations[I_ONE_CHANGE], 2);
    configmap("1@u,8@u");
    assert_int_equal(x.violations[I_ONE_CHANGE], 3);
}

static void ids_are_never_reused(void **state)
{
    (void)state;
    cluster("ADDED", "{\"members\":[1,2,3],\"nextID\":4}", false);
    cluster("MODIFIED", "{\"members\":[1,2],\"nextID\":4}", false);     /* 3 removed */
    assert_int_equal(total(), 0);
    cluster("MODIFIED", "{\"members\":[1,2],\"nextID\":4,\"scaleOutID\":3}", false);
    assert_int_equal(x.violations[I_ID_REUSE], 1);          /* 3 handed out again */
    cluster("MODIFIED", "{\"members\":[1,2,3],\"nextID\":4}", false);
    assert_int_equal(x.violations[I_ID_REUSE], 2);
    cluster("MODIFIED", "{\"members\":[1,2,3],\"nextID\":2}", false);
    assert_int_equal(x.violations[I_ID_REUSE], 4);          /* nextID down, and 3 still back */
    cJSON *g = cJSON_Parse("{\"metadata\":{\"name\":\"c03-3\"}}");
    ch_on_godis(&x, "SYNC", g, true);                           /* an old object seen again: fine */
    assert_int_equal(x.violations[I_ID_REUSE], 4);
    ch_on_godis(&x, "ADDED", g, false);                         /* created again */
    assert_int_equal(x.violations[I_ID_REUSE], 5);
    cJSON_Delete(g);
    configmap("1@u,2@u,3@u");
    assert_int_equal(x.violations[I_ID_REUSE], 6);
}

static void a_key_in_two_reconciles_at_once(void **state)
{
    (void)state;
    gd_map *open = gd_map_new(free);
    char line[200];
    int me = (int)getpid();
    snprintf(line, sizeof line, "B 1 %d 11 godiscluster chaos/c01", me);
    ch_trace_line(&x, open, line);
    snprintf(line, sizeof line, "E 2 %d 11 godiscluster chaos/c01", me);
    ch_trace_line(&x, open, line);
    snprintf(line, sizeof line, "B 3 %d 12 godiscluster chaos/c01", me);
    ch_trace_line(&x, open, line);
    snprintf(line, sizeof line, "B 3 %d 12 godis chaos/c01-1", me);   /* another key */
    ch_trace_line(&x, open, line);
    assert_int_equal(total(), 0);
    snprintf(line, sizeof line, "B 4 %d 13 godiscluster chaos/c01", me);  /* 12 still in it */
    ch_trace_line(&x, open, line);
    assert_int_equal(x.violations[I_EXCLUSIVE], 1);
    /* a worker that died in a reconcile never ends it: its successor may begin */
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(line, sizeof line, "B 5 %d 1 godis chaos/c02-1", (int)dead);
    ch_trace_line(&x, open, line);
    snprintf(line, sizeof line, "B 6 %d 14 godis chaos/c02-1", me);
    ch_trace_line(&x, open, line);
    assert_int_equal(x.violations[I_EXCLUSIVE], 1);
    gd_map_destroy(&open);
}

static void audit(ch_holders *h, const char *ua, const char *resource, const char *name,
                  const char *recv, const char *done)
{
    char line[800];
    snprintf(line, sizeof line,
             "{\"userAgent\":\"%s\",\"verb\":\"update\",\"objectRef\":{\"resource\":\"%s\","
             "\"namespace\":\"chaos\",\"name\":\"%s\"},\"responseStatus\":{\"code\":200},"
             "\"requestReceivedTimestamp\":\"%s\",\"stageTimestamp\":\"%s\"}",
             ua, resource, name, recv, done);
    ch_audit_line(&x, h, line);
}

static void no_write_after_the_lease_is_lost(void **state)
{
    (void)state;
    ch_holders h = {.n = 0};
    const char *m0 = "godis-operator (manager; identity=chaos-m0-0)";
    const char *m1 = "godis-operator (manager; identity=chaos-m1-0)";
    const char *w0 = "godis-operator (worker; manager=chaos-m0-0)";
    const char *w1 = "godis-operator (worker; manager=chaos-m1-0)";
    audit(&h, m0, "leases", CH_LEASE, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.010000Z");
    audit(&h, w0, "godisclusters", "c01", "2026-01-01T00:00:01.000000Z", "2026-01-01T00:00:01.010000Z");
    audit(&h, m0, "leases", CH_LEASE, "2026-01-01T00:00:02.000000Z", "2026-01-01T00:00:02.010000Z");
    audit(&h, m1, "leases", "some-other-lease", "2026-01-01T00:00:03.000000Z", "2026-01-01T00:00:03.010000Z");
    assert_int_equal(total(), 0);
    /* m1 takes over at 20.01 s; a write of m0's workers received after that is a violation */
    audit(&h, m1, "leases", CH_LEASE, "2026-01-01T00:00:20.000000Z", "2026-01-01T00:00:20.010000Z");
    audit(&h, w0, "godises", "c01-4", "2026-01-01T00:00:19.000000Z", "2026-01-01T00:00:20.020000Z");
    assert_int_equal(total(), 0);           /* received before the takeover */
    audit(&h, w1, "godises", "c01-4", "2026-01-01T00:00:21.000000Z", "2026-01-01T00:00:21.010000Z");
    assert_int_equal(total(), 0);
    audit(&h, w0, "configmaps", "c01-config", "2026-01-01T00:00:22.000000Z", "2026-01-01T00:00:22.010000Z");
    assert_int_equal(x.violations[I_FENCED], 1);
}

/* Which members the quorum check counts, and which a fault excuses. */
static void quorum_counts_what_raft_counts(void **state)
{
    (void)state;
    cJSON *gc = cJSON_Parse("{\"metadata\":{\"name\":\"c03\"},\"status\":{\"members\":[1,2,3,4],"
                            "\"scaleInID\":4,\"scaleOutID\":5}}");
    cJSON *pods = cJSON_Parse("{\"items\":["
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"node-name\":\"c03-1\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"podIP\":\"127.0.0.11\"}},"
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"node-name\":\"c03-2\"}},\"spec\":{\"nodeName\":\"n2\"},\"status\":{\"podIP\":\"127.0.0.12\"}}]}");
    ch_member m[CH_MAX_MEMBERS];
    ch_ran_set ran = {{0}};
    ch_mark_run(&ran, 1);
    ch_mark_run(&ran, 2);
    ch_mark_run(&ran, 3);                            /* 3 ran once: its pod is gone now */
    cJSON *gds = cJSON_Parse("{\"items\":[{\"metadata\":{\"name\":\"c03-3\"},"
                             "\"status\":{\"volumeNode\":\"n3\"}}]}");
    int n = ch_members_of(gc, pods, gds, &ran, m);
    assert_int_equal(n, 5);              /* 1, 2, 3 (no pod), 5 joining, 4 leaving (last) */
    assert_true(m[4].leaving && m[4].id == 4);
    assert_false(m[3].leaving || m[0].leaving);
    assert_int_equal(m[0].id, 1);
    assert_string_equal(m[0].ip, "127.0.0.11");
    assert_string_equal(m[1].node, "n2");
    assert_int_equal(m[2].id, 3);
    assert_string_equal(m[2].ip, "");
    assert_true(m[3].joining && m[3].id == 5);
    assert_false(ch_excused(&x, 3, &m[0]));
    assert_false(ch_excused(&x, 3, &m[2]));          /* a member without a pod is not excused */
    assert_true(ch_excused(&x, 3, &m[3]));           /* met, its pod not running yet: godis */
    ch_hit_member(&x, 3, 3, 60000);
    ch_hit_node(&x, "n2", 60000);
    ch_hit_node(&x, "n1", -1);                     /* over already */
    assert_true(ch_excused(&x, 3, &m[2]));
    assert_true(ch_excused(&x, 3, &m[1]));
    assert_false(ch_excused(&x, 3, &m[0]));
    assert_false(ch_excused(&x, 4, &m[2]));          /* another cluster's member 3 */
    /* 3 recorded but never run yet (met, its pod not created by the control plane yet):
     * joining like the scale-out member, excused while it has no pod IP */
    ch_ran_set fresh = {{0}};
    ch_mark_run(&fresh, 1);
    ch_mark_run(&fresh, 2);
    n = ch_members_of(gc, pods, gds, &fresh, m);
    assert_true(m[2].joining && m[2].id == 3);
    assert_true(ch_excused(&x, 4, &m[2]));
    assert_false(m[0].joining);
    assert_false(ch_excused(&x, 4, &m[0]));
    /* a member that ran and has no pod now: its node is the one its pods are pinned to
     * (status.volumeNode), and a fault on that node keeps it down */
    assert_string_equal(m[2].node, "n3");
    m[2].joining = false;
    assert_false(ch_excused(&x, 5, &m[2]));
    ch_hit_node(&x, "n3", 60000);
    assert_true(ch_excused(&x, 5, &m[2]));
    cJSON_Delete(gc);
    cJSON_Delete(pods);
    cJSON_Delete(gds);
}

/* The newcomer gets its Godis and pod before its meet, recorded in status.members only after
 * the meet's +OK: until then Raft may or may not count it, and the check must hold for both.
 * From a 200-fault campaign: c03 2 -> 3, member 9's node killed, member 15 running but not
 * yet met: the 2-member cluster {1, 9} had lost its quorum to the fault, not the operator. */
static void quorum_with_and_without_the_newcomer(void **state)
{
    (void)state;
    cJSON *gc = cJSON_Parse("{\"metadata\":{\"name\":\"c03\"},\"status\":{\"members\":[1,9],"
                            "\"scaleOutID\":15}}");
    cJSON *pods = cJSON_Parse("{\"items\":["
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"node-name\":\"c03-1\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"podIP\":\"127.0.0.11\"}},"
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"node-name\":\"c03-9\"}},\"spec\":{\"nodeName\":\"n2\"},\"status\":{\"podIP\":\"127.0.0.12\"}},"
        "{\"metadata\":{\"name\":\"c\",\"labels\":{\"node-name\":\"c03-15\"}},\"spec\":{\"nodeName\":\"n3\"},\"status\":{\"podIP\":\"127.0.0.13\"}}]}");
    cJSON *gds = cJSON_Parse("{\"items\":[]}");
    ch_member m[CH_MAX_MEMBERS];
    int n = ch_members_of(gc, pods, gds, NULL, m);
    assert_int_equal(n, 3);
    assert_true(m[2].unconfirmed && m[2].id == 15);
    assert_false(m[0].unconfirmed || m[1].unconfirmed);
    assert_true(ch_quorum_expected(&x, 3, m, n));              /* nothing down */
    ch_hit_node(&x, "n2", 60000);                              /* member 9's node */
    assert_false(ch_quorum_expected(&x, 3, m, n));             /* {1, 9}: 1 of 2 */
    /* once the meet is recorded the newcomer is a voter: 2 of 3 must write */
    cJSON_Delete(gc);
    gc = cJSON_Parse("{\"metadata\":{\"name\":\"c03\"},\"status\":{\"members\":[1,9,15],"
                     "\"scaleOutID\":15}}");
    n = ch_members_of(gc, pods, gds, NULL, m);
    assert_int_equal(n, 3);
    assert_false(m[2].unconfirmed);
    assert_true(ch_quorum_expected(&x, 3, m, n));
    /* the newcomer's node down while it is unconfirmed: {1, 9} both up must write */
    cJSON_Delete(gc);
    gc = cJSON_Parse("{\"metadata\":{\"name\":\"c03\"},\"status\":{\"members\":[1,9],"
                     "\"scaleOutID\":15}}");
    n = ch_members_of(gc, pods, gds, NULL, m);
    x.nhits = 0;
    ch_hit_node(&x, "n3", 60000);
    assert_true(ch_quorum_expected(&x, 3, m, n));
    ch_hit_node(&x, "n1", 60000);                               /* and member 1's */
    assert_false(ch_quorum_expected(&x, 3, m, n));
    cJSON_Delete(gc);
    cJSON_Delete(pods);
    cJSON_Delete(gds);
}

/* The member being forgotten counts until its forget commits, and the forget needs a
 * quorum of the configuration that still holds it. From a 200-fault campaign: c03 7 -> 1
 * reached {1, 9} just as member 9's node was killed; the forget of 9 could not commit
 * without 9's vote, and status showed members [1, 9], scaleInID 9: no write through member
 * 1 is the fault's doing, not the operator's. */
static void quorum_with_and_without_the_leaver(void **state)
{
    (void)state;
    cJSON *gc = cJSON_Parse("{\"metadata\":{\"name\":\"c03\"},\"status\":{\"members\":[1,9],"
                            "\"scaleInID\":9}}");
    cJSON *pods = cJSON_Parse("{\"items\":["
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"node-name\":\"c03-1\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"podIP\":\"127.0.0.11\"}},"
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"node-name\":\"c03-9\"}},\"spec\":{\"nodeName\":\"n2\"},\"status\":{\"podIP\":\"127.0.0.12\"}}]}");
    cJSON *gds = cJSON_Parse("{\"items\":[]}");
    ch_member m[CH_MAX_MEMBERS];
    int n = ch_members_of(gc, pods, gds, NULL, m);
    assert_int_equal(n, 2);
    assert_true(m[1].leaving && m[1].id == 9);
    assert_true(ch_quorum_expected(&x, 3, m, n));
    ch_hit_node(&x, "n2", 60000);                               /* member 9's node */
    assert_false(ch_quorum_expected(&x, 3, m, n));
    x.nhits = 0;
    ch_hit_node(&x, "n1", 60000);                               /* the survivor's node */
    assert_false(ch_quorum_expected(&x, 3, m, n));
    /* 3 -> 2, leaving 3 on a dead node: {1, 2} and {1, 2, 3} both have a majority up */
    cJSON_Delete(gc);
    gc = cJSON_Parse("{\"metadata\":{\"name\":\"c03\"},\"status\":{\"members\":[1,9,3],"
                     "\"scaleInID\":3}}");
    x.nhits = 0;
    n = ch_members_of(gc, pods, gds, NULL, m);
    assert_int_equal(n, 3);
    ch_hit_member(&x, 3, 3, 60000);
    assert_true(ch_quorum_expected(&x, 3, m, n));
    cJSON_Delete(gc);
    cJSON_Delete(pods);
    cJSON_Delete(gds);
}

/* A fault deleted a member's pod: the member is excused until a replacement pod exists,
 * however long kube-controller-manager takes (bounded), then no longer. */
static void deleted_pod_excused_until_replaced(void **state)
{
    (void)state;
    ch_member m = {.id = 1, .has_pod = false};
    assert_false(ch_excused(&x, 7, &m));
    ch_hit_pod(&x, 7, 1, -1, 600000);              /* the 90 s are over, no pod yet */
    assert_true(ch_excused(&x, 7, &m));
    assert_false(ch_excused(&x, 6, &m));            /* another cluster's member 1 */
    m.has_pod = true;                               /* replaced: counted again */
    assert_false(ch_excused(&x, 7, &m));
    /* what counts as replaced: a pod bound to a node, or one the scheduler found no node
     * for; not one still waiting for kube-scheduler */
    const char *pods[] = {
        "{\"items\":[{\"metadata\":{\"name\":\"p\",\"labels\":{\"node-name\":\"c07-1\"}},\"spec\":{}}]}",
        "{\"items\":[{\"metadata\":{\"name\":\"p\",\"labels\":{\"node-name\":\"c07-1\"}},\"spec\":{\"nodeName\":\"n1\"}}]}",
        ("{\"items\":[{\"metadata\":{\"name\":\"p\",\"labels\":{\"node-name\":\"c07-1\"}},\"spec\":{},"
         "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}]}"),
    };
    const bool replaced[] = {false, true, true};
    cJSON *gc = cJSON_Parse("{\"metadata\":{\"name\":\"c07\"},\"status\":{\"members\":[1]}}");
    cJSON *gds = cJSON_Parse("{\"items\":[]}");
    for (int i = 0; i < 3; i++) {
        cJSON *pl = cJSON_Parse(pods[i]);
        ch_member ms[CH_MAX_MEMBERS];
        assert_int_equal(ch_members_of(gc, pl, gds, NULL, ms), 1);
        assert_int_equal(ms[0].has_pod, replaced[i]);
        assert_int_equal(ch_excused(&x, 7, &ms[0]), !replaced[i]);
        cJSON_Delete(pl);
    }
    cJSON_Delete(gc);
    cJSON_Delete(gds);
    m.has_pod = false;
    ch_hit_pod(&x, 8, 1, -1, -1);                   /* past the bound */
    assert_false(ch_excused(&x, 8, &m));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(one_change_at_a_time, setup),
        cmocka_unit_test_setup(ids_are_never_reused, setup),
        cmocka_unit_test_setup(a_key_in_two_reconciles_at_once, setup),
        cmocka_unit_test_setup(no_write_after_the_lease_is_lost, setup),
        cmocka_unit_test_setup(quorum_counts_what_raft_counts, setup),
        cmocka_unit_test_setup(quorum_with_and_without_the_newcomer, setup),
        cmocka_unit_test_setup(quorum_with_and_without_the_leaver, setup),
        cmocka_unit_test_setup(deleted_pod_excused_until_replaced, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
