#!/usr/bin/env bash
# `make test`: the pinned tools, the generated-files check and the Go tests,
# then the end-to-end suite (the Gateway API conformance run among its
# tests), with lint and a short fuzz of every renderer.
#
# Jobs that no test waits on run beside the others at the lowest CPU
# priority (nice 19), so that they take only the CPU the tests leave idle
# and never slow them down:
#   - from the start, the tools only the end-to-end suite needs are built
#     (CoreDNS, the registry, Prometheus and its Operator, cert-manager, the
#     conformance suite's echo-basic, kube-router) and the cluster's Debian packages
#     installed: their downloads go on while the other tools compile, their
#     compiles while the Go tests wait;
#   - while the end-to-end suite goes (it mostly waits on pods: the CPU is
#     about two thirds idle), lint runs and every fuzz target tries 4,000
#     inputs (tens of seconds each on a loaded machine, more than `make
#     fuzz-short`, at no cost in time: the suite lasts over 20 minutes); their
#     reports are printed when it is done. A count, not a duration: see
#     FUZZTIME in the Makefile.
# A fresh machine spends most of `make test` compiling: these overlaps are
# what keep its first run within the hour on two cores (docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/common.sh

E2E_TOOLS=(coredns registry cluster-packages prometheus prometheus-operator cert-manager echo-basic kube-router)
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

make tools gen-check
go test ./... -count=1 -timeout 20m

finish "building the end-to-end suite's tools" "$prepare" "$prepare_log"

lint_log="$BIN/lint.log"
log "lint runs in the background during the end-to-end suite (log: $lint_log)"
in_background "$lint_log" make lint
lint=$job
fuzz_log="$BIN/fuzz.log"
log "the renderers are fuzzed in the background during the end-to-end suite (log: $fuzz_log)"
in_background "$fuzz_log" make fuzz FUZZTIME=4000x FUZZMINIMIZETIME=0
fuzz=$job

make test-e2e

finish "the fuzzing" "$fuzz" "$fuzz_log"
# Each target's result with its last progress line (its executions).
awk '/^fuzz: elapsed/ { last = $0 } /^(ok|FAIL)/ { print $0 "  (" last ")" }' "$fuzz_log"
finish "lint" "$lint" "$lint_log"
cat "$lint_log"
