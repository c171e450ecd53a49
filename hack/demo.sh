#!/usr/bin/env bash
# make demo: the operator on its embedded default, a local control plane.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/demo "$@"
