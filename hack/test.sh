#!/usr/bin/env bash
# `make test`: the pinned tools, the generated-files check and the Go tests,
# then the end-to-end suite (the Gateway API conformance run among its
# tests), with the release test, lint and a short fuzz of every renderer.
#
# Jobs that no test waits on run beside the others at the lowest CPU
# priority (nice 19), so that they take only the CPU the tests leave idle
# and never slow them down:
#   - from the start, the tools the end-to-end suite needs first are built
#     (CoreDNS, the registry, Prometheus and its Operator, kube-router) and
#     the cluster's Debian packages installed: their downloads go on while
#     the other tools compile, their compiles while the Go tests wait;
#   - while the end-to-end suite goes (it mostly waits on pods: the CPU is
#     about two thirds idle):
#       - the release test (test/release: it compiles the operator for
#         arm64, and publishes to a registry of its own);
#       - lint, with the linters' build;
#       - every fuzz target tries 15,000 inputs (about 30 s each on a loaded
#         machine, five times `make fuzz-short`); a count, not a duration: see
#         FUZZTIME in the Makefile;
#       - the images only some waiting tests need, cert-manager's and the
#         conformance suite's echo server (those tests build them if they
#         are not done yet);
#     their reports are printed when the suite is done.
# A fresh machine spends most of `make test` compiling: what no test needs
# before the suite is compiled during it, and these overlaps are what keep
# its first run within the hour on two cores (docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/common.sh

E2E_TOOLS=(coredns registry cluster-packages prometheus prometheus-operator kube-router)
mkdir -p "$BIN"

# in_background LOG COMMAND...: COMMAND at the lowest priority, its output
# into LOG; its PID in job.
in_background() {
  local log=$1
  shift
  nice -n 19 "$@" >"$log" 2>&1 &
  job=$!
}

# finish NAME PID LOG: waits for a background job; on failure prints its log.
finish() {
  if ! wait "$2"; then
    cat "$3" >&2
    die "$1 failed (its output is above, and in $3)"
  fi
}

job=""
# Should a test fail first, the background jobs still finish before the exit
# (stopping a package install halfway would leave the machine's dpkg broken).
trap wait EXIT

prepare_log="$BIN/e2e-tools.log"
log "building the end-to-end suite's tools in the background (log: $prepare_log)"
in_background "$prepare_log" hack/install-tools.sh "${E2E_TOOLS[@]}"
prepare=$job

make test-tools gen-check
# Every package but the release test, which runs beside the end-to-end suite.
release_test=webfarm.dev/operator/test/release
go test $(go list ./... | grep -vx "$release_test") -count=1 -timeout 20m

finish "building the end-to-end suite's tools" "$prepare" "$prepare_log"
make images

release_log="$BIN/release-test.log"
log "the release test runs in the background during the end-to-end suite (log: $release_log)"
in_background "$release_log" go test "$release_test" -count=1 -timeout 40m -v
release=$job
optional_log="$BIN/e2e-optional-images.log"
log "cert-manager's and the conformance suite's images are built in the background (log: $optional_log)"
in_background "$optional_log" hack/images/build.sh cert-manager echo-basic
optional=$job

lint_log="$BIN/lint.log"
log "lint runs in the background during the end-to-end suite (log: $lint_log)"
in_background "$lint_log" make lint
lint=$job
fuzz_log="$BIN/fuzz.log"
log "the renderers are fuzzed in the background during the end-to-end suite (log: $fuzz_log)"
in_background "$fuzz_log" make fuzz FUZZTIME=15000x FUZZMINIMIZETIME=0
fuzz=$job

make test-e2e

finish "the optional images" "$optional" "$optional_log"
finish "the release test" "$release" "$release_log"
grep -E '^(--- |ok|FAIL)' "$release_log" || true
finish "the fuzzing" "$fuzz" "$fuzz_log"
# Each target's result with its last progress line (its executions).
awk '/^fuzz: elapsed/ { last = $0 } /^(ok|FAIL)/ { print $0 "  (" last ")" }' "$fuzz_log"
finish "lint" "$lint" "$lint_log"
cat "$lint_log"
