// Package devcluster drives the clusters that `make demo` and the end-to-end
// tests run on: the local single-node Kubernetes of hack/cluster (started,
// reused or stopped), the project's images (hack/images), the operator's Helm
// chart, and kubectl. It runs the same scripts and tools a person would, so the
// demo, the tests and the docs exercise one path.
package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// LocalClusterDir is where hack/cluster keeps the local cluster's state.
func LocalClusterDir() string {
	if dir := os.Getenv("WEBFARM_CLUSTER_DIR"); dir != "" {
		return strings.TrimSuffix(dir, "/")
	}
	return "/var/lib/webfarm-cluster"
}

// LocalKubeconfig is the admin kubeconfig of the local cluster.
func LocalKubeconfig() string { return filepath.Join(LocalClusterDir(), "admin.kubeconfig") }

// Local is the local cluster as one caller sees it: whether that caller
// started it decides whether Stop stops it.
type Local struct {
	root        string
	out         io.Writer
	startedHere bool
	// addedNetworkPolicy: the cluster was running without NetworkPolicy
	// enforcement and StartLocalWith added it; Stop removes it again.
	addedNetworkPolicy bool
}

// LocalOptions choose what the local cluster runs beside Kubernetes itself.
type LocalOptions struct {
	// NetworkPolicy: the cluster enforces NetworkPolicies (up.sh
	// --network-policy: kube-router's network policy controller).
	NetworkPolicy bool
}

// StartLocal brings the local cluster up (hack/cluster/up.sh, which installs
// what is missing) unless it already answers, in which case it is reused and
// Stop leaves it running. Needs root. When up.sh fails, the returned Local is
// still there to Stop what it left.
func StartLocal(ctx context.Context, root string, out io.Writer) (*Local, error) {
	return StartLocalWith(ctx, root, out, LocalOptions{})
}

// StartLocalWith is StartLocal with the options given: a running cluster
// that lacks one of them gets it (up.sh adds it and leaves the rest as it
// is), and Stop takes it away again, leaving the cluster as it was.
func StartLocalWith(ctx context.Context, root string, out io.Writer, opts LocalOptions) (*Local, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the local cluster needs root (it creates network interfaces, mounts and iptables rules); " +
			"to use another cluster, set KUBECONFIG and pass --existing-cluster")
	}
	l := &Local{root: root, out: out}
	var args []string
	if opts.NetworkPolicy {
		args = append(args, "--network-policy")
	}
	if l.Running(ctx) {
		fmt.Fprintf(out, "reusing the local cluster that is already running (%s); it stays up afterwards\n", LocalKubeconfig())
		if !opts.NetworkPolicy || EnforcesNetworkPolicy(ctx) {
			return l, nil
		}
		l.addedNetworkPolicy = true
		return l, runScript(ctx, root, out, "hack/cluster/up.sh", args...)
	}
	// From here on Stop stops the cluster, also after a failed or interrupted start.
	l.startedHere = true
	return l, runScript(ctx, root, out, "hack/cluster/up.sh", args...)
}

// kubeRouterHealth is the health endpoint of the local cluster's kube-router
// (hack/cluster/lib.sh's KUBE_ROUTER_HEALTH_PORT).
const kubeRouterHealth = "http://127.0.0.1:20244/healthz"

// EnforcesNetworkPolicy tells whether the local cluster's NetworkPolicy
// enforcement (kube-router) runs and is healthy.
func EnforcesNetworkPolicy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, kubeRouterHealth, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Running tells whether the local cluster's API server answers /readyz.
func (l *Local) Running(ctx context.Context) bool {
	if _, err := os.Stat(LocalKubeconfig()); err != nil {
		return false
	}
	k := NewKubectl(l.root, LocalKubeconfig())
	_, err := k.Run(ctx, "get", "--raw", "/readyz", "--request-timeout=5s")
	return err == nil
}

// StartedHere tells whether StartLocal started the cluster (and Stop stops it).
func (l *Local) StartedHere() bool { return l.startedHere }

// Kubeconfig is the local cluster's admin kubeconfig.
func (l *Local) Kubeconfig() string { return LocalKubeconfig() }

// PushImages pushes image archives built by `make images` (tagged
// localhost/NAME:TAG) to the cluster's registry, where its containerd finds
// them under those names (hack/images/push.sh).
func (l *Local) PushImages(ctx context.Context, archives ...string) error {
	return runScript(ctx, l.root, l.out, "hack/images/push.sh", archives...)
}

// ServeConformanceImages pushes the images the Gateway API conformance
// suite's manifests name (registry.k8s.io/...) to the cluster's registry,
// which its containerd pulls that host's images from
// (hack/images/push-conformance.sh).
func (l *Local) ServeConformanceImages(ctx context.Context) error {
	return runScript(ctx, l.root, l.out, "hack/images/push-conformance.sh")
}

// Stop removes the local cluster (hack/cluster/down.sh) if StartLocal started
// it; on a cluster it reused, it stops only the NetworkPolicy enforcement it
// added. It ignores ctx's cancellation: teardown must run after an interrupt.
func (l *Local) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch {
	case l.startedHere:
		return runScript(ctx, l.root, l.out, "hack/cluster/down.sh")
	case l.addedNetworkPolicy:
		return runScript(ctx, l.root, l.out, "hack/cluster/down.sh", "--network-policy-only")
	}
	return nil
}

// Restart stops one component of the local cluster (kube-apiserver, etcd,
// kubelet, ...) and starts it again with the same command line
// (hack/cluster/restart.sh); for the API server it returns once /readyz
// answers again.
func (l *Local) Restart(ctx context.Context, component string) error {
	return runScript(ctx, l.root, l.out, "hack/cluster/restart.sh", component)
}

// KillContainer sends SIGKILL to a container's processes through the local
// cluster's containerd, as a crash would: nothing in the container gets to
// clean up, and the kubelet restarts it. containerID is the pod status's
// "containerd://<id>" or the bare id.
func (l *Local) KillContainer(ctx context.Context, containerID string) error {
	id := strings.TrimPrefix(containerID, "containerd://")
	cmd := exec.CommandContext(ctx, "ctr", "--address", filepath.Join(LocalClusterDir(), "containerd", "containerd.sock"),
		"--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("killing container %s: %w: %s", id, err, bytes.TrimSpace(out))
	}
	return nil
}

func runScript(ctx context.Context, root string, out io.Writer, script string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(root, script), args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", script, err)
	}
	return nil
}

// RepoRoot is the repository holding the working directory: the nearest
// folder upwards whose go.mod is this module's.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module webfarm.dev/operator")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run this inside the repository (go.mod of webfarm.dev/operator not found above the working directory)")
		}
		dir = parent
	}
}
