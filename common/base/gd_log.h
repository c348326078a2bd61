/* gd_log.h — structured logs: one line per event, key=value (or JSON with --log-format=json),
 * with time, level, process role and pid. Values under keys that look secret (token, key,
 * password, cert/key data, authorization) are replaced by "<redacted>" so a careless call
 * cannot leak credentials. Thread-safe: one write(2) per line. */
#ifndef GD_LOG_H
#define GD_LOG_H
#include <stdarg.h>

typedef enum { GD_LOG_DEBUG = 0, GD_LOG_INFO, GD_LOG_WARN, GD_LOG_ERROR } gd_log_level;

/* role: "manager", "informer", "worker", "node-agent"… (copied). fd: where lines go (2). */
void gd_log_init(const char *role, gd_log_level min_level, int json, int fd);
void gd_log_set_level(gd_log_level lvl);
/* Parses "debug|info|warn|error"; returns -1 on an unknown name. */
int gd_log_level_parse(const char *s);

/* msg, then NULL-terminated key, value string pairs:
 *   gd_log(GD_LOG_INFO, "watch started", "kind", "Pod", "rv", rv, NULL); */
void gd_log(gd_log_level lvl, const char *msg, ...) __attribute__((sentinel));
void gd_logv(gd_log_level lvl, const char *msg, va_list kv);

/* Convenience for printf-style messages with no extra fields. */
void gd_logf(gd_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GD_DEBUG(...) gd_log(GD_LOG_DEBUG, __VA_ARGS__, NULL)
#define GD_INFO(...)  gd_log(GD_LOG_INFO, __VA_ARGS__, NULL)
#define GD_WARN(...)  gd_log(GD_LOG_WARN, __VA_ARGS__, NULL)
#define GD_ERROR(...) gd_log(GD_LOG_ERROR, __VA_ARGS__, NULL)

/* Exposed for tests: formats one line into buf (NUL-terminated, truncated to cap). */
int gd_log_format(char *buf, int cap, gd_log_level lvl, const char *msg, va_list kv);

#endif
