package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// The HTTPS paths' TLS, the same for every contender: TLS 1.3 (the servers
// accept nothing older) with one cipher suite and one key exchange, which
// the client alone offers. Envoy's TLS 1.3 suites cannot be configured
// (BoringSSL fixes them), so the client's offer is what makes them equal;
// every measurement checks what was negotiated (h2loadResult.session).
const (
	tlsCipher = "TLS_AES_128_GCM_SHA256"
	tlsGroup  = "X25519"
)

// h2load is the client of the HTTPS paths: h2load (nghttp2), which speaks
// HTTP/1.1 over TLS and HTTP/2 (ALPN h2) with the same code, keeps its
// connections for the whole run, as a browser does, and logs every
// request's latency. wrk speaks no HTTP/2.
type h2load struct {
	Bin string
	// Connections over HTTP/1.1 (one request at a time on each, as wrk's);
	// over HTTP/2, H2Connections each with Streams requests in flight.
	Connections, H2Connections, Streams int
	CPUs                                string // processors the client runs on ("": any)
}

// h2loadResult is one run's figures.
type h2loadResult struct {
	succeeded         int64
	requestsPerSecond float64
	p50, p99          time.Duration
	session           string // the negotiated TLS, e.g. "TLSv1.3, TLS_AES_128_GCM_SHA256, X25519, h2"
}

// wantSession is the session every HTTPS measurement must negotiate.
func wantSession(h2 bool) string {
	alpn := "http/1.1"
	if h2 {
		alpn = "h2"
	}
	return "TLSv1.3, " + tlsCipher + ", " + tlsGroup + ", " + alpn
}

// connections is how many connections a run opens and how many requests each
// has in flight.
func (h h2load) connections(h2 bool) (conns, streams int) {
	if h2 {
		return h.H2Connections, h.Streams
	}
	return h.Connections, 1
}

// hungAfter is how long past its duration h2load may take before it is
// taken for hung: on a crowded machine h2load 1.52 was seen to go on
// loading for minutes past -D. It is stopped and run once more.
const hungAfter = 20 * time.Second

