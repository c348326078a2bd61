/* godis_metrics.c — see godis_metrics.h. */
#include "godis_metrics.h"
#include <stdio.h>
#include "gd_metrics.h"

static const char *const change_kinds[] = {"add", "remove", "replace"};

static void gm_labels(char *out, size_t cap, const char *ns, const char *name)
{
    char ens[300], ename[300];
    gd_prom_escape(ns, ens, sizeof ens);
    gd_prom_escape(name, ename, sizeof ename);
    snprintf(out, cap, "namespace=\"%s\",cluster=\"%s\"", ens, ename);
}

void godis_metrics_publish(godis_env *e, const char *ns, const char *name,
                           const godis_cluster_figures *f)
{
    if (!e->metric)
        return;
    char lab[640], klab[700];
    gm_labels(lab, sizeof lab, ns, name);
    e->metric(e, GODIS_M_MEMBERS, lab, f->members, false);
    e->metric(e, GODIS_M_READY, lab, f->ready, false);
    e->metric(e, GODIS_M_UPDATED, lab, f->updated, false);
    e->metric(e, GODIS_M_QUORUM, lab, f->members > 0 && 2 * f->ready > f->members, false);
    e->metric(e, GODIS_M_ROLLOUT, lab, f->rollout, false);
    /* Every kind exists from the start at 0, so rate() and increase() see the first change. */
    for (size_t i = 0; i < sizeof change_kinds / sizeof change_kinds[0]; i++) {
        snprintf(klab, sizeof klab, "%s,kind=\"%s\"", lab, change_kinds[i]);
        e->metric(e, GODIS_M_CHANGES, klab, 0, true);
    }
}

void godis_metrics_change(godis_env *e, const char *ns, const char *name, const char *kind)
{
    if (!e->metric)
        return;
    char lab[640], klab[700];
    gm_labels(lab, sizeof lab, ns, name);
    snprintf(klab, sizeof klab, "%s,kind=\"%s\"", lab, kind);
    e->metric(e, GODIS_M_CHANGES, klab, 1, true);
}

void godis_metrics_forget(godis_env *e)
{
    if (e->metrics_forget)
        e->metrics_forget(e);
}
