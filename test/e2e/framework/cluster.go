// Package framework is what the end-to-end tests stand on: the local cluster
// brought up once per run with the operator installed by its Helm chart and a
// Prometheus Operator's Prometheus scraping it, and helpers to apply manifests, wait for conditions
// with deadlines, send HTTP from the host and from a client pod, and query
// Prometheus. Each helper fails the test with what it saw.
package framework

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/devcluster"
)

//go:embed manifests/prometheus.yaml
var prometheusManifest string

// Cluster is the cluster one run of the suite works on.
type Cluster struct {
	Root          string
	Kubectl       devcluster.Kubectl
	Release       devcluster.Release
	PrometheusURL string

	local        *devcluster.Local
	options      Options
	releaseIsNew bool
	out          io.Writer
	client       struct { // made on first use (Client)
		once sync.Once
		c    client.Client
		err  error
	}
	certManager struct { // installed by the first test that asks (InstallCertManager)
		once      sync.Once
		err       error
		installed bool
	}
	leaving struct { // the tests' namespaces, deleted without waiting
		sync.Mutex
		names []string
	}
}

// Options choose what Start sets up beside the operator's release.
type Options struct {
	// Monitoring runs a Prometheus (with the Prometheus Operator) that scrapes
	// the release through the chart's monitoring objects: the autoscaler, the
	// CPU monitor and idle shutdown read it.
	Monitoring bool
	// SignedRelease signs the published release and verifies its signatures
	// and SBOMs before installing it, as a user's admission policy would.
	SignedRelease bool
	// NetworkPolicy: the cluster enforces NetworkPolicies (kube-router's
	// network policy controller), so the chart's and the pools' policies
	// hold as on a user's cluster.
	NetworkPolicy bool
}

// Start brings the local cluster up (or reuses a running one), publishes a
// signed release to its registry (images and chart, as `make release` does),
// installs the operator from there with `helm install oci://...` with its
// monitoring objects and the Gateway API's CRDs, and runs a Prometheus with
// the Prometheus Operator that finds them. Call Stop whatever happens, also
// after a failed Start.
func Start(ctx context.Context, out io.Writer) (*Cluster, error) {
	return StartWith(ctx, out, Options{Monitoring: true, SignedRelease: true, NetworkPolicy: true})
}

// StartWith is Start with only what opts ask for beside the release (the
// Gateway API conformance run needs neither Prometheus nor signatures).
func StartWith(ctx context.Context, out io.Writer, opts Options) (*Cluster, error) {
	root, err := devcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Root: root, Release: devcluster.DefaultRelease(), options: opts, out: out}
	step := func(format string, args ...any) { fmt.Fprintf(out, "e2e: "+format+"\n", args...) }

	started := time.Now()
	step("starting the local cluster")
	if c.local, err = devcluster.StartLocalWith(ctx, root, out, devcluster.LocalOptions{NetworkPolicy: opts.NetworkPolicy}); err != nil {
		return c, err
	}
	c.Kubectl = devcluster.NewKubectl(root, c.local.Kubeconfig())
	// The suite's monitoring does not need the release: it is set up while
	// the release is published. The chart's ServiceMonitors, PodMonitor and
	// PrometheusRule need the Prometheus Operator's CRDs, so the chart waits
	// for it.
	monitoring := make(chan error, 1)
	if opts.Monitoring {
		go func() { monitoring <- c.startMonitoring(ctx, step) }()
	} else {
		monitoring <- nil
	}
	step("publishing the release to the local registry (hack/release.sh)")
	if c.Release.From, err = devcluster.Publish(ctx, root, "", opts.SignedRelease, out); err != nil {
		<-monitoring
		return c, err
	}
	if opts.SignedRelease {
		step("verifying the release's signatures and SBOMs (hack/verify-release.sh)")
		if err := devcluster.VerifyPublished(ctx, root, out); err != nil {
			<-monitoring
			return c, err
		}
	}
	if err := <-monitoring; err != nil {
		return c, err
	}
	c.Release.Set = append(c.Release.Set, gatewayAPIValues()...)
	c.Release.Set = append(c.Release.Set, controlPlaneValues()...)
	if opts.Monitoring {
		c.Release.Set = append(c.Release.Set, monitoringValues()...)
	}
	step("installing the chart: helm install %s --version %s", c.Release.From.Chart, c.Release.From.Version)
	if c.releaseIsNew, err = c.Release.Install(ctx, root, c.Kubectl, out); err != nil {
		return c, err
	}
	step("waiting for the CRDs (the operator's and the Gateway API's) to be served")
	if _, err := c.Kubectl.Run(ctx, "wait", "--for=condition=Established", "--timeout=1m", "crd", "--all"); err != nil {
		return c, err
	}
	if opts.Monitoring {
		step("waiting for Prometheus")
		if err := c.waitForPrometheus(ctx); err != nil {
			return c, err
		}
	}
	step("ready in %s", time.Since(started).Round(100*time.Millisecond))
	return c, nil
}