// exec runs h2load and returns its output and CPU time; a run that hangs
// is stopped by its PID and made once more.
func (h h2load) exec(ctx context.Context, args []string, duration time.Duration, logPath string) (string, time.Duration, error) {
	for attempt := 1; ; attempt++ {
		runCtx, cancel := context.WithTimeout(ctx, duration+hungAfter)
		cmd := exec.CommandContext(runCtx, args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		hung := errors.Is(runCtx.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case hung && attempt < 2 && ctx.Err() == nil:
			logf("h2load ran %s past its duration: stopped, run again", hungAfter)
			if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) { // h2load appends
				return "", 0, err
			}
			continue
		case err != nil:
			return "", 0, fmt.Errorf("h2load: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		return stdout.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
	}
}

// maxPerConnection bounds the requests of one HTTP/2 connection in a run:
// nginx closes a connection after keepalive_requests (10,000 on the proxy),
// and h2load does not open another one in its place, so a run that comes
// near it would measure fewer connections than it says.
const maxPerConnection = 9000

// run loads host's files (uris: a file with one URL a line, the workload's
// sequence) through addr for duration. The requests still in flight when
// the run ends are cut off (cutOffWindow); any other failure, or a status
// other than 2xx, fails the measurement (benchkit.ErrWrongAnswers), as with
// wrk.
func (h h2load) run(ctx context.Context, addr, uris string, h2 bool, duration time.Duration, logPath string) (h2loadResult, time.Duration, error) {
	conns, streams := h.connections(h2)
	argv := []string{h.Bin, "-c", strconv.Itoa(conns), "-m", strconv.Itoa(streams), "-t", "1",
		"-D", strconv.Itoa(max(1, int(duration.Round(time.Second)/time.Second))),
		"--tls13-ciphers", tlsCipher, "--groups", tlsGroup, "--connect-to", addr,
		"--log-file", logPath, "-i", uris}
	if h2 {
		argv = append(argv, "--npn-list", "h2")
	} else {
		argv = append(argv, "--h1")
	}
	if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) { // h2load appends
		return h2loadResult{}, 0, err
	}
	stdout, cpu, err := h.exec(ctx, benchkit.Niced(h.CPUs, argv), duration, logPath)
	if err != nil {
		return h2loadResult{}, 0, err
	}
	sum, err := parseH2load(stdout)
	if err != nil {
		return h2loadResult{}, cpu, err
	}
	if sum.non2xx > 0 || sum.errored > int64(conns*streams) || sum.succeeded == 0 {
		return h2loadResult{}, cpu, fmt.Errorf("%w: %d requests succeeded, %d got a status other than 2xx, %d failed (at most %d may be cut off by the end of the run)",
			benchkit.ErrWrongAnswers, sum.succeeded, sum.non2xx, sum.errored, conns*streams)
	}
	if h2 && sum.succeeded/int64(conns) > maxPerConnection {
		return h2loadResult{}, cpu, fmt.Errorf("%d requests on each HTTP/2 connection, over %d: the proxy may have closed some; use more -h2-connections or a shorter -duration",
			sum.succeeded/int64(conns), maxPerConnection)
	}
	if want := wantSession(h2); sum.session != want {
		return h2loadResult{}, cpu, fmt.Errorf("negotiated %q, want %q", sum.session, want)
	}
	f, err := os.Open(logPath)
	if err != nil {
		return h2loadResult{}, cpu, err
	}
	defer f.Close()
	log, err := readH2loadLog(f)
	if err != nil {
		return h2loadResult{}, cpu, err
	}
	if n := log.failedBefore(cutOffWindow); n > 0 {
		return h2loadResult{}, cpu, fmt.Errorf("%w: %d requests failed more than %s before the end of the run", benchkit.ErrWrongAnswers, n, cutOffWindow)
	}
	lat := log.latencies
	return h2loadResult{
		succeeded:         sum.succeeded,
		requestsPerSecond: sum.requestsPerSecond,
		p50:               percentile(lat, 50),
		p99:               percentile(lat, 99),
		session:           sum.session,
	}, cpu, nil
}

// h2loadSummary is what h2load prints at the end of a run.
type h2loadSummary struct {
	requestsPerSecond float64
	succeeded         int64
	errored           int64 // failed for another reason than the status: a reset, a closed connection
	non2xx            int64
	session           string
}

// cutOffWindow: h2load resets the requests in flight when a run ends and
// counts them as failed. A failed request that ended longer than this
// before the run's last response was not cut off.
const cutOffWindow = 500 * time.Millisecond

var (
	h2loadFinished = regexp.MustCompile(`(?m)^finished in [0-9.]+m?s, ([0-9.]+) req/s`)
	h2loadRequests = regexp.MustCompile(`(?m)^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout`)
	h2loadStatus   = regexp.MustCompile(`(?m)^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx`)
	h2loadTLS      = regexp.MustCompile(`(?m)^TLS Protocol: (\S+)\nCipher: (\S+)\nServer Temp Key: (\S+).*\nApplication protocol: (\S+)`)
)

// parseH2load reads h2load's summary.
func parseH2load(out string) (h2loadSummary, error) {
	var s h2loadSummary
	fin, req, st, tls := h2loadFinished.FindStringSubmatch(out), h2loadRequests.FindStringSubmatch(out),
		h2loadStatus.FindStringSubmatch(out), h2loadTLS.FindStringSubmatch(out)
	if fin == nil || req == nil || st == nil {
		return s, fmt.Errorf("no summary in h2load's output:\n%s", out)
	}
	if tls == nil {
		return s, fmt.Errorf("h2load negotiated no TLS:\n%s", out)
	}
	s.requestsPerSecond, _ = strconv.ParseFloat(fin[1], 64)
	n := func(v string) int64 { i, _ := strconv.ParseInt(v, 10, 64); return i }
	s.succeeded, s.errored = n(req[4]), n(req[6])
	s.non2xx = n(st[2]) + n(st[3]) + n(st[4])
	s.session = strings.Join(tls[1:], ", ")
	return s, nil
}

// h2loadLog is h2load's log of one run.
type h2loadLog struct {
	latencies  []time.Duration // of the successful requests
	failedEnds []time.Time     // when each failed request ended
	lastEnd    time.Time       // the end of the run's last response
}

// failedBefore counts the failed requests that ended earlier than window
// before the run's last response.
func (l h2loadLog) failedBefore(window time.Duration) int {
	n := 0
	for _, t := range l.failedEnds {
		if l.lastEnd.Sub(t) > window {
			n++
		}
	}
	return n
}

// readH2loadLog reads h2load's log: a line per request, tab-separated, with
// its start in µs since the epoch, its status (-1 for a failed stream) and
// the µs until the end of its response.
func readH2loadLog(log *os.File) (h2loadLog, error) {
	var out h2loadLog
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 3 {
			return out, fmt.Errorf("h2load's log: line %q", sc.Text())
		}
		start, err1 := strconv.ParseInt(fields[0], 10, 64)
		status, err2 := strconv.Atoi(fields[1])
		us, err3 := strconv.ParseInt(fields[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return out, fmt.Errorf("h2load's log: line %q: %w", sc.Text(), err)
		}
		end := time.UnixMicro(start + us)
		if end.After(out.lastEnd) {
			out.lastEnd = end
		}
		switch {
		case status >= 200 && status <= 299:
			out.latencies = append(out.latencies, time.Duration(us)*time.Microsecond)
		case status < 0:
			out.failedEnds = append(out.failedEnds, end)
		}
	}
	return out, sc.Err()
}

// percentile is the nearest-rank percentile p of the latencies (0 for none).
func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
