#!/usr/bin/env bash
# Installs, with apt-get, every Debian package the build, tests, benchmarks and demo need.
# Idempotent and quiet when everything is present.
set -euo pipefail
PKGS=(build-essential pkg-config clang libclang-rt-14-dev libcurl4-openssl-dev libcjson-dev libzmq3-dev
      libyaml-dev libssl-dev libcmocka-dev libmicrohttpd-dev libzstd-dev libjemalloc-dev openssl curl etcd-server
      valgrind etcd-client jq golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync procps psmisc)
# kubectl for the drain tests: Debian's kubernetes-client. Where /usr/bin/kubectl already
# belongs to another package (a vendor's kubectl), installing it would overwrite that
# package's file, so the same Debian package is fetched with apt-get and unpacked into the
# cache instead; tools/kubectl-debian runs whichever is there.
KC_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/godis-operator/kubernetes-client
kc_owner=$(dpkg-query -S /usr/bin/kubectl 2>/dev/null | cut -d: -f1 || true)
if [ -z "$kc_owner" ] || [ "$kc_owner" = kubernetes-client ]; then
  PKGS+=(kubernetes-client)
elif [ ! -x "$KC_DIR/usr/bin/kubectl" ]; then
  echo "[deps] /usr/bin/kubectl belongs to $kc_owner: unpacking Debian's kubernetes-client into $KC_DIR" >&2
  kc_tmp=$(mktemp -d); chmod 755 "$kc_tmp"
  (cd "$kc_tmp" && { apt-get download -qq kubernetes-client 2>/dev/null ||
     { apt-get update -qq && apt-get download -qq kubernetes-client; }; }) >&2
  mkdir -p "$(dirname "$KC_DIR")" && dpkg-deb -x "$kc_tmp"/kubernetes-client_*.deb "$kc_tmp/root" &&
    { mv -T "$kc_tmp/root" "$KC_DIR" 2>/dev/null || [ -x "$KC_DIR/usr/bin/kubectl" ]; }
  rm -rf "$kc_tmp"
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
echo "[deps] installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; then
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
