#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler from Debian's
# `kubernetes` source package and caches them outside the clone, keyed by version.
# Why from source: Debian ships no kube-apiserver binary package; the source package
# is the only Debian-provided way to get the real control plane.
set -euo pipefail
CACHE="${GODIS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/godis-operator}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

log() { printf '[k8s-build] %s\n' "$*" >&2; }

# A deb-src entry derived from the machine's own Debian source, so no host name is
# written into the repository.
ensure_deb_src() {
  if grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || grep -qs '^deb-src' /etc/apt/sources.list; then
    return 0
  fi
  local src
  src=$(ls /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
  if [ -n "$src" ]; then
    sed 's/^Types:.*/Types: deb-src/' "$src" | $SUDO tee /etc/apt/sources.list.d/godis-operator-src.sources >/dev/null
  elif [ -f /etc/apt/sources.list ]; then
    grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | $SUDO tee /etc/apt/sources.list.d/godis-operator-src.list >/dev/null
  else
    log "no Debian apt source found to derive a deb-src entry from"; exit 1
  fi
  $SUDO apt-get update -qq
}

# Filters the build's output: code generators' klog chatter (I/W lines) becomes one line,
# package names from `go install -v` a count every 100 packages; the rest (errors) passes.
show_progress() {
  awk '
    /^[IW][0-9][0-9][0-9][0-9] / { if (!gen++) { print "[k8s-build] generating code"; fflush() } next }
    /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~+-]+)*$/ {
      if (++n % 100 == 0) { printf "[k8s-build] compiled %d packages so far\n", n; fflush() }
      next
    }
    { print; fflush() }
    END { if (n) printf "[k8s-build] compiled %d packages\n", n }'
}

main() {
  local bins=(kube-apiserver kube-controller-manager kube-scheduler)
  # Fast path: a cached build of any version is reused.
  if [ -f "$CACHE/k8s/current" ]; then
    local d; d="$CACHE/k8s/$(cat "$CACHE/k8s/current")"
    local ok=1; for b in "${bins[@]}"; do [ -x "$d/$b" ] || ok=0; done
    if [ $ok = 1 ]; then echo "$d"; return 0; fi
  fi
  ensure_deb_src
  local pkgs=(golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync)
  local missing=(); for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    $SUDO apt-get install -y -qq "${missing[@]}" >&2 || { $SUDO apt-get update -qq; $SUDO apt-get install -y -qq "${missing[@]}" >&2; }
  fi
  local ver; ver=$(apt-cache showsrc kubernetes | awk '/^Version:/{print $2; exit}')
  [ -n "$ver" ] || { log "apt-cache showsrc kubernetes found nothing"; exit 1; }
  local out="$CACHE/k8s/$ver"
  mkdir -p "$CACHE/src"
  # The source tree counts only once it was fully unpacked (.godis-extracted): an
  # interrupted `apt-get source` leaves a half tree, which is thrown away and fetched again.
  local srcdir
  srcdir=$(find "$CACHE/src" -maxdepth 2 -name .godis-extracted -path '*/kubernetes-*' -printf '%h\n' | head -n1 || true)
  if [ -z "$srcdir" ]; then
    log "fetching the kubernetes $ver source package"
    rm -rf "$CACHE/src"; mkdir -p "$CACHE/src"
    (cd "$CACHE/src" && apt-get source -qq kubernetes >&2)
    srcdir=$(find "$CACHE/src" -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)
    [ -n "$srcdir" ] || { log "apt-get source kubernetes unpacked nothing"; exit 1; }
    touch "$srcdir/.godis-extracted"
  fi
  # reflect2 1.0.1 reads Go runtime internals that changed in Go 1.18+; Debian's is fixed.
  local r2=/usr/share/gocode/src/github.com/modern-go/reflect2
  if [ ! -f "$srcdir/.reflect2-replaced" ]; then
    log "replacing vendored modern-go/reflect2 with Debian's copy"
    rm -rf "$srcdir/vendor/github.com/modern-go/reflect2"
    mkdir -p "$srcdir/vendor/github.com/modern-go/reflect2"
    rsync -a --exclude '*_test.go' --exclude 'test*' "$r2/" "$srcdir/vendor/github.com/modern-go/reflect2/"
    touch "$srcdir/.reflect2-replaced"
  fi
  log "building ${bins[*]} (about 8 minutes on 2 cores; progress follows)"
  local start=$SECONDS
  # "-v" in WHAT reaches `go install` (kube's build passes dash-words on as go flags), which
  # then names every package it compiles; show_progress turns that into a running count.
  (cd "$srcdir" && GOFLAGS=-mod=vendor GO111MODULE=on GOPATH="$CACHE/gopath" GOCACHE="$CACHE/gocache" \
     KUBE_VERBOSE=2 make WHAT="-v cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" 2>&1 |
     show_progress >&2)
  mkdir -p "$out"
  for b in "${bins[@]}"; do
    local f; f=$(find "$srcdir/_output" -type f -name "$b" -perm -u+x | head -n1)
    [ -n "$f" ] || { log "build produced no $b"; exit 1; }
    cp "$f" "$out/$b"
  done
  echo "$ver" > "$CACHE/k8s/current"
  log "built in $((SECONDS-start)) s into $out"
  echo "$out"
}
main "$@"
