package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controlPlane is a real kube-apiserver and etcd (envtest) with the CRDs
// installed. It is internal/testutil.StartControlPlane with two changes the
// benchmark needs: a Service range large enough for thousands of ClusterIP
// Services (envtest's default 10.0.0.0/24 holds 254), and the control plane's
// own logs written to files instead of being dropped.
type controlPlane struct {
	env        *envtest.Environment
	config     *rest.Config
	kubeconfig string
	logs       []*os.File
}

// startControlPlane starts a control plane whose logs and kubeconfig go to dir.
func startControlPlane(root, dir, serviceCIDR string) (*controlPlane, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("kube-apiserver not found in %s (run: make tools): %w", assets, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cp := &controlPlane{}
	apiLog, err := cp.logFile(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	etcdLog, err := cp.logFile(filepath.Join(dir, "etcd.log"))
	if err != nil {
		cp.closeLogs()
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	api := env.ControlPlane.GetAPIServer()
	api.Out, api.Err = apiLog, apiLog
	api.Configure().Set("service-cluster-ip-range", serviceCIDR)
	env.ControlPlane.Etcd = &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	cfg, err := env.Start()
	if err != nil {
		// Start can fail after both processes run (installing the CRDs, say).
		_ = env.Stop()
		cp.closeLogs()
		return nil, fmt.Errorf("starting the control plane (logs in %s): %w", dir, err)
	}
	cp.env, cp.config = env, cfg
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, env.KubeConfig, 0o600); err != nil {
		_ = cp.stop()
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return cp, nil
}

func (cp *controlPlane) logFile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	cp.logs = append(cp.logs, f)
	return f, nil
}

func (cp *controlPlane) closeLogs() {
	for _, f := range cp.logs {
		_ = f.Close()
	}
	cp.logs = nil
}

// stop stops kube-apiserver and etcd (envtest signals the processes it started).
func (cp *controlPlane) stop() error {
	defer cp.closeLogs()
	if cp.env == nil {
		return nil
	}
	return cp.env.Stop()
}
