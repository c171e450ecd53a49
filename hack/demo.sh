#!/usr/bin/env bash
# make demo: the operator on a real Kubernetes serving the sample farm.
# Default: the local cluster (needs root): the demo publishes the images and
# the chart to its registry (hack/release.sh) and installs from there.
# With --existing-cluster or --kubeconfig PATH: the cluster you name.
# Options: hack/demo.sh -h. The demo is built and exec'd (not `go run`) so
# Ctrl-C reaches it directly.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/demo ./hack/demo
exec bin/demo "$@"
