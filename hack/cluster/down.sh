#!/usr/bin/env bash
# Stops the local single-node Kubernetes started by hack/cluster/up.sh and removes
# everything it created at run time: processes (by PID file only), containers and
# pod sandboxes, mounts under the state folder, pod network namespaces, the cni0
# and node bridges, the KUBE-*/CNI-* iptables chains and kube-router's ipsets; restores the sysctls up.sh
# changed. Keeps the PKI, the built images, the registry's blobs and the logs under the state folder
# (pass --purge to delete the whole folder). Idempotent; also cleans up after an
# unclean stop. --network-policy-only stops the NetworkPolicy enforcement alone
# (up.sh --network-policy: kube-router, its chains and ipsets) and leaves the
# cluster running, as it was before. Usage: hack/cluster/down.sh [--purge | --network-policy-only]
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_root

purge="" policy_only=""
case "${1:-}" in
  --purge) purge=1 ;;
  --network-policy-only) policy_only=1 ;;
  "") ;;
  *) die "usage: $0 [--purge | --network-policy-only]" ;;
esac
start=$(date +%s.%N)

# clean_chains iptables|ip6tables PREFIXES: remove the chains whose names
# start with one of PREFIXES (an extended regular expression), and every jump to them.
clean_chains() {
  local ipt=$1 prefixes=$2 table chains c rule
  command -v "$ipt" >/dev/null || return 0
  for table in filter nat mangle raw; do
    chains="$("$ipt"-save -t "$table" 2>/dev/null | sed -En "s/^:(($prefixes)[^ ]*) .*/\1/p")"
    [ -n "$chains" ] || continue
    # Rules in any chain that jump to one of ours, then our chains themselves.
    "$ipt"-save -t "$table" 2>/dev/null | grep -E "^-A .* -j ($prefixes)" | grep -vE "^-A ($prefixes)" |
      while IFS= read -r rule; do
        eval "\"$ipt\" -w -t $table -D ${rule#-A }" 2>/dev/null || true
      done
    for c in $chains; do "$ipt" -w -t "$table" -F "$c" 2>/dev/null || true; done
    for c in $chains; do "$ipt" -w -t "$table" -X "$c" 2>/dev/null || true; done
  done
}
# destroy_ipsets PREFIXES: the ipsets whose names start with one of PREFIXES
# (kube-router's, which its chains matched: unused once they are gone).
destroy_ipsets() {
  command -v ipset >/dev/null || return 0
  local set
  for set in $(ipset list -n 2>/dev/null | grep -E "^($1)" || true); do
    ipset destroy "$set" 2>/dev/null || true
  done
}

# stop_components SECONDS NAME...: stop these components together (PID files only).
stop_components() {
  local secs=$1 name pid pids=()
  shift
  for name in "$@"; do
    if pid="$(pid_of "$name")"; then
      log "stopping $name (pid $pid)"
      pids+=("$pid")
    fi
  done
  stop_pids "$secs" "${pids[@]}"
  for name in "$@"; do rm -f "$S/run/$name.pid"; done
}

# The enforcement alone: kube-router's network policy controller, then its
# chains (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-*) and ipsets.
if [ -n "$policy_only" ]; then
  stop_components 10 kube-router
  for ipt in iptables ip6tables; do clean_chains "$ipt" 'KUBE-ROUTER-|KUBE-POD-FW-|KUBE-NWPLCY-'; done
  destroy_ipsets 'KUBE-SRC-|KUBE-DST-'
  log "NetworkPolicy enforcement stopped; the cluster runs on ($(elapsed "$start") s)"
  exit 0
fi

# 0. Components whose PID file was lost (a deleted run/ folder): the cluster's own
# binaries whose command line names the state folder and that no PID file lists.
# Nothing else is touched.
known=" "
for c in "${COMPONENTS[@]}"; do known+="$(pid_of "$c" || true) "; done
strays=()
for p in $(pgrep -f -- "$S/" 2>/dev/null || true); do
  d="/proc/$p"
  case "$(basename "$(readlink "$d/exe" 2>/dev/null)" 2>/dev/null)" in
    etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kube-router | containerd | registry) ;;
    *) continue ;;
  esac
  [[ "$known" == *" $p "* ]] && continue
  tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "$S/" && strays+=("$p")
