#!/usr/bin/env bash
# Installs, with apt-get, every Debian package the build, tests, benchmarks and demo need.
# Idempotent and quiet when everything is present.
set -euo pipefail
PKGS=(build-essential pkg-config clang libclang-rt-14-dev libcurl4-openssl-dev libcjson-dev libzmq3-dev
      libyaml-dev libssl-dev libcmocka-dev libmicrohttpd-dev libzstd-dev openssl curl etcd-server
      valgrind etcd-client jq golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync procps psmisc)
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
