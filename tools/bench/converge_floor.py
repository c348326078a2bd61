#!/usr/bin/env python3
"""converge_floor.py — what 100 x 3 costs this control plane without any operator.

    converge_floor.py --templates children.json --namespace NS [--count 100] [--threads 16]

The figure beside converge_100x3_s that says how much of it is the operator. Creates, at
t=0 and from THREADS threads with no rate limit, everything the operator creates for COUNT
GodisClusters — each cluster's ConfigMap, and per member its Service, PVC and ReplicaSet,
in the operator's order — copied from one real cluster of a converge.sh run (TEMPLATES,
written there as build/bench-converge/children.json: names, labels, specs and env exactly
as the worker built them; owner references and server-set fields dropped, so the garbage
collector leaves them alone). No GodisCluster, no Godis, no status write, no Event: an
operator that costs nothing and knows the answer at once. It then watches the namespace's
pods until COUNT x members are Ready and prints one JSON line:

    {"floor_s": .., "created_s": .., "objects": .., "ready_pods": .., "expected_pods": ..}

floor_s is from the first create until the last pod turned Ready (as seen on the watch);
created_s until the last create returned. Uses $KUBECONFIG's admin certificate like the
rest of the benchmark (DEVCLUSTER_DIR/pki). Exit 0 when every pod got Ready, 1 on timeout,
2 on bad input.
"""
import argparse
import json
import os
import queue
import ssl
import sys
import threading
import time
import http.client
from urllib.parse import urlparse


def die(msg):
    print(f"converge_floor: {msg}", file=sys.stderr)
    sys.exit(2)


class Api:
    """One keep-alive HTTPS connection per thread, the devcluster's admin certificate."""

    def __init__(self, server, pki):
        u = urlparse(server)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.local = threading.local()

    def conn(self, timeout=60):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
            self.local.c = c
        return c

    def request(self, method, path, body=None):
        for attempt in range(3):
            c = self.conn()
            try:
                c.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                return r.status, data
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                if attempt == 2:
                    raise
        return 0, b""


PATHS = {"ConfigMap": "configmaps", "Service": "services",
         "PersistentVolumeClaim": "persistentvolumeclaims", "ReplicaSet": "replicasets"}
GROUPS = {"ReplicaSet": "/apis/apps/v1"}


def clean(obj):
    """Keeps what a client sends on create: name, labels, spec/data. Drops owner references
    (their owners do not exist here), server fields and a PVC's binding."""
    md = obj.get("metadata", {})
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
           "metadata": {"name": md["name"], "labels": md.get("labels", {})}}
    for k in ("spec", "data"):
        if k in obj:
            out[k] = obj[k]
    if obj["kind"] == "PersistentVolumeClaim":
        out["spec"].pop("volumeName", None)
    if obj["kind"] == "Service":
        out["spec"].pop("clusterIPs", None)   # headless: clusterIP None stays
    if obj["kind"] == "ReplicaSet":
        # The pin to the node the template member's data is on: the operator creates a
        # member's ReplicaSet without it and adds it once the member ran. Copied, it put
        # every cluster's member k on one node: past the node's CPU for 100 x 3 on 5 nodes
        # (60 pods never scheduled: the floor of 2026-11-27 timed out at 240/300 Ready).
        aff = out["spec"].get("template", {}).get("spec", {}).get("affinity", {})
        aff.pop("nodeAffinity", None)
    return out


def load_templates(path):
    try:
        t = json.load(open(path))
    except (OSError, ValueError) as e:
        die(f"templates {path}: {e} (run tools/bench/converge.sh first: it writes them)")
    need = ("cluster", "namespace", "configmap", "members")
    if not isinstance(t, dict) or any(k not in t for k in need) or not t["members"]:
        die(f"templates {path}: want {need}, with at least one member")
    return t


def instantiate(t, ns, name):
    """The template cluster's objects for cluster NAME in NS: the old cluster name and
    namespace are replaced everywhere (names, labels, the initial-cluster addresses)."""
    text = json.dumps({"cm": clean(t["configmap"]),
                       "members": [[clean(o) for o in m] for m in t["members"]]})
    text = text.replace(t["namespace"], ns).replace(t["cluster"], name)
    return json.loads(text)


