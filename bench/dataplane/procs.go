package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/devcluster"
)

// niceness: every process of the benchmark yields the CPU to anything else
// running on this (shared) machine.
const niceness = "19"

// niced is the command line that runs argv under nice 19 and, when cpus is
// set, on those processors only (taskset); both exec the command, so the
// process keeps the PID that the benchmark started.
func niced(cpus string, argv []string) []string {
	out := []string{"nice", "-n", niceness}
	if cpus != "" {
		out = append(out, "taskset", "-c", cpus)
	}
	return append(out, argv...)
}

// server is a process the benchmark started (nginx or Envoy), in a process
// group of its own: Ctrl-C in the terminal reaches only the benchmark, which
// then stops it, and its workers go with it.
type server struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // why it exited, once done is closed
}

// startServer runs argv under nice, on the given processors ("": any), its
// output to logPath.
func startServer(name, logPath, cpus string, argv ...string) (*server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	argv = niced(cpus, argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		if s.err == nil {
			s.err = errors.New("exited")
		}
		close(s.done)
	}()
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// exited is nil while the process runs.
func (s *server) exited() error {
	select {
	case <-s.done:
		return fmt.Errorf("%s %w (log: %s)", s.name, s.err, s.log.Name())
	default:
		return nil
	}
}

// stop asks the process to end (SIGTERM: nginx's and Envoy's fast shutdown),
// then kills what is left of its process group.
func (s *server) stop(grace time.Duration) {
	defer s.log.Close()
	_ = syscall.Kill(s.pid(), syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(grace):
	}
	// The group's id is the process's PID; workers that outlived it go too.
	_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
	<-s.done
}

// cpuTime is the CPU time used so far by the server's process group (nginx's
// master and workers; Envoy's threads).
func (s *server) cpuTime() (time.Duration, error) {
	return groupCPU(s.pid())
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// groupCPU sums user and system time over the processes of a process group.
func groupCPU(pgid int) (time.Duration, error) {
	procs, err := groupStats(pgid)
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

// groupPIDs lists the processes of a process group.
func groupPIDs(pgid int) ([]int, error) {
	procs, err := groupStats(pgid)
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

// groupStats reads /proc/PID/stat of every process in a process group: the
// fields after the command name, by PID.
func groupStats(pgid int) (map[int][]string, error) {
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
		if len(f) >= 13 && f[2] == strconv.Itoa(pgid) { // f[2] is pgrp
			out[pid] = f
		}
	}
	return out, nil
}

// machineBusy is the CPU time all processors have spent not idle since boot.
func machineBusy() (time.Duration, error) {
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

// waitQuiet waits, at most maxWait, until the machine's processors are busy
// below threshold (in processors, over half a second): on a shared machine,
// a measurement that starts during someone else's burst of work measures
// that work. The benchmark's own servers are idle meanwhile.
func waitQuiet(ctx context.Context, threshold float64, maxWait time.Duration) error {
	const window = 500 * time.Millisecond
	deadline := time.Now().Add(maxWait)
	for time.Now().Before(deadline) {
		before, err := machineBusy()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
		after, err := machineBusy()
		if err != nil {
			return err
		}
		if (after-before).Seconds()/window.Seconds() < threshold {
			return nil
		}
	}
	return nil
}

// waitReady polls url until it answers 200, the deadline passes or the
// server exits.
func waitReady(ctx context.Context, s *server, url, host string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	err := devcluster.Poll(ctx, timeout, 50*time.Millisecond, func() error {
		if err := s.exited(); err != nil {
			return devcluster.Stop(err)
		}
		return get(ctx, client, url, host, nil)
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w", s.name, err)
	}
	return nil
}

// get fetches url with the given Host header and checks for 200 and, when
// want is set, the body.
func get(ctx context.Context, client *http.Client, url, host string, want []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if want != nil && string(body) != string(want) {
		return fmt.Errorf("GET %s: got %d bytes, not the file's %d", url, len(body), len(want))
	}
	return nil
}

// freePorts reserves n distinct loopback ports; they are released just before
// the servers bind them.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// servers holds every server the benchmark started; stopAll stops them, in
// reverse order of start, once.
type servers struct {
	mu   sync.Mutex
	list []*server
}

func (ss *servers) add(s *server) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = append(ss.list, s)
}

func (ss *servers) stopAll() {
	ss.mu.Lock()
	list := ss.list
	ss.list = nil
	ss.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].stop(stopGrace)
	}
}

// stopGrace is how long nginx and Envoy get to end by themselves.
const stopGrace = 5 * time.Second