done
if [ ${#strays[@]} -gt 0 ]; then
  log "stopping cluster processes that have no PID file: ${strays[*]}"
  stop_pids 10 "${strays[@]}"
fi

# 1. The node agents first, so nothing restarts pods behind our back.
stop_components 10 kubelet kube-proxy kube-router

# 2. Containers and sandboxes: kill every task of the k8s.io namespace while
# containerd still runs, then stop containerd and anything its shims left.
if pid_of containerd >/dev/null && [ -S "$CTR_SOCK" ]; then
  tasks="$(timeout 10 "${CTR[@]}" tasks ls -q 2>/dev/null || true)"
  for t in $tasks; do timeout 5 "${CTR[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
  # containerd's CRI plugin deletes a task once it has exited; wait for that (bounded).
  for _ in $(seq 50); do
    [ -z "$(timeout 5 "${CTR[@]}" tasks ls -q 2>/dev/null)" ] && break
    sleep 0.1
  done
  for t in $(timeout 5 "${CTR[@]}" tasks ls -q 2>/dev/null || true); do
    timeout 5 "${CTR[@]}" tasks delete --force "$t" >/dev/null 2>&1 || true
  done
  for c in $(timeout 10 "${CTR[@]}" containers ls -q 2>/dev/null || true); do
    timeout 5 "${CTR[@]}" containers rm "$c" >/dev/null 2>&1 || true
  done
fi
stop_components 10 containerd
# Shims and containers left by a containerd that died: shims name our socket,
# container processes sit in the kubelet's kubepods cgroups.
for p in $(pgrep -f "containerd-shim.*-address $CTR_SOCK" 2>/dev/null || true); do
  kill -KILL "$p" 2>/dev/null || true
done
if [ -d "$RUNC_ROOT" ] && command -v runc >/dev/null; then
  for d in "$RUNC_ROOT"/*/; do
    [ -d "$d" ] || continue
    for c in $(runc --root "$d" list -q 2>/dev/null || true); do
      runc --root "$d" kill "$c" KILL >/dev/null 2>&1 || true
      runc --root "$d" delete --force "$c" >/dev/null 2>&1 || true
    done
  done
fi
for _ in $(seq 20); do
  mapfile -t kpids < <(find /sys/fs/cgroup/pids/kubepods /sys/fs/cgroup/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
  [ ${#kpids[@]} -gt 0 ] || break
  kill -KILL "${kpids[@]}" 2>/dev/null || true
  sleep 0.2
done

# 3. The control plane.
stop_components 10 kube-scheduler kube-controller-manager kube-apiserver
stop_components 10 etcd
# The image registry last: its blobs stay (under registry/data), so the next
# push sends only what changed.
stop_components 10 registry

# 4. kube-proxy's and the kubelet's iptables chains, and the CNI plugins' chains.
if [ -x "$K8S_BIN/kube-proxy" ]; then
  "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
fi
clean_chains iptables 'KUBE-|CNI-'
clean_chains ip6tables 'KUBE-|CNI-'
destroy_ipsets 'KUBE-|kube-router-'

# 5. Mounts under the state folder (kubelet volumes, sandbox shm, rootfs, netns), deepest first.
for _ in 1 2 3; do
  mnts="$(awk -v s="$S/" 'index($2, s) == 1 {print $2}' /proc/self/mounts | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)"
  [ -n "$mnts" ] || break
  while IFS= read -r m; do
    m="$(printf '%b' "${m//\\/\\0}")" # /proc/mounts escapes spaces as \040
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done <<<"$mnts"
done

# 6. Pod network namespaces (their veth ends go with them) and the bridges.
if [ -d "$NETNS_DIR" ]; then
  for ns in "$NETNS_DIR"/*; do
    [ -e "$ns" ] || continue
    umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
    rm -f "$ns"
  done
fi
for l in "$POD_BRIDGE" "$NODE_BRIDGE"; do
  ip link show "$l" >/dev/null 2>&1 && ip link delete "$l" 2>/dev/null
done

# 7. Conntrack entries of the cluster's addresses (stale UDP entries would
# outlive the cluster).
if command -v conntrack >/dev/null; then
  for net in "$SERVICE_CIDR" "$CLUSTER_CIDR" "$NODE_IP/32"; do
    conntrack -D -d "$net" >/dev/null 2>&1 || true
    conntrack -D -s "$net" >/dev/null 2>&1 || true
  done
fi

# 8. Sysctls back to what they were before the first up.sh.
if [ -f "$S/sysctl.saved" ]; then
  while read -r key val; do
    if [ -n "$key" ]; then sysctl -qw "$key=$val" >/dev/null 2>&1 || true; fi
  done <"$S/sysctl.saved"
  rm -f "$S/sysctl.saved"
fi

# 9. Empty pod cgroups the kubelet created (cgroup v1 hierarchies).
for h in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice /sys/fs/cgroup/kubepods; do
  [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# 10. The kubelet's links to container logs in /var/log/containers that point into the state folder.
for l in /var/log/containers/*.log; do
  [ -L "$l" ] || continue
  case "$(readlink "$l")" in "$S"/*) rm -f "$l" ;; esac
done

# 11. Run-time state (a fresh cluster starts next time); PKI, images and logs stay.
if [ -d "$S" ]; then
  rm -rf "$S/etcd" "$S/kubelet" "$S/containerd" "$S/cni/ipam" "$S/pod-logs" "$NETNS_DIR" "$S/run" 2>/dev/null || true
  [ -n "$purge" ] && rm -rf "$S"
fi
log "local cluster is down ($(elapsed "$start") s)"
