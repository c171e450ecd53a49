#!/usr/bin/env bash
# Starts the image registry on loopback (CNCF distribution, $LOCAL_REGISTRY,
# plain HTTP) that `make release` pushes to and the local cluster's containerd
# pulls every image from. Idempotent; its state lives under the local
# cluster's folder and hack/cluster/down.sh stops it with the cluster.
# Usage: hack/cluster/registry.sh   (needs root only for the state folder)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$ROOT/hack/install-tools.sh" registry
mkdir -p "$S/run" "$S/logs" "$S/registry/data"
if ! pid_of registry >/dev/null; then
  cat >"$S/registry/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $S/registry/data
  delete:
    enabled: true
http:
  addr: $LOCAL_REGISTRY
CONFIG
  : >"$S/logs/registry.log"
  detach "$S/logs/registry.log" "$BIN/registry" serve "$S/registry/config.yml"
  echo $! >"$S/run/registry.pid"
fi
wait_for "the registry at $LOCAL_REGISTRY" 30 http_get "http://$LOCAL_REGISTRY/v2/"
