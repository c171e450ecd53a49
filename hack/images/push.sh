#!/usr/bin/env bash
# Pushes image archives built by hack/images/build.sh (or hack/cluster/up.sh)
# to a registry with skopeo, and prints each pushed reference with its digest.
#
# Usage: hack/images/push.sh [--to REPOSITORY:TAG [--index]] [--digest-file FILE] ARCHIVE...
#   ARCHIVE             a docker-archive tarball; without --to it goes where the
#                       local cluster's containerd looks for its name: an
#                       archive tagged localhost/NAME:TAG goes to
#                       $LOCAL_REGISTRY/NAME:TAG (the registry of
#                       hack/cluster/registry.sh)
#   --to REPO:TAG       the destination of the (single) archive
#   --index             push the archives (one per platform, the platform
#                       each archive's config names) as one OCI image index
#                       to --to: a node pulls the image of its own platform
#                       by the one reference
#   --digest-file FILE  write the pushed manifest's (or index's) digest to FILE
# A registry on loopback is spoken to over plain HTTP, every other over HTTPS
# with the credentials of `skopeo login` / `helm registry login`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/common.sh"

to="" digest_file="" index=""
archives=()
while [ $# -gt 0 ]; do
  case "$1" in
    --to) to="$2"; shift 2 ;;
    --digest-file) digest_file="$2"; shift 2 ;;
    --index) index=1; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option: $1" ;;
    *) archives+=("$1"); shift ;;
  esac
done
[ ${#archives[@]} -gt 0 ] || die "no archive given (hack/images/push.sh -h)"
[ -z "$index" ] || [ -n "$to" ] || die "--index needs --to"
[ -n "$index" ] || [ -z "$to$digest_file" ] || [ ${#archives[@]} -eq 1 ] || die "--to and --digest-file take one archive (or several with --index)"
command -v skopeo >/dev/null || die "skopeo is missing: hack/install-tools.sh cluster-packages"

# tls_flag REF: plain HTTP for registries on loopback only.
tls_flag() { if on_loopback "$1"; then echo --dest-tls-verify=false; else echo --dest-tls-verify=true; fi; }

# ref_in ARCHIVE: the name the archive was saved under.
ref_in() {
  tar -xOf "$1" manifest.json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["RepoTags"][0])'
}

# platform_of ARCHIVE: the os/architecture its image's config names.
platform_of() {
  python3 - "$1" <<'PY'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    config = json.load(t.extractfile(json.load(t.extractfile("manifest.json"))[0]["Config"]))
print(config["os"] + "/" + config["architecture"])
PY
}

# push_index: the archives as one OCI image index, assembled in an OCI layout
# (one gzip-compressed image per platform, then the index of them) and copied
# with all its images and unchanged digests (skopeo copy --all --preserve-digests).
push_index() {
  local work a platforms=() p tmp start=$SECONDS
  work="$(mktemp -d)"
  for a in "${archives[@]}"; do
    [ -f "$a" ] || die "no such archive: $a"
    p="$(platform_of "$a")"
    [[ " ${platforms[*]} " != *" $p "* ]] || die "two archives for $p"
    platforms+=("$p")
    skopeo --insecure-policy copy --quiet "docker-archive:$a" "oci:$work/oci:$p"
  done
  python3 - "$work/oci" "${platforms[@]}" <<'PY'
import hashlib, json, os, sys
layout, platforms = sys.argv[1], sys.argv[2:]
path = os.path.join(layout, "index.json")
top = json.load(open(path))
by_name = {m["annotations"]["org.opencontainers.image.ref.name"]: m for m in top["manifests"]}
manifests = []
for p in platforms:
    m = dict(by_name[p])
    m.pop("annotations")
    m["platform"] = dict(zip(("os", "architecture"), p.split("/")))
    manifests.append(m)
index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": manifests}, separators=(",", ":")).encode()
digest = hashlib.sha256(index).hexdigest()
open(os.path.join(layout, "blobs", "sha256", digest), "wb").write(index)
top["manifests"] = [{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": "sha256:" + digest,
                     "size": len(index), "annotations": {"org.opencontainers.image.ref.name": "index"}}]
json.dump(top, open(path, "w"), separators=(",", ":"))
PY
  tmp="$work/digest"
  skopeo --insecure-policy copy --quiet --all --preserve-digests --retry-times 2 "$(tls_flag "$to")" \
    --digestfile "$tmp" "oci:$work/oci:index" "docker://$to"
  digest="$(cat "$tmp")"
  rm -rf "$work"
  [ -z "$digest_file" ] || echo "$digest" >"$digest_file"
  log "pushed $to@$digest, an index of ${platforms[*]} ($((SECONDS - start)) s)"
}

if [ -n "$index" ]; then
  push_index
  exit 0
fi
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
