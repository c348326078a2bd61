#!/usr/bin/env python3
"""converge_fit.py TAG LINES.jsonl — goal 1 of issue 23 with the machine's noise taken out.

Every converge run, the operator's and the floors' alike, takes a time that follows the mean
latency of kube-apiserver's answers to the PersistentVolume controller's writes (pv_write_ms
on each line, converge.sh): that controller binds the claims one at a time, so its write
latency sets the pace of the whole run, and on this machine it moves from 6 to 14 ms between
runs of the same hour. One least-squares fit over the operator's and the floor's runs,

    time = intercept + slope * pv_write_ms + offset * [operator run],

gives the operator's own cost at equal control-plane latency (offset: its pipeline of
reconciles and hops, and its wait for godis's election at the end), apart from what the
latency of each run added. floor_writes runs (converge_floor_writes_<tag>_s), when there are
two or more, get an offset of their own (floor_writes_offset_s: what the operator's objects
cost beyond the latency they cause). Prints one JSON line: value = (floor + offset) / floor
at the floor runs' median latency (converge_ratio_equal_latency_<tag>), the fit's figures,
and the latency each kind of run saw beside the floors' (latency_share_s: slope times the
difference of the medians; the part of the gap that reaches the run through the control
plane's latency, which the fit cannot tell from the machine's noise run by run). Where the
chain does not set the pace (10 x 3: 300 ms of binding in a 3-5 s run) the slope is near zero
and the figure is the plain ratio of the operator's time to the floor's.

Exit 0 with a line; 1 when the lines cannot be fitted (fewer than two runs of a side with
pv_write_ms, or latencies that do not vary), with a line saying why; 2 on bad arguments.
"""
import json
import statistics
import sys


def solve(a, v):
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(v)
    m = [row[:] + [v[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-9:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


KINDS = (("converge_%s_s", "operator"), ("converge_floor_%s_s", "floor"),
         ("converge_floor_writes_%s_s", "floor_writes"))


def points(lines, tag):
    """(time, pv_write_ms, kind) of every run that has both."""
    names = {fmt % tag: kind for fmt, kind in KINDS}
    pts = []
    for line in lines:
        lat, t, kind = line.get("pv_write_ms"), line.get("value"), names.get(line.get("name"))
        if kind and isinstance(lat, (int, float)) and isinstance(t, (int, float)):
            pts.append((float(t), float(lat), kind))
    return pts


def fit(pts):
    count = {k: sum(1 for p in pts if p[2] == k) for _, k in KINDS}
    if count["operator"] < 2 or count["floor"] < 2:
        return None, "needs two operator and two floor runs with pv_write_ms (has %d and %d)" % (
            count["operator"], count["floor"])
    # floor_writes gets an offset of its own when there are two of them, else is left out
    kinds = ["operator"] + (["floor_writes"] if count["floor_writes"] >= 2 else [])
    pts = [p for p in pts if p[2] == "floor" or p[2] in kinds]
    x = [[1.0, lat] + [1.0 if kind == k else 0.0 for k in kinds] for _, lat, kind in pts]
    y = [t for t, _, _ in pts]
    n = len(x[0])
    a = [[sum(r[i] * r[j] for r in x) for j in range(n)] for i in range(n)]
    v = [sum(r[i] * t for r, t in zip(x, y)) for i in range(n)]
    sol = solve(a, v)
    if sol is None:
        return None, "the runs' pv_write_ms do not vary: no fit"
    icpt, slope, offsets = sol[0], sol[1], dict(zip(kinds, sol[2:]))
    resid = [t - sum(c * xi for c, xi in zip(sol, r)) for r, t in zip(x, y)]
    se = (sum(e * e for e in resid) / max(1, len(pts) - n)) ** 0.5
    med = {k: statistics.median([lat for _, lat, kind in pts if kind == k]) for k in ["floor"] + kinds}
    floor = icpt + slope * med["floor"]
    if floor <= 0:
        return None, "the fitted floor at %.2f ms is not positive" % med["floor"]
    out = {"value": round((floor + offsets["operator"]) / floor, 3), "unit": "ratio",
           "floor_s_at_latency": round(floor, 2), "at_pv_write_ms": round(med["floor"], 2),
           "operator_offset_s": round(offsets["operator"], 2), "s_per_pv_write_ms": round(slope, 2),
           "intercept_s": round(icpt, 2), "residual_s": round(se, 2),
           "runs": {k: count[k] for k in ["operator", "floor"] + kinds[1:]},
           "pv_write_ms_median": {k: round(v, 2) for k, v in med.items()},
           "latency_share_s": round(slope * (med["operator"] - med["floor"]), 2)}
    if "floor_writes" in offsets:
        out["floor_writes_offset_s"] = round(offsets["floor_writes"], 2)
        out["floor_writes_latency_share_s"] = round(slope * (med["floor_writes"] - med["floor"]), 2)
    return out, None


def main(argv):
    if len(argv) != 3:
        print("usage: converge_fit.py TAG LINES.jsonl", file=sys.stderr)
        return 2
    tag, path = argv[1], argv[2]
    try:
        lines = [json.loads(s) for s in open(path) if s.strip()]
    except (OSError, ValueError) as e:
        print("converge_fit.py: cannot read %s: %s" % (path, e), file=sys.stderr)
        return 2
    res, why = fit(points(lines, tag))
    name = "converge_ratio_equal_latency_%s" % tag
    note = ("goal 1 at equal control-plane latency: (floor + the operator's offset) / floor, from one fit "
            "of every run's time on its PV controller write latency (tools/bench/converge_fit.py)")
    if res is None:
        print(json.dumps({"name": name, "value": None, "unit": "ratio", "error": why, "note": note}))
        return 1
    print(json.dumps(dict({"name": name}, **res, note=note)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
