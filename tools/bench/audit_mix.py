#!/usr/bin/env python3
"""audit_mix.py — one client's requests from the API server's audit log (issue 23).

    audit_mix.py --audit audit.log --user USER [--clusters N] [--t0 ISO] [--timeline 1]

Reads the devcluster's audit log (tools/devcluster; with DEVCLUSTER_AUDIT_READS=1 at `up`
it also has gets and lists) and prints, for the requests of USER (a substring of
user.username, e.g. the bench's ServiceAccount name):

  - a table by verb, resource/subresource and response code, with the count per cluster
    (divided by --clusters), largest first;
  - with --timeline, the client's writes per second since --t0 (else the first create of a
    GodisCluster in the log, else the client's first request), by
    resource, from the server's stageTimestamp: the write timeline to set beside the floor's.

Events are not in the audit log (its policy leaves them out), nor are watches: the APF
flow count of converge.sh includes Events and list requests of the informers, so the two
totals differ by the Events the operator posted.
"""
import argparse
import collections
import datetime
import json
import sys


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True, nargs="+")
    ap.add_argument("--user", required=True)
    ap.add_argument("--clusters", type=int, default=1)
    ap.add_argument("--namespace", help="only requests in this namespace")
    ap.add_argument("--t0")
    ap.add_argument("--timeline", type=int, default=0)
    ap.add_argument("--changes", type=int, default=0,
                    help="for this many GodisClusters, what each status write changed (needs bodies)")
    a = ap.parse_args()
    rows = collections.Counter()
    events = []
    t0 = ts(a.t0) if a.t0 else None
    bodies = collections.defaultdict(list)
    for path in a.audit:
        with open(path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                o = e.get("objectRef", {})
                if o.get("resource") == "godisclusters" and e["verb"] == "create" and t0 is None:
                    t0 = ts(e["stageTimestamp"])   # the run starts with the first GodisCluster
                if a.user not in e.get("user", {}).get("username", ""):
                    continue
                if a.namespace and o.get("namespace") != a.namespace:
                    continue
                res = o.get("resource", e.get("requestURI", "?"))
                if o.get("subresource"):
                    res += "/" + o["subresource"]
                code = e.get("responseStatus", {}).get("code", 0)
                rows[(e["verb"], res, code)] += 1
                events.append((ts(e["stageTimestamp"]), e["verb"], res))
                if e.get("requestObject") and o.get("subresource") == "status":
                    bodies[(o.get("resource"), o.get("name"))].append(
                        (ts(e["stageTimestamp"]), code, e["requestObject"].get("status", {})))
    total = sum(rows.values())
    n = max(a.clusters, 1)
    print(f"requests of *{a.user}* in the audit log: {total} ({total / n:.1f} per cluster of {n})")
    print(f"  {'verb':<8} {'resource':<34} {'code':>4} {'count':>7} {'/cluster':>9}")
    for (verb, res, code), c in rows.most_common():
        print(f"  {verb:<8} {res:<34} {code:>4} {c:>7} {c / n:>9.2f}")
    if a.timeline and events:
        events.sort()
        if t0 is None:
            t0 = events[0][0]
        per = collections.defaultdict(collections.Counter)
        for t, verb, res in events:
            if verb in ("get", "list", "watch"):
                continue
            per[int(t - t0)][f"{verb} {res}"] += 1
        print("writes per second since t0 (server stageTimestamp):")
        for s in sorted(per):
            c = per[s]
            print(f"  {s:>4}s {sum(c.values()):>4}  " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
    if a.changes:
        print_changes(bodies, a.changes, t0)
    return 0


def flat(st):
    """status as {path: value}, conditions keyed by type (lastTransitionTime dropped)."""
    out = {}
    for k, v in st.items():
        if k == "conditions" and isinstance(v, list):
            for c in v:
                for ck, cv in c.items():
                    if ck not in ("type", "lastTransitionTime"):
                        out[f"{c.get('type')}.{ck}"] = cv
        else:
            out[k] = v
    return out


def print_changes(bodies, k, t0):
    """What each status write changed against the one before, for k GodisClusters and their
    Godises: the writes a reconcile could have left out (nothing changed) show as '-'."""
    names = sorted(n for (r, n) in bodies if r == "godisclusters")[:k]
    print("status writes per object (t since t0, response code, fields changed):")
    for name in names:
        for (r, n) in sorted(bodies):
            if n != name and not (r == "godises" and n.rsplit("-", 1)[0] == name):
                continue
            print(f"  {r}/{n}: {len(bodies[(r, n)])} writes")
            prev = {}
            for t, code, st in sorted(bodies[(r, n)], key=lambda x: x[0]):
                cur = flat(st)
                ch = [f"{p}={cur.get(p)!r}" for p in sorted(set(cur) | set(prev)) if cur.get(p) != prev.get(p)]
                print(f"    {t - (t0 or t):7.2f}s {code} " + ("; ".join(ch) if ch else "-"))
                if code == 200:
                    prev = cur


if __name__ == "__main__":
    sys.exit(main())
