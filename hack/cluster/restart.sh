#!/usr/bin/env bash
# Restarts one component of the local cluster started by hack/cluster/up.sh with
# the command line it runs with: SIGTERM, SIGKILL after 5 s (as a supervisor
# with a short grace period would: the API server otherwise waits up to 60 s
# for its clients' watches to end), then the same command again, logging to
# the same file. For the API server it waits until
# /readyz answers again. The resilience tests use it; it also helps a person
# try a changed flag by hand. Usage: hack/cluster/restart.sh COMPONENT
# (one of: kube-apiserver etcd kube-controller-manager kube-scheduler kubelet kube-proxy containerd)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

name="${1:-}"
[[ " ${COMPONENTS[*]} " == *" $name "* ]] || die "usage: $0 COMPONENT (one of: ${COMPONENTS[*]})"
pid="$(pid_of "$name")" || die "$name is not running (no live PID in $S/run/$name.pid)"
mapfile -d '' command <"/proc/$pid/cmdline"
start=$(date +%s.%N)

log "stopping $name (pid $pid)"
stop_pids 5 "$pid"
detach "$S/logs/$name.log" "${command[@]}"
echo $! >"$S/run/$name.pid"
log "started $name again (pid $!)"
if [ "$name" = kube-apiserver ]; then
  wait_for kube-apiserver 60 kc get --raw /readyz
fi
log "$name restarted in $(elapsed "$start")s"
