/* test_flags.c — the one command-line convention (gd_flags.h): pflag's syntax, booleans
 * that take a following true/false, strict integers and durations with the flag named in
 * every error, positionals and `--`, the shared --help layout, --version. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_flags.h"
#include "gd_log.h"
#include "gd_version.h"

typedef struct {
    const char *name, *ns;
    char buf[8];
    bool on, other;
    int n;
    int64_t dur, ms;
    const char *list[4];
    int nlist;
} vals;

static gd_err add_item(void *ud, const char *v, char *why, size_t cap)
{
    vals *x = ud;
    if (!strcmp(v, "bad")) {
        snprintf(why, cap, "\"bad\" is not an item");
        return GD_ERR_CONFIG;
    }
    x->list[x->nlist++] = v;
    return GD_OK;
}

#define FLAG GD_FLAG

static vals v;
static gd_flag defs[16];
static gd_flagset fs;

static void reset(bool allow_args)
{
    memset(&v, 0, sizeof v);
    v.n = 3;
    v.dur = 15000;
    gd_flag d[] = {
        FLAG(GD_FLAG_STRING, "name", &v.name, "a name", .metavar = "NAME"),
        FLAG(GD_FLAG_STRING, "namespace", &v.ns, "the namespace", .shorthand = 'n'),
        FLAG(GD_FLAG_STRING, "buf", v.buf, "a short buffer", .cap = sizeof v.buf),
        FLAG(GD_FLAG_BOOL, "on", &v.on, "switch"),
        FLAG(GD_FLAG_BOOL, "other", &v.other, "another switch"),
        {.type = GD_FLAG_SECTION, .name = "Numbers"},
        FLAG(GD_FLAG_INT, "replicas", &v.n, "how many (1..9)", .min = 1, .max = 9),
        FLAG(GD_FLAG_DURATION, "timeout", &v.dur, "how long", .min = 1000, .max = 600000),
        FLAG(GD_FLAG_MILLIS, "timeout-ms", &v.dur, "", .min = 1, .max = 600000, .deprecated = "use --timeout"),
        FLAG(GD_FLAG_FUNC, "item", NULL, "repeatable", .fn = add_item, .ud = &v, .shorthand = 'i'),
    };
    memcpy(defs, d, sizeof d);
    memset(&fs, 0, sizeof fs);
    fs.prog = "prog";
    fs.usage = "prog [flags] ARG...";
    fs.about = "Does things.";
    fs.footer = "Exit codes: 0 ok.";
    fs.flags = defs;
    fs.nflags = sizeof d / sizeof d[0];
    fs.allow_args = allow_args;
}

static gd_flags_result run(char *err, int argc, ...)
{
    static char *argv[32];
    argv[0] = "prog";
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) argv[i + 1] = va_arg(ap, char *);
    va_end(ap);
    err[0] = '\0';
    return gd_flags_parse(&fs, argc + 1, argv, err, 256);
}

static void test_syntax_forms(void **st)
{
    (void)st;
    char err[256];
    reset(true);
    assert_int_equal(run(err, 8, "--name", "a", "--replicas=4", "-n", "ns1", "-ix", "-i=y", "pos"),
                     GD_FLAGS_OK);
    assert_string_equal(v.name, "a");
    assert_int_equal(v.n, 4);
    assert_string_equal(v.ns, "ns1");
    assert_int_equal(v.nlist, 2);
    assert_string_equal(v.list[0], "x");
    assert_string_equal(v.list[1], "y");
    assert_int_equal(fs.nargs, 1);
    assert_string_equal(fs.args[0], "pos");
    assert_true(defs[0].given);
    assert_false(defs[2].given);
    /* a value may start with '-' */
    reset(true);
    assert_int_equal(run(err, 2, "--name", "-x"), GD_FLAGS_OK);
    assert_string_equal(v.name, "-x");
    /* interspersed positionals, then `--` makes everything positional */
    reset(true);
    assert_int_equal(run(err, 5, "a", "--on", "b", "--", "--replicas=-1"), GD_FLAGS_OK);
    assert_true(v.on);
    assert_int_equal(v.n, 3);
    assert_int_equal(fs.nargs, 3);
    assert_string_equal(fs.args[2], "--replicas=-1");
    /* "-" alone is a positional (stdin) */
    reset(true);
    assert_int_equal(run(err, 1, "-"), GD_FLAGS_OK);
    assert_int_equal(fs.nargs, 1);
    /* a subcommand's own words after the first positional */
    reset(true);
    fs.stop_at_first_arg = true;
    assert_int_equal(run(err, 3, "--on", "cmd", "--on"), GD_FLAGS_OK);
    assert_int_equal(fs.nargs, 2);
    assert_string_equal(fs.args[1], "--on");
}

