//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

func TestTheChartInstallsTheOperator(t *testing.T) {
	ns, name := cluster.Release.Namespace, cluster.Release.Name

	t.Run("the operator's namespace enforces the restricted Pod Security profile", func(t *testing.T) {
		got := cluster.Run(t, "get", "namespace", ns, "-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}`)
		if got != "restricted" {
			t.Fatalf("namespace %s enforces %q, want restricted", ns, got)
		}
	})

	t.Run("the operator runs ready under the chart's ServiceAccount", func(t *testing.T) {
		pods := cluster.Pods(t, ns, framework.OperatorPods)
		if len(pods) != 1 || pods[0].Ready != "True" {
			t.Fatalf("operator pods: %+v, want one ready pod", pods)
		}
		account := cluster.Run(t, "get", "pod", "-n", ns, pods[0].Name, "-o", "jsonpath={.spec.serviceAccountName}")
		if account != name {
			t.Errorf("the operator runs as ServiceAccount %q, want the chart's %q", account, name)
		}
	})

	t.Run("the operator holds the leader election lease", func(t *testing.T) {
		pods := cluster.Pods(t, ns, framework.OperatorPods)
		if len(pods) == 0 {
			t.Fatal("no operator pod")
		}
		framework.Eventually(t, 30*time.Second, func() error {
			holders, err := cluster.Kubectl.Run(t.Context(), "get", "leases", "-n", ns, "-o", "jsonpath={.items[*].spec.holderIdentity}")
			if err != nil {
				return err
			}
			if !strings.Contains(holders, pods[0].Name) {
				return fmt.Errorf("lease holders %q do not name pod %s", holders, pods[0].Name)
			}
			return nil
		})
	})

	t.Run("Prometheus scrapes the operator's metrics and the kubelet's CPU counters", func(t *testing.T) {
		nonEmpty := func(s []framework.Sample) error {
			if len(s) == 0 {
				return fmt.Errorf("no samples yet")
			}
			return nil
		}
		pods := cluster.Pods(t, ns, framework.OperatorPods)
		if len(pods) != 1 {
			t.Fatalf("operator pods: %+v, want one", pods)
		}
		up := cluster.EventuallyQuery(t, 60*time.Second, `up{job="webfarm-operator"} == 1`, nonEmpty)
		if want := pods[0].IP + ":8080"; len(up) != 1 || up[0].Labels["instance"] != want {
			t.Errorf("scraped %+v, want the operator pod alone at %s", up, want)
		}
		workers := cluster.EventuallyQuery(t, 30*time.Second, `controller_runtime_max_concurrent_reconciles{job="webfarm-operator"}`, nonEmpty)
		controllers := map[string]float64{}
		for _, s := range workers {
			controllers[s.Labels["controller"]] = s.Value
		}
		for _, c := range []string{"webfarm", "apppool", "cachepolicy"} {
			if controllers[c] != 4 { // the chart's default concurrency
				t.Errorf("controller %q reconciles %v at once, want 4 (all: %v)", c, controllers[c], controllers)
			}
		}
		cluster.EventuallyQuery(t, 60*time.Second,
			fmt.Sprintf(`container_cpu_usage_seconds_total{job="kubelet",metrics_path="/metrics/cadvisor",namespace=%q,container="manager"} > 0`, ns), nonEmpty)
	})

	// Prometheus above scrapes with a token allowed to read them.
	t.Run("the metrics endpoint refuses a client without a token", func(t *testing.T) {
		pods := cluster.Pods(t, ns, framework.OperatorPods)
		insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the operator's certificate is self-signed
		}}
		for _, path := range []string{"/metrics"} {
			url := "https://" + net.JoinHostPort(pods[0].IP, "8080") + path
			resp, err := insecure.Get(url)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s without a token: %s, want 401 Unauthorized", path, resp.Status)
			}
		}
	})
}
