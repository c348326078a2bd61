/* config_internal.h — the manager's flag table, for config.c and the unit test that checks
 * every flag shows up in --help (test_manager_config). */
#ifndef MGR_CONFIG_INTERNAL_H
#define MGR_CONFIG_INTERNAL_H
#include <stddef.h>
#include "config.h"
#include "gd_flags.h"

#define MGR_CONFIG_MAX_FLAGS 40
/* Fills out (room for MGR_CONFIG_MAX_FLAGS) with the flags bound to c; returns how many. */
size_t mgr_config_bind_flags(mgr_config *c, gd_flag *out);

#endif