/* pflag: a bare bool is true. Here also `--on false`, which pflag would read as true plus
 * a stray "false": the next word is the value only when it is a boolean literal. */
static void test_bools(void **st)
{
    (void)st;
    char err[256];
    const char *falses[] = {"false", "0", "f", "F", "FALSE", "False"};
    for (size_t i = 0; i < sizeof falses / sizeof falses[0]; i++) {
        reset(true);
        v.on = true;
        assert_int_equal(run(err, 2, "--on", falses[i]), GD_FLAGS_OK);
        assert_false(v.on);
        assert_int_equal(fs.nargs, 0);
    }
    reset(true);
    assert_int_equal(run(err, 2, "--on", "file"), GD_FLAGS_OK);
    assert_true(v.on);
    assert_int_equal(fs.nargs, 1);          /* not a boolean: left as an argument */
    reset(true);
    assert_int_equal(run(err, 3, "--on", "true", "--other"), GD_FLAGS_OK);
    assert_true(v.on);
    assert_true(v.other);
    reset(true);
    v.on = true;
    assert_int_equal(run(err, 1, "--on=false"), GD_FLAGS_OK);
    assert_false(v.on);
    reset(true);
    assert_int_equal(run(err, 1, "--on=maybe"), GD_FLAGS_ERROR);
    assert_string_equal(err, "--on: expected true or false, got \"maybe\"");
    reset(false);
    assert_int_equal(run(err, 2, "--on", "yes"), GD_FLAGS_ERROR);
    assert_string_equal(err, "unexpected argument \"yes\" (flags start with --)");
}

static void test_numbers_are_strict(void **st)
{
    (void)st;
    char err[256];
    struct { const char *arg, *want; } bad[] = {
        {"--replicas=abc", "--replicas: expected an integer, got \"abc\""},
        {"--replicas=3abc", "--replicas: expected an integer, got \"3abc\""},
        {"--replicas= 3", "--replicas: expected an integer, got \" 3\""},
        {"--replicas=3 ", "--replicas: expected an integer, got \"3 \""},
        {"--replicas=", "--replicas: expected an integer, got \"\""},
        {"--replicas=1e3", "--replicas: expected an integer, got \"1e3\""},
        {"--replicas=0x3", "--replicas: expected an integer, got \"0x3\""},
        {"--replicas=0", "--replicas: must be between 1 and 9, got 0"},
        {"--replicas=10", "--replicas: must be between 1 and 9, got 10"},
        {"--replicas=-1", "--replicas: must be between 1 and 9, got -1"},
        {"--replicas=99999999999999999999", "--replicas: expected an integer, got \"99999999999999999999\""},
        {"--timeout=15", "--timeout: expected a duration like 15s, 500ms or 2m, got \"15\" (a number needs a unit)"},
        {"--timeout=15x", "--timeout: expected a duration like 15s, 500ms or 2m, got \"15x\""},
        {"--timeout=500ms", "--timeout: must be between 1s and 10m0s, got 500ms"},
        {"--timeout-ms=1s", "--timeout-ms: expected an integer (milliseconds), got \"1s\""},
        {"--buf=12345678", "--buf: value too long (at most 7 bytes)"},
        {"--item=bad", "--item: \"bad\" is not an item"},
        {"--nope", "unknown flag --nope"},
        {"-z", "unknown shorthand flag -z in \"-z\""},
        {"--name", "--name needs a value"},
        {"--help=yes", "--help takes no value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reset(true);
        if (run(err, 1, bad[i].arg) != GD_FLAGS_ERROR) fail_msg("%s: accepted", bad[i].arg);
        if (strcmp(err, bad[i].want)) fail_msg("%s: got \"%s\"", bad[i].arg, err);
    }
    reset(true);
    assert_int_equal(run(err, 3, "--replicas", "9", "--timeout=1m30s"), GD_FLAGS_OK);
    assert_int_equal(v.n, 9);
    assert_int_equal(v.dur, 90000);
    assert_int_equal(run(err, 1, "--timeout-ms=2500"), GD_FLAGS_OK);
    assert_int_equal(v.dur, 2500);
    int64_t n;
    assert_int_equal(gd_parse_int("42", 0, 100, &n), GD_OK);
    assert_int_equal(n, 42);
    assert_int_equal(gd_parse_int("+42", 0, 100, &n), GD_OK);
    assert_int_equal(gd_parse_int("042", 0, 100, &n), GD_OK);   /* base 10, not octal */
    assert_int_equal(n, 42);
    assert_int_equal(gd_parse_int("101", 0, 100, &n), GD_ERR_ARG);
    assert_int_equal(gd_parse_int("4 2", 0, 100, &n), GD_ERR_PARSE);
}

static void test_help_and_version_win(void **st)
{
    (void)st;
    char err[256];
    reset(false);
    assert_int_equal(run(err, 2, "-h", "--nope"), GD_FLAGS_HELP);
    reset(false);
    assert_int_equal(run(err, 2, "--replicas=2", "--help"), GD_FLAGS_HELP);
    reset(false);
    assert_int_equal(run(err, 1, "--version"), GD_FLAGS_VERSION);
    reset(false);
    assert_int_equal(run(err, 2, "--nope", "--help"), GD_FLAGS_ERROR);
    /* after `--`, "-h" is an argument */
    reset(true);
    assert_int_equal(run(err, 2, "--", "-h"), GD_FLAGS_OK);
    assert_string_equal(fs.args[0], "-h");
}

static void test_set_by_name(void **st)
{
    (void)st;
    char err[256];
    reset(false);
    assert_int_equal(gd_flags_set(&fs, "replicas", "5", "f.yaml: replicas", err, sizeof err), GD_OK);
    assert_int_equal(v.n, 5);
    assert_int_equal(gd_flags_set(&fs, "replicas", "50", "f.yaml: replicas", err, sizeof err),
                     GD_ERR_CONFIG);
    assert_string_equal(err, "f.yaml: replicas: must be between 1 and 9, got 50");
    assert_int_equal(gd_flags_set(&fs, "bogus", "1", "f.yaml", err, sizeof err), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "unknown key \"bogus\""));
    assert_null(gd_flags_find(&fs, "Numbers"));   /* a heading is not a flag */
}