def create_all(api, ns, t, count, threads):
    work = queue.Queue()
    for i in range(count):
        objs = instantiate(t, ns, "floor-%03d" % i)
        work.put([objs["cm"]] + [o for m in objs["members"] for o in m])
    failures = []

    def run():
        while True:
            try:
                objs = work.get_nowait()
            except queue.Empty:
                return
            for o in objs:
                path = f"{GROUPS.get(o['kind'], '/api/v1')}/namespaces/{ns}/{PATHS[o['kind']]}"
                code, body = api.request("POST", path, o)
                if code != 201:
                    failures.append(f"{o['kind']} {o['metadata']['name']}: {code} {body[:200]!r}")

    ts = [threading.Thread(target=run) for _ in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return failures


def pod_ready(p):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in p.get("status", {}).get("conditions", []) or [])


def watch_ready(api, ns, rv, expected, t0, deadline, result):
    """Follows the namespace's pods from RV; records when the EXPECTED-th pod turned Ready."""
    ready = set()
    while time.monotonic() < deadline and len(ready) < expected:
        c = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=30)
        c.request("GET", f"/api/v1/namespaces/{ns}/pods?watch=1&allowWatchBookmarks=true"
                         f"&resourceVersion={rv}&timeoutSeconds=60")
        r = c.getresponse()
        if r.status != 200:
            die(f"watch pods: HTTP {r.status} {r.read()[:200]!r}")
        try:
            for line in r:
                ev = json.loads(line)
                obj = ev.get("object", {})
                if ev.get("type") == "ERROR":
                    die(f"watch pods: {obj.get('message')}")
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                name = obj.get("metadata", {}).get("name")
                if ev.get("type") in ("ADDED", "MODIFIED") and pod_ready(obj):
                    ready.add(name)
                elif ev.get("type") == "DELETED" or not pod_ready(obj):
                    ready.discard(name)
                if len(ready) >= expected:
                    result["floor_ms"] = (time.monotonic() - t0) * 1000
                    break
                if time.monotonic() >= deadline:
                    break
        except (http.client.HTTPException, OSError, ValueError):
            pass   # the server ended the watch, or a truncated line: resume from rv
        finally:
            c.close()
    result["ready"] = len(ready)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--templates", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args()
    if not 1 <= a.count <= 1000 or not 1 <= a.threads <= 64:
        die("--count wants 1..1000 and --threads 1..64")
    t = load_templates(a.templates)
    server, pki = os.environ.get("KUBE_APISERVER"), os.environ.get("DEVCLUSTER_DIR")
    if not server or not pki:
        die("KUBE_APISERVER and DEVCLUSTER_DIR must be set (eval \"$(tools/devcluster env)\")")
    api = Api(server, os.path.join(pki, "pki"))
    code, body = api.request("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": a.namespace}})
    if code not in (201, 409):
        die(f"create namespace: {code} {body[:200]!r}")
    code, body = api.request("GET", f"/api/v1/namespaces/{a.namespace}/pods?resourceVersion=0")
    if code != 200:
        die(f"list pods: {code}")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    expected = a.count * len(t["members"])
    result = {}
    t0 = time.monotonic()
    w = threading.Thread(target=watch_ready,
                         args=(api, a.namespace, rv, expected, t0, t0 + a.timeout, result))
    w.start()
    failures = create_all(api, a.namespace, t, a.count, a.threads)
    created_ms = (time.monotonic() - t0) * 1000
    for f in failures[:10]:
        print(f"converge_floor: create {f}", file=sys.stderr)
    w.join()
    out = {"floor_s": round(result["floor_ms"] / 1000, 3) if "floor_ms" in result else None,
           "created_s": round(created_ms / 1000, 3),
           "objects": a.count * (1 + sum(len(m) for m in t["members"])),
           "create_failures": len(failures),
           "ready_pods": result.get("ready", 0), "expected_pods": expected}
    print(json.dumps(out))
    return 0 if "floor_ms" in result and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
