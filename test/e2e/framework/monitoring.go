package framework

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/devcluster"
)

// The suite's monitoring is what a prometheus-operator user runs: the
// Prometheus Operator installed from its release's bundle.yaml, a Prometheus
// 3.x it runs, and the chart's ServiceMonitors, PodMonitor and PrometheusRule
// (turned on by the values below), which that Prometheus finds by Kubernetes
// service discovery. The autoscaler, the CPU monitor and idle shutdown read it.

const (
	monitoringNamespace = "webfarm-e2e-monitoring"
	prometheusName      = "e2e" // the Prometheus object
	prometheusPods      = "prometheus=" + prometheusName
)

// monitoringValues turn on the chart's monitoring objects, scraping every 2 s
// (the tests measure load over seconds), and point the operator at the
// suite's Prometheus.
func monitoringValues() []string {
	return []string{
		"prometheus.url=http://prometheus." + monitoringNamespace + ".svc:9090",
		"serviceMonitor.enabled=true",
		"serviceMonitor.interval=2s",
		"monitoring.podMonitors.enabled=true",
		"monitoring.podMonitors.interval=2s",
		"monitoring.cadvisor.enabled=true",
		"monitoring.cadvisor.interval=2s",
		"monitoring.prometheusRule.enabled=true",
	}
}

