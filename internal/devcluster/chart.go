package devcluster

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Release is one installation of the operator's chart.
type Release struct {
	Name      string
	Namespace string
	// From is the published release to install (its chart from the
	// registry, its images pinned by digest). Empty: the chart in the
	// repository with its default images.
	From Published
	// Set holds extra `helm --set` values (key=value).
	Set []string
}

// DefaultRelease is the installation the docs, the demo and the tests use.
func DefaultRelease() Release { return Release{Name: "webfarm", Namespace: "webfarm-system"} }

// Install creates the release's namespace with the restricted Pod Security
// profile enforced, then runs `helm upgrade --install --wait` of the chart
// (which installs and upgrades the CRDs with it); an existing release keeps
// its values, with r.From's images and r.Set on top. It reports whether the
// release is new (so that the caller knows whether to uninstall it).
func (r Release) Install(ctx context.Context, root string, k Kubectl, out io.Writer) (created bool, err error) {
	if err := EnsureNamespace(ctx, k, r.Namespace); err != nil {
		return false, err
	}
	existed := r.helm(ctx, root, k, io.Discard, "status", r.Name) == nil
	args := []string{"upgrade", "--install", r.Name}
	if r.From.Chart != "" {
		args = append(args, r.From.Chart, "--version", r.From.Version)
		if r.From.PlainHTTP() {
			args = append(args, "--plain-http")
		}
	} else {
		args = append(args, filepath.Join(root, "charts", "webfarm-operator"))
	}
	args = append(args, "--wait", "--timeout", "3m")
	if existed {
		// Keep the values the release was installed with (the e2e suite's
		// Prometheus, a user's settings): a second caller only adds its own.
		args = append(args, "--reset-then-reuse-values")
	}
	for _, s := range append(r.From.Values(), r.Set...) {
		args = append(args, "--set", s)
	}
	if err := r.helm(ctx, root, k, out, args...); err != nil {
		return false, err
	}
	return !existed, nil
}

// Uninstall removes the release (the CRDs stay: the chart keeps them).
func (r Release) Uninstall(ctx context.Context, root string, k Kubectl, out io.Writer) error {
	return r.helm(ctx, root, k, out, "uninstall", r.Name, "--wait", "--timeout", "2m")
}

func (r Release) helm(ctx context.Context, root string, k Kubectl, out io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "helm"),
		append([]string{"--kubeconfig", k.Kubeconfig, "--namespace", r.Namespace}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("helm %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// EnsureNamespace creates a namespace (if missing) that enforces the
// restricted Pod Security profile: every pod in it must meet it or is refused.
// A namespace of that name still terminating (DeleteNamespace returns before
// it is gone) is waited out first, for up to namespaceGoneTimeout.
func EnsureNamespace(ctx context.Context, k Kubectl, name string) error {
	err := Poll(ctx, namespaceGoneTimeout, time.Second, func() error {
		phase, err := k.Run(ctx, "get", "namespace", name, "--ignore-not-found", "-o", "jsonpath={.status.phase}")
		if err != nil {
			return err
		}
		if strings.TrimSpace(phase) == "Terminating" {
			return fmt.Errorf("namespace %s is still terminating", name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = k.RunWithInput(ctx, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
`, name), "apply", "-f", "-")
	return err
}

// namespaceGoneTimeout bounds the wait for a terminating namespace: the
// namespace controller looks at it again after its pods' longest grace
// period (a pool's shutdown time limit, 90 s by default).
const namespaceGoneTimeout = 3 * time.Minute

// DeleteNamespace deletes a namespace and waits, up to timeout, until its
// pods are gone (so the node's CPU is free again), not for the namespace
// itself: the namespace controller rechecks a namespace only after its
// pods' grace periods, however soon they stopped. EnsureNamespace waits out
// the rest when the name is used again.
func DeleteNamespace(ctx context.Context, k Kubectl, name string, timeout time.Duration) error {
	if _, err := k.Run(ctx, "delete", "namespace", name, "--ignore-not-found", "--wait=false"); err != nil {
		return err
	}
	return Poll(ctx, timeout, 500*time.Millisecond, func() error {
		out, err := k.Run(ctx, "get", "pods", "-n", name, "-o", "name")
		if err != nil {
			return err
		}
		if pods := strings.Fields(out); len(pods) > 0 {
			return fmt.Errorf("%d pods left: %v", len(pods), pods)
		}
		return nil
	})
}
