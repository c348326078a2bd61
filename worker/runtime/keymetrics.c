/* keymetrics.c — see keymetrics.h. A map from reconcile key to that key's few samples (a
 * cluster has about ten: five gauges and a counter per kind of membership change). */
#include "keymetrics.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "gd_map.h"

typedef struct {
    char *family, *labels;
    double v;
} km_sample;

typedef struct {
    km_sample *s;
    int n, cap;
} km_key;

struct keymetrics {
    pthread_mutex_t mu;
    gd_map *keys;               /* reconcile key -> km_key */
};

static void km_key_free(void *p)
{
    km_key *k = p;
    for (int i = 0; i < k->n; i++) {
        free(k->s[i].family);
        free(k->s[i].labels);
    }
    free(k->s);
    free(k);
}

keymetrics *keymetrics_new(void)
{
    keymetrics *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->keys = gd_map_new(km_key_free);
    if (!k->keys) {
        free(k);
        return NULL;
    }
    pthread_mutex_init(&k->mu, NULL);
    return k;
}

void keymetrics_destroy(keymetrics **pk)
{
    if (!pk || !*pk)
        return;
    gd_map_destroy(&(*pk)->keys);
    pthread_mutex_destroy(&(*pk)->mu);
    free(*pk);
    *pk = NULL;
}

static km_sample *km_find_or_add(km_key *k, const char *family, const char *labels)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->s[i].family, family) && !strcmp(k->s[i].labels, labels))
            return &k->s[i];
    if (k->n == k->cap) {
        int cap = k->cap ? k->cap * 2 : 8;
        km_sample *s = realloc(k->s, sizeof *s * (size_t)cap);
        if (!s)
            return NULL;
        k->s = s;
        k->cap = cap;
    }
    km_sample *s = &k->s[k->n];
    s->family = strdup(family);
    s->labels = strdup(labels);
    s->v = 0;
    if (!s->family || !s->labels) {
        free(s->family);
        free(s->labels);
        return NULL;
    }
    k->n++;
    return s;
}

void keymetrics_put(keymetrics *k, const char *key, const char *family, const char *labels,
                    double v, bool add)
{
    if (!k || !key || !family)
        return;
    pthread_mutex_lock(&k->mu);
    km_key *e = gd_map_get(k->keys, key);
    if (!e && (e = calloc(1, sizeof *e)) && gd_map_put(k->keys, key, e, NULL) != GD_OK) {
        free(e);
        e = NULL;
    }
    km_sample *s = e ? km_find_or_add(e, family, labels ? labels : "") : NULL;
    if (s)
        s->v = add ? s->v + v : v;
    pthread_mutex_unlock(&k->mu);
}

void keymetrics_forget(keymetrics *k, const char *key)
{
    if (!k || !key)
        return;
    pthread_mutex_lock(&k->mu);
    gd_map_del(k->keys, key);
    pthread_mutex_unlock(&k->mu);
}

int keymetrics_forget_if(keymetrics *k, bool (*drop)(void *ud, const char *key), void *ud)
{
    if (!k || !drop)
        return 0;
    int n = 0;
    pthread_mutex_lock(&k->mu);
    gd_map_iter it;
    gd_map_iter_init(&it, k->keys);
    const char *key;
    void *val;
    while (gd_map_next(&it, &key, &val)) {
        if (!drop(ud, key))
            continue;
        km_key_free(gd_map_iter_take(&it));
        n++;
    }
    pthread_mutex_unlock(&k->mu);
    return n;
}

typedef struct {
    const char *family;
    gd_sbuf *out;
} km_render_ctx;

static int km_render_key(void *ud, const char *key, void *val)
{
    (void)key;
    km_render_ctx *r = ud;
    const km_key *k = val;
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->s[i].family, r->family))
            gd_prom_sample(r->out, r->family, k->s[i].labels, k->s[i].v);
    return 0;
}

void keymetrics_render_family(keymetrics *k, const char *family, gd_sbuf *out)
{
    if (!k || !family || !out)
        return;
    km_render_ctx r = {family, out};
    pthread_mutex_lock(&k->mu);
    gd_map_each(k->keys, km_render_key, &r);
    pthread_mutex_unlock(&k->mu);
}

int keymetrics_keys(keymetrics *k)
{
    if (!k)
        return 0;
    pthread_mutex_lock(&k->mu);
    int n = (int)gd_map_count(k->keys);
    pthread_mutex_unlock(&k->mu);
    return n;
}
