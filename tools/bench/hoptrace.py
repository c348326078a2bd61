#!/usr/bin/env python3
"""hoptrace.py DIR [--warmup-ms N] — merges the GD_HOPTRACE files of one pipeline run
(common/proto/gd_hoptrace.h) and prints, per hop, the latency from the previous hop the event
reached (p50/p99/max in ms), the end-to-end figures, and which hops make the tail: for the
events slower end to end than the p99, the mean time spent in each hop."""
import glob, os, sys

HOPS = ["sent", "inf_decoded", "inf_queued", "inf_popped", "inf_sent", "sub_recv",
        "sub_applied", "cache", "mapped", "enqueued", "reconcile"]


def pct(v, p):
    return v[min(len(v) - 1, (len(v) - 1) * p // 100)] if v else float("nan")


def main():
    args = sys.argv[1:]
    warm = 2000
    if "--warmup-ms" in args:
        i = args.index("--warmup-ms")
        warm = int(args[i + 1])
        del args[i:i + 2]
    d = args[0]
    ev = {}
    for f in glob.glob(os.path.join(d, "*.hops")):
        for line in open(f):
            i, h, ns = line.split()
            e = ev.setdefault(int(i), {})
            h = int(h)
            if h not in e:             # first time an event reached the hop
                e[h] = int(ns)
    sent = [e[0] for e in ev.values() if 0 in e]
    if not sent:
        print("hoptrace: no events with a sent stamp in", d)
        return 1
    t0 = min(sent) + warm * 1_000_000
    evs = [e for e in ev.values() if e.get(0, 0) >= t0]
    print(f"events traced: {len(evs)} (after {warm} ms warm-up)")
    counts = [sum(1 for e in evs if h in e) for h in range(len(HOPS))]
    print("reached: " + ", ".join(f"{HOPS[h]} {counts[h]}" for h in range(len(HOPS))))
    print(f"{'hop':<28}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'n':>8}")
    per = {}
    for e in evs:
        prev = None
        for h in range(len(HOPS)):
            if h in e:
                if prev is not None:
                    per.setdefault((prev, h), []).append((e[h] - e[prev]) / 1e6)
                prev = h
    for (a, b), v in sorted(per.items(), key=lambda kv: kv[0][1]):
        if len(v) < len(evs) // 100:
            continue
        v.sort()
        print(f"{HOPS[a] + ' -> ' + HOPS[b]:<28}{pct(v,50):9.3f}{pct(v,99):9.3f}{v[-1]:9.3f}{len(v):8}")
    for end in (8, 10):
        v = sorted((e[end] - e[0]) / 1e6 for e in evs if end in e and 0 in e)
        if v:
            print(f"{'sent -> ' + HOPS[end]:<28}{pct(v,50):9.3f}{pct(v,99):9.3f}{v[-1]:9.3f}{len(v):8}")
    # the tail: events slower than the p99, to the mapping and to the reconcile start
    for end in (8, 10):
        tot = [(e[end] - e[0], e) for e in evs if end in e and 0 in e]
        tot.sort(key=lambda x: x[0])
        if not tot:
            continue
        cut = tot[(len(tot) - 1) * 99 // 100][0]
        slow = [e for t, e in tot if t >= cut]
        # stalls or strays: a stall (a thread or process not scheduled) makes every event in
        # its window slow, so the tail's events bunch into few 10 ms windows of send time
        windows = len({e[0] // 10_000_000 for e in slow})
        print(f"tail (sent -> {HOPS[end]} >= {cut/1e6:.3f} ms, {len(slow)} events in "
              f"{windows} 10-ms windows of send time): mean ms per hop")
        sums = {}
        for e in slow:
            prev = None
            for h in range(end + 1):
                if h in e:
                    if prev is not None:
                        sums[(prev, h)] = sums.get((prev, h), 0) + (e[h] - e[prev]) / 1e6
                    prev = h
        for (a, b), s in sorted(sums.items(), key=lambda kv: kv[0][1]):
            print(f"  {HOPS[a] + ' -> ' + HOPS[b]:<26}{s / len(slow):9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
