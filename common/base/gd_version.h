/* gd_version.h — what was built: version, git commit and build date, injected by the
 * Makefile with -D into gd_version.c only (so a new commit recompiles one file). Every
 * program prints them for --version, the manager exports them as the
 * godis_operator_build_info metric, and the API client's default User-Agent is
 * "godis-operator/<version>". */
#ifndef GD_VERSION_H
#define GD_VERSION_H
#include <stddef.h>

const char *gd_version(void);      /* "v0.1.0-dev", or `git describe` of the build */
const char *gd_git_commit(void);   /* full commit hash, or "unknown" outside a git checkout */
const char *gd_build_date(void);   /* RFC 3339 UTC: the commit's date (reproducible builds;
                                    * SOURCE_DATE_EPOCH overrides) */

/* "godis-manager version=v0.1.0-dev git_commit=3f78… build_date=2026-…" + newline. */
void gd_version_line(const char *prog, char *out, size_t cap);
/* The Prometheus text of godis_operator_build_info (HELP, TYPE and the one sample). */
void gd_build_info_metric(char *out, size_t cap);

#endif
