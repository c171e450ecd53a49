#!/usr/bin/env bash
# Starts a local single-node Kubernetes (v1.36) from upstream components, without
# Docker: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# containerd, kubelet, kube-proxy (iptables), the CNI bridge plugin, CoreDNS,
# and the image registry on loopback that containerd pulls every image from
# (hack/cluster/registry.sh). Needs root. All state lives under $WEBFARM_CLUSTER_DIR
# (default /var/lib/webfarm-cluster); the admin kubeconfig is
# $WEBFARM_CLUSTER_DIR/admin.kubeconfig. Idempotent: on a running, healthy
# cluster it only re-checks it; after a crash or an unclean stop it cleans up
# (hack/cluster/down.sh) and starts afresh. Stop with hack/cluster/down.sh.
#
# --network-policy: the cluster also enforces NetworkPolicies, with
# kube-router's network policy controller alone (no routing, no service
# proxy: the bridge and kube-proxy stay as they are), run as a host process
# like kube-proxy. On a cluster already running without it, it is added.
# Usage: hack/cluster/up.sh [--network-policy]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/lib.sh"
need_root

network_policy=""
case "${1:-}" in
  --network-policy) network_policy=1 ;;
  "") ;;
  *) die "usage: $0 [--network-policy]" ;;
esac

t0=$(date +%s.%N)
tools=(kube etcd coredns registry cluster-packages)
[ -z "$network_policy" ] || tools+=(kube-router)
"$ROOT/hack/install-tools.sh" "${tools[@]}"
tstart=$(date +%s.%N)

# all_running: every component but the optional ones (a cluster started
# without --network-policy is healthy without kube-router).
all_running() {
  local c
  for c in "${COMPONENTS[@]}"; do
    [[ " ${OPTIONAL_COMPONENTS[*]} " == *" $c "* ]] || pid_of "$c" >/dev/null || return 1
  done
}

if all_running && kc get --raw /readyz >/dev/null 2>&1; then
  log "local cluster already running; checking it"
else
  # Anything left from an earlier run (crash, unclean stop, half a start) goes first.
  "$HERE/down.sh"
fi

mkdir -p "$S"/{run,logs,pki,images,cni/net.d,cni/ipam,etcd,kubelet,pod-logs,containerd}
chmod 700 "$S/pki" "$S/etcd"

# ---------------------------------------------------------------- host network
if [ ! -f "$S/sysctl.saved" ]; then
  for k in "${SYSCTLS[@]}"; do
    v="$(sysctl -n "$k" 2>/dev/null)" && echo "$k $v"
  done >"$S/sysctl.saved.tmp"
  mv "$S/sysctl.saved.tmp" "$S/sysctl.saved"
fi
sysctl -qw net.ipv4.ip_forward=1
sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
  ip link add "$NODE_BRIDGE" type bridge
fi
ip addr show dev "$NODE_BRIDGE" | grep "inet $NODE_IP/32" >/dev/null || ip addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
ip link set "$NODE_BRIDGE" up

