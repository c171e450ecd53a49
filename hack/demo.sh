#!/usr/bin/env bash
# make demo: the operator on its embedded default, a local control plane.
# The demo is built and exec'd (not `go run`) so Ctrl-C reaches it directly.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/demo ./hack/demo
exec bin/demo "$@"
