#!/usr/bin/env bash
# Imports the image archives built by hack/images/build.sh into a containerd,
# in the namespace the kubelet uses (k8s.io), so pods can run them without a
# registry (imagePullPolicy: IfNotPresent or Never).
#
# Usage: hack/images/load.sh [--address SOCKET] [--if-running] [ARCHIVE...]
#   --address SOCKET  containerd socket; default $CONTAINERD_ADDRESS, else the
#                     local cluster's (make cluster-up), else /run/containerd/containerd.sock
#   --if-running      when containerd is not reachable, say so and exit 0
#                     (default: exit 2 with the same message)
#   ARCHIVE...        docker-archive tarballs; default: every bin/images/*.tar
# Environment: CONTAINERD_ADDRESS, CONTAINERD_NAMESPACE (default k8s.io).
# Does not start or stop containerd.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/common.sh"

local_cluster_socket="${WEBFARM_CLUSTER_DIR:-/var/lib/webfarm-cluster}/containerd/containerd.sock"
if [ -n "${CONTAINERD_ADDRESS:-}" ]; then
  address="$CONTAINERD_ADDRESS"
elif [ -S "$local_cluster_socket" ]; then
  address="$local_cluster_socket"
else
  address=/run/containerd/containerd.sock
fi
namespace="${CONTAINERD_NAMESPACE:-k8s.io}"
optional=""
archives=()
while [ $# -gt 0 ]; do
  case "$1" in
    --address) [ $# -ge 2 ] || die "--address needs a socket path"; address="$2"; shift 2 ;;
    --address=*) address="${1#*=}"; shift ;;
    --if-running) optional=1; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option: $1" ;;
    *) archives+=("$1"); shift ;;
  esac
done
address="${address#unix://}"

unavailable() {
  if [ -n "$optional" ]; then
    log "not loading images: $*"
    exit 0
  fi
  printf '\033[1;31merror:\033[0m not loading images: %s\n' "$*" >&2
  exit 2
}

command -v ctr >/dev/null 2>&1 || unavailable "ctr is not installed (Debian package containerd)"
[ -S "$address" ] || unavailable "containerd is not running: no socket at $address (start the cluster, or pass --address SOCKET)"
timeout 10 ctr --address "$address" version >/dev/null 2>&1 ||
  unavailable "containerd does not answer on $address (is it running, and are you root?)"

if [ ${#archives[@]} -eq 0 ]; then
  shopt -s nullglob
  archives=("$BIN"/images/*.tar)
  [ ${#archives[@]} -gt 0 ] || die "no image archives in $BIN/images: run 'make images' first"
fi

for a in "${archives[@]}"; do
  [ -f "$a" ] || die "no such archive: $a"
  start=$SECONDS
  ctr --address "$address" -n "$namespace" images import "$a" >/dev/null
  log "imported $(basename "$(readlink -f "$a")") into $namespace on $address ($((SECONDS - start)) s)"
done
ctr --address "$address" -n "$namespace" images ls -q | grep '^localhost/webfarm-' || true
