#!/usr/bin/env bash
# make release: builds the operator, Envoy and nginx images and the Helm chart
# of one version and publishes them to a registry: each image as
# REGISTRY/webfarm-<name>:VERSION, the chart as the OCI artifact
# oci://REGISTRY/charts/webfarm-operator:VERSION, whose images default to
# those just pushed, by digest. Writes what it published to
# dist/release.env (the registry, the version, the chart reference and each
# image's digest) for the steps that install or verify it.
# Each pushed image gets an SBOM (syft, SPDX JSON, from the pushed digest;
# kept as dist/sbom/<name>.spdx.json) attached as a signed attestation, and a
# signature (cosign); the chart is signed too. hack/verify-release.sh checks them.
#
# Usage: hack/release.sh [--registry REGISTRY] [--version VERSION] [--sign-key FILE] [--dist DIR] [--unsigned]
#   --registry  where to publish (default: the local cluster's registry on
#               loopback, $LOCAL_REGISTRY/webfarm-dev, started if needed; the
#               release workflow passes ghcr.io/<owner>)
#   --version   default: the chart's version (charts/webfarm-operator/Chart.yaml)
#   --sign-key  cosign private key (or $SIGN_KEY; its password in
#               $COSIGN_PASSWORD). Default: on a loopback registry the per-user
#               key $CACHE/signing/cosign.key (made on first use, no password,
#               no transparency log); elsewhere keyless (an OIDC identity, e.g.
#               GitHub Actions' id-token, recorded in Sigstore's public log)
#   --dist      where release.env and the SBOMs go (default: dist/)
#   --unsigned  no SBOMs and no signatures, to a loopback registry only (make
#               demo: a first look needs neither, nor cosign's and syft's builds)
# Needs root for the image builds (hack/images/build.sh) and bin/manager
# (make build). Log in first to a registry that needs it (helm registry login,
# skopeo login, cosign login).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib/common.sh"

registry="$LOCAL_REGISTRY/webfarm-dev" version="" sign_key="${SIGN_KEY:-}" dist="$ROOT/dist" unsigned=""
while [ $# -gt 0 ]; do
  case "$1" in
    --registry) registry="${2%/}"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --sign-key) sign_key="$2"; shift 2 ;;
    --dist) dist="$2"; shift 2 ;;
    --unsigned) unsigned=1; shift ;;
    -h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (hack/release.sh -h)" ;;
  esac
done
chart="$ROOT/charts/webfarm-operator"
[ -n "$version" ] || version="$(sed -n 's/^version:[[:space:]]*//p' "$chart/Chart.yaml")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "not a semantic version: $version"

plain_http=()
case "$registry" in "$LOCAL_REGISTRY"/*) "$ROOT/hack/cluster/registry.sh" ;; esac
if on_loopback "$registry"; then plain_http=(--plain-http); fi

if [ -n "$unsigned" ]; then
  on_loopback "$registry" || die "--unsigned publishes to a loopback registry only"
  "$ROOT/hack/install-tools.sh" helm
else
  "$ROOT/hack/install-tools.sh" helm cosign syft
fi
"$ROOT/hack/images/build.sh" operator envoy nginx

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
} >"$env_file"
for n in operator envoy nginx; do
  digest_file="$(mktemp)"
  "$ROOT/hack/images/push.sh" --to "$registry/webfarm-$n:$version" --digest-file "$digest_file" "$BIN/images/$n.tar"
  digest="$(cat "$digest_file")"
  rm -f "$digest_file"
  echo "${n^^}_DIGEST=$digest" >>"$env_file"
  [ -z "$unsigned" ] || continue
  # The SBOM describes what was pushed: syft reads the image back by digest.
  ref="$registry/webfarm-$n@$digest" sbom="$dist/sbom/$n.spdx.json"
  SYFT_REGISTRY_INSECURE_USE_HTTP="$([ ${#plain_http[@]} -gt 0 ] && echo true || echo false)" \
    SYFT_CHECK_FOR_APP_UPDATE=false "$BIN/syft" scan --quiet "registry:$ref" -o "spdx-json=$sbom"
  "$BIN/cosign" attest "${sign[@]}" --replace --type spdxjson --predicate "$sbom" "$ref" 2>&1 | sed 's/^/    /' >&2
  "$BIN/cosign" sign "${sign[@]}" "$ref" 2>&1 | sed 's/^/    /' >&2
  log "signed $ref and attached its SBOM ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["packages"]))' "$sbom") packages)"
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
