/* test_log.c — logfmt/JSON formatting, quoting, escaping, redaction, truncation, levels. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <pthread.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "gd_log.h"

static char line[8192];

static int fmt(int cap, gd_log_level lvl, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    int n = gd_log_format(line, cap, lvl, msg, ap);
    va_end(ap);
    return n;
}

static int setup_kv(void **state)
{
    gd_log_init("manager", GD_LOG_DEBUG, 0, 2);
    return 0;
}

static int setup_json(void **state)
{
    gd_log_init("manager", GD_LOG_DEBUG, 1, 2);
    return 0;
}

static void test_kv_basic(void **state)
{
    int n = fmt(sizeof line, GD_LOG_INFO, "watch started", "kind", "Pod", "rv", "123", NULL);
    assert_int_equal(n, (int)strlen(line));
    assert_true(strncmp(line, "ts=", 3) == 0);
    /* ts=2026-11-22T11:02:03.123Z */
    assert_int_equal(line[3 + 23], 'Z');
    assert_int_equal(line[3 + 19], '.');
    char want[128];
    snprintf(want, sizeof want, " level=info role=manager pid=%d msg=\"watch started\" kind=Pod rv=123\n",
             (int)getpid());
    assert_string_equal(line + 3 + 24, want);
}

static void test_kv_quoting(void **state)
{
    fmt(sizeof line, GD_LOG_WARN, "m", "a", "x y", "b", "say \"hi\"", "c", "k=v", "d", "",
        "e", "line1\nline2", "f", "tab\there", "g", "back\\slash", "h", "\x01", "i", NULL, NULL);
    assert_non_null(strstr(line, " level=warn "));
    assert_non_null(strstr(line, " msg=m "));
    assert_non_null(strstr(line, " a=\"x y\""));
    assert_non_null(strstr(line, " b=\"say \\\"hi\\\"\""));
    assert_non_null(strstr(line, " c=\"k=v\""));
    assert_non_null(strstr(line, " d=\"\""));
    assert_non_null(strstr(line, " e=\"line1\\nline2\""));
    assert_non_null(strstr(line, " f=\"tab\\there\""));
    assert_non_null(strstr(line, " g=\"back\\\\slash\""));
    assert_non_null(strstr(line, " h=\"\\x01\""));
    assert_non_null(strstr(line, " i=\"\"\n"));
    /* exactly one newline, at the end */
    assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1);
}

static void test_kv_odd_keys(void **state)
{
    fmt(sizeof line, GD_LOG_INFO, "m", "bad key=\"x\"", "v", "", "1", NULL);
    assert_non_null(strstr(line, " bad_key__x_=v"));
    assert_non_null(strstr(line, " _=1"));
}

static void test_redaction(void **state)
{
    fmt(sizeof line, GD_LOG_INFO, "auth", "token", "abc123", "client-key-data", "LS0tLS1",
        "Authorization", "Bearer xyz", "db_password", "hunter2", "client-cert-data", "Q0VSVA",
        "secretName", "s3", "bearerToken", "b", "header", "Bearer sneaky",
        "pem", "-----BEGIN PRIVATE KEY-----", "key", "ns/name", NULL);
    assert_null(strstr(line, "abc123"));
    assert_null(strstr(line, "LS0tLS1"));
    assert_null(strstr(line, "xyz"));
    assert_null(strstr(line, "hunter2"));
    assert_null(strstr(line, "Q0VSVA"));
    assert_null(strstr(line, "s3"));
    assert_null(strstr(line, "sneaky"));
    assert_null(strstr(line, "PRIVATE"));
    assert_non_null(strstr(line, " token=<redacted>"));
    assert_non_null(strstr(line, " client-key-data=<redacted>"));
    assert_non_null(strstr(line, " Authorization=<redacted>"));
    /* a reconcile key is not a secret */
    assert_non_null(strstr(line, " key=ns/name\n"));
}

