#!/usr/bin/env bash
# Verifies a published release: for the operator, Envoy and nginx image
# indexes and the chart, that the tag still names the digest that was
# released and that this digest carries a valid signature (cosign verify);
# that each index lists exactly the release's platforms; for every platform's
# image in an index, that it is signed too and carries a signed SPDX SBOM
# (cosign verify-attestation --type spdxjson) which lists its software with
# versions (the Debian packages of the nginx and Envoy images, the Go modules
# of the operator). Fails on the first index or image that is unsigned,
# altered or signed by someone else.
#
# Usage: hack/verify-release.sh [--env FILE | REPOSITORY@DIGEST...] [--key FILE | --identity-regexp RE [--issuer URL]]
#   --env              the release.env hack/release.sh wrote (default: dist/release.env)
#   REPOSITORY@DIGEST  instead: these image indexes, each signed, with every
#                      image in it signed and with a signed SBOM
#   --key              the signer's public key (default on a loopback registry:
#                      the local per-user key, $CACHE/signing/cosign.pub)
#   --identity-regexp  keyless: the signer's certificate identity, e.g.
#                      '^https://github.com/webfarm-dev/webfarm-operator/' (the
#                      default without --key on any other registry)
#   --issuer           keyless: the OIDC issuer (default: GitHub Actions',
#                      https://token.actions.githubusercontent.com)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib/common.sh"

refs=() env_file="$ROOT/dist/release.env" key="" identity="" issuer="https://token.actions.githubusercontent.com"
while [ $# -gt 0 ]; do
  case "$1" in
    --env) env_file="$2"; shift 2 ;;
    --key) key="$2"; shift 2 ;;
    --identity-regexp) identity="$2"; shift 2 ;;
    --issuer) issuer="$2"; shift 2 ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown argument: $1 (hack/verify-release.sh -h)" ;;
    *) refs+=("$1"); shift ;;
  esac
