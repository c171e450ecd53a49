package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/devcluster"

	"webfarm.dev/operator/internal/testutil"
)

// Niceness: every process of a benchmark yields the CPU to anything else
// running on this (shared) machine.
const Niceness = 19

// Niced is the command line that runs argv under nice 19 and, when cpus is
// set, on those processors only (taskset); both exec the command, so the
// process keeps the PID that the benchmark started.
func Niced(cpus string, argv []string) []string {
	out := []string{"nice", "-n", strconv.Itoa(Niceness)}
	if cpus != "" {
		out = append(out, "taskset", "-c", cpus)
	}
	return append(out, argv...)
}

// Server is a process a benchmark started (nginx or Envoy), in a process
// group of its own: Ctrl-C in the terminal reaches only the benchmark, which
// then stops it, and its workers go with it.
type Server struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // why it exited, once done is closed
}

// StartServer runs argv under nice, on the given processors ("": any), its
// output to logPath.
func StartServer(name, logPath, cpus string, argv ...string) (*Server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	argv = Niced(cpus, argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s := &Server{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		if s.err == nil {
			s.err = errors.New("exited")
		}
		close(s.done)
	}()
	return s, nil
}

// StartNginx writes conf into dir and starts nginx on it (StartServer), its
// log in dir too.
func StartNginx(bin, name, dir, conf, cpus string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return StartServer(name, filepath.Join(dir, "nginx.log"), cpus, bin, "-e", "stderr", "-p", dir, "-c", path)
}

// PID is the process the benchmark started; its process group has the same id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Exited is nil while the process runs.
func (s *Server) Exited() error {
	select {
	case <-s.done:
		return fmt.Errorf("%s %w (log: %s)", s.name, s.err, s.log.Name())
	default:
		return nil
	}
}

// stopGrace is how long nginx and Envoy get to end by themselves.
const stopGrace = 5 * time.Second

// Stop asks the process to end (SIGTERM: nginx's and Envoy's fast shutdown),
// then kills what is left of its process group.
func (s *Server) Stop() {
	defer s.log.Close()
	_ = syscall.Kill(s.PID(), syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopGrace):
	}
	// The group's id is the process's PID; workers that outlived it go too.
	_ = syscall.Kill(-s.PID(), syscall.SIGKILL)
	<-s.done
}

// CPUTime is the CPU time used so far by the server's process group (nginx's
// master and workers; Envoy's threads).
func (s *Server) CPUTime() (time.Duration, error) {
	return GroupCPU(s.PID())
}

// WaitReady polls url (with the given Host header; "": the URL's) until it
// answers 200, the timeout passes or the server exits.
func WaitReady(ctx context.Context, s *Server, url, host string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	err := devcluster.Poll(ctx, timeout, 50*time.Millisecond, func() error {
		if err := s.Exited(); err != nil {
			return devcluster.Stop(err)
		}
		_, err := Get(ctx, client, url, host, nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w", s.name, err)
	}
	return nil
}

// Get fetches url with the given Host header ("": the URL's) and headers,
// checks for 200 and, when want is set, the body; it returns the response's
// headers.
func Get(ctx context.Context, client *http.Client, url, host string, headers map[string]string, want []byte) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Host = host
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if want != nil && string(body) != string(want) {
		return nil, fmt.Errorf("GET %s: got %d bytes, not the file's %d", url, len(body), len(want))
	}
	return resp.Header, nil
}

// FreePorts reserves n distinct loopback ports (testutil.FreePorts).
func FreePorts(n int) ([]int, error) { return testutil.FreePorts(n) }

// Placement is where a benchmark's processes run when pin is set on two
// processors or more: the client and the pool worker on the first (cpus),
// the hop it measures (a proxy, Envoy, the cache tier) on the last
// (hopCPUs, and hop as a number); unpinned, anywhere ("", "" and -1). On 2
// shared cores, where the scheduler puts the busy processes changes
// throughput by up to 2x from one run to the next; fixed places make runs
// comparable, and give each hop one core.
func Placement(pin bool) (cpus, hopCPUs string, hop int) {
	return placementOn(pin, runtime.NumCPU())
}

// placementOn is Placement on a machine of n processors.
func placementOn(pin bool, n int) (cpus, hopCPUs string, hop int) {
	if !pin || n < 2 {
		return "", "", -1
	}
	hop = n - 1
	return "0", strconv.Itoa(hop), hop
}

// BinDir is the repository's bin directory, where `make tools` and
// hack/install-tools.sh put the benchmarks' tools.
func BinDir() (string, error) {
	root, err := devcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// Binary is the named flag value, else the command on PATH, else bin/name;
// install says how to get it.
func Binary(flagValue, name, bin, install string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found on PATH nor in %s (run: %s)", name, bin, install)
	}
	return p, nil
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// ProcStats reads /proc/PID/stat of the processes that match: the fields
// after the command name (fields[1] is the parent's PID, fields[2] the
// process group, fields[11] and [12] user and system time), by PID.
func ProcStats(match func(pid int, fields []string) bool) (map[int][]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int][]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// The command name is in parentheses and may hold spaces: fields count from after it.
		_, rest, ok := strings.Cut(string(raw), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) >= 13 && match(pid, f) {
			out[pid] = f
		}
	}
	return out, nil
}

// SumCPU adds user and system time over the processes that match.
func SumCPU(match func(pid int, fields []string) bool) (time.Duration, error) {
	procs, err := ProcStats(match)
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, f := range procs {
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// inGroup matches the processes of a process group.
func inGroup(pgid int) func(int, []string) bool {
	id := strconv.Itoa(pgid)
	return func(_ int, f []string) bool { return f[2] == id } // f[2] is pgrp
}

// GroupCPU sums user and system time over the processes of a process group.
func GroupCPU(pgid int) (time.Duration, error) {
	return SumCPU(inGroup(pgid))
}

// GroupPIDs lists the processes of a process group.
func GroupPIDs(pgid int) ([]int, error) {
	procs, err := ProcStats(inGroup(pgid))
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(procs))
	for pid := range procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// MachineBusy is the CPU time all processors have spent not idle since boot.
func MachineBusy() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// WaitQuiet waits, at most maxWait, until the machine's processors are busy
// below threshold (in processors, over half a second): on a shared machine,
// a measurement that starts during someone else's burst of work measures
// that work. The benchmark's own servers are idle meanwhile.
func WaitQuiet(ctx context.Context, threshold float64, maxWait time.Duration) error {
	const window = 500 * time.Millisecond
	deadline := time.Now().Add(maxWait)
	for time.Now().Before(deadline) {
		before, err := MachineBusy()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
		after, err := MachineBusy()
		if err != nil {
			return err
		}
		if (after-before).Seconds()/window.Seconds() < threshold {
			return nil
		}
	}
	return nil
}
