package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// client is the load generator, the same for every path: wrk with a fixed
// number of keep-alive connections and threads, for a fixed time.
type client struct {
	wrk         string
	connections int
	threads     int
	duration    time.Duration
	cpus        string // processors the client runs on ("": any)
}

// wrkResult is what the script's done() prints.
type wrkResult struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Bytes      int64 `json:"bytes"`
	Errors     struct {
		Connect, Read, Write, Status, Timeout int64
	} `json:"errors"`
	Latency struct {
		P50, P90, P99, Max int64
	} `json:"latency_us"`
}

// sample is one measurement of one path.
type sample struct {
	requestsPerSecond float64
	p50, p99          time.Duration
	// CPU per request of the proxy hop, the pool worker and the client.
	frontCPU, poolCPU, clientCPU time.Duration
	// otherCores is how many processors everything else on the machine kept
	// busy meanwhile, on average.
	otherCores float64
}

// run loads url for the client's duration with the given script and returns
// wrk's figures. Errors of any kind fail the measurement: a path that answers
// some requests wrongly has no throughput worth reporting.
func (c client) run(ctx context.Context, url, scriptPath string, duration time.Duration) (wrkResult, time.Duration, error) {
	args := niced(c.cpus, []string{c.wrk,
		"-c", strconv.Itoa(c.connections), "-t", strconv.Itoa(c.threads),
		"-d", fmt.Sprintf("%ds", int(duration.Round(time.Second)/time.Second)),
		"--timeout", "5s", "--latency",
		"-H", "Host: " + siteHost,
		"-s", scriptPath, url})
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return wrkResult{}, 0, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	r, err := parseWrk(stdout.String())
	if err != nil {
		return wrkResult{}, 0, err
	}
	e := r.Errors
	if bad := e.Connect + e.Read + e.Write + e.Status + e.Timeout; bad > 0 || r.Requests == 0 {
		return r, cpu, fmt.Errorf("%w: %d requests, errors: connect %d, read %d, write %d, status %d, timeout %d",
			errWrongAnswers, r.Requests, e.Connect, e.Read, e.Write, e.Status, e.Timeout)
	}
	return r, cpu, nil
}

// errWrongAnswers: the client saw errors (a status other than 2xx or 3xx, a
// connection reset, a timeout).
var errWrongAnswers = errors.New("wrong answers")

// parseWrk finds the result line in wrk's output.
func parseWrk(out string) (wrkResult, error) {
	for _, line := range strings.Split(out, "\n") {
		if js, ok := strings.CutPrefix(line, resultMarker); ok {
			var r wrkResult
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				return r, fmt.Errorf("wrk's result line %q: %w", js, err)
			}
			return r, nil
		}
	}
	return wrkResult{}, fmt.Errorf("no result line in wrk's output:\n%s", out)
}
