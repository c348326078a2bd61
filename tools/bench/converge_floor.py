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

With --operator-writes the same control plane also gets every other request the operator
sends for a converged cluster (the audit log's list, exactly: its GodisCluster, the
GodisCluster's two status writes, three Godis and their status writes as each pod turns
Ready, the PodDisruptionBudget and the one Event, the children owned as the operator owns
them), from this script, with no operator process running: what the control plane needs
for the operator's objects, apart from the operator's own CPU. floor_s then ends when the
last cluster's final status write returned (the operator's convergence), and the templates
must hold the cluster's objects too (converge.sh saves them: godiscluster, godises, pdb).

floor_s is from the first create until the last pod turned Ready (as seen on the watch);
created_s until the last create returned. With --writable the output also has writable_s:
until the last cluster took a write through every one of its members (class Writable), the
floor of the operator's own test for Ready, which waits for godis's leader election.
Authenticates with --token-file's bearer token (converge.sh gives it a ServiceAccount's, as
the operator has), else with the devcluster's admin certificate (DEVCLUSTER_DIR/pki). Exit 0
when every pod got Ready, 1 on timeout, 2 on bad input.
"""
import argparse
import ipaddress
import json
import socket
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
    """One keep-alive HTTPS connection per thread; a bearer token (--token-file), else the
    devcluster's admin certificate. With a token no certificate is offered: kube-apiserver
    tries a client certificate first and, in 1.20, verifies its chain on every request,
    where a token is checked once and cached, as the operator's own is."""

    def __init__(self, server, pki, token=None):
        u = urlparse(server)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.auth = {"Authorization": f"Bearer {token}"} if token else {}
        if not token:
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
                          headers={"Content-Type": "application/json", **self.auth})
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
         "PersistentVolumeClaim": "persistentvolumeclaims", "ReplicaSet": "replicasets",
         "GodisCluster": "godisclusters", "Godis": "godises",
         "PodDisruptionBudget": "poddisruptionbudgets", "Event": "events"}
GROUPS = {"ReplicaSet": "/apis/apps/v1", "GodisCluster": "/apis/kumkeehyun.github.com/v1",
          "Godis": "/apis/kumkeehyun.github.com/v1", "PodDisruptionBudget": "/apis/policy/v1beta1"}


def path_of(ns, kind, name=None, sub=None):
    """The collection (or, with NAME, the object; with SUB, its subresource) of KIND in NS."""
    p = f"{GROUPS.get(kind, '/api/v1')}/namespaces/{ns}/{PATHS[kind]}"
    return p + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


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
    if "status" in obj and obj["kind"] in ("GodisCluster", "Godis"):
        out["status"] = obj["status"]    # what the replayed status writes send
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
    objs = {"cm": clean(t["configmap"]),
            "members": [[clean(o) for o in m] for m in t["members"]]}
    for k in ("godiscluster", "pdb"):
        if k in t:
            objs[k] = clean(t[k])
    if "godises" in t:
        objs["godises"] = [clean(o) for o in t["godises"]]
    text = json.dumps(objs).replace(t["namespace"], ns).replace(t["cluster"], name)
    return json.loads(text)


def owned_by(obj, owner):
    """OBJ with OWNER as its controller, as the operator writes its children."""
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return obj


