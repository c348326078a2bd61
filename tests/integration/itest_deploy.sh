#!/usr/bin/env bash
# deploy/ on the local control plane: kustomization complete, every manifest applies, CRD
# validation and defaults, printer columns (the server-side Table kubectl shows), and the
# ServiceAccount's permission matrix (deploy/verify.sh does the work; no kubectl needed).
# The manager itself running with the ServiceAccount's token: itest_deploy_rbac.sh.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify.sh"
