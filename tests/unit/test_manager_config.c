/* test_manager_config.c — manager flags and YAML file: defaults, precedence, every kind
 * of bad input reported as one line naming the flag or file and key. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../manager/config_internal.h"
#include "gd_log.h"
#include "gd_time.h"

static gd_err parse(mgr_config *c, char *err, int argc, ...)
{
    char *argv[32] = {"godis-manager"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) argv[i + 1] = va_arg(ap, char *);
    va_end(ap);
    mgr_config_default(c, "/x/bin/godis-manager");
    err[0] = '\0';
    return mgr_config_parse(c, argc + 1, argv, err, 256);
}

static void test_defaults(void **st)
{
    (void)st;
    mgr_config c;
    char err[256];
    assert_int_equal(parse(&c, err, 0), GD_OK);
    assert_true(c.leader_elect);
    assert_int_equal(c.lease_duration_ms, 15000);
    assert_int_equal(c.renew_deadline_ms, 10000);
    assert_int_equal(c.retry_period_ms, 2000);
    assert_string_equal(c.health_addr, "127.0.0.1:8081");
    assert_string_equal(c.metrics_addr, "127.0.0.1:8080");
    assert_non_null(strstr(c.informer_bin, "/godis-informer"));
    assert_non_null(strstr(c.worker_bin, "/godis-worker"));
    assert_int_equal(c.workers, 2);
    assert_int_equal(c.max_concurrent_rollouts, 1);      /* issue 20.7: 1 per worker */
    assert_string_equal(c.default_godis_image, "");      /* the workers' own */
}

/* --max-concurrent-rollouts and --default-godis-image, as flags and as YAML keys. */
static void test_rollout_flags(void **st)
{
    (void)st;
    mgr_config c;
    char err[256];
    assert_int_equal(parse(&c, err, 4, "--max-concurrent-rollouts", "0", "--default-godis-image",
                           "registry.local/godis:1.2"), GD_OK);
    assert_int_equal(c.max_concurrent_rollouts, 0);
    assert_string_equal(c.default_godis_image, "registry.local/godis:1.2");
    assert_int_equal(parse(&c, err, 1, "--max-concurrent-rollouts=-1"), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "--max-concurrent-rollouts"));
    assert_int_equal(parse(&c, err, 1, "--default-godis-image=a b"), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "--default-godis-image"));
    const char *y = "max-concurrent-rollouts: 3\ndefault-godis-image: kbzjung359/godis:v9\n";
    mgr_config_default(&c, "/x/bin/godis-manager");
    assert_int_equal(mgr_config_yaml(&c, y, strlen(y), "t.yaml", err, sizeof err), GD_OK);
    assert_int_equal(c.max_concurrent_rollouts, 3);
    assert_string_equal(c.default_godis_image, "kbzjung359/godis:v9");
}

static void test_flags(void **st)
{
    (void)st;
    mgr_config c;
    char err[256];
    assert_int_equal(parse(&c, err, 8, "--workers=4", "--leader-elect-lease-duration", "4s",
                           "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
                           "--leader-elect=false", "--metrics-bind-address", "0"), GD_OK);
    assert_int_equal(c.workers, 4);
    assert_int_equal(c.lease_duration_ms, 4000);
    assert_int_equal(c.renew_deadline_ms, 3000);
    assert_int_equal(c.retry_period_ms, 500);
    assert_false(c.leader_elect);
    assert_string_equal(c.metrics_addr, "0");
    assert_int_equal(parse(&c, err, 1, "--leader-elect"), GD_OK);
    assert_true(c.leader_elect);
    assert_int_equal(parse(&c, err, 1, "--help"), GD_OK);
    assert_true(c.help);
}

