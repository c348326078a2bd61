/* gd_yaml.h — YAML (libyaml) to cJSON, for manifests (deploy/, the demo, tests).
 * Plain scalars are typed the way Kubernetes' YAML decoder (YAML 1.1 core subset) does:
 * null/~, true/false, integers, floats; quoted scalars stay strings. Anchors and aliases
 * are refused (manifests do not need them, and they are a classic resource bomb). */
#ifndef GD_YAML_H
#define GD_YAML_H
#include <stddef.h>
#include <cjson/cJSON.h>
#include "gd_err.h"

/* Parses every document of a YAML stream into a cJSON array (empty documents skipped).
 * On failure writes "line L column C: problem" into err and returns GD_ERR_PARSE. */
gd_err gd_yaml_to_json(const char *buf, size_t len, cJSON **out, char *err, size_t errlen);

#endif
