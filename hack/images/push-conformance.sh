#!/usr/bin/env bash
# Serves the Gateway API conformance suite's images to the local cluster
# without the internet: the suite's manifests (base/ and tests/ of the
# sigs.k8s.io/gateway-api/conformance module that go.mod requires) name images
# on registry.k8s.io, which the cluster's containerd pulls from the loopback
# registry (hack/cluster/up.sh mirrors that host there). Each such image is
# pushed to the loopback registry under its repository and tag:
#   registry.k8s.io/gateway-api/echo-basic:TAG  <- bin/images/echo-basic.tar
#     (hack/images/build.sh echo-basic: the suite's echo server, built from
#     its module), under every tag the manifests name
#   registry.k8s.io/coredns/coredns:TAG         <- the cluster's own CoreDNS
#     image (hack/cluster/up.sh), which has the plugins of the suite's Corefile
# Any other image in those manifests is an error: a new suite that needs one
# fails here, not in a pull that waits for its timeout.
# Usage: hack/images/push-conformance.sh   (the local cluster running)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../cluster/lib.sh"

MIRRORED=registry.k8s.io

# suite_images: every image reference the suite's manifests name, sorted.
suite_images() {
  local dir
  dir="$(cd "$ROOT" && go mod download sigs.k8s.io/gateway-api/conformance &&
    go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api/conformance)"
  grep -rhoE '^[[:space:]]*image:[[:space:]]*[^[:space:]]+' "$dir/base" "$dir/tests" | awk '{print $NF}' | tr -d "\"'" | sort -u
}

# archive_of REPOSITORY: the image archive served under REPOSITORY (a
# registry.k8s.io path), or nothing.
archive_of() {
  case "$1" in
    gateway-api/echo-basic) echo "$BIN/images/echo-basic.tar" ;;
    coredns/coredns) echo "$S/images/coredns.tar" ;;
  esac
}

# A cluster started before up.sh mirrored registry.k8s.io would send these
# pulls to the internet, where they hang until their timeout.
[ -f "$S/containerd/certs.d/$MIRRORED/hosts.toml" ] ||
  die "the running cluster does not mirror $MIRRORED to $LOCAL_REGISTRY: restart it (hack/cluster/down.sh, hack/cluster/up.sh)"

refs="$(suite_images)"
[ -n "$refs" ] || die "found no image in the conformance suite's manifests"
for ref in $refs; do
  case "$ref" in
    "$MIRRORED"/*:*) ;;
    *) die "the conformance suite names $ref, which is not on $MIRRORED: add it to $0" ;;
  esac
  path="${ref#"$MIRRORED"/}"
  repository="${path%:*}"
  archive="$(archive_of "$repository")"
  [ -n "$archive" ] || die "the conformance suite names $ref, which is not built here: add it to $0"
  [ -f "$archive" ] || die "$archive is missing (hack/images/build.sh echo-basic; hack/cluster/up.sh makes the CoreDNS image)"
  log "$ref <- $(basename "$(readlink -f "$archive")")"
  "$HERE/push.sh" --to "$LOCAL_REGISTRY/$path" "$archive"
done
