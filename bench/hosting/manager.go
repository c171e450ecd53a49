package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// manager is bin/manager running as a child process, with the addresses
// the benchmark reaches it at.
type manager struct {
	*benchkit.Manager
	metricsAddr, xdsAddr string
}

// startManager runs the manager against kubeconfig with its xDS server on
// loopback, where the benchmark's Envoy connects. It reads no Envoy
// statistics and has no activator: neither is part of routing.
func startManager(path, kubeconfig, logPath string, f benchkit.ManagerFlags) (*manager, error) {
	ports, err := benchkit.FreePorts(4)
	if err != nil {
		return nil, err
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	m := &manager{metricsAddr: addr(ports[0]), xdsAddr: addr(ports[2])}
	probeAddr := addr(ports[1])
	m.Manager, err = benchkit.StartManager(path, logPath, probeAddr, append([]string{
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", m.metricsAddr,
		"--metrics-secure=false",
		"--health-probe-bind-address", probeAddr,
		"--xds-bind-address", m.xdsAddr,
		"--xds-address", m.xdsAddr,
		"--activator-bind-address", addr(ports[3]),
		"--activator-port", "0",
		"--frontend-stats-interval", "0",
	}, f.Args()...)...)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// procBytes reads a size from /proc/<pid>/status (VmRSS, VmHWM).
func procBytes(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, key+": %d kB", &kb); err == nil {
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// reconcileStats are one controller's reconciles and the time they took.
type reconcileStats struct {
	count   int
	seconds float64
}

// scrapeReconciles saves the manager's metrics to path and sums each
// controller's reconciles (controller_runtime_reconcile_time_seconds).
func scrapeReconciles(ctx context.Context, m *manager, path string) (map[string]reconcileStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return nil, err
	}
	return parseReconciles(string(body)), nil
}

// parseReconciles reads the reconcile-time histogram's sums and counts by
// controller from Prometheus' text format.
func parseReconciles(text string) map[string]reconcileStats {
	out := map[string]reconcileStats{}
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(line, `{controller="`)
		if !ok {
			continue
		}
		controller, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		s := out[controller]
		switch name {
		case "controller_runtime_reconcile_time_seconds_sum":
			s.seconds = v
		case "controller_runtime_reconcile_time_seconds_count":
			s.count = int(v)
		default:
			continue
		}
		out[controller] = s
	}
	return out
}
