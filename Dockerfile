# syntax=docker/dockerfile:1
# godis-operator image: the manager and the processes it forks (informer, worker, webhook).
# Multi-stage on Debian bookworm: build with Debian's -dev packages, run on bookworm-slim
# with only the shared libraries, as a non-root user. Nothing runs containers on the
# development machine, so this file is not exercised by `make test`; build and push it as
# docs/operations.md says:
#   docker build --build-arg GD_VERSION=v0.1.0 --build-arg GD_GIT_COMMIT=$(git rev-parse HEAD) \
#     -t REGISTRY/godis-operator:0.1.0 .      (or podman/buildah/kaniko)
# The build context has no .git: --version and godis_operator_build_info say what these
# arguments say.

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config libcurl4-openssl-dev libcjson-dev libzmq3-dev \
      libyaml-dev libssl-dev libmicrohttpd-dev libzstd-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY common/ common/
COPY manager/ manager/
COPY informer/ informer/
COPY worker/ worker/
COPY webhook/ webhook/
COPY tools/deps.sh tools/deps.sh
# The stamp tells the Makefile the build dependencies are present (installed above), so it
# does not run tools/deps.sh, which installs the whole test environment.
ARG GD_VERSION=v0.1.0-dev
ARG GD_GIT_COMMIT=unknown
ARG SOURCE_DATE_EPOCH
RUN mkdir -p build && touch build/.deps-ok \
 && make V=release GD_VERSION="$GD_VERSION" GD_GIT_COMMIT="$GD_GIT_COMMIT" \
      bin/godis-manager bin/godis-informer bin/godis-worker bin/godis-webhook \
 && strip bin/godis-manager bin/godis-informer bin/godis-worker bin/godis-webhook

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libcjson1 libzmq5 libyaml-0-2 libssl3 libmicrohttpd12 \
      libzstd1 libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
COPY --from=build /src/bin/godis-manager /src/bin/godis-informer /src/bin/godis-worker \
     /src/bin/godis-webhook /usr/local/bin/
USER 65532:65532
# metrics, health probes, the eviction webhook (--webhook-bind-address=:9443)
EXPOSE 8080 8081 9443
ENTRYPOINT ["/usr/local/bin/godis-manager"]