static void test_json_mode(void **state)
{
    fmt(sizeof line, GD_LOG_ERROR, "sync \"failed\"", "kind", "Pod", "err", "a\nb\x02",
        "token", "t0k", "nothing", NULL, NULL);
    cJSON *j = cJSON_Parse(line);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "error");
    assert_string_equal(cJSON_GetObjectItem(j, "role")->valuestring, "manager");
    assert_int_equal(cJSON_GetObjectItem(j, "pid")->valueint, getpid());
    assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring, "sync \"failed\"");
    assert_string_equal(cJSON_GetObjectItem(j, "kind")->valuestring, "Pod");
    assert_string_equal(cJSON_GetObjectItem(j, "err")->valuestring, "a\nb\x02");
    assert_string_equal(cJSON_GetObjectItem(j, "token")->valuestring, "<redacted>");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "nothing")));
    assert_int_equal(strlen(cJSON_GetObjectItem(j, "ts")->valuestring), 24);
    cJSON_Delete(j);
    assert_int_equal(line[strlen(line) - 1], '\n');
}

static void test_truncation(void **state)
{
    char *big = malloc(20000);
    memset(big, 'x', 19999);
    big[19999] = 0;
    int n = fmt(512, GD_LOG_INFO, "big", "v", big, "after", "1", NULL);
    assert_true(n < 512);
    assert_int_equal((int)strlen(line), n);
    assert_non_null(strstr(line, " truncated=true\n"));
    assert_null(strstr(line, "after="));

    gd_log_init("manager", GD_LOG_DEBUG, 1, 2);
    /* quotes that need escaping right at the cut still give valid JSON */
    memset(big, '"', 19999);
    n = fmt(300, GD_LOG_INFO, "big", "v", big, NULL);
    assert_true(n < 300);
    cJSON *j = cJSON_Parse(line);
    assert_non_null(j);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
    cJSON_Delete(j);
    free(big);
    /* a buffer too small for anything gives an empty string, never an overflow */
    assert_int_equal(fmt(0, GD_LOG_INFO, "x", NULL), 0);
    assert_int_equal(fmt(20, GD_LOG_INFO, "x", NULL), 0);
    assert_int_equal(line[0], 0);
}

/* Every cut position gives a well-formed line: valid JSON in JSON mode, one trailing
 * newline in both modes, never past the buffer. */
static void test_truncation_every_cap(void **state)
{
    for (int json = 0; json <= 1; json++) {
        gd_log_init("role with space", GD_LOG_DEBUG, json, 2);
        for (int cap = 96; cap < 420; cap++) {
            char *buf = malloc((size_t)cap);
            int n = fmt(cap, GD_LOG_INFO, "m \"q\"", "a", "x\"y\\z", "b", NULL, "\xc3\xa9t\xc3\xa9",
                        "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", "c", "\n\n\n\n\n\n\n\n\n\n\n\n", NULL);
            assert_true(n < cap);
            memcpy(buf, line, (size_t)n + 1);
            assert_int_equal((int)strlen(buf), n);
            assert_int_equal(buf[n - 1], '\n');
            assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
            if (json) {
                cJSON *j = cJSON_Parse(buf);
                if (!j)
                    fail_msg("cap %d: invalid JSON: %s", cap, buf);
                if (cap >= 200)
                    assert_string_equal(cJSON_GetObjectItem(j, "role")->valuestring, "role with space");
                cJSON_Delete(j);
            } else if (cap >= 200) {
                assert_non_null(strstr(buf, "role=\"role with space\""));
            }
            free(buf);
        }
    }
    gd_log_init("manager", GD_LOG_DEBUG, 0, 2);
}