# ---------------------------------------------------------------- PKI and kubeconfigs
P="$S/pki"
cert() { # cert NAME CN O EXTKEYUSAGE [SANS]
  local name=$1 cn=$2 o=$3 eku=$4 sans=${5:-} subj
  [ -s "$P/$name.crt" ] && [ -s "$P/$name.key" ] && return 0
  subj="/CN=$cn"
  [ -n "$o" ] && subj="/O=$o$subj"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$P/$name.ext"
  openssl ecparam -name prime256v1 -genkey -noout -out "$P/$name.key" 2>/dev/null
  openssl req -new -key "$P/$name.key" -subj "$subj" -out "$P/$name.csr" 2>/dev/null
  openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -days 3650 -extfile "$P/$name.ext" -out "$P/$name.crt" 2>/dev/null
  rm -f "$P/$name.csr" "$P/$name.ext"
}
if [ ! -s "$P/ca.crt" ] || [ ! -s "$P/ca.key" ]; then
  log "generating the cluster PKI in $P"
  rm -f "$P"/*
  openssl ecparam -name prime256v1 -genkey -noout -out "$P/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$P/ca.key" -subj "/CN=webfarm-local-ca" -days 3650 -out "$P/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
fi
cert apiserver kube-apiserver "" serverAuth \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$NODE_NAME,IP:$API_SERVICE_IP,IP:$NODE_IP,IP:127.0.0.1"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
cert admin webfarm-admin system:masters clientAuth
cert controller-manager system:kube-controller-manager "" clientAuth
cert scheduler system:kube-scheduler "" clientAuth
cert kube-proxy system:kube-proxy "" clientAuth
cert kube-router system:kube-router "" clientAuth
cert kubelet "system:node:$NODE_NAME" system:nodes clientAuth
cert kubelet-serving "$NODE_NAME" "" serverAuth "DNS:$NODE_NAME,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"
if [ ! -s "$P/sa.key" ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out "$P/sa.key" 2>/dev/null
  openssl ec -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
fi
chmod 600 "$P"/*.key

kubeconfig() { # kubeconfig FILE CERTNAME
  local f=$1 n=$2
  cat >"$f.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: webfarm-local
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$P/ca.crt")
users:
- name: $n
  user:
    client-certificate-data: $(base64 -w0 <"$P/$n.crt")
    client-key-data: $(base64 -w0 <"$P/$n.key")
contexts:
- name: webfarm-local
  context:
    cluster: webfarm-local
    user: $n
current-context: webfarm-local
EOF
  chmod 600 "$f.tmp"
  mv "$f.tmp" "$f"
}
kubeconfig "$KUBECONFIG_ADMIN" admin
for n in controller-manager scheduler kube-proxy kube-router kubelet; do kubeconfig "$S/$n.kubeconfig" "$n"; done

# ---------------------------------------------------------------- processes
# start NAME BINARY ARGS...: start in its own session, log to logs/NAME.log, PID in run/NAME.pid.
start() {
  local name=$1
  shift
  if pid_of "$name" >/dev/null; then return 0; fi
  : >"$S/logs/$name.log"
  detach "$S/logs/$name.log" "$@"
  echo $! >"$S/run/$name.pid"
}

start etcd "$K8S_BIN/etcd" --name webfarm --data-dir "$S/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "webfarm=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --snapshot-count 10000 --log-level warn
# The registry every image is pulled from (also `make release`'s default).
"$HERE/registry.sh"
# containerd starts while etcd and the apiserver come up. It pulls from the
# loopback registry as a user's nodes pull from theirs: hosts.toml per
# registry host (plain HTTP here). Images named localhost/... (the cluster's
# own and the tests') come from it too, and so do those named registry.k8s.io/...
# (the Gateway API conformance suite's, pushed by hack/images/push-conformance.sh):
# the loopback registry mirrors that host, and no pull leaves the machine.
for host in "$LOCAL_REGISTRY" localhost registry.k8s.io; do
  mkdir -p "$S/containerd/certs.d/$host"
  cat >"$S/containerd/certs.d/$host/hosts.toml" <<EOF
server = "http://$LOCAL_REGISTRY"

[host."http://$LOCAL_REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
done
# ---------------------------------------------------------------- containerd
cat >"$S/containerd/config.toml" <<EOF
version = 2
root = "$S/containerd/root"
state = "$S/containerd/state"
[grpc]
  address = "$CTR_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$S/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUNC_ROOT"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$S/containerd/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$S/cni/net.d"
    max_conf_num = 1
EOF

start containerd containerd --config "$S/containerd/config.toml" --log-level warn

wait_for etcd 30 http_get "http://127.0.0.1:$ETCD_CLIENT_PORT/health"

start kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --advertise-address "$NODE_IP" --bind-address "$NODE_IP" --secure-port "$API_PORT" \
  --service-cluster-ip-range "$SERVICE_CIDR" --service-node-port-range 30000-32767 \
  --client-ca-file "$P/ca.crt" --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
  --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$P/ca.crt" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --allow-privileged=true --profiling=false --v=1

# The cluster's own images (built here, pushed to the registry) while the apiserver starts.
wait_for containerd 30 ctr --address "$CTR_SOCK" version
# image_archive NAME REF BINARY ARGS...: an image holding one static binary, as a
# docker-archive under images/ (rebuilt only when the binary changes).
image_archive() {
  local name=$1 ref=$2 bin=$3 sum d a
  shift 3
  sum="$(sha256sum "$bin" | cut -c1-64) $ref $*"
  if [ -s "$S/images/$name.tar" ] && [ "$(cat "$S/images/$name.sum" 2>/dev/null)" = "$sum" ]; then return 0; fi
  d="$(mktemp -d "$S/images/build.XXXXXX")"
  umoci init --layout "$d/oci" >/dev/null
  umoci new --image "$d/oci:img" >/dev/null
  umoci unpack --image "$d/oci:img" "$d/bundle" >/dev/null
  install -m 0755 "$bin" "$d/bundle/rootfs/$name"
  umoci repack --image "$d/oci:img" "$d/bundle" >/dev/null
  local cfg=(--config.entrypoint "/$name")
  for a in "$@"; do cfg+=(--config.cmd "$a"); done
  umoci config --image "$d/oci:img" "${cfg[@]}" >/dev/null
  rm -f "$S/images/$name.tar"
  skopeo --insecure-policy copy -q "oci:$d/oci:img" "docker-archive:$S/images/$name.tar:$ref" >/dev/null
  echo "$sum" >"$S/images/$name.sum"
  rm -rf "$d"
}
mkdir -p "$S/images/bin"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$S/images/bin/pause" ./hack/cluster/pause)
image_archive pause "$PAUSE_IMAGE" "$S/images/bin/pause"
image_archive coredns "$COREDNS_IMAGE" "$K8S_BIN/coredns"
"$ROOT/hack/images/push.sh" "$S/images/pause.tar" "$S/images/coredns.tar"

wait_for kube-apiserver 60 kc get --raw /readyz

start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
  --kubeconfig "$S/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$S/controller-manager.kubeconfig" --authorization-kubeconfig "$S/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
  --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
  --root-ca-file "$P/ca.crt" --service-account-private-key-file "$P/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --cluster-cidr "$CLUSTER_CIDR" --allocate-node-cidrs=false \
  --profiling=false --v=1
start kube-scheduler "$K8S_BIN/kube-scheduler" \
  --kubeconfig "$S/scheduler.kubeconfig" \
  --authentication-kubeconfig "$S/scheduler.kubeconfig" --authorization-kubeconfig "$S/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false --v=1

# ---------------------------------------------------------------- addons: CoreDNS (its pod waits for the node)
sed -e "s|@DNS_IP@|$DNS_IP|g" -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" "$HERE/coredns.yaml" |
  kc apply -f - >/dev/null

# ---------------------------------------------------------------- CNI, kubelet, kube-proxy
cat >"$S/cni/net.d/10-webfarm.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "webfarm",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$POD_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$S/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

cat >"$S/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
containerRuntimeEndpoint: unix://$CTR_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
podLogsDir: $S/pod-logs
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
evictionPressureTransitionPeriod: 10s
maxPods: 110
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 10s
EOF
# --containerd: cAdvisor (inside the kubelet) looks for containerd at the
# default socket to label container CPU counters with pod and container names.
start kubelet "$K8S_BIN/kubelet" --config "$S/kubelet-config.yaml" --kubeconfig "$S/kubelet.kubeconfig" \
  --root-dir "$S/kubelet" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --containerd "$CTR_SOCK" --v=1

cat >"$S/kube-proxy-config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $S/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $CLUSTER_CIDR
hostnameOverride: $NODE_NAME
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [primary]
iptables: {localhostNodePorts: false, syncPeriod: 30s, minSyncPeriod: 0s}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
start kube-proxy "$K8S_BIN/kube-proxy" --config "$S/kube-proxy-config.yaml" --v=1

# ---------------------------------------------------------------- ready?
node_ready() { kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -qx True; }
wait_for "node $NODE_NAME Ready" 90 node_ready
tnode=$(elapsed "$tstart")

# ---------------------------------------------------------------- NetworkPolicy enforcement (optional)
# kube-router's network policy controller reads the node object, so it starts
# once the node is registered. It admits traffic from the node itself (the
# kubelet's probes) to every pod, whatever the policies say.
if [ -n "$network_policy" ]; then
  kc apply -f - >/dev/null <<EOF
# What kube-router's network policy controller reads (its informers), nothing else.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "webfarm:kube-router"}
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, endpoints, nodes]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "webfarm:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "webfarm:kube-router"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-router"}
EOF
  tnp=$(date +%s.%N)
  start kube-router "$K8S_BIN/kube-router" --kubeconfig "$S/kube-router.kubeconfig" \
    --run-firewall=true --run-router=false --run-service-proxy=false \
    --hostname-override "$NODE_NAME" --service-cluster-ip-range "$SERVICE_CIDR" \
    --health-port "$KUBE_ROUTER_HEALTH_PORT" --metrics-port 0 --v=1
  # Healthy: its informers synced and its first full sync of the rules done.
  wait_for "kube-router's network policy controller" 60 http_get "http://127.0.0.1:$KUBE_ROUTER_HEALTH_PORT/healthz"
  log "NetworkPolicy enforcement (kube-router $KUBE_ROUTER_VERSION) ready after $(elapsed "$tnp")s"
fi
wait_for "CoreDNS" 90 kc -n kube-system rollout status deployment/coredns --timeout=2s
wait_for "DNS answers at $DNS_IP" 60 python3 "$HERE/dnsquery.py" "$DNS_IP" kubernetes.default.svc.cluster.local "$API_SERVICE_IP"
tdns=$(elapsed "$tstart")

log "local cluster is up: node $NODE_NAME Ready after ${tnode}s, DNS after ${tdns}s (total with tool checks $(elapsed "$t0")s)"
log "state: $S   logs: $S/logs/   stop: hack/cluster/down.sh"
echo "export KUBECONFIG=$KUBECONFIG_ADMIN"
echo "export CONTAINERD_ADDRESS=$CTR_SOCK  # for hack/images/load.sh and ctr"
