package testutil

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"webfarm.dev/operator/internal/scheme"
)

// Scheme knows the built-in kinds and the webfarm.dev kinds.
func Scheme() *runtime.Scheme { return scheme.New() }

// ControlPlane is a real kube-apiserver and etcd (envtest) with the CRDs installed.
type ControlPlane struct {
	env    *envtest.Environment
	Config *rest.Config
}

// StartControlPlane starts kube-apiserver and etcd from KUBEBUILDER_ASSETS (the
// Makefile points it at bin/k8s, which hack/install-tools.sh fills).
func StartControlPlane() (*ControlPlane, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(RepoRoot(), "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("kube-apiserver not found in %s (run: make tools): %w", assets, err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start can fail after both processes run (installing the CRDs, say).
		_ = env.Stop()
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	return &ControlPlane{env: env, Config: cfg}, nil
}

// KubeConfig returns a kubeconfig of a cluster administrator, for kubectl and
// for the operator run as its own process.
func (c *ControlPlane) KubeConfig() ([]byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return user.KubeConfig()
}

// Stop stops the control plane.
func (c *ControlPlane) Stop() error { return c.env.Stop() }