class Replay:
    """--operator-writes: the operator's requests for each cluster, sent from here. The
    bootstrap at once (create, Initializing status, ConfigMap, Godis, children, Event); each
    Godis's status when its pod turns Ready; the final status and the PDB when all are."""

    def __init__(self, api, ns):
        self.api, self.ns = api, ns
        self.mu = threading.Lock()
        # name -> {"gc": the GodisCluster as last written, "final": its last status,
        #          "godis": {name: (object, status)}, "ready": names, "members": n, "pdb": template}
        self.clusters = {}
        self.jobs = queue.Queue()
        self.failures = []
        self.done_ms = {}       # cluster -> ms since t0 its final status write returned

    def send(self, method, path, body):
        code, data = self.api.request(method, path, body)
        if code not in (200, 201):
            self.failures.append(f"{method} {path}: {code} {data[:200]!r}")
            return None
        return json.loads(data)

    def status_put(self, obj, status):
        body = dict(obj)
        body["status"] = status
        md = obj["metadata"]
        return self.send("PUT", path_of(self.ns, obj["kind"], md["name"], "status"), body)

    def bootstrap(self, objs, name):
        """One cluster's writes up to its members' children, in the operator's order."""
        gc_t = objs["godiscluster"]
        final = gc_t.pop("status", {})
        gc = self.send("POST", path_of(self.ns, "GodisCluster"), gc_t)
        if not gc:
            return
        init = dict(final, status="Initializing", readyReplicas=0)
        gc = self.status_put(gc, init) or gc
        godis = {}
        with self.mu:
            self.clusters[name] = {"gc": gc, "final": final, "godis": godis, "ready": set(),
                                   "members": len(objs["godises"]), "pdb": objs["pdb"]}
        self.send("POST", path_of(self.ns, "ConfigMap"), owned_by(objs["cm"], gc))
        for g_t, children in zip(objs["godises"], objs["members"]):
            g_status = g_t.pop("status", {})
            g = self.send("POST", path_of(self.ns, "Godis"), owned_by(g_t, gc))
            if not g:
                continue
            with self.mu:
                godis[g["metadata"]["name"]] = (g, g_status)
            for o in children:
                self.send("POST", path_of(self.ns, o["kind"]), owned_by(o, g))
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.send("POST", path_of(self.ns, "Event"), {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.floor", "namespace": self.ns},
            "involvedObject": {"apiVersion": gc["apiVersion"], "kind": "GodisCluster", "name": name,
                               "namespace": self.ns, "uid": gc["metadata"]["uid"]},
            "reason": "Initializing", "message": "bootstrapping the cluster", "type": "Normal",
            "source": {"component": "godis-operator"}, "firstTimestamp": now, "lastTimestamp": now,
            "count": 1, "reportingComponent": "godis-operator"})

    def pod_ready(self, pod):
        """From the watch: a member's pod turned Ready; its status writes go to the pool."""
        labels = pod.get("metadata", {}).get("labels", {})
        self.jobs.put((labels.get("cluster-name"), labels.get("node-name")))

    def serve(self, t0):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            cluster, member = job
            with self.mu:
                c = self.clusters.get(cluster)
                g = c and c["godis"].get(member)
                fresh = c is not None and g is not None and member not in c["ready"]
                if fresh:
                    c["ready"].add(member)
                last = fresh and len(c["ready"]) == c["members"]
            if not fresh:
                continue
            self.status_put(g[0], g[1])
            if last:
                self.status_put(c["gc"], c["final"])
                self.send("POST", path_of(self.ns, "PodDisruptionBudget"), owned_by(c["pdb"], c["gc"]))
                with self.mu:
                    self.done_ms[cluster] = (time.monotonic() - t0) * 1000


PROBE_KEY = "floor-ready-probe"   # (never starts with * $ + - : — godis dies on those)


def resp_set(ip, port, key, value, timeout=5):
    """One `set KEY VALUE` in RESP2, as the operator's write probe sends it: None when it
    was taken, else godis's error (or the transport's)."""
    req = b"".join([b"*3\r\n"] + [b"$%d\r\n%s\r\n" % (len(a), a) for a in
                                   (b"set", key.encode(), value.encode())])
    try:
        with socket.create_connection((ip, port), timeout=timeout) as sk:
            sk.sendall(req)
            line = sk.makefile("rb").readline().rstrip(b"\r\n").decode(errors="replace")
    except OSError as e:
        return f"{ip}:{port}: {e}"
    return None if line == "+OK" else (line.lstrip("-") or f"{ip}:{port}: connection closed")


