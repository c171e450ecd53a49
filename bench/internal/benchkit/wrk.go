package benchkit

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

// Wrk is the load generator: wrk with a fixed number of keep-alive
// connections and threads, under nice and on the given processors like the
// servers.
type Wrk struct {
	Bin         string
	Connections int
	Threads     int
	CPUs        string   // processors the client runs on ("": any)
	Headers     []string // "Name: value", sent with every request
}

// WrkResult is what WrkDone prints.
type WrkResult struct {
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

// RequestsPerSecond over the run as wrk timed it.
func (r WrkResult) RequestsPerSecond() float64 {
	return float64(r.Requests) / (float64(r.DurationUS) / 1e6)
}

// P50 is the median latency.
func (r WrkResult) P50() time.Duration { return time.Duration(r.Latency.P50) * time.Microsecond }

// P99 is the 99th percentile latency.
func (r WrkResult) P99() time.Duration { return time.Duration(r.Latency.P99) * time.Microsecond }

// ResultMarker starts the line of wrk's output that holds the results.
const ResultMarker = "WEBFARM-RESULT "

// WrkDone is the end of every wrk script: a done() that prints wrk's figures
// as one JSON line after ResultMarker, for ParseWrk.
const WrkDone = `
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('` + ResultMarker + `{"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`

// WrkScript asks for one path (wrk's own prebuilt request) and prints the
// results (WrkDone).
func WrkScript(path string) string {
	return fmt.Sprintf("wrk.path = %q\n", path) + WrkDone
}

// ErrWrongAnswers: the client saw errors (a status other than 2xx or 3xx, a
// connection reset, a timeout).
var ErrWrongAnswers = errors.New("wrong answers")

// Run loads url for duration (whole seconds, at least one) with the script
// and returns wrk's figures and the CPU time wrk used. Errors of any kind
// fail the measurement (ErrWrongAnswers): a path that answers some requests
// wrongly has no throughput worth reporting.
func (w Wrk) Run(ctx context.Context, url, script string, duration time.Duration) (WrkResult, time.Duration, error) {
	argv := []string{w.Bin,
		"-c", strconv.Itoa(w.Connections), "-t", strconv.Itoa(w.Threads),
		"-d", fmt.Sprintf("%ds", max(1, int(duration.Round(time.Second)/time.Second))),
		"--timeout", "5s", "--latency"}
	for _, h := range w.Headers {
		argv = append(argv, "-H", h)
	}
	args := Niced(w.CPUs, append(argv, "-s", script, url))
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return WrkResult{}, 0, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	r, err := ParseWrk(stdout.String())
	if err != nil {
		return WrkResult{}, 0, err
	}
	e := r.Errors
	if bad := e.Connect + e.Read + e.Write + e.Status + e.Timeout; bad > 0 || r.Requests == 0 {
		return r, cpu, fmt.Errorf("%w: %d requests, errors: connect %d, read %d, write %d, status %d, timeout %d",
			ErrWrongAnswers, r.Requests, e.Connect, e.Read, e.Write, e.Status, e.Timeout)
	}
	return r, cpu, nil
}

// ParseWrk finds the result line in wrk's output.
func ParseWrk(out string) (WrkResult, error) {
	for _, line := range strings.Split(out, "\n") {
		if js, ok := strings.CutPrefix(line, ResultMarker); ok {
			var r WrkResult
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				return r, fmt.Errorf("wrk's result line %q: %w", js, err)
			}
			return r, nil
		}
	}
	return WrkResult{}, fmt.Errorf("no result line in wrk's output:\n%s", out)
}
