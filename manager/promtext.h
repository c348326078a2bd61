/* promtext.h — gathers several Prometheus text expositions (the manager's own, each
 * worker's from PONG, each informer's from STATS) into one valid exposition:
 *   - a label can be added to every sample of a source (worker="3"), so identical series
 *     from two workers stay distinct;
 *   - samples are regrouped by metric family (the format wants a family's lines together)
 *     with its # HELP and # TYPE printed once. */
#ifndef GD_PROMTEXT_H
#define GD_PROMTEXT_H
#include <stddef.h>

typedef struct gd_promtext gd_promtext;

gd_promtext *gd_promtext_new(void);
void         gd_promtext_destroy(gd_promtext **p);
/* Adds a source. label_name/label_value may be NULL (no label added). Lines that are
 * neither comments nor samples (no value) are dropped. Input is capped at 4 MiB. */
void gd_promtext_add(gd_promtext *p, const char *text, size_t len, const char *label_name,
                     const char *label_value);
/* The merged exposition, malloc'd, NUL-terminated. */
char *gd_promtext_render(gd_promtext *p);

#endif
