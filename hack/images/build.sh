#!/usr/bin/env bash
# Builds the container images of the operator and its local cluster without a
# registry or a container engine:
#   root filesystem (debootstrap, or binaries plus their ldd libraries)
#   -> umoci (init/new/unpack/repack/config) -> skopeo copy oci:... docker-archive:...
# Each image is a docker-archive tarball in a cache keyed by the image's inputs
# ($WEBFARM_CACHE/images/<name>-<key>.tar), linked as bin/images/<name>.tar.
# An image whose inputs did not change is not rebuilt.
#
# Usage: hack/images/build.sh [--force] [operator|nginx|envoy|prometheus|prometheus-operator|
#   prometheus-config-reloader|client|cert-manager ...]
# (cert-manager: its controller, webhook and cainjector images)
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

ref_of() {
  case "$1" in
    operator) echo localhost/webfarm-operator:dev ;;
    nginx) echo localhost/webfarm-nginx:1.22.1 ;;
    envoy) echo "localhost/webfarm-envoy:$ENVOY_VERSION" ;;
    prometheus) echo "localhost/webfarm-prometheus:$(prometheus_version)" ;;
    prometheus-operator) echo "localhost/webfarm-prometheus-operator:$PROMETHEUS_OPERATOR_VERSION" ;;
    prometheus-config-reloader) echo "localhost/webfarm-prometheus-config-reloader:$PROMETHEUS_OPERATOR_VERSION" ;;
    client) echo localhost/webfarm-client:dev ;;
    cert-manager-controller | cert-manager-webhook | cert-manager-cainjector) echo "localhost/webfarm-$1:$CERT_MANAGER_VERSION" ;;
    *) die "unknown image: $1 (known: ${ALL_IMAGES[*]})" ;;
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
inputs_envoy() {
  local e; e="$(envoy_bin)"
  echo "envoy=$ENVOY_VERSION sha256=$(sha256sum <"$e" | cut -d' ' -f1)"
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
  { echo "envoy=$ENVOY_VERSION"; host_libs_of "$e"; } >"$WORK/packages.txt"
  # shellcheck disable=SC2046 # package names
  dpkg_status_d "$r" $(host_libs_of "$e" | cut -d= -f1)
  CONFIG=(--config.entrypoint /usr/local/bin/envoy
    --config.cmd --config-path --config.cmd /etc/envoy/envoy.json
    --config.label "org.opencontainers.image.title=webfarm-envoy"
    --config.label "org.opencontainers.image.version=$ENVOY_VERSION")
}

inputs_nginx() { echo "suite=$DEBIAN_SUITE packages=$NGINX_IMAGE_PACKAGES"; updates_state; }
rootfs_nginx() {
  local r=$1
  debootstrap_rootfs "$r" "$NGINX_IMAGE_PACKAGES"
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
    case "$n" in
      nginx | client)
        local asked="" q
        for q in $(eval echo "\$${n^^}_IMAGE_PACKAGES"); do asked+="${asked:+ }$(grep "^${q%%=*}=" "$WORK/packages.txt")"; done
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
    # Keep the newest archives of this image only (NAME-<16 hex digits>.tar:
    # not those of another image whose name starts with NAME-).
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
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    cert-manager) images+=("${CERT_MANAGER_IMAGES[@]}") ;;
    *) ref_of "$a" >/dev/null; images+=("$a") ;;
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
  esac
done
[ ${#tools[@]} -eq 0 ] || "$ROOT/hack/install-tools.sh" "${tools[@]}"
for n in "${images[@]}"; do build_image "$n"; done
