# Shared settings for the hack/ scripts. Source it; it defines no side effects.
# Every tool is pinned here and cached per user, keyed by version, so a fresh
# clone (as CI makes) reuses what an earlier run built.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${WEBFARM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/webfarm-operator}"
BIN="$ROOT/bin"

KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.5
COREDNS_VERSION=v1.14.7
ENVOY_VERSION=1.40.0
CONTROLLER_GEN_VERSION=v0.22.0
HELM_VERSION=v3.22.0
# golangci-lint with the Kubernetes API linter built in (the module's own
# golangci-lint-kube-api-linter command; it has no tagged releases).
KUBE_API_LINTER_VERSION=v0.0.0-20260716143926-092fe0c72997
NGINX_SERIES=1.22 # Debian bookworm's nginx
# The image registry on loopback that releases are pushed to and the local
# cluster pulls from (CNCF distribution).
REGISTRY_VERSION=v3.1.2
# Release signing and SBOMs (hack/release.sh, hack/verify-release.sh).
COSIGN_VERSION=v2.6.5
SYFT_VERSION=v1.57.1
# The end-to-end suite's monitoring, as prometheus-operator users run it: the
# Prometheus Operator (hack/tools/prometheus-operator) and a Prometheus 3.x
# server (hack/tools/prometheus, the module of promtool: one release).
PROMETHEUS_OPERATOR_VERSION=v0.85.0
# cert-manager (the e2e suite issues a farm's certificate with it): its
# controller, webhook and cainjector built from this module, hack/tools/cert-manager.
CERT_MANAGER_VERSION=v1.21.2
# kube-router's network policy controller alone (no routing, no service proxy):
# the local cluster's NetworkPolicy enforcement, when asked for (hack/cluster/up.sh).
KUBE_ROUTER_VERSION=v2.1.0
# Envoy Gateway's egctl: its `experimental translate` renders Envoy Gateway's
# configuration offline for bench/dataplane's comparison (bench/README.md).
EGCTL_VERSION=v1.9.1
LOCAL_REGISTRY="${WEBFARM_LOCAL_REGISTRY:-127.0.0.1:5000}"
# on_loopback REF: whether a registry (or a reference in it) is on this
# machine, spoken to over plain HTTP; every other registry over HTTPS.
on_loopback() { case "$1" in 127.* | localhost:* | localhost/*) return 0 ;; *) return 1 ;; esac; }
# Where releases are published and what the chart's image references name.
PUBLIC_REGISTRY=ghcr.io/webfarm-dev

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

# link NAME TARGET: expose a cached binary under bin/.
link() { mkdir -p "$(dirname "$BIN/$1")"; ln -sfn "$2" "$BIN/$1"; }

# cosign's flags for a registry on loopback (plain HTTP).
COSIGN_PLAIN_HTTP=(--allow-http-registry --allow-insecure-registry)

# local_signing_key: the path of this user's cosign key for releases to a
# loopback registry, made on first use (no password; the public key is
# cosign.pub next to it). Needs bin/cosign (hack/install-tools.sh cosign).
local_signing_key() {
  local dir="$CACHE/signing"
  if [ ! -f "$dir/cosign.key" ]; then
    mkdir -p "$dir" && chmod 0700 "$dir"
    (
      flock 7
      if [ ! -f "$dir/cosign.key" ]; then
        cd "$dir" && COSIGN_PASSWORD="" "$BIN/cosign" generate-key-pair --output-key-prefix cosign.tmp >/dev/null 2>&1 &&
          mv cosign.tmp.pub cosign.pub && mv cosign.tmp.key cosign.key
      fi
    ) 7>"$dir/.lock" || die "could not make a signing key in $dir"
    log "made the local signing key $dir/cosign.key (public key: cosign.pub)"
  fi
  echo "$dir/cosign.key"
}

# index_manifests REPOSITORY@DIGEST: "os/arch digest" of each image in an OCI
# image index (or Docker manifest list) in a registry; fails on anything else.
# Needs skopeo (hack/install-tools.sh cluster-packages).
index_manifests() {
  local tls=--tls-verify=true raw
  if on_loopback "$1"; then tls=--tls-verify=false; fi
  raw="$(skopeo inspect --raw --retry-times 2 "$tls" "docker://$1")" || return 1
  python3 -c '
import json, sys
ref, m = sys.argv[1], json.loads(sys.argv[2])
kind = m.get("mediaType")
if kind not in ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"):
    sys.exit(f"{ref} is not an image index but {kind}")
for d in m["manifests"]:
    print(d["platform"]["os"] + "/" + d["platform"]["architecture"], d["digest"])
' "$1" "$raw"
}