static void test_usage_layout(void **st)
{
    (void)st;
    reset(true);
    v.name = "dflt";
    v.on = true;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gd_flags_usage(&fs, f);
    fclose(f);
    const char *want =
        "Usage:\n"
        "  prog [flags] ARG...\n"
        "\n"
        "Does things.\n"
        "\n"
        "Flags:\n"
        "      --name NAME\n"
        "          a name (default dflt)\n"
        "  -n, --namespace string\n"
        "          the namespace\n"
        "      --buf string\n"
        "          a short buffer\n"
        "      --on [true|false]\n"
        "          switch (default true)\n"
        "      --other [true|false]\n"
        "          another switch\n"
        "\n"
        "Numbers:\n"
        "      --replicas int\n"
        "          how many (1..9) (default 3)\n"
        "      --timeout duration\n"
        "          how long (default 15s)\n"
        "  -i, --item string\n"
        "          repeatable\n"
        "  -h, --help\n"
        "          print this help and exit\n"
        "      --version\n"
        "          print the version, git commit and build date, and exit\n"
        "\n"
        "Exit codes: 0 ok.\n";
    assert_string_equal(buf, want);
    free(buf);
    /* long help wraps at 80 columns, under the same indent */
    char longhelp[400];
    memset(longhelp, 0, sizeof longhelp);
    for (int i = 0; i < 30; i++) strcat(longhelp, "word word ");
    defs[0].help = longhelp;
    buf = NULL;
    f = open_memstream(&buf, &len);
    gd_flags_usage(&fs, f);
    fclose(f);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        assert_true(strlen(line) <= 80);
    free(buf);
}

static void test_version_line(void **st)
{
    (void)st;
    char line[512], metric[1024];
    gd_version_line("godisctl", line, sizeof line);
    char want[512];
    snprintf(want, sizeof want, "godisctl version=%s git_commit=%s build_date=%s\n", gd_version(),
             gd_git_commit(), gd_build_date());
    assert_string_equal(line, want);
    assert_true(strlen(gd_version()) > 0);
    assert_true(strlen(gd_git_commit()) > 0);
    gd_build_info_metric(metric, sizeof metric);
    assert_non_null(strstr(metric, "# TYPE godis_operator_build_info gauge\n"));
    snprintf(want, sizeof want, "godis_operator_build_info{version=\"%s\",git_commit=\"%s\",build_date=\"%s\"} 1\n",
             gd_version(), gd_git_commit(), gd_build_date());
    assert_non_null(strstr(metric, want));
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR + 1, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax_forms),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_numbers_are_strict),
        cmocka_unit_test(test_help_and_version_win),
        cmocka_unit_test(test_set_by_name),
        cmocka_unit_test(test_usage_layout),
        cmocka_unit_test(test_version_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
