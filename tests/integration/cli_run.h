/* cli_run.h — what the command-line tests (itest_cli, itest_godisctl, itest_exec_plugin) need:
 * run a program as a person would and keep what it printed, and two fake "API servers" on
 * 127.0.0.1 that are not one (one accepts and never answers, one answers an HTML page). */
#ifndef CLI_RUN_H
#define CLI_RUN_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int status;          /* exit code; 128+N for signal N; -1 when it was killed at the timeout */
    char out[65536];     /* stdout (truncated) */
    char err[16384];     /* stderr (truncated) */
    int64_t ms;          /* how long it ran */
} cli_result;

/* Runs argv (NULL-terminated) with stdin from /dev/null and env extra ("K=V" entries,
 * NULL-terminated, or NULL) added to ours; an entry "K=" with nothing after it removes K. */
void cli_run(cli_result *r, const char *const *argv, const char *const *env, int timeout_ms);
/* The same with argv given as arguments: cli_runl(r, env, timeout_ms, "bin/x", "a", NULL). */
void cli_runl(cli_result *r, const char *const *env, int timeout_ms, ...);
/* Lines in s (a last line without '\n' counts). */
int cli_lines(const char *s);
/* How often needle stands in hay (not overlapping). */
int cli_count(const char *hay, const char *needle);

enum { CLI_SERVER_SILENT, CLI_SERVER_HTML, CLI_SERVER_HTML_ERROR };
typedef struct cli_server cli_server;
/* Listens on 127.0.0.1 (a free port). SILENT: accepts, reads, never answers. HTML: every
 * request gets "200 OK" with an HTML login page, as a proxy in front of nothing would;
 * HTML_ERROR: "502 Bad Gateway" with the same page. */
cli_server *cli_server_start(int mode);
int  cli_server_port(const cli_server *s);
int  cli_server_accepted(cli_server *s);   /* connections so far */
void cli_server_stop(cli_server **s);

/* Writes a kubeconfig for server (a URL) with a bearer token into path. */
void cli_kubeconfig(const char *path, const char *server);
/* A TCP port on 127.0.0.1 that something else holds: the returned fd keeps it (close it). */
int cli_busy_port(int *fd);

/* A scratch directory for one test binary: cli_tmp_init("itest-cli") makes
 * /tmp/itest-cli-XXXXXX; cli_tmp("name") is a path in it (8 rotating buffers);
 * cli_tmp_done(ok) removes it when the tests passed, else says where it is. */
bool cli_tmp_init(const char *name);
const char *cli_tmp(const char *name);
int cli_tmp_done(int cmocka_rc);
/* Writes text into path (its directory made when missing) with mode; false when it could not. */
bool cli_put(const char *path, const char *text, mode_t mode);
/* The whole file (up to 1 MiB, NUL-terminated; "" when unreadable), in a static buffer. */
char *cli_slurp(const char *path);

#endif
