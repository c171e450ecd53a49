# shellcheck shell=bash disable=SC2034 # the settings are used by the scripts that source this
# Settings shared by hack/cluster/up.sh and down.sh. Source it; no side effects.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

# Everything the local cluster creates lives under this folder.
S="${WEBFARM_CLUSTER_DIR:-/var/lib/webfarm-cluster}"
S="${S%/}"
K8S_BIN="$BIN/k8s"

NODE_BRIDGE=wfnode0      # holds the node address (the kernel has no dummy links)
NODE_IP=10.200.0.1       # node InternalIP, apiserver advertise address, kubelet address
POD_BRIDGE=cni0
POD_SUBNET=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
DNS_IP=10.96.0.10
NODE_NAME="$(hostname | tr '[:upper:]' '[:lower:]')"
API_PORT=6443
ETCD_CLIENT_PORT=12379
ETCD_PEER_PORT=12380
PAUSE_IMAGE=localhost/webfarm/pause:3.10
COREDNS_IMAGE=localhost/webfarm/coredns:$COREDNS_VERSION

CTR_SOCK="$S/containerd/containerd.sock"
RUNC_ROOT="$S/containerd/runc"
NETNS_DIR="$S/netns"
KUBECONFIG_ADMIN="$S/admin.kubeconfig"
# Stop order (start order is the reverse).
COMPONENTS=(kube-router kube-proxy kubelet kube-scheduler kube-controller-manager containerd kube-apiserver etcd registry)
# Components up.sh starts only when asked (--network-policy: kube-router).
OPTIONAL_COMPONENTS=(kube-router)
KUBE_ROUTER_HEALTH_PORT=20244 # also in internal/devcluster (EnforcesNetworkPolicy)
# Sysctls up.sh or the kubelet/kube-proxy change; saved by up.sh, restored by down.sh.
SYSCTLS=(net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
  vm.overcommit_memory kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

# detach LOG COMMAND...: runs COMMAND in a session of its own, its output
# appended to LOG, holding no file descriptor of the caller's but the
# standard ones; $! is its PID. A daemon that kept a caller's descriptor
# would keep what it stands for: the cluster lock of a caller that ran
# `flock` without -o stayed held as long as the registry ran.
detach() {
  local log=$1 fd
  shift
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@" </dev/null >>"$log" 2>&1
  ) &
}

need_root() { [ "$(id -u)" = 0 ] || die "the local cluster needs root (network, mounts, containers)"; }

# pid_of NAME: the PID from NAME's PID file if that process is alive and is ours
# (its command line names the state folder); nothing otherwise.
pid_of() {
  local f="$S/run/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$S/" || return 1
  echo "$pid"
}

# stop_pids SECONDS PID...: SIGTERM to all, wait up to SECONDS for them to exit, then SIGKILL.
stop_pids() {
  local secs=$1 i p alive
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < secs * 20; i++)); do
    alive=""
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1 && break; done
    [ -n "$alive" ] || return 0
    sleep 0.05
  done
  kill -KILL "$@" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    alive=""
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1 && break; done
    [ -n "$alive" ] || return 0
    sleep 0.05
  done
}

CTR=(ctr --address "$CTR_SOCK" --namespace k8s.io)
ctr_() { "${CTR[@]}" "$@"; }
kc() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
# elapsed START: seconds since START (a `date +%s.%N` value), one decimal.
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# wait_for WHAT SECONDS COMMAND...: poll COMMAND every 0.2 s until it succeeds or the deadline passes.
wait_for() {
  local what=$1 secs=$2 deadline
  shift 2
  deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${secs}s waiting for $what (logs: $S/logs/)"
    sleep 0.2
  done
}

# http_get URL: print the body of a plain-HTTP GET (1 s timeout); fails on errors.
http_get() {
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=1).read().decode())' "$1" 2>/dev/null
}
