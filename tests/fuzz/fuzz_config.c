/* fuzz_config.c — the configuration files the project reads: the manager's --config YAML
 * (manager/config.c: keys are flag names, values go through the flag parsers — durations,
 * bounded integers, booleans, bind addresses, informer kinds — then the whole configuration
 * is validated) and YAML manifests (common/base/gd_yaml.c, what godisctl apply and the tests read:
 * every document of a stream into JSON).
 *
 * Input: byte 0 chooses the parser (even: manager config, odd: manifests), the rest is the
 * file. Checked: an error message is NUL-terminated and a manifest stream parses into an
 * array whose every element survives a JSON round trip. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "gd_yaml.h"
#include "../../manager/config.c"

static void manager_config(const char *s, size_t n)
{
    mgr_config c;
    mgr_config_default(&c, "godis-manager");
    char err[600] = "";
    if (mgr_config_yaml(&c, s, n, "fuzz.yaml", err, sizeof err) == GD_OK) {
        char kinds[MGR_MAX_KINDS][64];
        if (mgr_config_validate(&c, err, sizeof err) == GD_OK &&
            mgr_informer_kinds(c.informer_kinds, kinds, err, sizeof err) != GD_OK)
            abort();                     /* validate accepted what the manager then refuses */
    }
    if (!memchr(err, '\0', sizeof err)) abort();
}

static void manifests(const char *s, size_t n)
{
    cJSON *docs = NULL;
    char err[300] = "";
    if (gd_yaml_to_json(s, n, &docs, err, sizeof err) != GD_OK) {
        if (docs || !memchr(err, '\0', sizeof err)) abort();
        return;
    }
    if (!cJSON_IsArray(docs)) abort();
    const cJSON *d;
    cJSON_ArrayForEach(d, docs) {
        char *txt = cJSON_PrintUnformatted(d);
        cJSON *again = txt ? cJSON_Parse(txt) : NULL;
        if (txt && !again) abort();
        cJSON_Delete(again);
        free(txt);
    }
    cJSON_Delete(docs);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    if (len < 1) return 0;
    if (d[0] % 2 == 0)
        manager_config((const char *)d + 1, len - 1);
    else
        manifests((const char *)d + 1, len - 1);
    return 0;
}