/* pflag's syntax, plus `--flag false` for booleans (gd_flags.h), -h and --version. */
static void test_flag_convention(void **st)
{
    (void)st;
    mgr_config c;
    char err[256];
    assert_int_equal(parse(&c, err, 2, "--leader-elect", "false"), GD_OK);
    assert_false(c.leader_elect);
    assert_int_equal(parse(&c, err, 3, "--leader-elect", "false", "--workers=3"), GD_OK);
    assert_false(c.leader_elect);
    assert_int_equal(c.workers, 3);
    assert_int_equal(parse(&c, err, 2, "--leader-elect", "--workers=3"), GD_OK);
    assert_true(c.leader_elect);
    assert_int_equal(parse(&c, err, 2, "--leader-elect=0", "--heartbeat=250ms"), GD_OK);
    assert_false(c.leader_elect);
    assert_int_equal(c.heartbeat_ms, 250);
    assert_int_equal(parse(&c, err, 1, "-h"), GD_OK);
    assert_true(c.help);
    assert_int_equal(parse(&c, err, 1, "--version"), GD_OK);
    assert_true(c.version);
    /* help wins over what follows it, not over a bad flag before it */
    assert_int_equal(parse(&c, err, 2, "--help", "--nope"), GD_OK);
    assert_int_equal(parse(&c, err, 2, "--nope", "--help"), GD_ERR_CONFIG);
    /* kinds: plural and short names are the same kind, each kind once */
    assert_int_equal(parse(&c, err, 1, "--informer-kinds=pods,Node,gc"), GD_OK);
    char kinds[MGR_MAX_KINDS][64] = {{0}};
    assert_int_equal(mgr_informer_kinds(c.informer_kinds, kinds, err, sizeof err), GD_OK);
    assert_string_equal(kinds[0], "Pod");
    assert_string_equal(kinds[1], "Node");
    assert_string_equal(kinds[2], "GodisCluster");
    assert_string_equal(kinds[3], "");
}

