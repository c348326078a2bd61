#!/usr/bin/env bash
# The Dockerfile's build, without a container engine (none runs on the development
# machines, issue 17.4): what its build stage COPYs, and nothing else, is copied into a
# scratch /src, and its RUN that calls make runs there with the build arguments, as
# `docker build --build-arg GD_VERSION=… --build-arg GD_GIT_COMMIT=… --build-arg
# SOURCE_DATE_EPOCH=…` would. Checks:
#  1. the three programs build from that context alone (the Makefile includes nothing the
#     image leaves out);
#  2. --version says the build arguments (the image has no .git);
#  3. every shared library they need (ELF NEEDED) comes from a package the runtime stage
#     installs, or from one such package's Depends, or from libc6.
# Needs no devcluster. Prints one line per check, cmocka-style counts and
# "image-context: N passed, N failed".
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify-lib.sh"   # ok, bad, dv_summary
cd "$DV_ROOT" || exit 1
SRC=$DV_TMP/src                  # removed on exit
mkdir -p "$SRC"

# The Dockerfile's instructions, continuation lines joined, comments dropped.
instructions() { sed -e '/^[[:space:]]*#/d' Dockerfile | sed -e ':a' -e '/\\$/N; s/\\\n//; ta'; }
# The first stage (FROM … AS build up to the next FROM).
build_stage() { instructions | awk '/^FROM /{n++} n == 1'; }
runtime_stage() { instructions | awk '/^FROM /{n++} n == 2'; }

# 1. the context: each COPY SRC... DEST of the build stage (WORKDIR /src)
copied=0
while read -r _ args; do
  read -ra a <<<"$args"
  dest=${a[${#a[@]}-1]}
  for s in "${a[@]:0:${#a[@]}-1}"; do
    case $dest in */) mkdir -p "$SRC/$dest" ;; *) mkdir -p "$SRC/$(dirname "$dest")" ;; esac
    if [ -d "$s" ]; then cp -r "$s/." "$SRC/$dest"   # as COPY does: a directory's contents
    else cp "$s" "$SRC/$dest"; fi && copied=$((copied+1))
  done
done < <(build_stage | grep '^COPY ' | grep -v -- '--from')
make_run=$(build_stage | grep '^RUN .*make ' | sed 's/^RUN //')
if [ "$copied" -gt 3 ] && [ -n "$make_run" ]; then ok "Dockerfile: $copied COPY sources and the make RUN found"
else bad "Dockerfile: COPY sources ($copied) or the RUN with make not found"; fi

VERSION=v0.0.0-image-test COMMIT=0123456789abcdef0123456789abcdef01234567 EPOCH=1700000000
if (cd "$SRC" && GD_VERSION=$VERSION GD_GIT_COMMIT=$COMMIT SOURCE_DATE_EPOCH=$EPOCH MAKEFLAGS=-j2 \
      sh -ec "$make_run") >"$SRC/build.log" 2>&1; then
  ok "the build stage's make builds from the COPYed context alone"
else
  bad "the build stage's make failed: $(tail -3 "$SRC/build.log" | tr '\n' ' ')"
fi

# 2. what --version says in the image
want="godis-manager version=$VERSION git_commit=$COMMIT build_date=2023-11-14T22:13:20Z"
got=$("$SRC/bin/godis-manager" --version 2>&1)
if [ "$got" = "$want" ]; then ok "--version says the build arguments"; else bad "--version: \"$got\", want \"$want\""; fi

# 3. the runtime stage's packages cover every NEEDED library
pkgs=" $(runtime_stage | grep 'apt-get install' | sed 's/.*--no-install-recommends//; s/&&.*//') "
deps=""
for p in $pkgs; do deps+=" $(dpkg-query -W -f='${Depends}' "$p" 2>/dev/null | sed 's/([^)]*)//g; s/[,|]/ /g')"; done
for b in godis-manager godis-informer godis-worker godis-webhook; do
  missing=""
  for lib in $(readelf -d "$SRC/bin/$b" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|x86_64/ {print $NF; exit}')
    pkg=$(dpkg -S "$(realpath "$path" 2>/dev/null)" 2>/dev/null | head -1 | cut -d: -f1)
    [ -z "$pkg" ] && pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
    case " $pkgs $deps libc6 " in *" $pkg "*) ;; *) missing+=" $lib($pkg)" ;; esac
  done
  if [ -n "$(readelf -d "$SRC/bin/$b" 2>/dev/null | grep NEEDED)" ] && [ -z "$missing" ]; then
    ok "$b: every NEEDED library is installed by the runtime stage"
  else
    bad "$b: not installed by the runtime stage:${missing:- (no binary)}"
  fi
done

dv_summary image-context
[ "$fail" -eq 0 ]