// gatewayAPIValues install the Gateway API's standard channel with the
// release (the chart's default, stated: the suite's Gateways and routes
// need it whatever the default becomes).
func gatewayAPIValues() []string { return []string{"gatewayAPI.crds.enabled=true"} }

// ControlCertificateLifetime is the farms' control identities' lifetime on
// the suite's cluster: short, so that a test sees one renewed (at two thirds
// of it) while it runs, and long enough for the kubelet, which refreshes a
// Secret volume within about a minute, to deliver each renewal well before
// the identity it replaces expires.
const ControlCertificateLifetime = 6 * time.Minute

func controlPlaneValues() []string {
	return []string{"controlPlane.certificateLifetime=" + ControlCertificateLifetime.String()}
}

// Local is the local cluster the run works on.
func (c *Cluster) Local() *devcluster.Local { return c.local }

// Stop removes what Start created: the whole local cluster if Start started
// it, else Prometheus, (if new) the chart's release and (if added) the
// NetworkPolicy enforcement. It runs on its own
// deadline so that it also works after an interrupt.
func (c *Cluster) Stop() error {
	if c == nil || c.local == nil {
		return nil
	}
	fmt.Fprintln(c.out, "e2e: tearing down")
	if c.local.StartedHere() {
		return c.local.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var errs []error
	// A cluster that outlives the run is left as it was found: the tests'
	// namespaces are waited out (their pods drain) before Prometheus and a
	// release the run installed go.
	c.leaving.Lock()
	for _, ns := range c.leaving.names {
		errs = append(errs, devcluster.DeleteNamespace(ctx, c.Kubectl, ns, 2*time.Minute))
	}
	c.leaving.Unlock()
	if c.options.Monitoring {
		if manifest, err := c.prometheusManifest(); err != nil {
			errs = append(errs, err)
		} else if _, err := c.Kubectl.RunWithInput(ctx, manifest, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, devcluster.DeleteNamespace(ctx, c.Kubectl, monitoringNamespace, 2*time.Minute))
	}
	errs = append(errs, c.uninstallCertManager(ctx))
	if c.releaseIsNew {
		errs = append(errs, c.Release.Uninstall(ctx, c.Root, c.Kubectl, c.out))
	}
	// Last, the NetworkPolicy enforcement, if the run added it.
	errs = append(errs, c.local.Stop())
	return errors.Join(errs...)
}

// imageArchive is the archive `make images` built for one of the tests' images.
func (c *Cluster) imageArchive(name string) string {
	return filepath.Join(c.Root, "bin", "images", name+".tar")
}

// PublishPrevious publishes the previous release (hack/previous-release.env)
// to the local registry, for upgrade tests.
func (c *Cluster) PublishPrevious(t testing.TB) devcluster.Published {
	t.Helper()
	published, err := devcluster.PublishPrevious(t.Context(), c.Root, c.out)
	if err != nil {
		t.Fatalf("publishing the previous release: %v", err)
	}
	return published
}

// InstallRelease runs `helm upgrade --install` of r's published chart over
// the suite's release, keeping the suite's values; it returns once the
// operator's rollout is done.
func (c *Cluster) InstallRelease(t testing.TB, r devcluster.Release) {
	t.Helper()
	// Its own deadline: it also runs in a test's cleanup, after t.Context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := r.Install(ctx, c.Root, c.Kubectl, c.out); err != nil {
		t.Fatalf("installing %s %s: %v", r.From.Chart, r.From.Version, err)
	}
}

// SampleCertificate puts the certificate of the samples' HTTPS site
// (shop.contoso.example, Secret contoso-shop-tls) into namespace, as `make
// demo` does, and returns it; its CA is what clients trust.
func (c *Cluster) SampleCertificate(t testing.TB, namespace string) devcluster.SiteCertificate {
	t.Helper()
	cert, err := devcluster.NewSiteCertificate("contoso-shop-tls", []string{"shop.contoso.example"}, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(t, namespace, cert.Secret)
	return cert
}
