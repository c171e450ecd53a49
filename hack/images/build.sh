#!/usr/bin/env bash
# Builds the container images of the operator and its local cluster without a
# registry or a container engine:
#   root filesystem (debootstrap, or binaries plus their ldd libraries)
#   -> umoci (init/new/unpack/repack/config) -> skopeo copy oci:... docker-archive:...
# Each image is a docker-archive tarball in a cache keyed by the image's inputs
# ($WEBFARM_CACHE/images/<name>-<key>.tar), linked as bin/images/<name>.tar.
# An image whose inputs did not change is not rebuilt.
# The images are built for linux/amd64, this host's platform; operator-arm64,
# envoy-arm64 and nginx-arm64 are the release's linux/arm64 images (make
# release), assembled without running anything from them (no emulation here).
#
# Usage: hack/images/build.sh [--force] [operator|nginx|envoy|prometheus|prometheus-operator|
#   prometheus-config-reloader|client|cert-manager|operator-arm64|envoy-arm64|nginx-arm64|
#   echo-basic ...]
# (cert-manager: its controller, webhook and cainjector images; echo-basic: the
# Gateway API conformance suite's backend, built on request only)
# Needs root (debootstrap, file ownership). See docs/images.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/common.sh"
. "$HERE/versions.env"

IMAGES_CACHE="$CACHE/images"
LINKS="$BIN/images"
ALL_IMAGES=(operator nginx envoy prometheus prometheus-operator prometheus-config-reloader client
  cert-manager-controller cert-manager-webhook cert-manager-cainjector)
CERT_MANAGER_IMAGES=(cert-manager-controller cert-manager-webhook cert-manager-cainjector)
NONROOT=65532
PATH_ENV=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KEEP=3 # archives kept per image (the newest ones)

# The linux/arm64 images of a release: NAME-arm64 is NAME for linux/arm64.
ARM64_IMAGES=(operator-arm64 envoy-arm64 nginx-arm64)
# The Gateway API conformance run's images (make test-conformance), not built by default.
CONFORMANCE_IMAGES=(echo-basic)

# ref_of NAME: the reference an image is saved under (one per image, whatever
# its platform: the platforms of a release share it in one image index).
ref_of() {
  case "${1%-arm64}" in
    operator) echo localhost/webfarm-operator:dev ;;
    nginx) echo localhost/webfarm-nginx:1.22.1 ;;
    envoy) echo "localhost/webfarm-envoy:$ENVOY_VERSION" ;;
    prometheus) echo "localhost/webfarm-prometheus:$(prometheus_version)" ;;
    prometheus-operator) echo "localhost/webfarm-prometheus-operator:$PROMETHEUS_OPERATOR_VERSION" ;;
    prometheus-config-reloader) echo "localhost/webfarm-prometheus-config-reloader:$PROMETHEUS_OPERATOR_VERSION" ;;
    client) echo localhost/webfarm-client:dev ;;
    cert-manager-controller | cert-manager-webhook | cert-manager-cainjector) echo "localhost/webfarm-$1:$CERT_MANAGER_VERSION" ;;
    echo-basic) echo "localhost/webfarm-echo-basic:$(conformance_version)" ;;
    *) die "unknown image: $1 (known: ${ALL_IMAGES[*]} ${ARM64_IMAGES[*]} ${CONFORMANCE_IMAGES[*]})" ;;
  esac
}

# ---- host tools -------------------------------------------------------------

apt_install() {
  [ "$(id -u)" = 0 ] || die "missing $*; installing needs root: apt-get install $*"
  log "installing $* from Debian"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends)
  "${apt[@]}" install "$@" >/dev/null 2>&1 || {
    "${apt[@]}" update >/dev/null
    "${apt[@]}" install "$@" >/dev/null
  }
}

need_tools() { # need_tools CMD... (Debian package named like the command)
  local missing=() t
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

debian_mirror() {
  if [ -n "${WEBFARM_DEBIAN_MIRROR:-}" ]; then echo "$WEBFARM_DEBIAN_MIRROR"; return; fi
  # The mirror apt uses for the main archive (not -security), else the default.
  local m
  m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' |
    tr ' ' '\n' | grep -E '/debian/?$' | grep -v security | head -n1 || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

debian_security_mirror() {
  if [ -n "${WEBFARM_DEBIAN_SECURITY_MIRROR:-}" ]; then echo "$WEBFARM_DEBIAN_SECURITY_MIRROR"; return; fi
  local m
  m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' |
    tr ' ' '\n' | grep -E '/debian-security/?$' | head -n1 || true)"
  echo "${m:-http://deb.debian.org/debian-security}"
}

# updates_state: the dates of the update suites' signed Release files. A new
# security or stable update changes them, which changes the Debian images'
# cache keys, so the next build picks the update up.
updates_state() {
  local suite url date
  for suite in "$DEBIAN_SUITE-updates" "$DEBIAN_SUITE-security"; do
    case "$suite" in *-security) url="$(debian_security_mirror)" ;; *) url="$(debian_mirror)" ;; esac
    date="$(curl -fsS --max-time 30 "${url%/}/dists/$suite/InRelease" | sed -n 's/^Date: //p' | head -n1)" ||
      true
    [ -n "$date" ] || die "could not read ${url%/}/dists/$suite/InRelease (the Debian images take its updates)"
    echo "$suite=$date"
  done
}

# ---- root filesystem helpers ------------------------------------------------

# base_files ROOTFS: users, groups, name service switch and /tmp for images
# that are not a Debian userland.
base_files() {
  local r=$1
  mkdir -p "$r/etc" "$r/tmp"
  chmod 1777 "$r/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/nonexistent:/sbin/nologin\n' "$NONROOT" "$NONROOT" >"$r/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' "$NONROOT" >"$r/etc/group"
  printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
  etc_hosts "$r"
}

