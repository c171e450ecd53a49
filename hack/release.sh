#!/usr/bin/env bash
# make release: builds the operator, Envoy and nginx images and the Helm chart
# of one version and publishes them to a registry: each image as
# REGISTRY/webfarm-<name>:VERSION, the chart as the OCI artifact
# oci://REGISTRY/charts/webfarm-operator:VERSION, whose images default to
# REGISTRY's. Writes what it published to
# dist/release.env (the registry, the version, the chart reference and each
# image's digest) for the steps that install or verify it.
#
# Usage: hack/release.sh [--registry REGISTRY] [--version VERSION]
#   --registry  where to publish (default: the local cluster's registry on
#               loopback, $LOCAL_REGISTRY/webfarm-dev, started if needed; the
#               release workflow passes ghcr.io/<owner>)
#   --version   default: the chart's version (charts/webfarm-operator/Chart.yaml)
# Needs root for the image builds (hack/images/build.sh) and bin/manager
# (make build). Log in first to a registry that needs it (helm registry login,
# skopeo login).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib/common.sh"

registry="$LOCAL_REGISTRY/webfarm-dev" version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry="${2%/}"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (hack/release.sh -h)" ;;
  esac
done
chart="$ROOT/charts/webfarm-operator"
[ -n "$version" ] || version="$(sed -n 's/^version:[[:space:]]*//p' "$chart/Chart.yaml")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "not a semantic version: $version"

plain_http=()
case "$registry" in
  "$LOCAL_REGISTRY"/*)
    "$ROOT/hack/cluster/registry.sh"
    plain_http=(--plain-http) ;;
  127.* | localhost:*) plain_http=(--plain-http) ;;
esac

"$ROOT/hack/install-tools.sh" helm
"$ROOT/hack/images/build.sh" operator envoy nginx

dist="$ROOT/dist"
mkdir -p "$dist"
env_file="$dist/release.env.tmp"
{
  echo "REGISTRY=$registry"
  echo "VERSION=$version"
} >"$env_file"
for n in operator envoy nginx; do
  digest_file="$(mktemp)"
  "$ROOT/hack/images/push.sh" --to "$registry/webfarm-$n:$version" --digest-file "$digest_file" "$BIN/images/$n.tar"
  echo "${n^^}_DIGEST=$(cat "$digest_file")" >>"$env_file"
  rm -f "$digest_file"
done

# The chart of this version: its appVersion is the images' tag, and its
# default registry the one it is published to, so that installing it from
# there pulls the images from there too.
rm -f "$dist"/webfarm-operator-*.tgz
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$chart" "$work/webfarm-operator"
default_registry="$(sed -n 's/^  registry: //p' "$chart/values.yaml" | head -n1)"
sed -i "0,/^  registry: .*/s##  registry: $registry#" "$work/webfarm-operator/values.yaml"
grep -qx "  registry: $registry" "$work/webfarm-operator/values.yaml" ||
  die "could not set the chart's image.registry (was $default_registry)"
"$BIN/helm" package "$work/webfarm-operator" --version "$version" --app-version "$version" --destination "$dist" >/dev/null
"$BIN/helm" push "$dist/webfarm-operator-$version.tgz" "oci://$registry/charts" "${plain_http[@]}" 2>&1 |
  sed -n 's/^Digest: /CHART_DIGEST=/p' >>"$env_file"
echo "CHART=oci://$registry/charts/webfarm-operator" >>"$env_file"
mv "$env_file" "$dist/release.env"
log "published $version to $registry:"
sed 's/^/    /' "$dist/release.env" >&2
