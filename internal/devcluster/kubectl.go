package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kubectl runs the project's pinned kubectl (bin/kubectl) against one cluster.
type Kubectl struct {
	Binary     string
	Kubeconfig string
}

// NewKubectl uses bin/kubectl of the repository at root.
func NewKubectl(root, kubeconfig string) Kubectl {
	return Kubectl{Binary: filepath.Join(root, "bin", "kubectl"), Kubeconfig: kubeconfig}
}

// Run returns kubectl's standard output; on failure the error holds its stderr.
func (k Kubectl) Run(ctx context.Context, args ...string) (string, error) {
	return k.RunWithInput(ctx, "", args...)
}

// RunWithInput is Run with stdin (for `apply -f -`).
func (k Kubectl) RunWithInput(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.Binary, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Poll calls check every interval until it returns nil or timeout passes,
// and then returns check's last error. A check that returns Stop(err) ends
// the poll at once with err (waiting on is pointless: a process exited).
func Poll(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		var stop stopPolling
		if errors.As(err, &stop) {
			return stop.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Stop wraps a check's error so that Poll returns it at once.
func Stop(err error) error { return stopPolling{err} }

type stopPolling struct{ error }

// WaitReady polls until every named webfarm.dev object (for example
// "webfarm/contoso") reports, for its current generation, Ready=True and not
// Degraded: everything it asked for runs.
func (k Kubectl) WaitReady(ctx context.Context, namespace string, timeout time.Duration, objects ...string) error {
	return Poll(ctx, timeout, 500*time.Millisecond, func() error {
		var pending []string
		for _, object := range objects {
			out, err := k.Run(ctx, "get", "-n", namespace, object, "-o",
				`jsonpath={.metadata.generation} {.status.observedGeneration} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Ready")].message}`)
			if err != nil {
				return err
			}
			if problem := readiness(out); problem != "" {
				pending = append(pending, object+": "+problem)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("not ready: %s", strings.Join(pending, "; "))
		}
		return nil
	})
}

// readiness reads WaitReady's "generation observedGeneration ready degraded
// message" line and says what is missing, or "" when the object is ready.
func readiness(line string) string {
	f := strings.Fields(line)
	switch {
	case len(f) < 2 || f[0] != f[1]:
		return "not reconciled yet"
	case len(f) < 4 || f[2] != "True":
		return "not Ready: " + strings.Join(f[2:], " ")
	case f[3] != "False":
		return "Degraded: " + strings.Join(f[4:], " ")
	}
	return ""
}