static void test_bad_flags_one_line(void **st)
{
    (void)st;
    mgr_config c;
    char err[256];
    struct { const char *a, *b, *want; } cases[] = {
        {"--nope", NULL, "unknown flag --nope"},
        {"--workers=0", NULL, "--workers: must be between 1 and 64"},
        {"--workers=x", NULL, "--workers: expected an integer"},
        {"--workers=99999999999999", NULL, "--workers: must be between 0 and 64"},
        {"--remote-port-base=7420", NULL, "--remote-port-base: needs a port of 1024 or more, --curve-server-key and --curve-allow"},
        {"--remote-port-base=80", NULL, "--remote-port-base: needs a port of 1024 or more"},
        {"--workers=3abc", NULL, "--workers: expected an integer, got \"3abc\""},
        {"--workers= 3", NULL, "--workers: expected an integer"},
        {"--heartbeat=5ms", NULL, "--heartbeat: must be between 10ms and 1m0s, got 5ms"},
        {"--shutdown-grace", "15", "--shutdown-grace: expected a duration like 15s, 500ms or 2m, got \"15\" (a number needs a unit)"},
        {"--leader-elect", "maybe", "unexpected argument \"maybe\""},
        {"--informer-kinds=Pod,Pod", NULL, "--informer-kinds: Pod is listed twice"},
        {"--informer-kinds=Pod,pods", NULL, "--informer-kinds: Pod is listed twice (\"pods\")"},
        {"--informer-kinds=Pod,,Node", NULL, "--informer-kinds: empty entry"},
        {"--informer-kinds=Pod,Widget", NULL, "--informer-kinds: unknown kind \"Widget\""},
        {"--informer-kinds=", NULL, "--informer-kinds: must name at least one kind"},
        {"--version=1", NULL, "--version takes no value"},
        {"--workers", NULL, "--workers needs a value"},
        {"--leader-elect=maybe", NULL, "--leader-elect: expected true or false"},
        {"--leader-elect-lease-duration=15", NULL, "expected a duration"},
        {"--leader-elect-renew-deadline=15s", NULL, "greater than --leader-elect-renew-deadline"},
        {"--leader-elect-retry-period=9s", NULL, "1.2 x"},
        {"--leader-elect-lease-duration=1500ms", NULL, "whole number of seconds"},
        {"--metrics-bind-address=example.com:8080", NULL, "not an IPv4 address"},
        {"--health-probe-bind-address=127.0.0.1", NULL, "expected host:port"},
        {"--health-probe-bind-address=127.0.0.1:99999", NULL, "bad port"},
        {"--log-level=loud", NULL, "--log-level"},
        {"--log-format=xml", NULL, "--log-format"},
        {"stray", NULL, "unexpected argument"},
        {"--config=/nonexistent/x.yaml", NULL, "cannot open /nonexistent/x.yaml"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gd_err e = cases[i].b ? parse(&c, err, 2, cases[i].a, cases[i].b)
                              : parse(&c, err, 1, cases[i].a);
        if (e != GD_ERR_CONFIG) fail_msg("%s %s: accepted", cases[i].a, cases[i].b ? cases[i].b : "");
        if (!strstr(err, cases[i].want)) fail_msg("%s: got \"%s\"", cases[i].a, err);
        assert_null(strchr(err, '\n'));
    }
}

static void test_yaml_file_and_precedence(void **st)
{
    (void)st;
    char path[] = "/tmp/test_mgr_cfg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *y = "# manager\nworkers: 3\nleader-elect-resource-name: my-lease\n"
                    "leader-elect-retry-period: 1s\nleader-elect: false\nlog-level: debug\n";
    assert_int_equal(write(fd, y, strlen(y)), (ssize_t)strlen(y));
    close(fd);
    mgr_config c;
    char err[256], flag[64];
    snprintf(flag, sizeof flag, "--config=%s", path);
    /* the flag after --config and the one before it both beat the file */
    assert_int_equal(parse(&c, err, 3, "--workers=5", flag, "--log-level=warn"), GD_OK);
    assert_int_equal(c.workers, 5);
    assert_string_equal(c.lease_name, "my-lease");
    assert_int_equal(c.retry_period_ms, 1000);
    assert_false(c.leader_elect);
    assert_string_equal(c.log_level, "warn");
    unlink(path);
}

static void test_yaml_hostile(void **st)
{
    (void)st;
    struct { const char *y, *want; } cases[] = {
        {"bogus: 1\n", "unknown key \"bogus\""},
        {"config: other.yaml\n", "unknown key \"config\""},
        {"workers: [1, 2]\n", "workers: expected a scalar value, got a list"},
        {"workers: {a: 1}\n", "workers: expected a scalar value, got a mapping"},
        {"- a\n- b\n", "got a list"},
        {"just a string\n", "expected a mapping"},
        {"workers: 'open\n", "t.yaml: line"},
        {"workers: \"two\"\n", "t.yaml: workers: expected an integer"},
        {"a: &x 1\nworkers: *x\n", "unknown key \"a\""},
        {"workers: [unclosed\n", "t.yaml"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mgr_config c;
        mgr_config_default(&c, NULL);
        char err[256] = "";
        assert_int_equal(mgr_config_yaml(&c, cases[i].y, strlen(cases[i].y), "t.yaml", err,
                                            sizeof err), GD_ERR_CONFIG);
        if (!strstr(err, cases[i].want)) fail_msg("case %zu: got \"%s\"", i, err);
    }
    mgr_config c;
    mgr_config_default(&c, NULL);
    char err[256];
    assert_int_equal(mgr_config_yaml(&c, "", 0, "t.yaml", err, sizeof err), GD_OK);
    assert_int_equal(mgr_config_yaml(&c, "---\n", 4, "t.yaml", err, sizeof err), GD_OK);
}

static void test_addresses(void **st)
{
    (void)st;
    char host[64], why[128];
    int port;
    assert_int_equal(gd_parse_bind_addr("localhost:8080", host, sizeof host, &port, why, sizeof why), GD_OK);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(gd_parse_bind_addr("127.1.2.3:1", host, sizeof host, &port, why, sizeof why), GD_OK);
    assert_int_equal(gd_parse_bind_addr("0", host, sizeof host, &port, why, sizeof why), GD_OK);
    assert_int_equal(port, 0);
    /* wider than loopback only when asked for (a pod's probes come from the kubelet) */
    assert_int_equal(gd_parse_bind_addr("10.0.0.1:80", host, sizeof host, &port, why, sizeof why), GD_OK);
    assert_int_equal(gd_parse_bind_addr(":80", host, sizeof host, &port, why, sizeof why), GD_OK);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(gd_parse_bind_addr("999.1.1.1:80", host, sizeof host, &port, why, sizeof why), GD_ERR_CONFIG);
    assert_int_equal(gd_parse_bind_addr("[::1]:80", host, sizeof host, &port, why, sizeof why), GD_ERR_CONFIG);
}

static void test_usage_mentions_every_flag(void **st)
{
    (void)st;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mgr_config_usage(f);
    fclose(f);
    mgr_config d;
    gd_flag flags[MGR_CONFIG_MAX_FLAGS];
    size_t n = mgr_config_bind_flags(&d, flags);
    assert_true(n <= MGR_CONFIG_MAX_FLAGS);
    for (size_t i = 0; i < n; i++) {
        char name[80];
        snprintf(name, sizeof name, "--%s", flags[i].name);
        assert_non_null(strstr(buf, name));
    }
    /* the layout every program shares */
    assert_non_null(strstr(buf, "Usage:\n  godis-manager [flags]\n"));
    assert_non_null(strstr(buf, "  -h, --help\n"));
    assert_non_null(strstr(buf, "      --version\n"));
    assert_non_null(strstr(buf, "      --leader-elect [true|false]\n"));
    assert_non_null(strstr(buf, "(default 15s)"));
    free(buf);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR + 1, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollout_flags),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_flag_convention),
        cmocka_unit_test(test_bad_flags_one_line),
        cmocka_unit_test(test_yaml_file_and_precedence),
        cmocka_unit_test(test_yaml_hostile),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_usage_mentions_every_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