class Writable:
    """--writable: when each cluster took its first write through every one of its members,
    which is what the operator's Ready waits for (godis takes a write only once its Raft
    members have elected a leader that hears a majority, 1-2 s after they started, and a pod
    being Ready does not say so). Once all of a cluster's pods are Ready, a `set` goes
    through each member in turn, again at once after each refusal (godis itself holds a
    write for about a second while it has no leader): what a client with no operator gets
    at best. Only loopback pod IPs are dialled (the test cluster's node agent gives pods
    127.0.0.0/8 addresses); any other is a failure, not a connection."""

    def __init__(self, members, port, t0, deadline):
        self.members, self.port, self.t0, self.deadline = members, port, t0, deadline
        self.mu = threading.Lock()
        self.ips = {}           # cluster -> {member: pod IP}
        self.queued = set()
        self.jobs = queue.Queue()
        self.done_ms = {}       # cluster -> ms since t0 its last member took a write
        self.failures = []

    def pod_ready(self, pod):
        labels = pod.get("metadata", {}).get("labels", {})
        cluster, member = labels.get("cluster-name"), labels.get("node-name")
        ip = pod.get("status", {}).get("podIP")
        if not cluster or not member or not ip:
            return
        with self.mu:
            got = self.ips.setdefault(cluster, {})
            got[member] = ip
            start = len(got) == self.members and cluster not in self.queued
            if start:
                self.queued.add(cluster)
        if start:
            self.jobs.put(cluster)

    def probe(self, cluster):
        with self.mu:
            members = sorted(self.ips[cluster].items())
        for member, ip in members:
            try:
                loopback = ipaddress.ip_address(ip).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                self.failures.append(f"{member}: pod IP {ip} is not a loopback address")
                return
            while (err := resp_set(ip, self.port, PROBE_KEY, member)) is not None:
                if time.monotonic() >= self.deadline:
                    self.failures.append(f"{member}: no write taken before the timeout: {err}")
                    return
                time.sleep(0.02)
        with self.mu:
            self.done_ms[cluster] = (time.monotonic() - self.t0) * 1000

    def serve(self):
        while (cluster := self.jobs.get()) is not None:
            self.probe(cluster)


def client_port(t):
    """The godis client port of the template's member containers (6379 unless named)."""
    for o in t["members"][0]:
        if o.get("kind") == "ReplicaSet":
            for ctr in o["spec"]["template"]["spec"].get("containers", []):
                for p in ctr.get("ports", []):
                    if p.get("name") == "client":
                        return int(p["containerPort"])
    return 6379


def create_all(api, ns, t, count, threads, replay=None):
    work = queue.Queue()
    for i in range(count):
        objs = instantiate(t, ns, "floor-%03d" % i)
        work.put((objs, "floor-%03d" % i) if replay else
                 [objs["cm"]] + [o for m in objs["members"] for o in m])
    failures = replay.failures if replay else []

    def run():
        while True:
            try:
                objs = work.get_nowait()
            except queue.Empty:
                return
            if replay:
                replay.bootstrap(*objs)
                continue
            for o in objs:
                code, body = api.request("POST", path_of(ns, o["kind"]), o)
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


