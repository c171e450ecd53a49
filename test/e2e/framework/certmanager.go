package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/devcluster"
)

// CertManagerNamespace is where InstallCertManager installs cert-manager.
const CertManagerNamespace = "cert-manager"

// certManagerImages are the images hack/images/build.sh builds of
// cert-manager's components, by the chart's values that name them.
var certManagerImages = map[string]string{
	"image":            "cert-manager-controller",
	"webhook.image":    "cert-manager-webhook",
	"cainjector.image": "cert-manager-cainjector",
}

// InstallCertManager installs cert-manager as its users do, with `helm
// upgrade --install` of its chart (crds.enabled=true), its images (built
// from its module by `make images`) pushed to the cluster's registry first;
// once per run, for the tests that need it. The chart's post-install API
// check is off: its image (cmctl) is not built here; the caller polls for
// what it needs instead.
func (c *Cluster) InstallCertManager(t testing.TB) {
	t.Helper()
	c.certManager.once.Do(func() { c.certManager.err = c.installCertManager(t.Context()) })
	if c.certManager.err != nil {
		t.Fatal(c.certManager.err)
	}
}

func (c *Cluster) installCertManager(ctx context.Context) error {
	started := time.Now()
	archives := make([]string, 0, len(certManagerImages))
	for _, image := range certManagerImages {
		archives = append(archives, c.imageArchive(image))
	}
	if err := c.local.PushImages(ctx, archives...); err != nil {
		return err
	}
	if err := devcluster.EnsureNamespace(ctx, c.Kubectl, CertManagerNamespace); err != nil {
		return err
	}
	chart, err := filepath.EvalSymlinks(filepath.Join(c.Root, "bin", "cert-manager", "chart"))
	if err != nil {
		return fmt.Errorf("cert-manager's chart: %w (hack/install-tools.sh cert-manager)", err)
	}
	args := []string{"--kubeconfig", c.Kubectl.Kubeconfig, "--namespace", CertManagerNamespace,
		"upgrade", "--install", "cert-manager", chart, "--wait", "--timeout", "4m",
		"--set", "crds.enabled=true", "--set", "startupapicheck.enabled=false"}
	for value, image := range certManagerImages {
		args = append(args, "--set", value+".repository=localhost/webfarm-"+image)
	}
	helm := exec.CommandContext(ctx, filepath.Join(c.Root, "bin", "helm"), args...)
	helm.Stdout, helm.Stderr = c.out, c.out
	helm.WaitDelay = 5 * time.Second
	if err := helm.Run(); err != nil {
		logs, _ := c.Kubectl.Run(ctx, "logs", "-n", CertManagerNamespace, "-l", "app.kubernetes.io/instance=cert-manager",
			"--all-containers", "--prefix", "--tail=20")
		return fmt.Errorf("helm %s: %w\ncert-manager's logs:\n%s", strings.Join(args[4:], " "), err, logs)
	}
	c.certManager.installed = true
	fmt.Fprintf(c.out, "e2e: cert-manager installed in %s\n", time.Since(started).Round(100*time.Millisecond))
	return nil
}

// uninstallCertManager removes what InstallCertManager installed, from a
// cluster that outlives the run (the CRDs stay, as the chart keeps them).
func (c *Cluster) uninstallCertManager(ctx context.Context) error {
	if !c.certManager.installed {
		return nil
	}
	helm := exec.CommandContext(ctx, filepath.Join(c.Root, "bin", "helm"), "--kubeconfig", c.Kubectl.Kubeconfig,
		"--namespace", CertManagerNamespace, "uninstall", "cert-manager", "--wait", "--timeout", "2m")
	helm.Stdout, helm.Stderr = c.out, c.out
	if err := helm.Run(); err != nil {
		return fmt.Errorf("helm uninstall cert-manager: %w", err)
	}
	return devcluster.DeleteNamespace(ctx, c.Kubectl, CertManagerNamespace, 2*time.Minute)
}
