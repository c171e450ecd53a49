#!/usr/bin/env bash
# `make test`: the pinned tools, the generated-files check, the Go tests and a
# short fuzz, then the end-to-end suite, with lint.
#
# Two jobs that no test waits on run beside the others at the lowest CPU
# priority (nice 19), so that they take only the CPU the tests leave idle
# and never slow them down:
#   - from the start, the tools only the end-to-end suite (and the Gateway API
#     conformance run) needs are built (CoreDNS, the registry, Prometheus and
#     its Operator, cert-manager, the conformance suite's echo-basic) and
#     the cluster's Debian packages installed: their downloads go on while the
#     other tools compile, their compiles while the Go tests wait;
#   - while the end-to-end suite runs (it mostly waits on pods: the CPU is
#     about two thirds idle), lint runs; its report is printed when both are
#     done.
# A fresh machine spends most of `make test` compiling: these overlaps are
# what keep its first run within the hour on two cores (docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib/common.sh

E2E_TOOLS=(coredns registry cluster-packages prometheus prometheus-operator cert-manager echo-basic)
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
make fuzz-short

finish "building the end-to-end suite's tools" "$prepare" "$prepare_log"

lint_log="$BIN/lint.log"
log "lint runs in the background during the end-to-end suite (log: $lint_log)"
in_background "$lint_log" make lint
lint=$job

make test-e2e

finish "lint" "$lint" "$lint_log"
cat "$lint_log"
