#!/usr/bin/env bash
# Pushes image archives built by hack/images/build.sh (or hack/cluster/up.sh)
# to a registry with skopeo, and prints each pushed reference with its digest.
#
# Usage: hack/images/push.sh [--to REPOSITORY:TAG] [--digest-file FILE] ARCHIVE...
#   ARCHIVE             a docker-archive tarball; without --to it goes where the
#                       local cluster's containerd looks for its name: an
#                       archive tagged localhost/NAME:TAG goes to
#                       $LOCAL_REGISTRY/NAME:TAG (the registry of
#                       hack/cluster/registry.sh)
#   --to REPO:TAG       the destination of the (single) archive
#   --digest-file FILE  write the pushed manifest's digest (sha256:...) to FILE
# A registry on loopback is spoken to over plain HTTP, every other over HTTPS
# with the credentials of `skopeo login` / `helm registry login`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/common.sh"

to="" digest_file=""
archives=()
while [ $# -gt 0 ]; do
  case "$1" in
    --to) to="$2"; shift 2 ;;
    --digest-file) digest_file="$2"; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option: $1" ;;
    *) archives+=("$1"); shift ;;
  esac
done
[ ${#archives[@]} -gt 0 ] || die "no archive given (hack/images/push.sh -h)"
[ -z "$to$digest_file" ] || [ ${#archives[@]} -eq 1 ] || die "--to and --digest-file take one archive"
command -v skopeo >/dev/null || die "skopeo is missing: hack/install-tools.sh cluster-packages"

# tls_flag REF: plain HTTP for registries on loopback only.
tls_flag() { if on_loopback "$1"; then echo --dest-tls-verify=false; else echo --dest-tls-verify=true; fi; }

# ref_in ARCHIVE: the name the archive was saved under.
ref_in() {
  tar -xOf "$1" manifest.json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["RepoTags"][0])'
}

for a in "${archives[@]}"; do
  [ -f "$a" ] || die "no such archive: $a"
  dest="$to"
  if [ -z "$dest" ]; then
    ref="$(ref_in "$a")"
    case "$ref" in
      localhost/*) dest="$LOCAL_REGISTRY/${ref#localhost/}" ;;
      *) die "$a is tagged $ref: give its destination with --to" ;;
    esac
  fi
  tmp="$(mktemp)"
  start=$SECONDS
  skopeo --insecure-policy copy --quiet --retry-times 2 "$(tls_flag "$dest")" --digestfile "$tmp" \
    "docker-archive:$a" "docker://$dest"
  digest="$(cat "$tmp")"
  rm -f "$tmp"
  [ -z "$digest_file" ] || echo "$digest" >"$digest_file"
  log "pushed $dest@$digest ($((SECONDS - start)) s)"
done