done
REGISTRY="" VERSION="" PLATFORMS="" CHART_DIGEST=""
if [ ${#refs[@]} -eq 0 ]; then
  [ -f "$env_file" ] || die "no release description at $env_file (make release writes it)"
  . "$env_file"
  [ -n "$REGISTRY" ] && [ -n "$VERSION" ] || die "$env_file names no REGISTRY and VERSION"
else
  REGISTRY="${refs[0]%%/*}"
fi
"$ROOT/hack/install-tools.sh" cosign >&2
command -v skopeo >/dev/null || die "skopeo is missing (it reads the image indexes): apt-get install skopeo"

plain_http="" http_flags=()
if on_loopback "$REGISTRY"; then plain_http=1 http_flags=("${COSIGN_PLAIN_HTTP[@]}"); fi
cosign_flags=("${http_flags[@]}")
if [ -z "$key$identity" ]; then
  if [ -n "$plain_http" ]; then
    key="$CACHE/signing/cosign.pub"
  else
    die "give the signer: --key FILE, or --identity-regexp RE for a keyless (GitHub Actions) signature"
  fi
fi
if [ -n "$key" ]; then
  [ -f "${key%.key}.pub" ] && key="${key%.key}.pub"
  [ -f "$key" ] || die "no such public key: $key"
  cosign_flags+=(--key "$key")
  # Releases to a loopback registry are not in the public transparency log.
  [ -z "$plain_http" ] || cosign_flags+=(--insecure-ignore-tlog=true)
else
  cosign_flags+=(--certificate-identity-regexp "$identity" --certificate-oidc-issuer "$issuer")
fi

# tag_digest REPOSITORY:TAG: the digest the tag names now.
tag_digest() {
  "$BIN/cosign" triangulate --type digest "${http_flags[@]}" "$1" 2>/dev/null
}

# check REPOSITORY DIGEST WHAT: the tag VERSION names DIGEST, which is signed.
check() {
  local repo=$1 digest=$2 what=$3 now out
  [[ "$digest" == sha256:* ]] || die "$env_file: no digest of $what"
  now="$(tag_digest "$repo:$VERSION")" || die "$what: $repo:$VERSION is not in the registry"
  now="${now##*@}"
  [ "$now" = "$digest" ] || die "$what was altered: $repo:$VERSION now names $now, the release signed $digest"
  out="$("$BIN/cosign" verify "${cosign_flags[@]}" "$repo@$digest" 2>&1 >/dev/null)" ||
    die "$what is not signed by the release's signer: $repo@$digest: $(tail -n1 <<<"$out")"
}

# sbom_lists REF NAME...: the image's signed SPDX SBOM lists each NAME with a version.
sbom_lists() {
  local ref=$1
  shift
  "$BIN/cosign" verify-attestation --type spdxjson "${cosign_flags[@]}" "$ref" >"$work/attestations" 2>"$work/err" ||
    die "$ref has no SBOM signed by the release's signer: $(tail -n1 "$work/err")"
  python3 - "$work/attestations" "$ref" "$@" <<'PY'
import base64, json, sys
path, ref, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
packages = {}
for line in open(path):
    if not line.strip():
        continue
    statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
    for p in statement["predicate"].get("packages", []):
        if p.get("versionInfo"):
            packages.setdefault(p["name"], p["versionInfo"])
if not packages:
    sys.exit(f"{ref}: the SBOM lists no package with a version")
missing = [w for w in wanted if w not in packages]
if missing:
    sys.exit(f"{ref}: the SBOM lists no version of {', '.join(missing)} ({len(packages)} packages)")
print("  " + ", ".join(f"{w} {packages[w]}" for w in wanted) + f" ({len(packages)} packages with versions)")
PY
}

# check_images REPOSITORY DIGEST WHAT PLATFORMS NAME...: the index DIGEST lists
# exactly PLATFORMS (comma-separated; any when empty), and each image in it
# is signed and carries a signed SBOM listing each NAME with a version.
check_images() {
  local repo=$1 digest=$2 what=$3 want=$4 images listed platform image out lists
  shift 4
  images="$(index_manifests "$repo@$digest" 2>"$work/err")" || die "$what: $(tail -n1 "$work/err")"
  listed="$(cut -d' ' -f1 <<<"$images" | sort | paste -sd,)"
  if [ -n "$want" ] && [ "$listed" != "$(tr , '\n' <<<"$want" | sort | paste -sd,)" ]; then
    die "$what lists the platforms $listed, the release has $want: $repo@$digest"
  fi
  while read -r platform image; do
    out="$("$BIN/cosign" verify "${cosign_flags[@]}" "$repo@$image" 2>&1 >/dev/null)" ||
      die "$what: its $platform image is not signed by the release's signer: $repo@$image: $(tail -n1 <<<"$out")"
    lists="$(sbom_lists "$repo@$image" "$@")" || exit 1
    log "$repo@$image ($platform): signed; signed SBOM:"
    echo "$lists" >&2
  done <<<"$images"
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
declare -A expect=(
  [operator]="sigs.k8s.io/controller-runtime k8s.io/client-go"
  [envoy]="envoy libc6"
  [nginx]="nginx-light libnginx-mod-http-js curl libssl3"
)
if [ ${#refs[@]} -gt 0 ]; then
  for ref in "${refs[@]}"; do
    [[ "$ref" == *@sha256:* ]] || die "$ref: give an image by digest (REPOSITORY@sha256:...)"
    out="$("$BIN/cosign" verify "${cosign_flags[@]}" "$ref" 2>&1 >/dev/null)" ||
      die "$ref is not signed by the expected signer: $(tail -n1 <<<"$out")"
    log "$ref: signed"
    n="${ref%@*}" && n="${n##*/webfarm-}"
    # shellcheck disable=SC2086 # a list of names
    check_images "${ref%@*}" "${ref#*@}" "$ref" "" ${expect[$n]:-}
  done
  exit 0
fi
for n in operator envoy nginx; do
  var="${n^^}_DIGEST"
  repo="$REGISTRY/webfarm-$n"
  check "$repo" "${!var:-}" "the $n image"
  log "$repo:$VERSION = @${!var}: signed"
  # shellcheck disable=SC2086 # a list of names
  check_images "$repo" "${!var}" "the $n image" "$PLATFORMS" ${expect[$n]}
done
if [ -n "$CHART_DIGEST" ]; then
  check "$REGISTRY/charts/webfarm-operator" "$CHART_DIGEST" "the chart"
  log "$REGISTRY/charts/webfarm-operator@$CHART_DIGEST: signed"
fi
log "release $VERSION in $REGISTRY verified"
