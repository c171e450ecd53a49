#!/usr/bin/env bash
# Checks the CoreDNS that hack/install-tools.sh builds (bin/k8s/coredns) against
# the local cluster's Corefile (hack/cluster/coredns.yaml), on loopback and
# without root: it has exactly the plugins that Corefile names, loads it, and
# answers a Service's name from a real kube-apiserver (bin/k8s, with etcd).
# Usage: hack/tools/coredns/check.sh (after hack/install-tools.sh kube etcd coredns)
set -euo pipefail
. "$(dirname "$0")/../../lib/common.sh"
K="$BIN/k8s"
D="$(mktemp -d)"
pids=()
# cleanup: stop what was started, last first (the API server waits for etcd
# while it shuts down), each given 10 s.
cleanup() {
  local i p n
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill "$p" 2>/dev/null || continue
    for ((n = 0; n < 50; n++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
# fail WHAT LOG: report a failed step with the end of its log.
fail() { tail -n 20 "$2" >&2 || true; die "$1"; }

# The plugins are the directives of the cluster's Corefile and of the Gateway
# API conformance suite's (its base manifests run this CoreDNS as their DNS
# backend), and metadata, transfer, dnstap and debug, which the kubernetes and
# forward plugins import (registered, but no Corefile can name them: they are
# not in the binary's directives).
corefile="$(sed -n '/Corefile: |/,/^---/p' "$ROOT/hack/cluster/coredns.yaml" | sed '1d;$d' | sed 's/^    //')"
suite="$(cd "$ROOT" && go mod download sigs.k8s.io/gateway-api/conformance &&
  go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api/conformance)/base/manifests.yaml"
suite_corefile="$(sed -n '/^  Corefile: |/,/^---/p' "$suite" | sed '1d;$d')"
want="$({ grep -E '^    [a-z]' <<<"$corefile" | awk '{print $1}'
  grep -E '^ +[a-z]+( |$)' <<<"$suite_corefile" | awk '{print $1}'
  echo metadata; echo transfer; echo dnstap; echo debug; } | sort -u)"
have="$("$K/coredns" -plugins | grep -E '^[a-z_0-9]+$' | sort -u)"
[ "$want" = "$have" ] || die "coredns -plugins lists $(echo $have), the Corefiles use $(echo $want)"
log "coredns has exactly the Corefiles' plugins: $(echo $have)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds or the deadline passes.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

etcd_port=$(free_port) peer_port=$(free_port) api_port=$(free_port)
"$K/etcd" --data-dir "$D/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --unsafe-no-fsync --log-level warn >"$D/etcd.log" 2>&1 &
pids+=($!)
openssl ecparam -name prime256v1 -genkey -noout -out "$D/sa.key" 2>/dev/null
openssl ec -in "$D/sa.key" -pubout -out "$D/sa.pub" 2>/dev/null
token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$token,check,check,system:masters" >"$D/tokens.csv"
"$K/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$D/certs" \
  --token-auth-file "$D/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$D/sa.pub" --service-account-signing-key-file "$D/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 >"$D/apiserver.log" 2>&1 &
pids+=($!)
cat >"$D/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: check, cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}}]
users: [{name: check, user: {token: "$token"}}]
contexts: [{name: check, context: {cluster: check, user: check}}]
current-context: check
EOF
kc() { "$K/kubectl" --kubeconfig "$D/kubeconfig" "$@"; }
wait_for kube-apiserver 60 kc get --raw /readyz || fail "kube-apiserver did not become ready" "$D/apiserver.log"
kc create service clusterip web --tcp=80 >/dev/null
web_ip="$(kc get service web -o 'jsonpath={.spec.clusterIP}')"

# The cluster's Corefile, with loopback ports and the API server's kubeconfig.
dns_port=$(free_port) health_port=$(free_port) ready_port=$(free_port) metrics_port=$(free_port)
sed -e "s/^\.:53 {/.:$dns_port {/" -e "s/^    health {/    health 127.0.0.1:$health_port {/" \
  -e "s/^    ready$/    ready 127.0.0.1:$ready_port/" -e "s/prometheus :9153/prometheus 127.0.0.1:$metrics_port/" \
  -e "s|^\(    kubernetes .*\){|&\n        kubeconfig $D/kubeconfig|" <<<"$corefile" >"$D/Corefile"
"$K/coredns" -conf "$D/Corefile" >"$D/coredns.log" 2>&1 &
pids+=($!)
wait_for "coredns ready" 30 curl -fsS "http://127.0.0.1:$ready_port/ready" || fail "coredns did not become ready" "$D/coredns.log"
curl -fsS "http://127.0.0.1:$health_port/health" >/dev/null || fail "coredns /health failed" "$D/coredns.log"
metrics="$(curl -fsS "http://127.0.0.1:$metrics_port/metrics")" || fail "coredns serves no metrics" "$D/coredns.log"
grep '^coredns_build_info' <<<"$metrics" >/dev/null || fail "coredns's metrics lack coredns_build_info" "$D/coredns.log"
q() { python3 "$ROOT/hack/cluster/dnsquery.py" "127.0.0.1:$dns_port" "$@"; }
q kubernetes.default.svc.cluster.local 10.0.0.1 >/dev/null || fail "no answer for kubernetes.default" "$D/coredns.log"
q web.default.svc.cluster.local "$web_ip" >/dev/null || fail "no answer for the Service web ($web_ip)" "$D/coredns.log"
if q nothing.default.svc.cluster.local >/dev/null 2>&1; then die "an address for a Service that does not exist"; fi
log "coredns answers the cluster's names from kube-apiserver (web.default.svc.cluster.local -> $web_ip)"