def watch_ready(api, ns, rv, expected, t0, deadline, result, on_ready=None):
    """Follows the namespace's pods from RV; records when the EXPECTED-th pod turned Ready
    (ON_READY, if given, is told of each pod that turns Ready)."""
    ready = set()
    while time.monotonic() < deadline and len(ready) < expected:
        c = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=30)
        c.request("GET", f"/api/v1/namespaces/{ns}/pods?watch=1&allowWatchBookmarks=true"
                         f"&resourceVersion={rv}&timeoutSeconds=60", headers=api.auth)
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
                    if on_ready and name not in ready:
                        on_ready(obj)
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
    ap.add_argument("--token-file", help="a bearer token to authenticate with (else the admin certificate)")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--operator-writes", action="store_true",
                    help="also send the operator's own requests for each cluster (see above)")
    ap.add_argument("--writable", action="store_true",
                    help="also time each cluster's first write through every member (writable_s)")
    a = ap.parse_args()
    if not 1 <= a.count <= 1000 or not 1 <= a.threads <= 64:
        die("--count wants 1..1000 and --threads 1..64")
    t = load_templates(a.templates)
    if a.operator_writes and any(k not in t for k in ("godiscluster", "godises", "pdb")):
        die(f"templates {a.templates}: --operator-writes wants godiscluster, godises and pdb too")
    server, pki = os.environ.get("KUBE_APISERVER"), os.environ.get("DEVCLUSTER_DIR")
    if not server or not pki:
        die("KUBE_APISERVER and DEVCLUSTER_DIR must be set (eval \"$(tools/devcluster env)\")")
    token = None
    if a.token_file:
        try:
            with open(a.token_file) as f:
                token = f.read().strip()
        except OSError as e:
            die(f"--token-file: {e}")
        if not token:
            die(f"--token-file {a.token_file} is empty")
    api = Api(server, os.path.join(pki, "pki"), token)
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
    replay = Replay(api, a.namespace) if a.operator_writes else None
    writable = Writable(len(t["members"]), client_port(t), t0, t0 + a.timeout) if a.writable else None
    told = [f for f in (replay and replay.pod_ready, writable and writable.pod_ready) if f]
    w = threading.Thread(target=watch_ready,
                         args=(api, a.namespace, rv, expected, t0, t0 + a.timeout, result,
                               (lambda pod: [f(pod) for f in told]) if told else None))
    w.start()
    # (as many probing threads as the operator's 32 concurrent reconciles: a probe of a
    # cluster without a leader holds its thread for about a second)
    probers = [threading.Thread(target=writable.serve) for _ in range(32)] if writable else []
    for th in probers:
        th.start()
    # (the status writes: as many threads as the creates, as the operator's reconcilers share
    # one client; they wait for pods while the creates run)
    pool = [threading.Thread(target=replay.serve, args=(t0,)) for _ in range(a.threads)] if replay else []
    for th in pool:
        th.start()
    failures = create_all(api, a.namespace, t, a.count, a.threads, replay)
    created_ms = (time.monotonic() - t0) * 1000
    w.join()
    for _ in pool:
        replay.jobs.put(None)
    for th in pool:
        th.join()
    if writable:
        while len(writable.done_ms) + len(writable.failures) < a.count and time.monotonic() < t0 + a.timeout:
            time.sleep(0.05)
        for _ in probers:
            writable.jobs.put(None)
        for th in probers:
            th.join()
        for f in writable.failures[:10]:
            print(f"converge_floor: write probe {f}", file=sys.stderr)
    for f in failures[:10]:
        print(f"converge_floor: create {f}", file=sys.stderr)
    if replay:   # the operator's convergence: every cluster's final status written
        if len(replay.done_ms) == a.count:
            result["floor_ms"] = max(replay.done_ms.values())
        else:
            result.pop("floor_ms", None)
    out = {"floor_s": round(result["floor_ms"] / 1000, 3) if "floor_ms" in result else None,
           "created_s": round(created_ms / 1000, 3),
           "objects": a.count * (1 + sum(len(m) for m in t["members"]) +
                                 (3 + len(t["members"]) if replay else 0)),
           "create_failures": len(failures),
           "ready_pods": result.get("ready", 0), "expected_pods": expected}
    if writable:
        whole = len(writable.done_ms) == a.count
        out["writable_s"] = round(max(writable.done_ms.values()) / 1000, 3) if whole else None
        out["writable_failures"] = len(writable.failures)
    print(json.dumps(out))
    ok = "floor_ms" in result and not failures and (not writable or out["writable_s"] is not None)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
