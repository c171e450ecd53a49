// Command demo is `make demo` on the embedded default: a local control plane
// (kube-apiserver and etcd built from upstream), the operator running against
// it, and config/samples/ applied. It prints what exists and how to look at it
// with kubectl, stays up until Ctrl-C, and then removes everything it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/testutil"
)

func main() {
	once := flag.Bool("once", false, "exit after the samples are reconciled instead of waiting for Ctrl-C")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := testutil.RepoRoot()
	if err := run(ctx, root, filepath.Join(root, "bin", "manager"), *once); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, managerBinary string, once bool) (err error) {
	dir := filepath.Join(root, ".demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("starting a local control plane (kube-apiserver and etcd)")
	cp, err := testutil.StartControlPlane()
	if err != nil {
		return err
	}
	defer func() {
		step("stopping the control plane")
		err = errors.Join(err, cp.Stop())
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	raw, err := cp.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		return err
	}

	metricsAddr, err := freeLoopbackAddress()
	if err != nil {
		return err
	}
	step("starting the operator")
	manager := exec.Command(managerBinary,
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0",
	)
	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	manager.Stdout, manager.Stderr = logFile, logFile
	if err := manager.Start(); err != nil {
		return fmt.Errorf("starting bin/manager (run: make build): %w", err)
	}
	defer func() {
		step("stopping the operator")
		_ = manager.Process.Signal(syscall.SIGTERM)
		_ = manager.Wait()
	}()

	kubectl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	step("applying config/samples/")
	out, err := kubectl("apply", "-f", filepath.Join(root, "config", "samples"))
	if err != nil {
		return err
	}
	fmt.Print(out)

	step("waiting for the operator to reconcile every sample")
	if err := waitReconciled(ctx, kubectl, 60*time.Second); err != nil {
		return fmt.Errorf("%w (operator log: %s)", err, filepath.Join(dir, "operator.log"))
	}
	out, err = kubectl("get", "webfarms,apppools,cachepolicies")
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(out)
	out, err = kubectl("get", "deployments,services,configmaps,poddisruptionbudgets", "-l", "app.kubernetes.io/managed-by=webfarm-operator")
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(out)
	fmt.Printf(`
The control plane is up and the operator reconciles the samples.
In another terminal:

  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get webfarms,apppools,cachepolicies       # short: kubectl get wf,ap,cp
  kubectl describe webfarm contoso                  # conditions and events
  kubectl get deployment contoso-frontend -o yaml   # the generated Envoy frontend
  kubectl get configmap www-pool -o jsonpath='{.data.nginx\.conf}'
  kubectl explain apppool.spec.queue                # every field is documented
  kubectl edit apppool www                          # a change rolls the pool's pods
  curl -s http://%s/metrics | grep controller_runtime_reconcile_total

This control plane runs no nodes, so pods are not started and Ready stays
False with reason Progressing ("0/2 replicas ready").

Press Ctrl-C to stop and clean up.
`, kubeconfig, filepath.Join(root, "bin"), metricsAddr)
	if once {
		return nil
	}
	<-ctx.Done()
	fmt.Println()
	return nil
}

// waitReconciled polls until every sample's status describes its current generation.
func waitReconciled(ctx context.Context, kubectl func(...string) (string, error), timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := kubectl("get", "webfarms,apppools,cachepolicies", "-o",
			`jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.generation} {.status.observedGeneration}{"\n"}{end}`)
		if err == nil {
			pending := pendingObjects(out)
			if len(pending) == 0 {
				return nil
			}
			err = fmt.Errorf("not reconciled yet: %s", strings.Join(pending, ", "))
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func pendingObjects(listing string) []string {
	var pending []string
	lines := strings.Split(strings.TrimSpace(listing), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != f[2] {
			pending = append(pending, line)
		}
	}
	if len(lines) < 4 { // the samples hold one farm, two pools and one policy
		pending = append(pending, "samples not all listed yet")
	}
	return pending
}

func freeLoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func step(msg string) { fmt.Printf("\033[1;34m==>\033[0m %s\n", msg) }
