/* gd_flags.h — the one command-line convention of every program (godis-manager,
 * godis-informer, godis-worker, godisctl, node-agent): pflag's syntax, one --help layout,
 * -h and --version everywhere, one duration syntax, one way to report a bad flag.
 *
 * Syntax (what kubectl and the Kubernetes components accept, through spf13/pflag):
 *   --name value   --name=value   -n value   -n=value   -nvalue
 *   --             ends the flags; what follows is positional even if it starts with '-'
 *   A value may begin with '-' (`--kube-api-qps -1`): a flag that takes a value takes the
 *   next word, whatever it is.
 * Booleans: a bare `--leader-elect` means true and `--leader-elect=false` false, as in pflag.
 * Where pflag would leave `--leader-elect false` as a bare flag plus a stray positional
 * "false" (which a program without positionals then rejects, and which silently means
 * *true* in one that takes them), we read the next word as the flag's value when it is a
 * boolean literal (true/false, 1/0, t/f, TRUE/FALSE, True/False: Go's strconv.ParseBool);
 * any other next word is left alone. So `--leader-elect false` does what it says.
 * Durations: Go's time.ParseDuration ("15s", "1m30s", "500ms"); a bare number is refused
 * (except 0), because "15" could mean seconds or milliseconds (gd_parse_duration_ms).
 * Integers: the whole word, base 10, range-checked; "3abc", "1e3", " 3" and overflow are
 * errors naming the flag.
 *
 * Errors are one line, "<prog>: <flag>: <what is wrong>, got \"<value>\" (see --help)",
 * and exit code 2 (GD_EXIT_FATAL_CONFIG: "do not restart"). --help prints to stdout, exit 0;
 * --version prints gd_version_line, exit 0. */
#ifndef GD_FLAGS_H
#define GD_FLAGS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gd_err.h"

typedef enum {
    GD_FLAG_SECTION,    /* not a flag: a heading in --help over the flags that follow it */
    GD_FLAG_STRING,     /* dst: const char ** (borrowed from argv), or char[cap] when cap > 0 */
    GD_FLAG_BOOL,       /* dst: bool * */
    GD_FLAG_INT,        /* dst: int *; [min, max] */
    GD_FLAG_DURATION,   /* dst: int64_t * in ms; [min, max] in ms */
    GD_FLAG_MILLIS,     /* dst: int64_t *; a bare integer of ms, [min, max] (old -ms flags) */
    GD_FLAG_FUNC,       /* fn(ud, value, why, cap) decides; for lists and special values */
} gd_flag_type;

typedef gd_err (*gd_flag_fn)(void *ud, const char *value, char *why, size_t whycap);

typedef struct {
    gd_flag_type type;
    const char *name;       /* "leader-elect" (no dashes); SECTION: the heading text */
    char shorthand;         /* 'n' for -n, or 0 */
    void *dst;
    size_t cap;             /* STRING into a buffer */
    const char *metavar;    /* in --help: "PATH", "N"; default by type */
    const char *help;       /* one paragraph; --help wraps it */
    int64_t min, max;       /* INT, DURATION, MILLIS; both 0: any (INT: any int) */
    gd_flag_fn fn;          /* FUNC */
    void *ud;
    const char *deprecated; /* non-NULL: still accepted, hidden from --help, and warned
                             * about by gd_flags_warn_deprecated: "use --heartbeat" */
    const char *def;        /* "(default …)" text for FUNC flags, which have no value to show */
    bool no_default;        /* do not print "(default …)" (machine-dependent defaults) */
    bool hidden;            /* accepted but not in --help (not for this mode of the program) */
    bool given;             /* set by the parser: the flag was on the command line */
} gd_flag;

#define GD_FLAGS_MAX_ARGS 64

typedef struct {
    const char *prog;       /* "godis-manager": error prefix and --version */
    const char *usage;      /* "godis-manager [flags]" (several lines allowed) */
    const char *about;      /* paragraphs after the usage line */
    const char *footer;     /* after the flags: exit codes, signals, examples */
    gd_flag *flags;
    size_t nflags;
    bool allow_args;        /* positional arguments accepted (else an error) */
    bool stop_at_first_arg; /* flags end at the first positional (a subcommand's own) */
    char *args[GD_FLAGS_MAX_ARGS];   /* positionals, in order (pointers into argv) */
    int nargs;
} gd_flagset;

typedef enum { GD_FLAGS_OK = 0, GD_FLAGS_HELP, GD_FLAGS_VERSION, GD_FLAGS_ERROR } gd_flags_result;

/* Parses argv[1..argc-1] into the flags' destinations. -h/--help and --version are built in
 * and win as soon as they are met (a later bad flag does not matter; an earlier one does).
 * On GD_FLAGS_ERROR err holds one line naming the flag. */
gd_flags_result gd_flags_parse(gd_flagset *fs, int argc, char **argv, char *err, size_t errlen);

/* Sets one flag by its long name, as from a config file; where names the source in errors
 * ("file.yaml: workers"). GD_ERR_CONFIG with one line in err. */
gd_err gd_flags_set(gd_flagset *fs, const char *name, const char *value, const char *where,
                    char *err, size_t errlen);
gd_flag *gd_flags_find(gd_flagset *fs, const char *name);

/* The one --help layout. */
void gd_flags_usage(const gd_flagset *fs, FILE *out);

/* For main(): parses, prints help/version/the error, and returns the exit code to leave
 * with (0 for help and version, 2 for a bad flag), or -1 to go on. */
int gd_flags_main(gd_flagset *fs, int argc, char **argv);
/* A usage error found after parsing (a missing required flag, flags that exclude each
 * other): printed the same way. Returns 2. */
int gd_flags_fail(const gd_flagset *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs a warning (gd_log, so call it after gd_log_init) for every deprecated flag used. */
void gd_flags_warn_deprecated(const gd_flagset *fs);

/* FUNC flags every program has: ud is a const char ** that receives the checked value.
 * --log-level: debug, info, warn or error. --log-format: text or json. */
gd_err gd_flags_log_level(void *ud, const char *value, char *why, size_t whycap);
gd_err gd_flags_log_format(void *ud, const char *value, char *why, size_t whycap);

/* Strict base-10 integer: the whole word, no spaces, no overflow, within [min, max]. */
gd_err gd_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/* Table entries, as every program writes its flag table: GD_FLAG(type, "name", &dst,
 * "help", .metavar = "X", ...) and GD_FLAG_HEADING("Title") for a --help section. */
#define GD_FLAG(t, n, d, h, ...) {.type = t, .name = n, .dst = d, .help = h, __VA_ARGS__}
#define GD_FLAG_HEADING(title) {.type = GD_FLAG_SECTION, .name = title}

#endif
