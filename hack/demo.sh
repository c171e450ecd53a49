#!/usr/bin/env bash
# make demo: the operator on a real Kubernetes serving the sample farm.
# Default: the local cluster (needs root; the images are built here first).
# With --existing-cluster or --kubeconfig PATH: the cluster you name.
# Options: hack/demo.sh -h. The demo is built and exec'd (not `go run`) so
# Ctrl-C reaches it directly.
set -euo pipefail
cd "$(dirname "$0")/.."
existing=""
for a in "$@"; do
  case "$a" in --existing-cluster | --kubeconfig | --kubeconfig=* | -h | --help) existing=1 ;; esac
done
[ -n "$existing" ] || hack/images/build.sh
go build -o bin/demo ./hack/demo
exec bin/demo "$@"
