#!/usr/bin/env bash
# make demo: the operator on a real Kubernetes serving the sample farm.
# Default: the local cluster (needs root): the demo publishes the images and
# the chart to its registry (hack/release.sh) and installs from there.
# With --existing-cluster or --kubeconfig PATH: the cluster you name.
# Options: hack/demo.sh -h. It installs only the tools the demo runs. The demo
# is built and exec'd (not `go run`) so Ctrl-C reaches it directly.
set -euo pipefail
cd "$(dirname "$0")/.."
existing="" help=""
for a in "$@"; do
  case "$a" in
    --existing-cluster | --kubeconfig | --kubeconfig=*) existing=1 ;;
    -h | --help) help=1 ;;
  esac
done
if [ -n "$help" ]; then
  :
elif [ -n "$existing" ]; then
  hack/install-tools.sh helm kube
else
  # The release's images (built by hack/release.sh, which the demo runs) wait
  # on the network for their packages (debootstrap, the Envoy wheel), not the
  # CPU: they are built while the cluster's tools compile. Should the tools
  # fail, the images still finish (no half-built root filesystem is left).
  hack/images/build.sh operator envoy nginx &
  images=$!
  trap 'wait' EXIT
  hack/install-tools.sh helm kube etcd coredns registry cluster-packages
  wait "$images" || { echo "demo: building the images failed (output above)" >&2; exit 1; }
  trap - EXIT
fi
go build -o bin/demo ./hack/demo
exec bin/demo "$@"
