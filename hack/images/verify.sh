#!/usr/bin/env bash
# Checks the image archives built by hack/images/build.sh without a container
# engine: prints each image's user, entrypoint and labels (skopeo inspect),
# unpacks its root file system (umoci) and runs its main program from it with
# chroot as the image's non-root user; the nginx, Envoy and Prometheus images
# also serve a request from a read-only root file system, the way pods run them.
#
# Usage: hack/images/verify.sh [operator|nginx|envoy|prometheus|prometheus-operator|
#   prometheus-config-reloader|client|cert-manager-controller|cert-manager-webhook|
#   cert-manager-cainjector ...]  (needs root)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/common.sh"

[ "$(id -u)" = 0 ] || die "verify needs root (chroot)"
images=("$@")
[ ${#images[@]} -gt 0 ] || images=(operator nginx envoy prometheus prometheus-operator prometheus-config-reloader client
  cert-manager-controller cert-manager-webhook cert-manager-cainjector)
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
U="${VERIFY_USER:-65532:65532}" # the user the checks run as (uid:gid)

run() { # run ROOTFS CMD...: as the non-root user, from the unpacked image;
  # prints the first lines of the output and the exit code
  local r=$1 out rc=0; shift
  out="$(chroot --userspec="$U" "$r" "$@" 2>&1)" || rc=$?
  printf '%s\n' "$out" | head -n "${LINES_SHOWN:-3}" | sed 's/^/    /'
  echo "  -> $* (exit $rc)"
}

# sandbox ROOTFS URL CMD...: run CMD from ROOTFS as the non-root user the way a
# pod with readOnlyRootFilesystem runs it (read-only root, a fresh /tmp, the
# test configs mounted at /etc/{webfarm,envoy,prometheus}, a fresh /prometheus),
# wait until URL answers (curl from the host), print the answer, stop it.
sandbox() {
  local r=$1 url=$2; shift 2
  unshare -m --propagation private sh -eu -c '
    r=$1 etc=$2 url=$3 u=$4; shift 4
    mkdir -p "$r/dev" "$r/proc" "$r/tmp"  # a runtime creates these mount points too
    mount --bind "$r" "$r"; mount -o remount,bind,ro "$r"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    for d in etc/webfarm etc/envoy etc/prometheus; do if [ -d "$r/$d" ]; then mount --bind "$etc" "$r/$d"; fi; done
    if [ -d "$r/prometheus" ]; then mount -t tmpfs -o mode=0775,uid=65532,gid=65532 tmpfs "$r/prometheus"; fi
    mount --rbind /dev "$r/dev"; mount -t proc proc "$r/proc"
    chroot --userspec=$u "$r" "$@" >"$etc/../out.log" 2>&1 & pid=$!
    ok=""
    for i in $(seq 100); do curl -fsS "$url" 2>/dev/null && { ok=1; break; }; sleep 0.1; done
    kill -TERM $pid 2>/dev/null || true; wait $pid || true
    [ -n "$ok" ] || { echo "no answer from $url; output:"; tail -n 20 "$etc/../out.log"; exit 1; }
    echo "  -> answered on $url from a read-only root as uid:gid $u"
  ' sh "$r" "$TMP/etc" "$url" "$U" "$@"
}

write_configs() {
  rm -rf "${TMP:?}/etc"; mkdir -p "$TMP/etc"
  cat >"$TMP/etc/nginx.conf" <<EOF
daemon off;
pid /tmp/nginx.pid;
error_log stderr warn;
events {}
http {
  access_log off;
  client_body_temp_path /tmp/client_body;
  proxy_temp_path /tmp/proxy;
  fastcgi_temp_path /tmp/fastcgi;
  uwsgi_temp_path /tmp/uwsgi;
  scgi_temp_path /tmp/scgi;
  server { listen 127.0.0.1:18089; location / { return 200 "nginx ok\n"; } }
}
EOF
  cat >"$TMP/etc/envoy.json" <<EOF
{"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 19089}}},
 "static_resources": {"listeners": [], "clusters": []}}
EOF
  cat >"$TMP/etc/prometheus.yml" <<EOF
global: {scrape_interval: 5s}
scrape_configs: [{job_name: self, static_configs: [{targets: ["127.0.0.1:19090"]}]}]
EOF
  chmod -R a+rX "$TMP"
}

for n in "${images[@]}"; do
  a="$BIN/images/$n.tar"
  [ -f "$a" ] || die "$a is missing: run 'make images'"
  echo "=== $n: $(readlink -f "$a") ($(du -hL "$a" | cut -f1))"
  skopeo --insecure-policy inspect --config "docker-archive:$a" | python3 -c '
import json, sys
c = json.load(sys.stdin)["config"]
for k in ("User", "Entrypoint", "Cmd", "WorkingDir", "Volumes", "StopSignal"):
    if c.get(k): print(f"  {k}: {c[k]}")
for k, v in sorted(c.get("Labels", {}).items()): print(f"  label {k}={v}")'
  rm -rf "$TMP/oci" "$TMP/bundle"
  skopeo --insecure-policy copy --quiet "docker-archive:$a" "oci:$TMP/oci:image"
  umoci unpack --image "$TMP/oci:image" "$TMP/bundle" >/dev/null
  r="$TMP/bundle/rootfs"
  echo "  rootfs: $(du -sh "$r" | cut -f1)"
  case "$n" in
    operator) LINES_SHOWN=6 run "$r" /manager --help ;;
    envoy)
      run "$r" envoy --version
      LINES_SHOWN=4 run "$r" /usr/local/bin/envoy-drain -h
      write_configs
      sandbox "$r" http://127.0.0.1:19089/ready envoy --config-path /etc/envoy/envoy.json --disable-hot-restart
      ;;
    prometheus)
      run "$r" /bin/prometheus --version
      write_configs
      sandbox "$r" http://127.0.0.1:19090/-/ready /bin/prometheus --config.file=/etc/prometheus/prometheus.yml \
        --storage.tsdb.path=/prometheus --web.listen-address=127.0.0.1:19090
      ;;
    prometheus-operator) run "$r" /bin/operator --version ;;
    prometheus-config-reloader) run "$r" /bin/prometheus-config-reloader --version ;;
    cert-manager-*) LINES_SHOWN=4 run "$r" "/usr/local/bin/$n" --help ;;
    nginx)
      run "$r" nginx -v
      run "$r" curl --version
      run "$r" getent hosts localhost
      write_configs
      sandbox "$r" http://127.0.0.1:18089/ nginx -c /etc/webfarm/nginx.conf
      ;;
    client)
      run "$r" curl --version
      run "$r" wrk --version
      run "$r" hey
      # Both load generators against a short-lived server on the host's loopback.
      mkdir -p "$TMP/www" && echo hello >"$TMP/www/index.html"
      python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" 18090 >/dev/null 2>&1 &
      srv=$!
      for _ in $(seq 50); do curl -fs http://127.0.0.1:18090/ >/dev/null && break; sleep 0.1; done
      LINES_SHOWN=4 run "$r" wrk -t1 -c2 -d1s http://127.0.0.1:18090/
      run "$r" sh -c 'hey -n 20 -c 2 http://127.0.0.1:18090/ | grep -A1 "Status code distribution"'
      kill $srv; wait $srv 2>/dev/null || true
      ;;
  esac
done
