#!/usr/bin/env bash
# make release: builds the operator, Envoy and nginx images and the Helm chart
# of one version and publishes them to a registry: each image as one OCI
# image index REGISTRY/webfarm-<name>:VERSION of its linux/amd64 and
# linux/arm64 images, the chart as the OCI artifact
# oci://REGISTRY/charts/webfarm-operator:VERSION, whose images default to
# those indexes, by digest (a node of either platform pulls its own image by
# the same reference). Writes what it published to dist/release.env (the
# registry, the version, the platforms, the chart reference and each index's
# digest) for the steps that install or verify it.
# Each platform's image gets an SBOM (syft, SPDX JSON, from the pushed digest;
# kept as dist/sbom/<name>-<os>-<arch>.spdx.json) attached as a signed
# attestation; each index and each image in it a signature (cosign sign
# --recursive); the chart is signed too. hack/verify-release.sh checks them.
#
# Usage: hack/release.sh [--registry REGISTRY] [--version VERSION] [--platforms LIST] [--sign-key FILE] [--dist DIR] [--unsigned]
#   --registry  where to publish (default: the local cluster's registry on
#               loopback, $LOCAL_REGISTRY/webfarm-dev, started if needed; the
#               release workflow passes ghcr.io/<owner>)
#   --version   default: the chart's version (charts/webfarm-operator/Chart.yaml)
#   --platforms default: linux/amd64,linux/arm64; the local cluster's own
#               releases (the e2e suite, make demo) take linux/amd64 only,
#               which spares them the arm64 builds
#   --sign-key  cosign private key (or $SIGN_KEY; its password in
#               $COSIGN_PASSWORD). Default: on a loopback registry the per-user
#               key $CACHE/signing/cosign.key (made on first use, no password,
#               no transparency log); elsewhere keyless (an OIDC identity, e.g.
#               GitHub Actions' id-token, recorded in Sigstore's public log)
#   --dist      where release.env and the SBOMs go (default: dist/)
#   --unsigned  no SBOMs and no signatures, to a loopback registry only (make
#               demo: a first look needs neither, nor cosign's and syft's builds)
# Needs root for the image builds (hack/images/build.sh) and bin/manager and
# bin/envoy-drain (make build). Log in first to a registry that needs it (helm registry login,
# skopeo login, cosign login).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib/common.sh"

registry="$LOCAL_REGISTRY/webfarm-dev" version="" sign_key="${SIGN_KEY:-}" dist="$ROOT/dist" unsigned=""
platforms=linux/amd64,linux/arm64
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry="${2%/}"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --platforms) platforms="$2"; shift 2 ;;
    --sign-key) sign_key="$2"; shift 2 ;;
    --dist) dist="$2"; shift 2 ;;
    --unsigned) unsigned=1; shift ;;
    -h | --help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (hack/release.sh -h)" ;;
  esac
done
chart="$ROOT/charts/webfarm-operator"
[ -n "$version" ] || version="$(sed -n 's/^version:[[:space:]]*//p' "$chart/Chart.yaml")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "not a semantic version: $version"
# Every image is built for both platforms; the archive of each
# (hack/images/build.sh): bin/images/<name>.tar for linux/amd64, this host's,
# and bin/images/<name>-arm64.tar for linux/arm64.
IFS=, read -r -a platform_list <<<"$platforms"
suffixes=()
for p in "${platform_list[@]}"; do
  case "$p" in
    linux/amd64) suffixes+=("") ;;
    linux/arm64) suffixes+=(-arm64) ;;
    *) die "unknown platform: $p (known: linux/amd64, linux/arm64)" ;;
  esac
done

