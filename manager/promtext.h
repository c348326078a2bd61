/* promtext.h — gathers several Prometheus text expositions (the manager's own, each
 * worker's from PONG, each informer's from STATS) into one valid exposition:
 *   - a label can be added to every sample of a source (worker="3"), so identical series
 *     from two workers stay distinct;
 *   - samples are regrouped by metric family (the format wants a family's lines together)
 *     with its # HELP and # TYPE printed once. */
#ifndef MGR_PROMTEXT_H
#define MGR_PROMTEXT_H
#include <stddef.h>

typedef struct mgr_promtext mgr_promtext;

mgr_promtext *mgr_promtext_new(void);
void         mgr_promtext_destroy(mgr_promtext **p);
/* Adds a source. label_name/label_value may be NULL (no label added). Lines that are
 * neither comments nor samples (no value) are dropped. Input is capped at 4 MiB. */
void mgr_promtext_add(mgr_promtext *p, const char *text, size_t len, const char *label_name,
                     const char *label_value);
/* The merged exposition, malloc'd, NUL-terminated. */
char *mgr_promtext_render(mgr_promtext *p);

#endif
