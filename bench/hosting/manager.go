package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/devcluster"
)

// manager is bin/manager running as a child process, at the benchmark's own
// niceness (the baseline client runs in the benchmark's process).
type manager struct {
	cmd                                      *exec.Cmd
	metricsAddr, probeAddr, xdsAddr, logPath string
	exited                                   chan struct{}
	exitErr                                  error
}

type managerFlags struct {
	qps         float64
	burst       int
	concurrency int
}

// startManager runs the manager against kubeconfig with its xDS server on
// loopback, where the benchmark's Envoy connects. It reads no Envoy
// statistics and has no activator: neither is part of routing.
func startManager(path, kubeconfig, logPath string, f managerFlags) (*manager, error) {
	ports, err := benchkit.FreePorts(4)
	if err != nil {
		return nil, err
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	m := &manager{metricsAddr: addr(ports[0]), probeAddr: addr(ports[1]), xdsAddr: addr(ports[2]), logPath: logPath, exited: make(chan struct{})}
	m.cmd = exec.Command(path,
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", addr(ports[0]),
		"--metrics-secure=false",
		"--health-probe-bind-address", m.probeAddr,
		"--xds-bind-address", m.xdsAddr,
		"--xds-address", m.xdsAddr,
		"--activator-bind-address", addr(ports[3]),
		"--activator-port", "0",
		"--frontend-stats-interval", "0",
		"--kube-api-qps", strconv.FormatFloat(f.qps, 'f', -1, 64),
		"--kube-api-burst", strconv.Itoa(f.burst),
		"--concurrency", strconv.Itoa(f.concurrency),
	)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// Its own process group (Ctrl-C reaches the benchmark, which stops it);
	// killed should the benchmark die without cleaning up.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go func() {
		m.exitErr = m.cmd.Wait()
		_ = log.Close()
		close(m.exited)
	}()
	return m, nil
}

func (m *manager) pid() int { return m.cmd.Process.Pid }

// running is an error once the manager has exited.
func (m *manager) running() error {
	select {
	case <-m.exited:
		return fmt.Errorf("the manager exited (%v); its log is %s", m.exitErr, m.logPath)
	default:
		return nil
	}
}

// waitReady polls the manager's /readyz until it answers 200.
func (m *manager) waitReady(ctx context.Context, timeout time.Duration) error {
	return devcluster.Poll(ctx, timeout, 100*time.Millisecond, func() error {
		if err := m.running(); err != nil {
			return devcluster.Stop(err)
		}
		resp, err := http.Get("http://" + m.probeAddr + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
}

// stop sends SIGTERM and waits, killing the manager after grace.
func (m *manager) stop(grace time.Duration) error {
	if m.running() != nil {
		return nil
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-m.exited:
		return nil
	case <-time.After(grace):
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
	return fmt.Errorf("the manager did not stop within %s of SIGTERM and was killed", grace)
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