// installPrometheusOperator applies the Prometheus Operator's bundle.yaml
// (hack/install-tools.sh prometheus-operator) into the monitoring namespace
// with the images pushed to the local registry, and waits for its CRDs and
// its Deployment.
func (c *Cluster) installPrometheusOperator(ctx context.Context) error {
	raw, err := os.ReadFile(filepath.Join(c.Root, "bin", "prometheus-operator", "bundle.yaml"))
	if err != nil {
		return fmt.Errorf("the Prometheus Operator's bundle (make images installs it): %w", err)
	}
	operatorImage, err := archiveRef(c.imageArchive("prometheus-operator"))
	if err != nil {
		return err
	}
	reloaderImage, err := archiveRef(c.imageArchive("prometheus-config-reloader"))
	if err != nil {
		return err
	}
	bundle, err := localBundle(string(raw), monitoringNamespace, operatorImage, reloaderImage)
	if err != nil {
		return err
	}
	// Its CRDs are too large for client-side apply's annotation.
	if _, err := c.Kubectl.RunWithInput(ctx, bundle, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	// The bundle asks 100m of CPU for the Prometheus Operator, which mostly
	// waits here; the suite's one node of 2 CPUs needs that room for the
	// tests' pools (a full node leaves their pods Pending).
	if _, err := c.Kubectl.Run(ctx, "set", "resources", "deployment/prometheus-operator", "-n", monitoringNamespace,
		"--requests=cpu=10m"); err != nil {
		return err
	}
	if _, err := c.Kubectl.Run(ctx, "wait", "--for=condition=Established", "--timeout=1m",
		"crd/prometheuses.monitoring.coreos.com", "crd/servicemonitors.monitoring.coreos.com",
		"crd/podmonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com"); err != nil {
		return err
	}
	if _, err := c.Kubectl.Run(ctx, "rollout", "status", "-n", monitoringNamespace, "deployment/prometheus-operator", "--timeout=2m"); err != nil {
		logs, _ := c.Kubectl.Run(ctx, "logs", "-n", monitoringNamespace, "deployment/prometheus-operator", "--tail=20")
		return fmt.Errorf("%w\nPrometheus Operator log:\n%s", err, logs)
	}
	return nil
}

var bundleNamespace = regexp.MustCompile(`(?m)^(\s*namespace:) default$`)

// localBundle moves the bundle's objects from namespace default to namespace
// and names the given images for the Prometheus Operator and its config
// reloader instead of the public ones.
func localBundle(bundle, namespace, operatorImage, reloaderImage string) (string, error) {
	out := bundleNamespace.ReplaceAllString(bundle, "${1} "+namespace)
	out = regexp.MustCompile(`quay\.io/prometheus-operator/prometheus-operator:v[0-9.]+`).ReplaceAllString(out, operatorImage)
	out = regexp.MustCompile(`quay\.io/prometheus-operator/prometheus-config-reloader:v[0-9.]+`).ReplaceAllString(out, reloaderImage)
	if strings.Contains(out, "quay.io/") {
		return "", errors.New("the Prometheus Operator's bundle names an image this suite does not build (quay.io/...)")
	}
	return out, nil
}

// startMonitoring pushes the tests' images, installs the Prometheus Operator
// and creates the suite's Prometheus, which starts while the chart installs.
func (c *Cluster) startMonitoring(ctx context.Context, step func(string, ...any)) error {
	step("pushing the tests' images")
	if err := c.local.PushImages(ctx, c.imageArchive("client"), c.imageArchive("prometheus"),
		c.imageArchive("prometheus-operator"), c.imageArchive("prometheus-config-reloader")); err != nil {
		return err
	}
	step("installing the Prometheus Operator (its bundle.yaml) and a Prometheus")
	if err := devcluster.EnsureNamespace(ctx, c.Kubectl, monitoringNamespace); err != nil {
		return err
	}
	if err := c.installPrometheusOperator(ctx); err != nil {
		return err
	}
	manifest, err := c.prometheusManifest()
	if err != nil {
		return err
	}
	_, err = c.Kubectl.RunWithInput(ctx, manifest, "apply", "-f", "-")
	return err
}

// waitForPrometheus waits until the suite's Prometheus is available and
// notes its address.
func (c *Cluster) waitForPrometheus(ctx context.Context) error {
	if _, err := c.Kubectl.Run(ctx, "wait", "-n", monitoringNamespace, "prometheus/"+prometheusName,
		"--for=condition=Available", "--timeout=3m"); err != nil {
		status, _ := c.Kubectl.Run(ctx, "get", "-n", monitoringNamespace, "prometheus/"+prometheusName, "-o", "jsonpath={.status}")
		return fmt.Errorf("%w\nPrometheus status: %s", err, status)
	}
	ip, err := c.Kubectl.Run(ctx, "get", "service", "-n", monitoringNamespace, "prometheus", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		return err
	}
	c.PrometheusURL = "http://" + strings.TrimSpace(ip) + ":9090"
	return nil
}

// prometheusManifest fills in the chart's release (its metrics-reader
// ClusterRole) and the Prometheus image the suite pushed.
func (c *Cluster) prometheusManifest() (string, error) {
	image, err := archiveRef(c.imageArchive("prometheus"))
	if err != nil {
		return "", err
	}
	_, version, _ := strings.Cut(image, ":")
	return strings.NewReplacer(
		"RELEASE-metrics-reader", c.Release.Name+"-metrics-reader",
		"PROMETHEUS_IMAGE", image,
		"PROMETHEUS_VERSION", version,
	).Replace(prometheusManifest), nil
}

// ScalePrometheus sets the suite's Prometheus replicas (0 takes it away) and
// waits until that many pods are ready.
func (c *Cluster) ScalePrometheus(t testing.TB, replicas int) {
	t.Helper()
	c.Run(t, "patch", "prometheus", "-n", monitoringNamespace, prometheusName, "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	Eventually(t, 3*time.Minute, func() error {
		pods := c.Pods(t, monitoringNamespace, prometheusPods)
		ready := 0
		for _, p := range pods {
			if p.Ready == "True" && !p.Deleting {
				ready++
			}
		}
		if len(pods) != replicas || ready != replicas {
			return fmt.Errorf("the suite's Prometheus has %d pods (%d ready), want %d", len(pods), ready, replicas)
		}
		return nil
	})
}

// archiveRef is the reference an image archive of hack/images/build.sh was
// saved under (localhost/NAME:TAG, which the local cluster pulls from its
// registry).
func archiveRef(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", fmt.Errorf("image archive (make images builds it): %w", err)
	}
	defer f.Close()
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if err != nil {
			return "", fmt.Errorf("%s has no manifest.json: %w", archive, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var manifest []struct{ RepoTags []string }
		if err := json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(&manifest); err != nil {
			return "", fmt.Errorf("%s: %w", archive, err)
		}
		if len(manifest) == 0 || len(manifest[0].RepoTags) == 0 {
			return "", fmt.Errorf("%s names no image", archive)
		}
		return manifest[0].RepoTags[0], nil
	}
}
