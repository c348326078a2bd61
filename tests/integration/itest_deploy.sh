#!/usr/bin/env bash
# deploy/ on the local control plane: the base and both overlays build with kubectl 1.20's
# kustomize (and a current one where installed), `kubectl apply -k` installs the base and
# the remote-workers overlay and the godis-worker pods run, CRD validation and defaults,
# printer columns (the server-side Table kubectl shows), and the ServiceAccount's permission
# matrix (deploy/verify.sh does the work).
# The manager itself running with the ServiceAccount's token: itest_deploy_rbac.sh.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify.sh"
