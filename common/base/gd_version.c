/* gd_version.c — see gd_version.h. The Makefile passes GD_VERSION, GD_GIT_COMMIT and
 * GD_BUILD_DATE as string macros when it compiles this file; a build without them (an IDE,
 * a stray cc) still links and says "unknown". */
#include "gd_version.h"
#include <stdio.h>

#ifndef GD_VERSION
#define GD_VERSION "v0.1.0-dev"
#endif
#ifndef GD_GIT_COMMIT
#define GD_GIT_COMMIT "unknown"
#endif
#ifndef GD_BUILD_DATE
#define GD_BUILD_DATE "unknown"
#endif

const char *gd_version(void) { return GD_VERSION; }
const char *gd_git_commit(void) { return GD_GIT_COMMIT; }
const char *gd_build_date(void) { return GD_BUILD_DATE; }

void gd_version_line(const char *prog, char *out, size_t cap)
{
    snprintf(out, cap, "%s version=%s git_commit=%s build_date=%s\n", prog, GD_VERSION,
             GD_GIT_COMMIT, GD_BUILD_DATE);
}

/* A label value escapes backslash, double quote and newline (Prometheus text format); the
 * values come from make's command line too, so do not trust them to be tame. */
static void label(char *out, size_t cap, const char *v)
{
    size_t n = 0;
    for (; *v && n + 3 < cap; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n') {
            out[n++] = '\\';
            out[n++] = *v == '\n' ? 'n' : *v;
        } else {
            out[n++] = *v;
        }
    }
    out[n] = '\0';
}

void gd_build_info_metric(char *out, size_t cap)
{
    char v[128], c[128], d[128];
    label(v, sizeof v, GD_VERSION);
    label(c, sizeof c, GD_GIT_COMMIT);
    label(d, sizeof d, GD_BUILD_DATE);
    snprintf(out, cap,
             "# HELP godis_operator_build_info A metric with a constant '1' value labeled by "
             "the version, git commit and build date godis-operator was built from.\n"
             "# TYPE godis_operator_build_info gauge\n"
             "godis_operator_build_info{version=\"%s\",git_commit=\"%s\",build_date=\"%s\"} 1\n",
             v, c, d);
}
