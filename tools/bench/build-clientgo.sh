#!/usr/bin/env bash
# build-clientgo.sh OUT [PROGRAM] — builds tools/bench/PROGRAM (clientgo: the informer
# baseline, the default; clientgo_pipeline: the informer + workqueue baseline), with the
# shared tools/bench/clientgo_shared/*.go beside its main.go, against the
# client-go vendored in Debian's kubernetes source tree that tools/k8s-build.sh unpacked (and
# whose reflect2 it replaced), reusing its Go build cache. Prints nothing on success.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:?usage: $0 OUT [clientgo|clientgo_pipeline]}
PROG=${2:-clientgo}
[ -f "$ROOT/tools/bench/$PROG/main.go" ] || { echo "build-clientgo: no tools/bench/$PROG/main.go" >&2; exit 2; }
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/godis-operator
"$ROOT/tools/k8s-build.sh" >/dev/null   # makes sure the source tree is there
srcdir=$(find "$CACHE/src" -maxdepth 2 -name .godis-extracted -path '*/kubernetes-*' -printf '%h\n' | head -n1)
[ -n "$srcdir" ] || { echo "build-clientgo: no kubernetes source tree in $CACHE/src" >&2; exit 1; }
# A package inside the tree so the vendored modules resolve (the tree is our cache, not the repo).
pkg=cmd/godis-bench-${PROG//_/-}
rm -rf "${srcdir:?}/$pkg"; mkdir -p "$srcdir/$pkg"
cp "$ROOT/tools/bench/$PROG/main.go" "$ROOT"/tools/bench/clientgo_shared/*.go "$srcdir/$pkg/"
# Kubernetes 1.20 builds in GOPATH mode (hack/lib/golang.sh: GO111MODULE=off, GOPATH under
# _output with src/k8s.io/kubernetes linking the tree), so vendor/ resolves the same way here.
gopath=$srcdir/_output/local/go
[ -e "$gopath/src/k8s.io/kubernetes" ] || { mkdir -p "$gopath/src/k8s.io"; ln -s "$srcdir" "$gopath/src/k8s.io/kubernetes"; }
(cd "$gopath/src/k8s.io/kubernetes" && GO111MODULE=off GOFLAGS= GOPATH="$gopath" \
   GOCACHE="$CACHE/gocache" go build -o "$OUT" "./$pkg")
