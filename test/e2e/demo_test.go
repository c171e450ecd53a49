//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `make demo` on the running local cluster: it reuses the cluster, loads the
// images, upgrades the chart, serves the samples (checking the www pool over
// HTTP itself) and on exit deletes its namespace and waits for its pods,
// leaving the cluster and the release it found.
func TestTheDemoServesTheSamplesAndCleansUp(t *testing.T) {
	demo := filepath.Join(t.TempDir(), "demo")
	build := exec.Command("go", "build", "-o", demo, "./hack/demo")
	build.Dir = cluster.Root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	namespace := "e2e-demo"
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, demo, "--once", "--namespace", namespace)
	cmd.Dir = cluster.Root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{"reusing the local cluster", "The sample farm is Ready", "curl -s -H 'Host: www.contoso.example' http://10.200.0.1:", "deleting namespace " + namespace} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "uninstalling the operator") || strings.Contains(string(out), "stopping the local cluster") {
		t.Errorf("the demo removed what it did not create:\n%s", out)
	}
	// Its pods are gone; the namespace object goes on its own once the
	// namespace controller looks again (after the pools' grace period).
	if phase, _ := cluster.Kubectl.Run(t.Context(), "get", "namespace", namespace, "--ignore-not-found", "-o", "jsonpath={.status.phase}"); phase != "" && phase != "Terminating" {
		t.Errorf("the demo left namespace %s %s", namespace, phase)
	}
	if pods, _ := cluster.Kubectl.Run(t.Context(), "get", "pods", "-n", namespace, "-o", "name"); strings.TrimSpace(pods) != "" {
		t.Errorf("the demo left pods behind: %s", pods)
	}
}
