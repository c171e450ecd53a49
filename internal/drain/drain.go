// Package drain drains a leaving Envoy frontend before the kubelet stops it.
//
// A plain SIGTERM makes Envoy exit at once: open keep-alive HTTP/1.1 and
// HTTP/2 connections are cut, and a client loses the request it was about
// to send on one. Envoy drains only when told through its admin interface,
// so the frontend's preStop hook runs cmd/envoy-drain, which
//
//  1. POSTs /healthcheck/fail: from then on Envoy (1.40, measured by the
//     live test) answers every HTTP/1.1 request with "Connection: close"
//     and every HTTP/2 request with a GOAWAY, on open and new connections
//     alike, and still accepts and serves new connections (kube-proxy may
//     send some for a few seconds); its /ready answers 503;
//  2. waits until the farm's listeners hold no connection, but at least
//     Minimum (kube-proxy's time to forget the pod) and at most Maximum
//     (below the pod's grace period);
//  3. exits 0 whatever happened: a failing preStop hook must not hold up
//     the pod's end, so an admin error only costs the minimum wait.
//
// A connection no client uses again is not closed by Envoy's drain (an
// idle HTTP/2 connection gets no GOAWAY): it keeps the drain to Maximum and
// is cut when Envoy exits.
package drain

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// BinaryPath is where the Envoy image holds cmd/envoy-drain
// (hack/images/build.sh installs it there).
const BinaryPath = "/usr/local/bin/envoy-drain"

// Defaults of the command's flags, which the frontend's pod renders.
const (
	// DefaultAdmin is Envoy's admin interface (internal/render/envoy.AdminPort).
	DefaultAdmin = "127.0.0.1:19000"
	// DefaultMinimum keeps a leaving frontend accepting until the Service's
	// endpoints and every node's rules have forgotten it.
	DefaultMinimum = 10 * time.Second
	// DefaultMaximum ends the drain 5 s before the pod's 30 s grace period.
	DefaultMaximum = 25 * time.Second
)

// FailPath is the admin call that starts the drain.
const FailPath = "/healthcheck/fail"

// farmStatPrefixes are the stat prefixes of the farm's HTTP connection
// managers (HTTP and HTTPS); the status listener (probes, metrics) is not
// the farm's.
var farmStatPrefixes = []string{"farm", "farm_https"}

// StatsPath asks the admin for the farm's open downstream connections.
var StatsPath = "/stats?filter=" + url.QueryEscape(`^http\.(`+strings.Join(farmStatPrefixes, "|")+`)\.downstream_cx_active$`)

// Options configure a drain.
type Options struct {
	// Admin is Envoy's admin interface, host:port.
	Admin string
	// Minimum and Maximum bound the drain's length.
	Minimum, Maximum time.Duration
	// Poll is how often the open connections are counted.
	Poll time.Duration
}

// Result says how a drain ended.
type Result struct {
	Elapsed time.Duration
	// Open is the connections last counted; -1 if never counted.
	Open int
	// Err is the first admin error, if any.
	Err error
}

// Run drains the Envoy at o.Admin and returns when Done says so. It never
// fails: errors are in the result, for the log.
func Run(ctx context.Context, client *http.Client, o Options) Result {
	start := time.Now()
	res := Result{Open: -1}
	admin := "http://" + o.Admin
	res.Err = post(ctx, client, admin+FailPath)
	counted := res.Err == nil
	ticker := time.NewTicker(o.Poll)
	defer ticker.Stop()
	for {
		if counted {
			open, err := count(ctx, client, admin+StatsPath)
			if err != nil {
				res.Err, counted = err, false
			} else {
				res.Open = open
			}
		}
		res.Elapsed = time.Since(start)
		if Done(res.Elapsed, res.Open, counted, o.Minimum, o.Maximum) {
			return res
		}
		select {
		case <-ctx.Done():
			return res
		case <-ticker.C:
		}
	}
}

// Done says whether a drain that has lasted elapsed may end: never before
// minimum, then once no farm connection is open or Envoy cannot say (the
// admin failed: waiting longer would only guess), and at maximum anyway.
func Done(elapsed time.Duration, open int, counted bool, minimum, maximum time.Duration) bool {
	switch {
	case elapsed >= maximum:
		return true
	case elapsed < minimum:
		return false
	default:
		return !counted || open == 0
	}
}

func post(ctx context.Context, client *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", target, resp.Status)
	}
	return nil
}

func count(ctx context.Context, client *http.Client, target string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	return OpenConnections(resp.Body)
}

// OpenConnections sums the farm's downstream_cx_active gauges in the
// admin's text stats. A farm without HTTPS sites has no farm_https gauge,
// which counts as none open.
func OpenConnections(stats io.Reader) (int, error) {
	open := 0
	lines := bufio.NewScanner(stats)
	for lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), ": ")
		if !ok || !isFarmActive(name) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return 0, fmt.Errorf("stat %s: %w", name, err)
		}
		open += n
	}
	return open, lines.Err()
}

func isFarmActive(stat string) bool {
	for _, p := range farmStatPrefixes {
		if stat == "http."+p+".downstream_cx_active" {
			return true
		}
	}
	return false
}
