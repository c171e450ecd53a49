package benchkit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
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