plain_http=()
case "$registry" in "$LOCAL_REGISTRY"/*) "$ROOT/hack/cluster/registry.sh" ;; esac
if on_loopback "$registry"; then plain_http=(--plain-http); fi

if [ -n "$unsigned" ]; then
  on_loopback "$registry" || die "--unsigned publishes to a loopback registry only"
  "$ROOT/hack/install-tools.sh" helm
else
  "$ROOT/hack/install-tools.sh" helm cosign syft
fi
builds=()
for sfx in "${suffixes[@]}"; do builds+=("operator$sfx" "envoy$sfx" "nginx$sfx"); done
if [[ " ${suffixes[*]} " == *" -arm64 "* ]]; then
  # The operator for linux/arm64, built as make build builds bin/manager.
  log "building bin/linux-arm64/manager (GOARCH=arm64)"
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -buildvcs=false -ldflags "-s -w" \
    -o "$BIN/linux-arm64/manager" ./cmd/manager)
  # The Envoy image's preStop hook, as make build builds bin/envoy-drain.
  log "building bin/linux-arm64/envoy-drain (GOARCH=arm64)"
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -buildvcs=false -ldflags "-s -w" \
    -o "$BIN/linux-arm64/envoy-drain" ./cmd/envoy-drain)
fi
"$ROOT/hack/images/build.sh" "${builds[@]}"

# The signing key: given, the local per-user one on loopback, else keyless.
if [ -n "$unsigned" ]; then
  :
elif [ -z "$sign_key" ] && [ ${#plain_http[@]} -gt 0 ]; then
  sign_key="$(local_signing_key)"
fi
sign=(--yes)
if [ -n "$sign_key" ]; then
  [ -f "$sign_key" ] || die "no such signing key: $sign_key"
  export COSIGN_PASSWORD="${COSIGN_PASSWORD-}"
  sign+=(--key "$sign_key")
  # A loopback registry is private to this machine: nothing goes to the public log.
  [ ${#plain_http[@]} -eq 0 ] || sign+=(--tlog-upload=false)
fi
[ ${#plain_http[@]} -eq 0 ] || sign+=("${COSIGN_PLAIN_HTTP[@]}")

mkdir -p "$dist/sbom"
env_file="$dist/release.env.tmp"
{
  echo "REGISTRY=$registry"
  echo "VERSION=$version"
  echo "PLATFORMS=$platforms"
} >"$env_file"
rm -f "$dist"/sbom/*.spdx.json
for n in operator envoy nginx; do
  digest_file="$(mktemp)" archives=()
  for sfx in "${suffixes[@]}"; do archives+=("$BIN/images/$n$sfx.tar"); done
  "$ROOT/hack/images/push.sh" --index --to "$registry/webfarm-$n:$version" --digest-file "$digest_file" "${archives[@]}"
  digest="$(cat "$digest_file")"
  rm -f "$digest_file"
  echo "${n^^}_DIGEST=$digest" >>"$env_file"
  [ -z "$unsigned" ] || continue
  # One SBOM per platform's image, of what was pushed: syft reads it back by digest.
  images="$(index_manifests "$registry/webfarm-$n@$digest")"
  while read -r platform image; do
    ref="$registry/webfarm-$n@$image" sbom="$dist/sbom/$n-${platform//\//-}.spdx.json"
    SYFT_REGISTRY_INSECURE_USE_HTTP="$([ ${#plain_http[@]} -gt 0 ] && echo true || echo false)" \
      SYFT_CHECK_FOR_APP_UPDATE=false "$BIN/syft" scan --quiet "registry:$ref" -o "spdx-json=$sbom"
    "$BIN/cosign" attest "${sign[@]}" --replace --type spdxjson --predicate "$sbom" "$ref" 2>&1 | sed 's/^/    /' >&2
    log "attached the SBOM of $platform to $ref ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["packages"]))' "$sbom") packages)"
  done <<<"$images"
  # The index and every image in it.
  "$BIN/cosign" sign "${sign[@]}" --recursive "$registry/webfarm-$n@$digest" 2>&1 | sed 's/^/    /' >&2
  log "signed $registry/webfarm-$n@$digest and its images"
done

# The chart of this version: its appVersion is the images' tag; its default
# registry is the one it is published to and its images are pinned by the
# digests just pushed, so installing it pulls exactly these images from there.
rm -f "$dist"/webfarm-operator-*.tgz
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$chart" "$work/webfarm-operator"
. "$env_file"
python3 - "$work/webfarm-operator/values.yaml" "$registry" "$OPERATOR_DIGEST" "$ENVOY_DIGEST" "$NGINX_DIGEST" <<'PY'
import re, sys
path, registry, operator, envoy, nginx = sys.argv[1:]
text = open(path).read()
def fill(pattern, value):
    # The first "key: value" line after the section line the pattern names.
    global text
    text, n = re.subn(pattern, lambda m: m.group(1) + value, text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"values.yaml: {pattern!r} not found")
fill(r'(^image:\n(?:  .*\n|#.*\n)*?  registry: ).*$', registry)
fill(r'(^image:\n(?:  .*\n|#.*\n)*?  digest: ).*$', '"' + operator + '"')
fill(r'(^  envoy:\n(?:    .*\n)*?    digest: ).*$', '"' + envoy + '"')
fill(r'(^  nginx:\n(?:    .*\n)*?    digest: ).*$', '"' + nginx + '"')
open(path, "w").write(text)
PY
"$BIN/helm" package "$work/webfarm-operator" --version "$version" --app-version "$version" --destination "$dist" >/dev/null
"$BIN/helm" push "$dist/webfarm-operator-$version.tgz" "oci://$registry/charts" "${plain_http[@]}" 2>&1 |
  sed -n 's/^Digest: /CHART_DIGEST=/p' >>"$env_file"
echo "CHART=oci://$registry/charts/webfarm-operator" >>"$env_file"
. "$env_file"
[[ "${CHART_DIGEST:-}" == sha256:* ]] || die "helm push printed no chart digest"
[ -n "$unsigned" ] || "$BIN/cosign" sign "${sign[@]}" "$registry/charts/webfarm-operator@$CHART_DIGEST" 2>&1 | sed 's/^/    /' >&2
mv "$env_file" "$dist/release.env"
log "published $version to $registry:"
sed 's/^/    /' "$dist/release.env" >&2
