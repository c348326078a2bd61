#!/usr/bin/env bash
# deploy/ on the local control plane: manifests apply, CRD validation and defaults, printer
# columns, and the ServiceAccount's RBAC is exactly enough (deploy/verify.sh does the work).
exec "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify.sh"
