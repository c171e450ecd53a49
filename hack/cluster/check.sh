#!/usr/bin/env bash
# Checks a running local cluster end to end (hack/cluster/up.sh must have run):
# the node is Ready, CoreDNS answers at the kube-dns Service, and a 2-replica
# Deployment of a locally imported image is reachable from the host through its
# ClusterIP. Cleans up its test namespace. Usage: hack/cluster/check.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/lib.sh"
need_root
ns="webfarm-check-$(date +%s)" # a fresh name: no DNS cache entry of an earlier run
t0=$(date +%s.%N)

kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -qx True ||
  die "node $NODE_NAME is not Ready"
log "node $NODE_NAME Ready"
python3 "$HERE/dnsquery.py" "$DNS_IP" kubernetes.default.svc.cluster.local "$API_SERVICE_IP" ||
  die "CoreDNS did not resolve kubernetes.default"

for old in $(kc get namespaces -o name | grep '^namespace/webfarm-check-' || true); do
  kc delete "$old" --wait=false >/dev/null
done
kc create namespace "$ns" >/dev/null
kc apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: echo}
data:
  Corefile: |
    .:5353 {
        health :8080
        whoami
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: 2
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: $COREDNS_IMAGE
        imagePullPolicy: IfNotPresent
        args: ["-conf", "/etc/coredns/Corefile"]
        readinessProbe:
          httpGet: {path: /health, port: 8080}
          periodSeconds: 1
        volumeMounts:
        - {name: config, mountPath: /etc/coredns}
      volumes:
      - name: config
        configMap: {name: echo}
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
  - {name: dns, port: 53, targetPort: 5353, protocol: UDP}
EOF
kc -n "$ns" rollout status deployment/echo --timeout=60s >/dev/null
ip="$(kc -n "$ns" get service echo -o jsonpath='{.spec.clusterIP}')"
eps="$(kc -n "$ns" get endpointslices -l kubernetes.io/service-name=echo -o jsonpath='{range .items[*].endpoints[*]}{.addresses[0]} {end}')"
log "Deployment echo: 2 pods Ready (${eps% }) behind ClusterIP $ip"
wait_for "echo.$ns in DNS" 10 python3 "$HERE/dnsquery.py" "$DNS_IP" "echo.$ns.svc.cluster.local" "$ip"
python3 "$HERE/dnsquery.py" "$DNS_IP" "echo.$ns.svc.cluster.local" "$ip"
http_ok() { [ "$(http_get "http://$ip/health")" = OK ]; }
wait_for "the Service rules (kube-proxy)" 30 http_ok
ok=0
for _ in $(seq 20); do
  http_ok && ok=$((ok + 1))
done
[ "$ok" = 20 ] || die "only $ok of 20 requests to http://$ip/health succeeded"
log "20 of 20 HTTP requests from the host to http://$ip/health answered OK"
kc delete namespace "$ns" --wait=false >/dev/null
log "check passed in $(elapsed "$t0") s"
