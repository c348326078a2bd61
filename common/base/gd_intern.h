/* gd_intern.h — one process-wide copy of each JSON member name the worker's cache holds.
 *
 * Why: a cached object is a cJSON tree, and cJSON mallocs every member name separately. A
 * Pod has ~140 of them ("metadata", "name", "containerPort", ...), the same in every Pod:
 * on the scale benchmark's objects the names were 22 % of the cache's heap (8 767 -> 6 805
 * bytes an object with them shared). cJSON has the flag for a name it must not free
 * (cJSON_StringIsConst), which cJSON_Duplicate keeps, so copies of a cached object share
 * the names too.
 *
 * The table never frees a name (it is a process's vocabulary, not its data) and has a
 * fixed capacity, so user-chosen names (label keys, ConfigMap data keys) cannot make it
 * grow without bound: once full, or for a long name, a tree keeps its own copy. Lock-free:
 * any thread may intern at any time; a name once published never moves or changes. */
#ifndef GD_INTERN_H
#define GD_INTERN_H
#include <stddef.h>
#include <cjson/cJSON.h>

enum {
    GD_INTERN_SLOTS = 1 << 16,                      /* open addressing, power of two */
    GD_INTERN_MAX = GD_INTERN_SLOTS / 4 * 3,        /* names held at most */
    GD_INTERN_MAX_LEN = 128,                        /* longer names are not interned */
};

/* The shared copy of s, valid until the process exits; NULL when s is NULL, longer than
 * GD_INTERN_MAX_LEN, new while the table is full, or memory ran out. */
const char *gd_intern(const char *s);

/* Replaces each member name in the tree under j (j's own included) by its shared copy and
 * marks it cJSON_StringIsConst; names that cannot be interned stay as they are. The tree
 * prints and compares exactly as before. Returns how many names it replaced. */
size_t gd_json_intern_names(cJSON *j);

/* Names the table holds now. */
size_t gd_intern_count(void);

#endif
