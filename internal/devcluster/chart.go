package devcluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Release is one installation of charts/webfarm-operator.
type Release struct {
	Name      string
	Namespace string
	// Set holds extra `helm --set` values (key=value).
	Set []string
	// PodAnnotations go on the operator's pods: a changed value rolls them.
	PodAnnotations map[string]string
}

// DefaultRelease is the installation the docs, the demo and the tests use.
func DefaultRelease() Release { return Release{Name: "webfarm", Namespace: "webfarm-system"} }

// Install creates the release's namespace with the restricted Pod Security
// profile enforced, applies the chart's CRDs (which `helm upgrade` leaves
// alone), then runs `helm upgrade --install --wait`; an existing release
// keeps its values, with r.Set and r.PodAnnotations on top. It reports
// whether the release is new (so that the caller knows whether to uninstall it).
func (r Release) Install(ctx context.Context, root string, k Kubectl, out io.Writer) (created bool, err error) {
	if err := EnsureNamespace(ctx, k, r.Namespace); err != nil {
		return false, err
	}
	// Helm installs a chart's CRDs but never upgrades them: apply them first,
	// as an upgrade by hand would.
	crds := filepath.Join(root, "charts", "webfarm-operator", "crds")
	if _, err := k.Run(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager", "helm", "-f", crds); err != nil {
		return false, err
	}
	existed := r.helm(ctx, root, k, io.Discard, "status", r.Name) == nil
	args := []string{"upgrade", "--install", r.Name, filepath.Join(root, "charts", "webfarm-operator"),
		"--wait", "--timeout", "3m"}
	if existed {
		// Keep the values the release was installed with (the e2e suite's
		// Prometheus, a user's settings): a second caller only adds its own.
		args = append(args, "--reset-then-reuse-values")
	}
	for _, s := range r.Set {
		args = append(args, "--set", s)
	}
	for _, key := range slices.Sorted(maps.Keys(r.PodAnnotations)) {
		args = append(args, "--set-string", "podAnnotations."+strings.ReplaceAll(key, ".", `\.`)+"="+r.PodAnnotations[key])
	}
	if err := r.helm(ctx, root, k, out, args...); err != nil {
		return false, err
	}
	return !existed, nil
}

// Uninstall removes the release (the CRDs stay, as with every Helm chart).
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

// OperatorImageID names the operator image that `make images` built last (its
// archive is keyed by its inputs), so installing with it as a pod annotation
// rolls the operator when the image under the same tag changed.
func OperatorImageID(root string) (string, error) {
	target, err := os.Readlink(filepath.Join(root, "bin", "images", "operator.tar"))
	if err != nil {
		return "", fmt.Errorf("no operator image archive (run: make images): %w", err)
	}
	return strings.TrimSuffix(filepath.Base(target), ".tar"), nil
}