static void test_levels(void **state)
{
    assert_int_equal(gd_log_level_parse("debug"), GD_LOG_DEBUG);
    assert_int_equal(gd_log_level_parse("INFO"), GD_LOG_INFO);
    assert_int_equal(gd_log_level_parse("warn"), GD_LOG_WARN);
    assert_int_equal(gd_log_level_parse("warning"), GD_LOG_WARN);
    assert_int_equal(gd_log_level_parse("error"), GD_LOG_ERROR);
    assert_int_equal(gd_log_level_parse("verbose"), -1);
    assert_int_equal(gd_log_level_parse(""), -1);
    assert_int_equal(gd_log_level_parse(NULL), -1);
}

/* Writes go to a pipe; check filtering by level and one line per call. */
static void test_write_and_filter(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    gd_log_init("worker", GD_LOG_WARN, 0, p[1]);
    gd_log(GD_LOG_INFO, "hidden", NULL);
    GD_WARN("shown", "k", "v");
    gd_logf(GD_LOG_ERROR, "count=%d", 3);
    gd_log_set_level(GD_LOG_ERROR);
    GD_WARN("hidden too");
    close(p[1]);
    char buf[4096];
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    assert_true(n > 0);
    buf[n] = 0;
    assert_null(strstr(buf, "hidden"));
    assert_non_null(strstr(buf, "role=worker"));
    assert_non_null(strstr(buf, "msg=shown k=v\n"));
    assert_non_null(strstr(buf, "level=error role=worker"));
    assert_non_null(strstr(buf, "msg=\"count=3\"\n"));
    int lines = 0;
    for (char *c = buf; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 2);
    gd_log_init("manager", GD_LOG_DEBUG, 0, 2);
}

static void *log_thread(void *arg)
{
    for (int i = 0; i < 200; i++)
        GD_INFO("from thread", "i", (const char *)arg, "pad", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    return NULL;
}

static void test_threads_no_interleave(void **state)
{
    char path[] = "/tmp/gdlogtestXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    gd_log_init("manager", GD_LOG_DEBUG, 0, fd);
    pthread_t t[4];
    const char *ids[4] = { "0", "1", "2", "3" };
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, log_thread, (void *)ids[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    gd_log_init("manager", GD_LOG_DEBUG, 0, 2);
    off_t size = lseek(fd, 0, SEEK_END);
    char *all = malloc((size_t)size + 1);
    assert_int_equal(pread(fd, all, (size_t)size, 0), size);
    all[size] = 0;
    close(fd);
    int lines = 0;
    for (char *l = all, *nl; (nl = strchr(l, '\n')); l = nl + 1) {
        *nl = 0;
        assert_true(strncmp(l, "ts=", 3) == 0);
        assert_non_null(strstr(l, "pad=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        lines++;
    }
    assert_int_equal(lines, 800);
    free(all);
}

/* A fork while another thread is logging: the child can still log (no inherited lock). */
static volatile int keep_logging;
static void *busy_logger(void *arg)
{
    while (keep_logging)
        GD_DEBUG("busy");
    return NULL;
}

static void test_fork_while_logging(void **state)
{
    int devnull = open("/dev/null", O_WRONLY);
    assert_true(devnull >= 0);
    gd_log_init("manager", GD_LOG_DEBUG, 0, devnull);
    keep_logging = 1;
    pthread_t t;
    pthread_create(&t, NULL, busy_logger, NULL);
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(5);  /* a deadlock kills the child, which the parent sees */
            GD_INFO("child logs");
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    keep_logging = 0;
    pthread_join(t, NULL);
    gd_log_init("manager", GD_LOG_DEBUG, 0, 2);
    close(devnull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_kv_basic, setup_kv),
        cmocka_unit_test_setup(test_kv_quoting, setup_kv),
        cmocka_unit_test_setup(test_kv_odd_keys, setup_kv),
        cmocka_unit_test_setup(test_redaction, setup_kv),
        cmocka_unit_test_setup(test_json_mode, setup_json),
        cmocka_unit_test_setup(test_truncation, setup_kv),
        cmocka_unit_test(test_truncation_every_cap),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_write_and_filter),
        cmocka_unit_test(test_threads_no_interleave),
        cmocka_unit_test(test_fork_while_logging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
