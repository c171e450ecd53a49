package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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

// ControlPlaneOption changes how the control plane starts.
type ControlPlaneOption func(*envtest.Environment) error

// WithAuditLog makes the API server write an audit event of every request
// (metadata only) to path, one JSON object per line: which user did what.
func WithAuditLog(path string) ControlPlaneOption {
	return func(env *envtest.Environment) error {
		policy := filepath.Join(filepath.Dir(path), "audit-policy.yaml")
		rules := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
		if err := os.WriteFile(policy, []byte(rules), 0o600); err != nil {
			return err
		}
		env.ControlPlane.GetAPIServer().Configure().
			Append("audit-policy-file", policy).
			Append("audit-log-path", path).
			Append("audit-log-mode", "blocking")
		return nil
	}
}

// WithCRDs installs the CRDs of dir instead of the current ones
// (config/crd/bases): a cluster where objects were stored under earlier CRDs.
func WithCRDs(dir string) ControlPlaneOption {
	return func(env *envtest.Environment) error {
		env.CRDDirectoryPaths = []string{dir}
		return nil
	}
}

// WithoutCRDs starts the control plane without the project's CRDs, for a
// test that installs them the way users do (the Helm chart).
func WithoutCRDs() ControlPlaneOption {
	return func(env *envtest.Environment) error {
		env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = nil, false
		return nil
	}
}

// InstallCRDs creates or updates the CRDs of dir, as an upgrade of the
// operator's chart does.
func (c *ControlPlane) InstallCRDs(dir string) error {
	_, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	return err
}

// StartControlPlane starts kube-apiserver and etcd from KUBEBUILDER_ASSETS (the
// Makefile points it at bin/k8s, which hack/install-tools.sh fills).
func StartControlPlane(opts ...ControlPlaneOption) (*ControlPlane, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(RepoRoot(), "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("kube-apiserver not found in %s (run: make tools): %w", assets, err)
	}
	gatewayAPI, err := GatewayAPICRDs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases"), gatewayAPI},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	for _, o := range opts {
		if err := o(env); err != nil {
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		// Start can fail after both processes run (installing the CRDs, say).
		_ = env.Stop()
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	return &ControlPlane{env: env, Config: cfg}, nil
}

// GatewayAPICRDs is the folder of Gateway API's standard channel CRDs in
// the module go.mod pins (the Go module cache holds it once the module is
// downloaded, as building the operator does).
func GatewayAPICRDs() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		return "", fmt.Errorf("finding the sigs.k8s.io/gateway-api module (go mod download): %v", err)
	}
	return filepath.Join(dir, "config", "crd", "standard"), nil
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
