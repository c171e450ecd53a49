package benchkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/devcluster"
)

// Manager is bin/manager running as a child process of a benchmark, at the
// benchmark's own niceness.
type Manager struct {
	cmd                *exec.Cmd
	probeAddr, logPath string
	exited             chan struct{} // closed when the process has exited
	exitErr            error
}

// StartManager runs the manager at path with args, its health probe on
// probeAddr (which args must name), its output going to logPath.
func StartManager(path, logPath, probeAddr string, args ...string) (*Manager, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	m := &Manager{cmd: exec.Command(path, args...), probeAddr: probeAddr, logPath: logPath, exited: make(chan struct{})}
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// A process group of its own: a Ctrl-C in the terminal reaches the
	// benchmark, which then stops the manager itself. Pdeathsig stops it
	// should the benchmark die without cleaning up.
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

// PID is the manager's process ID.
func (m *Manager) PID() int { return m.cmd.Process.Pid }

// Running is an error once the manager has exited.
func (m *Manager) Running() error {
	select {
	case <-m.exited:
		return fmt.Errorf("the manager exited (%v); its log is %s", m.exitErr, m.logPath)
	default:
		return nil
	}
}

// WaitReady polls the manager's /readyz until it answers 200.
func (m *Manager) WaitReady(ctx context.Context, timeout time.Duration) error {
	return devcluster.Poll(ctx, timeout, 100*time.Millisecond, func() error {
		if err := m.Running(); err != nil {
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

// Stop sends SIGTERM and waits for the manager to exit, killing it after
// grace.
func (m *Manager) Stop(grace time.Duration) error {
	if m.Running() != nil {
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
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-m.exited
	return fmt.Errorf("the manager did not stop within %s of SIGTERM and was killed", grace)
}

// ManagerFlags are the manager's flags that a control-plane benchmark sets,
// and that its own baseline client gets too.
type ManagerFlags struct {
	QPS         float64
	Burst       int
	Concurrency int
}

// Register defines -kube-api-qps, -kube-api-burst and -concurrency on fs;
// sameFor says who else gets the client's rates, concurrency what the
// benchmark also does with it ("": nothing).
func (f *ManagerFlags) Register(fs *flag.FlagSet, sameFor, concurrency string) {
	fs.Float64Var(&f.QPS, "kube-api-qps", 1000, "the manager's --kube-api-qps; "+sameFor+" the same")
	fs.IntVar(&f.Burst, "kube-api-burst", 2000, "the manager's --kube-api-burst; "+sameFor+" the same")
	usage := "the manager's --concurrency"
	if concurrency != "" {
		usage += " " + concurrency
	}
	fs.IntVar(&f.Concurrency, "concurrency", 8, usage)
}

// Args are the manager's command-line arguments for the flags.
func (f ManagerFlags) Args() []string {
	return []string{
		"--kube-api-qps", strconv.FormatFloat(f.QPS, 'f', -1, 64),
		"--kube-api-burst", strconv.Itoa(f.Burst),
		"--concurrency", strconv.Itoa(f.Concurrency),
	}
}

// ManagerBinary finds the repository and the manager binary: path, or the
// repository's bin/manager when path is empty.
func ManagerBinary(path string) (root, manager string, err error) {
	if root, err = devcluster.RepoRoot(); err != nil {
		return "", "", err
	}
	if path == "" {
		path = filepath.Join(root, "bin", "manager")
	}
	if _, err := os.Stat(path); err != nil {
		return "", "", fmt.Errorf("%v (run: make build)", err)
	}
	return root, path, nil
}