# etc_hosts ROOTFS: a default /etc/hosts (the kubelet mounts its own in pods).
etc_hosts() {
  [ -e "$1/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$1/etc/hosts"
}

# add_nonroot ROOTFS: the non-root user of a Debian userland.
add_nonroot() {
  local r=$1
  grep -q "^nonroot:" "$r/etc/passwd" || echo "nonroot:x:$NONROOT:$NONROOT:nonroot:/nonexistent:/usr/sbin/nologin" >>"$r/etc/passwd"
  grep -q "^nonroot:" "$r/etc/group" || echo "nonroot:x:$NONROOT:" >>"$r/etc/group"
}

# copy_libs ROOTFS FILE: copy the shared libraries FILE (a path inside ROOTFS)
# needs, as the host's ldd resolves them, to the same paths in ROOTFS.
copy_libs() {
  local r=$1 f=$2 lib
  for lib in $(ldd "$r$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    mkdir -p "$r$(dirname "$lib")"
    cp -L --preserve=mode "$lib" "$r$lib"
  done
}

# host_libs_of FILE: "package=version" of the host packages owning FILE's libraries.
host_libs_of() {
  local lib pkgs=()
  for lib in $(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    pkgs+=("$(dpkg -S "$lib" 2>/dev/null | head -n1 | cut -d: -f1)")
  done
  local p
  for p in $(printf '%s\n' "${pkgs[@]}" | sort -u); do
    [ -n "$p" ] && printf '%s=%s\n' "$p" "$(dpkg-query -W -f '${Version}' "$p")"
  done
}

# pin_matches VERSION PIN: the installed VERSION is the pinned one or a stable
# or security update of it (Debian appends +debNNuN to the revision).
pin_matches() { [ "$1" = "$2" ] || [[ "$1" == "$2+deb"* ]]; }

# dpkg_status_d ROOTFS PACKAGE...: the host packages' dpkg records, one file
# each in /var/lib/dpkg/status.d/ (as distroless images keep them), so SBOM
# scanners list the libraries an image copied from the host.
dpkg_status_d() {
  local r=$1 p
  shift
  mkdir -p "$r/var/lib/dpkg/status.d"
  for p in "$@"; do
    dpkg-query -W -f 'Package: ${Package}\nStatus: install ok installed\nPriority: ${Priority}\nSection: ${Section}\nMaintainer: ${Maintainer}\nArchitecture: ${Architecture}\nSource: ${source:Package} (${source:Version})\nVersion: ${Version}\nHomepage: ${Homepage}\nDescription: ${binary:Summary}\n' "$p" |
      grep -v ': $' >"$r/var/lib/dpkg/status.d/$p"
  done
  chmod -R a+rX "$r/var"
}

# debootstrap_rootfs ROOTFS "pkg=version ...": a Debian minbase userland with
# those packages and every update of $DEBIAN_SUITE-updates and
# $DEBIAN_SUITE-security, checked against the pinned versions.
debootstrap_rootfs() {
  local r=$1 pins=$2 p names=() mirror
  for p in $pins; do names+=("${p%%=*}"); done
  mirror="$(debian_mirror)"
  mkdir -p "$IMAGES_CACHE/debs"
  log "debootstrap $DEBIAN_SUITE minbase + ${names[*]} from $mirror"
  if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${names[*]}")" \
    --cache-dir="$IMAGES_CACHE/debs" "$DEBIAN_SUITE" "$r" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
    tail -n 20 "$WORK/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  fi
  # The update suites, as a Debian system is set up to use them, then every
  # update installed (debootstrap takes one suite from one mirror). The
  # downloaded packages are kept with debootstrap's.
  printf 'deb %s %s main\n' "$mirror" "$DEBIAN_SUITE" "$mirror" "$DEBIAN_SUITE-updates" \
    "$(debian_security_mirror)" "$DEBIAN_SUITE-security" >"$r/etc/apt/sources.list"
  local deb
  for deb in "$IMAGES_CACHE"/debs/*.deb; do ln -f "$deb" "$r/var/cache/apt/archives/" 2>/dev/null || true; done
  mount -t proc proc "$r/proc"
  if ! { chroot "$r" apt-get -qq update && DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get -y -qq \
    -o Dpkg::Options::=--force-confold upgrade; } >>"$WORK/debootstrap.log" 2>&1; then
    umount "$r/proc"
    tail -n 20 "$WORK/debootstrap.log" >&2
    die "apt-get upgrade from $DEBIAN_SUITE-updates and -security failed (log above)"
  fi
  umount "$r/proc"
  for deb in "$r"/var/cache/apt/archives/*.deb; do
    [ -e "$IMAGES_CACHE/debs/$(basename "$deb")" ] || ln -f "$deb" "$IMAGES_CACHE/debs/" 2>/dev/null || true
  done
  local got
  for p in $pins; do
    got="$(dpkg-query --admindir="$r/var/lib/dpkg" -W -f '${Version}' "${p%%=*}" 2>/dev/null || true)"
    pin_matches "$got" "${p#*=}" ||
      die "$DEBIAN_SUITE installed ${p%%=*} $got, pinned ${p#*=} (or an update of it): update hack/images/versions.env"
  done
}

# trim_debian ROOTFS: drop what a container does not need (apt lists and
# caches, docs except copyright files, man pages, locales, logs, device nodes).
trim_debian() {
  local r=${1:?}
  case "$(readlink -f "$r")" in "$(readlink -f "$IMAGES_CACHE")"/work.*/bundle/rootfs) ;; *) die "refusing to trim $r" ;; esac
  rm -rf "${r:?}"/var/lib/apt/lists/* "${r:?}"/var/cache/apt/*.bin "${r:?}"/var/cache/apt/archives/*.deb \
    "${r:?}"/var/cache/debconf/*-old "${r:?}"/var/cache/ldconfig/aux-cache "${r:?}"/var/lib/dpkg/*-old \
    "${r:?}"/usr/share/man/* "${r:?}"/usr/share/info/* "${r:?}"/usr/share/lintian "${r:?}"/usr/share/linda \
    "${r:?}"/dev/* "${r:?}"/tmp/* "${r:?}"/var/tmp/* "${r:?}"/run/*
  find "$r/var/log" -type f -delete
  find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete
  find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
  mkdir -p "$r/var/lib/apt/lists/partial"
  # debootstrap copies the build host's name settings; the runtime mounts the pod's.
  : >"$r/etc/resolv.conf"
  echo localhost >"$r/etc/hostname"
  chmod 0644 "$r/etc/resolv.conf" "$r/etc/hostname"
  etc_hosts "$r"
  chmod 1777 "$r/tmp" "$r/var/tmp"
}

# packages_of ROOTFS: every installed Debian package and version.
packages_of() {
  dpkg-query --admindir="$1/var/lib/dpkg" -W -f '${Package}=${Version}\n' | sort
}

# ---- images -------------------------------------------------------------------
# Each image has inputs_<name> (prints its inputs: part of the cache key) and
# rootfs_<name> ROOTFS (fills the root filesystem, sets CONFIG and writes the
# package manifest to $WORK/packages.txt).

manager_bin() { echo "$BIN/manager"; }

inputs_operator() {
  local m; m="$(manager_bin)"
  [ -x "$m" ] || die "$m is missing: run 'make build' (or 'make images', which builds it)"
  echo "manager-sha256=$(sha256sum <"$m" | cut -d' ' -f1)"
}
rootfs_operator() {
  local r=$1
  base_files "$r"
  install -m 0755 "$(manager_bin)" "$r/manager"
  static_binary "$r" /manager
  echo "manager-sha256=$(sha256sum <"$r/manager" | cut -d' ' -f1)" >"$WORK/packages.txt"
  CONFIG=(--config.entrypoint /manager --config.label org.opencontainers.image.title=webfarm-operator)
}

envoy_bin() {
  local e="$CACHE/envoy-$ENVOY_VERSION/envoy"
  [ -x "$e" ] || "$ROOT/hack/install-tools.sh" envoy >&2
  echo "$e"
}
# envoy-drain is the frontend's preStop hook (cmd/envoy-drain): the Envoy
# image has no shell or curl, and a SIGTERM alone makes Envoy cut its open
# connections. The renderer runs it at drain.BinaryPath (internal/drain),
# /usr/local/bin/envoy-drain.
envoy_drain_bin() { echo "$BIN/envoy-drain"; }
inputs_envoy() {
  local e d; e="$(envoy_bin)" d="$(envoy_drain_bin)"
  [ -x "$d" ] || die "$d is missing: run 'make build' (or 'make images', which builds it)"
  echo "envoy=$ENVOY_VERSION sha256=$(sha256sum <"$e" | cut -d' ' -f1)"
  echo "envoy-drain-sha256=$(sha256sum <"$d" | cut -d' ' -f1)"
  host_libs_of "$e"
}
rootfs_envoy() {
  local r=$1 e
  e="$(envoy_bin)"
  base_files "$r"
  mkdir -p "$r/etc/envoy"
  install -D -m 0755 "$e" "$r/usr/local/bin/envoy"
  copy_libs "$r" /usr/local/bin/envoy
  "$r/usr/local/bin/envoy" --version | grep "/$ENVOY_VERSION/" >/dev/null || die "unexpected envoy version"
  install -m 0755 "$(envoy_drain_bin)" "$r/usr/local/bin/envoy-drain"
  static_binary "$r" /usr/local/bin/envoy-drain
  { echo "envoy=$ENVOY_VERSION"; echo "envoy-drain-sha256=$(sha256sum <"$r/usr/local/bin/envoy-drain" | cut -d' ' -f1)"
    host_libs_of "$e"; } >"$WORK/packages.txt"
  # shellcheck disable=SC2046 # package names
  dpkg_status_d "$r" $(host_libs_of "$e" | cut -d= -f1)
  CONFIG=(--config.entrypoint /usr/local/bin/envoy
    --config.cmd --config-path --config.cmd /etc/envoy/envoy.json
    --config.label "org.opencontainers.image.title=webfarm-envoy"
    --config.label "org.opencontainers.image.version=$ENVOY_VERSION")
}

inputs_nginx() { echo "suite=$DEBIAN_SUITE packages=$NGINX_IMAGE_PACKAGES"; updates_state; }
rootfs_nginx() { # rootfs_nginx ROOTFS [arm64]
  local r=$1
  if [ "${2:-}" = arm64 ]; then
    arm64_rootfs "$r" "$NGINX_IMAGE_PACKAGES"
  else
    debootstrap_rootfs "$r" "$NGINX_IMAGE_PACKAGES"
  fi
  trim_debian "$r"
  add_nonroot "$r"
  # nginx opens its built-in error log before reading the configuration: send
  # both logs to the container's output so a read-only root file system works.
  mkdir -p "$r/var/log/nginx" "$r/var/lib/nginx" "$r/etc/webfarm"
  ln -sfn /dev/stderr "$r/var/log/nginx/error.log"
  ln -sfn /dev/stdout "$r/var/log/nginx/access.log"
  chmod 0755 "$r/var/log/nginx" "$r/var/lib/nginx" "$r/etc/webfarm"
  chmod -R o+rX "$r/etc" "$r/usr" "$r/var/lib/nginx"
  packages_of "$r" >"$WORK/packages.txt"
  cp "$WORK/packages.txt" "$r/etc/webfarm-image-packages.txt"
  CONFIG=(--config.entrypoint /usr/sbin/nginx
    --config.cmd -c --config.cmd /etc/webfarm/nginx.conf
    --config.stopsignal SIGQUIT
    --config.label "org.opencontainers.image.title=webfarm-nginx"
    --config.label "org.opencontainers.image.version=$(grep '^nginx-light=' "$WORK/packages.txt" | cut -d= -f2)")
}

# The client image also carries the e2e tests' application (test/testapp),
# which AppPools run as their app container.
testapp_bin() {
  local t="$BIN/webfarm-testapp"
  [ -x "$t" ] || die "$t is missing: run 'make build' (or 'make images', which builds it)"
  echo "$t"
}
inputs_client() {
  echo "suite=$DEBIAN_SUITE packages=$CLIENT_IMAGE_PACKAGES"
  updates_state
  echo "testapp-sha256=$(sha256sum <"$(testapp_bin)" | cut -d' ' -f1)"
}
rootfs_client() {
  local r=$1
  debootstrap_rootfs "$r" "$CLIENT_IMAGE_PACKAGES"
  trim_debian "$r"
  add_nonroot "$r"
  install -m 0755 "$(testapp_bin)" "$r/usr/local/bin/webfarm-testapp"
  chmod -R o+rX "$r/etc" "$r/usr"
  packages_of "$r" >"$WORK/packages.txt"
  cp "$WORK/packages.txt" "$r/etc/webfarm-image-packages.txt"
  CONFIG=(--config.cmd sleep --config.cmd infinity
    --config.label "org.opencontainers.image.title=webfarm-client")
}

# installed_tool TOOL FILE: FILE of a tool hack/install-tools.sh built (the
# images that need one install it first, below), resolved to its cached path.
installed_tool() {
  [ -e "$BIN/$2" ] || die "$BIN/$2 is missing: hack/install-tools.sh $1"
  readlink -f "$BIN/$2"
}

# The cert-manager images (the e2e suite's cert-manager, installed by its own
# chart): one binary that runs the component it is called as
# (hack/tools/cert-manager); the three images share one layer and differ in
# their entrypoint only.
cert_manager_bin() { installed_tool cert-manager cert-manager/cert-manager-controller; }
inputs_cert_manager() { echo "cert-manager=$CERT_MANAGER_VERSION sha256=$(sha256sum <"$(cert_manager_bin)" | cut -d' ' -f1)"; }
rootfs_cert_manager() {
  local r=$1 component=$2 b c
  b="$(cert_manager_bin)"
  base_files "$r"
  install -D -m 0755 "$b" "$r/usr/local/bin/cert-manager"
  static_binary "$r" /usr/local/bin/cert-manager
  for c in "${CERT_MANAGER_IMAGES[@]}"; do ln "$r/usr/local/bin/cert-manager" "$r/usr/local/bin/$c"; done
  inputs_cert_manager >"$WORK/packages.txt"
  CONFIG=(--config.entrypoint "/usr/local/bin/$component"
    --config.label "org.opencontainers.image.title=webfarm-$component"
    --config.label "org.opencontainers.image.version=$CERT_MANAGER_VERSION")
}
inputs_cert-manager-controller() { inputs_cert_manager; }
inputs_cert-manager-webhook() { inputs_cert_manager; }
inputs_cert-manager-cainjector() { inputs_cert_manager; }
rootfs_cert-manager-controller() { rootfs_cert_manager "$1" cert-manager-controller; }
rootfs_cert-manager-webhook() { rootfs_cert_manager "$1" cert-manager-webhook; }
rootfs_cert-manager-cainjector() { rootfs_cert_manager "$1" cert-manager-cainjector; }

# static_binary ROOTFS PATH: fail unless PATH (inside ROOTFS) needs no shared library.
static_binary() { ! ldd "$1$2" >/dev/null 2>&1 || die "$2 is not statically linked (build it with CGO_ENABLED=0)"; }

# The end-to-end suite's Prometheus 3.x: one static binary built from its
# module (hack/install-tools.sh prometheus) and a data folder.
prometheus_version() { "$(installed_tool prometheus prometheus)" --version | sed -n 's/^prometheus, version \([^ ]*\).*/\1/p'; }
inputs_prometheus() { echo "prometheus=$(prometheus_version) sha256=$(sha256sum <"$(installed_tool prometheus prometheus)" | cut -d' ' -f1)"; }
rootfs_prometheus() {
  local r=$1 version
  version="$(prometheus_version)"
  base_files "$r"
  install -D -m 0755 "$(installed_tool prometheus prometheus)" "$r/bin/prometheus"
  static_binary "$r" /bin/prometheus
  mkdir -p "$r/etc/prometheus" "$r/prometheus"
  cat >"$r/etc/prometheus/prometheus.yml" <<'EOF'
# Default configuration: Prometheus scrapes itself. Mount your own over it.
global:
  scrape_interval: 15s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["localhost:9090"]
EOF
  chown "$NONROOT:$NONROOT" "$r/prometheus"
  chmod 0775 "$r/prometheus"
  echo "prometheus=$version" >"$WORK/packages.txt"
  CONFIG=(--config.entrypoint /bin/prometheus
    --config.cmd --config.file=/etc/prometheus/prometheus.yml
    --config.cmd --storage.tsdb.path=/prometheus
    --config.volume /prometheus
    --config.workingdir /prometheus
    --config.exposedports 9090/tcp
    --config.label "org.opencontainers.image.title=webfarm-prometheus"
    --config.label "org.opencontainers.image.version=$version")
}

# The Prometheus Operator and the config reloader it runs beside each
# Prometheus: two images of the same release (hack/install-tools.sh
# prometheus-operator), one static binary each.
prometheus_operator_input() {
  echo "prometheus-operator=$PROMETHEUS_OPERATOR_VERSION $1-sha256=$(sha256sum <"$(installed_tool prometheus-operator "prometheus-operator/$1")" | cut -d' ' -f1)"
}
rootfs_prometheus_operator_command() { # ROOTFS COMMAND TITLE
  local r=$1
  base_files "$r"
  install -D -m 0755 "$(installed_tool prometheus-operator "prometheus-operator/$2")" "$r/bin/$2"
  static_binary "$r" "/bin/$2"
  prometheus_operator_input "$2" >"$WORK/packages.txt"
  CONFIG=(--config.entrypoint "/bin/$2"
    --config.label "org.opencontainers.image.title=$3"
    --config.label "org.opencontainers.image.version=${PROMETHEUS_OPERATOR_VERSION#v}")
}
inputs_prometheus-operator() { prometheus_operator_input operator; }
rootfs_prometheus-operator() { rootfs_prometheus_operator_command "$1" operator webfarm-prometheus-operator; }
inputs_prometheus-config-reloader() { prometheus_operator_input prometheus-config-reloader; }
rootfs_prometheus-config-reloader() {
  rootfs_prometheus_operator_command "$1" prometheus-config-reloader webfarm-prometheus-config-reloader
}

# The Gateway API conformance suite's backend server (hack/install-tools.sh
# echo-basic, from the suite's module that go.mod requires), packaged as the
# suite's own image packages it: the static program as /echo-basic, run as the
# non-root user (distroless static:nonroot). hack/images/push-conformance.sh
# serves it under the names the suite's manifests use.
conformance_version() { (cd "$ROOT" && go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api/conformance); }
inputs_echo-basic() {
  echo "conformance=$(conformance_version) sha256=$(sha256sum <"$(installed_tool echo-basic echo-basic)" | cut -d' ' -f1)"
}
rootfs_echo-basic() {
  local r=$1
  base_files "$r"
  install -m 0755 "$(installed_tool echo-basic echo-basic)" "$r/echo-basic"
  static_binary "$r" /echo-basic
  inputs_echo-basic >"$WORK/packages.txt"
  CONFIG=(--config.entrypoint /echo-basic
    --config.label "org.opencontainers.image.title=webfarm-echo-basic"
    --config.label "org.opencontainers.image.source=sigs.k8s.io/gateway-api/conformance/echo-basic"
    --config.label "org.opencontainers.image.version=$(conformance_version)")
}

# ---- linux/arm64 (the release's images) ---------------------------------------
# This host runs amd64 programs only (no emulation), so nothing from an arm64
# root filesystem can run while it is assembled: no debootstrap second stage,
# no maintainer scripts, no ldd. The Debian packages are fetched by apt for
# arm64 with a configuration and state of their own (the host's dpkg
# architectures are left alone), unpacked with dpkg-deb -x, and what their
# maintainer scripts would do is done by hand. check_arm64 then takes the
# place of running the result.

# arm64_apt COMMAND ARG...: apt-get or apt-cache for arm64 with its own
# sources (the suite, its -updates and -security), lists, cache and an empty
# dpkg status, all under $IMAGES_CACHE/apt-arm64.
arm64_apt() {
  local cmd=$1 d="$IMAGES_CACHE/apt-arm64" keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  shift
  [ -f "$keyring" ] || apt_install debian-archive-keyring
  mkdir -p "$d/lists/partial" "$d/archives/partial" "$d/parts"
  : >"$d/status"
  printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$(debian_mirror)" "$DEBIAN_SUITE" \
    "$keyring" "$(debian_mirror)" "$DEBIAN_SUITE-updates" \
    "$keyring" "$(debian_security_mirror)" "$DEBIAN_SUITE-security" >"$d/sources.list"
  "$cmd" -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o APT::Sandbox::User=root \
    -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts="$d/parts" \
    -o Dir::Etc::Preferences="$d/parts/none" -o Dir::Etc::PreferencesParts="$d/parts" \
    -o Dir::State="$d" -o Dir::State::Lists="$d/lists" -o Dir::State::status="$d/status" \
    -o Dir::State::extended_states="$d/extended_states" -o Dir::Cache="$d" -o Dir::Cache::archives="$d/archives" \
    -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" "$@"
}

# arm64_debs PACKAGE...: downloads the arm64 packages and everything they
# depend on (newest of the suite and its updates, as apt chooses for an empty
# system) and prints the path of each .deb.
arm64_debs() {
  local d="$IMAGES_CACHE/apt-arm64" pkg ver arch
  arm64_apt apt-get -qq -y --no-install-recommends install --download-only "$@" >/dev/null
  arm64_apt apt-get -s --no-install-recommends install "$@" |
    sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*\[\([a-z0-9]\+\)\].*/\1 \2 \3/p' |
    while read -r pkg ver arch; do
      [ -f "$d/archives/${pkg}_${ver//:/%3a}_$arch.deb" ] || die "apt did not download $pkg $ver ($arch)"
      echo "$d/archives/${pkg}_${ver//:/%3a}_$arch.deb"
    done
}

# merge_usr ROOTFS: /bin, /sbin, /lib and /lib64 as links into /usr, as
# debootstrap makes them for $DEBIAN_SUITE (merged /usr).
merge_usr() {
  local r=$1 d
  for d in bin sbin lib lib64; do
    if [ -d "$r/$d" ] && [ ! -L "$r/$d" ]; then
      mkdir -p "$r/usr/$d"
      cp -a "$r/$d/." "$r/usr/$d/"
      rm -rf "${r:?}/$d"
    fi
    [ "$d" = lib64 ] && [ ! -e "$r/usr/lib64" ] && continue
    ln -sfn "usr/$d" "$r/$d"
  done
}

# deb_status DEB: the dpkg status record of an installed DEB.
deb_status() {
  dpkg-deb -f "$1" | awk 'NR == 1 {print; print "Status: install ok installed"; next} {print}'
  echo
}

# arm64_rootfs ROOTFS "pkg=version ...": what debootstrap_rootfs makes, for
# arm64: the minbase set (every Priority: required package, and apt) and those
# packages with their dependencies, from the suite with its updates, checked
# against the pinned versions.
arm64_rootfs() {
  local r=$1 pins=$2 p names=() debs deb pkg f
  for p in $pins; do names+=("${p%%=*}"); done
  log "fetching $DEBIAN_SUITE minbase + ${names[*]} for arm64 (apt, own state in $IMAGES_CACHE/apt-arm64)"
  arm64_apt apt-get -qq update >/dev/null
  # usr-is-merged: what debootstrap installs where a package depends on
  # "usrmerge | usr-is-merged" (apt alone would take usrmerge, and perl with it).
  # shellcheck disable=SC2207 # package names
  names+=(apt usr-is-merged $(arm64_apt apt-cache dumpavail | awk '/^Package:/ {p = $2} /^Priority: required$/ {print p}' | sort -u))
  debs="$(arm64_debs "${names[@]}")"
  mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/var/lib/dpkg/alternatives"
  : >"$r/var/lib/dpkg/available"
  for deb in $debs; do
    dpkg-deb -x "$deb" "$r"
    deb_status "$deb" >>"$r/var/lib/dpkg/status"
    # The files of each package, as dpkg records them: SBOM scanners read
    # them to tell a package's programs from unpackaged ones.
    pkg="$(dpkg-deb -f "$deb" Package)"
    dpkg-deb -c "$deb" | awk '{print substr($6, 2)}' | sed -e 's|/$||' -e 's|^$|/.|' >"$r/var/lib/dpkg/info/$pkg.list"
    for f in md5sums conffiles; do
      { dpkg-deb --ctrl-tarfile "$deb" | tar -xO "./$f" 2>/dev/null || true; } >"$r/var/lib/dpkg/info/$pkg.$f"
      [ -s "$r/var/lib/dpkg/info/$pkg.$f" ] || rm -f "$r/var/lib/dpkg/info/$pkg.$f"
    done
  done
  merge_usr "$r"
  # The maintainer scripts that matter in an image, done by hand: base-passwd's
  # users and groups, and the alternatives' links (awk and the like).
  cp "$r/usr/share/base-passwd/passwd.master" "$r/etc/passwd"
  cp "$r/usr/share/base-passwd/group.master" "$r/etc/group"
  local link name target
  for deb in $debs; do
    { dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst 2>/dev/null || true; } |
      sed -n 's/.*update-alternatives[[:space:]]\+--install[[:space:]]\+\([^[:space:]]\+\)[[:space:]]\+\([^[:space:]]\+\)[[:space:]]\+\([^[:space:]]\+\)[[:space:]]\+[0-9]\+.*/\1 \2 \3/p' |
      while read -r link name target; do
        [ -e "$r$target" ] && [ ! -e "$r$link" ] || continue
        mkdir -p "$r/etc/alternatives" "$r$(dirname "$link")"
        ln -sfn "$target" "$r/etc/alternatives/$name"
        ln -sfn "/etc/alternatives/$name" "$r$link"
      done
  done
  local got
  for p in $pins; do
    got="$(dpkg-query --admindir="$r/var/lib/dpkg" -W -f '${Version}' "${p%%=*}" 2>/dev/null || true)"
    pin_matches "$got" "${p#*=}" ||
      die "$DEBIAN_SUITE has ${p%%=*} $got for arm64, pinned ${p#*=} (or an update of it): update hack/images/versions.env"
  done
}

# arm64_libs ROOTFS FILE DEB: copy what FILE (inside ROOTFS) needs from the
# glibc of DEB (libc6 for arm64): its interpreter and the libraries of its
# DT_NEEDED entries, and theirs, at the paths the interpreter searches.
arm64_libs() {
  local r=$1 f=$2 deb=$3 lib interp seen=" " todo=()
  needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
  mkdir -p "$WORK/libc6"
  dpkg-deb -x "$deb" "$WORK/libc6"
  interp="$(readelf -l "$r$f" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')"
  [ -z "$interp" ] || install -D -m 0755 "$(readlink -f "$WORK/libc6$interp")" "$r$interp"
  mapfile -t todo < <(needed "$r$f")
  while [ ${#todo[@]} -gt 0 ]; do
    lib=${todo[0]}
    todo=("${todo[@]:1}")
    case "$seen" in *" $lib "*) continue ;; esac
    seen+="$lib "
    [ -e "$WORK/libc6/lib/aarch64-linux-gnu/$lib" ] || die "$f needs $lib, which libc6 (arm64) does not have"
    install -D -m 0755 "$(readlink -f "$WORK/libc6/lib/aarch64-linux-gnu/$lib")" "$r/lib/aarch64-linux-gnu/$lib"
    mapfile -t -O ${#todo[@]} todo < <(needed "$r/lib/aarch64-linux-gnu/$lib")
  done
}

# check_arm64 ROOTFS [PLUGIN_DIR...]: what running the image would show here,
# checked statically: every ELF file in it is an AArch64 one, and every
# program (an ELF file with an interpreter) and every plugin in PLUGIN_DIR
# (e.g. nginx's modules) has its interpreter and finds each library it needs
# (DT_NEEDED, and theirs, as ldd would list them) in the image's library
# directories or its RUNPATH. Plugins no program loads on its own (iproute2's
# tc modules) may need libraries of packages the image does not install.
check_arm64() {
  python3 - "$@" <<'PY'
import os, re, subprocess, sys
root, plugin_dirs = sys.argv[1], sys.argv[2:]
def inside(path):
    # The path inside the image, following its links (relative or absolute) within the image.
    parts, hops, cur = [p for p in path.split("/") if p], 0, ""
    while parts:
        cur = cur + "/" + parts.pop(0)
        if os.path.islink(root + cur):
            hops += 1
            if hops > 40:
                return None
            target = os.readlink(root + cur)
            base = "" if target.startswith("/") else os.path.dirname(cur)
            parts = [p for p in (base + "/" + target).split("/") if p] + parts
            cur = ""
    return cur if os.path.exists(root + cur) else None
problems, elves = [], {}
for dirpath, _, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            head = f.read(20)
        if head[:4] != b"\x7fELF":
            continue
        rel = path[len(root):]
        if int.from_bytes(head[18:20], "little") != 183:  # EM_AARCH64
            problems.append(f"{rel}: not an AArch64 ELF file")
            continue
        out = subprocess.run(["readelf", "-d", "-l", "-W", path], capture_output=True, text=True).stdout
        interp = re.search(r"Requesting program interpreter: (\S+)\]", out)
        runpath = [p.replace("$ORIGIN", os.path.dirname(rel)) for m in re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", out) for p in m.split(":")]
        elves[rel] = (interp.group(1) if interp else None, re.findall(r"\(NEEDED\).*\[(.*)\]", out), runpath)
dirs = ["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib"]
todo = [rel for rel, (interp, _, _) in elves.items() if interp]
todo += [rel for rel in elves for d in plugin_dirs if rel.startswith(d.rstrip("/") + "/")]
checked = set()
while todo:
    rel = todo.pop()
    if rel in checked or rel not in elves:
        continue
    checked.add(rel)
    interp, needed, runpath = elves[rel]
    if interp and not inside(interp):
        problems.append(f"{rel}: no interpreter {interp}")
    for lib in needed:
        found = next((p for p in (inside(d + "/" + lib) for d in runpath + dirs) if p), None)
        if found:
            todo.append(found)
        else:
            problems.append(f"{rel}: needs {lib}, not in the image")
if problems:
    sys.exit("the arm64 image is not complete:\n  " + "\n  ".join(problems[:20]))
programs = sum(1 for i, _, _ in elves.values() if i)
if not elves:
    sys.exit("the arm64 image has no ELF file")
print(f"    {len(elves)} ELF files, all AArch64; {programs} programs and {len(checked) - programs} libraries and plugins"
      " they and the plugins need, each with what it needs", file=sys.stderr)
PY
}

arm64_manager_bin() { echo "$BIN/linux-arm64/manager"; }
inputs_operator-arm64() {
  local m; m="$(arm64_manager_bin)"
  [ -x "$m" ] || die "$m is missing: hack/release.sh builds it (GOARCH=arm64 go build ./cmd/manager)"
  echo "platform=linux/arm64 manager-sha256=$(sha256sum <"$m" | cut -d' ' -f1)"
}
rootfs_operator-arm64() {
  local r=$1
  base_files "$r"
  install -m 0755 "$(arm64_manager_bin)" "$r/manager"
  ! readelf -l "$r/manager" | grep -q 'program interpreter' || die "$(arm64_manager_bin) is not statically linked (CGO_ENABLED=0)"
  check_arm64 "$r"
  echo "manager-sha256=$(sha256sum <"$r/manager" | cut -d' ' -f1)" >"$WORK/packages.txt"
  CONFIG=(--architecture arm64 --config.entrypoint /manager --config.label org.opencontainers.image.title=webfarm-operator)
}

arm64_envoy_bin() {
  local e="$CACHE/envoy-$ENVOY_VERSION-linux-arm64/envoy"
  [ -x "$e" ] || "$ROOT/hack/install-tools.sh" envoy-arm64 >&2
  echo "$e"
}
# The amd64 image takes Envoy's glibc from the host; the arm64 one from
# Debian's libc6 for arm64 (with its updates).
arm64_envoy_drain_bin() { echo "$BIN/linux-arm64/envoy-drain"; }
inputs_envoy-arm64() {
  local e d; e="$(arm64_envoy_bin)" d="$(arm64_envoy_drain_bin)"
  [ -x "$d" ] || die "$d is missing: hack/release.sh builds it (GOARCH=arm64 go build ./cmd/envoy-drain)"
  echo "platform=linux/arm64 envoy=$ENVOY_VERSION sha256=$(sha256sum <"$e" | cut -d' ' -f1) suite=$DEBIAN_SUITE"
  echo "envoy-drain-sha256=$(sha256sum <"$d" | cut -d' ' -f1)"
  updates_state
}
rootfs_envoy-arm64() {
  local r=$1 e deb
  e="$(arm64_envoy_bin)"
  base_files "$r"
  mkdir -p "$r/etc/envoy"
  install -D -m 0755 "$e" "$r/usr/local/bin/envoy"
  arm64_apt apt-get -qq update >/dev/null
  deb="$(arm64_debs libc6 | grep '/libc6_')"
  arm64_libs "$r" /usr/local/bin/envoy "$deb"
  install -m 0755 "$(arm64_envoy_drain_bin)" "$r/usr/local/bin/envoy-drain"
  ! readelf -l "$r/usr/local/bin/envoy-drain" | grep -q 'program interpreter' ||
    die "$(arm64_envoy_drain_bin) is not statically linked (CGO_ENABLED=0)"
  check_arm64 "$r"
  local libc="libc6=$(dpkg-deb -f "$deb" Version)"
  printf 'envoy=%s\nenvoy-drain-sha256=%s\n%s\n' "$ENVOY_VERSION" \
    "$(sha256sum <"$r/usr/local/bin/envoy-drain" | cut -d' ' -f1)" "$libc" >"$WORK/packages.txt"
  mkdir -p "$r/var/lib/dpkg/status.d"
  deb_status "$deb" | grep -v '^$' >"$r/var/lib/dpkg/status.d/libc6"
  chmod -R a+rX "$r/var"
  CONFIG=(--architecture arm64 --config.entrypoint /usr/local/bin/envoy
    --config.cmd --config-path --config.cmd /etc/envoy/envoy.json
    --config.label "org.opencontainers.image.title=webfarm-envoy"
    --config.label "org.opencontainers.image.version=$ENVOY_VERSION")
}

inputs_nginx-arm64() { echo "platform=linux/arm64"; inputs_nginx; }
rootfs_nginx-arm64() {
  rootfs_nginx "$1" arm64
  check_arm64 "$1" /usr/lib/nginx/modules
  CONFIG=(--architecture arm64 "${CONFIG[@]}")
}

# remove_work: delete $WORK, first unmounting anything a failed debootstrap left
# mounted below it (never delete through a mount).
remove_work() {
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  awk -v w="$WORK/" 'index($2, w) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
    umount -l "$m" || true
  done
  if awk -v w="$WORK/" 'index($2, w) == 1 {f=1} END {exit !f}' /proc/self/mounts; then
    log "warning: mounts remain below $WORK; not deleting it"
  else
    rm -rf "$WORK"
  fi
  WORK=""
}

# ---- build one image ----------------------------------------------------------

# key_of NAME: hash of the image's inputs and of the code that builds it.
key_of() {
  local n=$1
  {
    echo "ref=$(ref_of "$n")"
    "inputs_$n"
    declare -f "rootfs_$n" build_image base_files etc_hosts add_nonroot copy_libs debootstrap_rootfs trim_debian \
      pin_matches dpkg_status_d static_binary rootfs_prometheus_operator_command rootfs_cert_manager
    case "$n" in
      *-arm64) declare -f "rootfs_${n%-arm64}" arm64_apt arm64_debs arm64_rootfs merge_usr deb_status \
        arm64_libs check_arm64 ;;
    esac
  } | sha256sum | cut -c1-16
}

build_image() {
  local n=$1 ref key archive
  ref="$(ref_of "$n")"
  key="$(key_of "$n")"
  archive="$IMAGES_CACHE/$n-$key.tar"
  if [ -f "$archive" ] && [ -z "$FORCE" ]; then
    log "$ref: up to date ($(basename "$archive"))"
  else
    local start=$SECONDS
    log "$ref: building"
    WORK="$(mktemp -d "$IMAGES_CACHE/work.$n.XXXXXX")"
    local layout="$WORK/oci" tag=image bundle="$WORK/bundle"
    umoci init --layout "$layout"
    umoci new --image "$layout:$tag"
    umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
    CONFIG=()
    "rootfs_$n" "$bundle/rootfs"
    chmod 0755 "$bundle/rootfs"
    umoci repack --image "$layout:$tag" "$bundle" >/dev/null
    local labels=() p pins=""
    while read -r p; do pins+="${pins:+ }$p"; done <"$WORK/packages.txt"
    labels+=(--config.label "webfarm.dev/image-inputs=$key")
    case "${n%-arm64}" in
      nginx | client)
        local asked="" q base=${n%-arm64}
        for q in $(eval echo "\$${base^^}_IMAGE_PACKAGES"); do asked+="${asked:+ }$(grep "^${q%%=*}=" "$WORK/packages.txt")"; done
        labels+=(--config.label "webfarm.dev/debian-suite=$DEBIAN_SUITE $DEBIAN_SUITE-updates $DEBIAN_SUITE-security"
          --config.label "webfarm.dev/packages=$asked") ;;
      *) labels+=(--config.label "webfarm.dev/packages=$pins") ;;
    esac
    umoci config --image "$layout:$tag" --author webfarm.dev \
      --config.user "$NONROOT:$NONROOT" --config.env "PATH=$PATH_ENV" \
      --config.label "org.opencontainers.image.ref.name=$ref" "${labels[@]}" "${CONFIG[@]}"
    umoci gc --layout "$layout"
    rm -f "$archive.tmp"
    skopeo --insecure-policy copy --quiet "oci:$layout:$tag" "docker-archive:$archive.tmp:$ref"
    cp "$WORK/packages.txt" "$IMAGES_CACHE/$n-$key.packages.txt"
    mv "$archive.tmp" "$archive"
    remove_work
    log "$ref: built in $((SECONDS - start)) s, $(du -h "$archive" | cut -f1) ($(basename "$archive"))"
    # Keep the newest archives of this image only (<name>-<16 hex digits>.tar:
    # not those of nginx-arm64 for nginx, or of prometheus-operator for prometheus).
    local old
    for old in $(ls -t "$IMAGES_CACHE/$n"-????????????????.tar 2>/dev/null | tail -n +$((KEEP + 1))); do
      rm -f "$old" "${old%.tar}.packages.txt"
    done
  fi
  touch "$archive" # newest = last used, for the pruning above
  mkdir -p "$LINKS"
  ln -sfn "$archive" "$LINKS/$n.tar"
  ln -sfn "${archive%.tar}.packages.txt" "$LINKS/$n.packages.txt"
}

FORCE=""
images=()
for a in "$@"; do
  case "$a" in
    --force) FORCE=1 ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    cert-manager) images+=("${CERT_MANAGER_IMAGES[@]}") ;;
    *)
      [[ " ${ALL_IMAGES[*]} ${ARM64_IMAGES[*]} ${CONFORMANCE_IMAGES[*]} " == *" $a "* ]] ||
        die "unknown image: $a (known: ${ALL_IMAGES[*]} ${ARM64_IMAGES[*]} ${CONFORMANCE_IMAGES[*]})"
      images+=("$a") ;;
  esac
done
[ ${#images[@]} -gt 0 ] || images=("${ALL_IMAGES[@]}")

[ "$(id -u)" = 0 ] || die "building images needs root (debootstrap, chroot, file ownership)"
need_tools umoci skopeo debootstrap
mkdir -p "$IMAGES_CACHE"
# One build at a time per cache.
exec 8>"$IMAGES_CACHE/.lock"
flock 8
for WORK in "$IMAGES_CACHE"/work.*; do remove_work; done
WORK=""
trap remove_work EXIT
# The pinned tools some images are made of (linked into bin/, built if new).
tools=()
for n in "${images[@]}"; do
  case "$n" in
    prometheus) tools+=(prometheus) ;;
    prometheus-operator | prometheus-config-reloader) tools+=(prometheus-operator) ;;
    cert-manager-*) tools+=(cert-manager) ;;
    echo-basic) tools+=(echo-basic) ;;
  esac
done
[ ${#tools[@]} -eq 0 ] || "$ROOT/hack/install-tools.sh" "${tools[@]}"
for n in "${images[@]}"; do build_image "$n"; done
