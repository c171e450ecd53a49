package controllers_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/testutil"
)

// startGarbageCollector runs the real kube-controller-manager with only its
// garbage collector, which deletes objects whose owners are gone.
func startGarbageCollector(t *testing.T) {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(testutil.RepoRoot(), "bin", "k8s")
	}
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig", kubeconfigPath,
		"--controllers", "garbagecollector",
		"--leader-elect=false",
		"--secure-port=0",
		"--v=0",
	)
	logs, err := os.Create(filepath.Join(t.TempDir(), "kube-controller-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kube-controller-manager (run: make tools): %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(logs.Name())
			t.Logf("kube-controller-manager log:\n%s", out)
		}
	})
}

func TestDeletingAFarmItsPoolsAndPolicyRemovesEveryChild(t *testing.T) {
	startGarbageCollector(t)
	ns := newNamespace(t)
	farm, shop, blog, static := webFarm(ns, "web"), appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static")
	create(t, shop, blog, static, farm)

	children := []struct {
		obj  client.Object
		name string
	}{
		{&appsv1.Deployment{}, "web-frontend"}, {&corev1.ConfigMap{}, "web-frontend"}, {&corev1.Service{}, "web-frontend"}, {&corev1.ServiceAccount{}, "web-frontend"},
		{&appsv1.Deployment{}, "shop-pool"}, {&corev1.ConfigMap{}, "shop-pool"}, {&corev1.Service{}, "shop-pool"}, {&policyv1.PodDisruptionBudget{}, "shop-pool"},
		{&appsv1.Deployment{}, "blog-pool"},
		{&appsv1.Deployment{}, "static-cache"}, {&corev1.ConfigMap{}, "static-cache"}, {&corev1.Service{}, "static-cache"},
	}
	testutil.Eventually(t, timeout, func() error {
		for _, c := range children {
			if err := get(c.obj, ns, c.name); err != nil {
				return fmt.Errorf("%T %s: %w", c.obj, c.name, err)
			}
		}
		return nil
	})

	for _, o := range []client.Object{farm, shop, blog, static} {
		if err := k8sClient.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, timeout, func() error {
		for _, c := range children {
			if err := get(c.obj, ns, c.name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still exists (err=%v)", c.obj, c.name, err)
			}
		}
		return nil
	})
}
