//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// guardedFarm serves guarded.example from pool web, and /sleepy from pool
// sleepy, which goes idle after a minute and starts on demand; its
// frontend has the CPU for 200 new connections a second, as in
// TestCertManager.
var guardedFarm = testAppPool("web", 1) + testAppPool("sleepy", 1, "idle: {timeout: 1m}") +
	pathFarm("guarded", "guarded.example", "300m", [2]string{"/sleepy", "sleepy"}, [2]string{"/", "web"})

// The operator's control endpoints, as the suite's release names them.
const (
	xdsURL       = "https://webfarm-xds.webfarm-system.svc:18000"
	activatorURL = "https://webfarm-xds.webfarm-system.svc:18081"
)

// A farm's frontends reach xDS and the activator with their farm's
// identity: a pod that copies a frontend's labels but has no identity gets
// no configuration and cannot wake the farm's idle pool; the farm's own
// frontend wakes it; a renewed identity keeps the farm serving under 200
// requests/s without a failed request.
func TestControlTrafficNeedsTheFarmsIdentity(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, guardedFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/guarded", "apppool/web", "apppool/sleepy")
	url := cluster.ServiceURL(t, ns, "guarded-frontend")
	framework.ExpectBody(t, time.Minute, url+"/", "app on web-", "Host: guarded.example")
	// Its idle timeout counts from a request the frontends saw.
	framework.ExpectBody(t, time.Minute, url+"/sleepy", "app on sleepy-", "Host: guarded.example")
	first := identityCertificate(t, ns)

	t.Run("a renewed identity keeps the farm serving under load without a failed request", func(t *testing.T) {
		frontend := cluster.Pods(t, ns, "app.kubernetes.io/instance=guarded,app.kubernetes.io/component=frontend")[0]
		updatesBefore := identityUpdates(t, frontend)
		// The renewal comes at two thirds of the identity's life, minutes
		// from now: the load starts half a minute before it is due, so that
		// it covers the renewal, not the minutes of waiting (on a busy
		// machine every minute of 200 requests/s risks a stall of its own).
		renewalDue := first.NotAfter.Add(-framework.ControlCertificateLifetime / 3)
		if wait := time.Until(renewalDue) - 30*time.Second; wait > 0 {
			<-time.After(wait) // a known schedule, not an event
		}
		send := func() (framework.Response, error) { return framework.HTTPGet(url+"/", "Host: guarded.example") }
		loadAcross(t, 200, send, func() string {
			var renewed *x509.Certificate
			framework.EventuallyEvery(t, framework.ControlCertificateLifetime, 5*time.Second, func() error {
				if renewed = identityCertificate(t, ns); renewed.SerialNumber.Cmp(first.SerialNumber) == 0 {
					return errors.New("the farm's identity Secret still holds its first certificate")
				}
				return nil
			})
			renewedAt := time.Now()
			t.Logf("identity renewed %s after it was issued (lifetime %s)", renewedAt.Sub(first.NotBefore.Add(5*time.Minute)).Round(time.Second), framework.ControlCertificateLifetime)
			// The kubelet refreshes the Secret volume; Envoy's SDS watch reads it.
			framework.Eventually(t, 3*time.Minute, func() error {
				if n := identityUpdates(t, frontend); n <= updatesBefore {
					return fmt.Errorf("Envoy read its identity %d times, as before the renewal", n)
				}
				return nil
			})
			return fmt.Sprintf("Envoy read the renewed identity (serial %x) %s after the operator wrote it",
				renewed.SerialNumber, time.Since(renewedAt).Round(time.Second))
		})
	})

	t.Run("a pod with a frontend's labels but no identity gets no configuration and cannot wake a pool", func(t *testing.T) {
		labels := map[string]string{}
		for _, pod := range cluster.Pods(t, ns, "app.kubernetes.io/instance=guarded,app.kubernetes.io/component=frontend")[:1] {
			out := cluster.Run(t, "get", "pod", "-n", ns, pod.Name, "-o", `go-template={{range $k, $v := .metadata.labels}}{{$k}}={{$v}}{{"\n"}}{{end}}`)
			for _, line := range strings.Fields(out) {
				k, v, _ := strings.Cut(line, "=")
				labels[k] = v
			}
		}
		delete(labels, "pod-template-hash") // the ReplicaSet would adopt it
		impostor := cluster.ClientPodLabelled(t, ns, "impostor", labels)
		waitIdle(t, ns, "sleepy")

		ctx := context.Background()
		asks := []struct{ what, url string }{
			{"delta ADS", xdsURL + "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"},
			{"state-of-the-world ADS", xdsURL + "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"},
		}
		for _, ask := range asks {
			// Over TLS without a client certificate (-k: whatever the
			// server's), and in plain text.
			for _, scheme := range []string{"tls", "plain"} {
				target, flags := ask.url, []string{"-k", "--http2"}
				if scheme == "plain" {
					target, flags = strings.Replace(ask.url, "https://", "http://", 1), []string{"--http2-prior-knowledge"}
				}
				cmd := append([]string{"curl", "-sS", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "-D", "-",
					"-H", "content-type: application/grpc", "-H", "te: trailers", "--data-binary", "@/dev/null"}, flags...)
				out, err := impostor.Exec(ctx, append(cmd, target)...)
				if err == nil && strings.Contains(strings.ToLower(out), "grpc-status: 0") {
					t.Errorf("%s over %s answered the impostor: %s", ask.what, scheme, out)
				}
				if err == nil && !strings.Contains(strings.ToLower(out), "grpc-status") && strings.HasSuffix(strings.TrimSpace(out), "200") {
					t.Errorf("%s over %s took the impostor's stream: %s", ask.what, scheme, out)
				}
			}
		}
		wake := model.ActivateHeader + ": " + ns + "/sleepy"
		for _, target := range []string{activatorURL + "/sleepy", strings.Replace(activatorURL, "https://", "http://", 1) + "/sleepy"} {
			out, err := impostor.Exec(ctx, "curl", "-sS", "-k", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "-H", wake, "-H", "Host: guarded.example", target)
			if err == nil && strings.TrimSpace(out) != "400" {
				t.Errorf("the activator answered the impostor's %s with %s, want a refused handshake or 400", target, out)
			}
		}
		var pool v1.AppPool
		if err := cluster.Client(t).Get(ctx, client.ObjectKey{Namespace: ns, Name: "sleepy"}, &pool); err != nil {
			t.Fatal(err)
		}
		if asked, ok := pool.Annotations[v1.WakeAnnotation]; ok {
			t.Errorf("the impostor woke the idle pool (%s=%s)", v1.WakeAnnotation, asked)
		}
		if pool.Status.Phase != v1.PoolIdle {
			t.Errorf("the idle pool is %s after the impostor's requests, want Idle", pool.Status.Phase)
		}

		// The farm's own frontend wakes it, through the activator.
		r := framework.ExpectBody(t, 2*time.Minute, url+"/sleepy", "app on sleepy-", "Host: guarded.example")
		if r.Status != 200 {
			t.Errorf("the farm's own request for its idle pool: %d", r.Status)
		}
	})
}

// identityCertificate is the certificate of the farm's identity Secret.
func identityCertificate(t *testing.T, ns string) *x509.Certificate {
	t.Helper()
	var s corev1.Secret
	if err := cluster.Client(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vocabulary.FrontendIdentityName("guarded")}, &s); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(s.Data[vocabulary.IdentityCertKey])
	if block == nil {
		t.Fatal("the identity Secret holds no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var identityUpdatesLine = regexp.MustCompile(`(?m)^envoy_cluster_client_ssl_socket_factory_ssl_context_update_by_sds\{envoy_cluster_name="xds"\} (\d+)`)

// identityUpdates is how many times the frontend's Envoy remade its TLS
// context to the operator's xDS server from what SDS read (the identity or
// the CA), from the status port's metrics.
func identityUpdates(t *testing.T, frontend framework.Pod) int {
	t.Helper()
	r, err := framework.HTTPGet("http://" + frontend.IP + ":" + strconv.Itoa(vocabulary.FrontendStatusPort) + vocabulary.FrontendMetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	m := identityUpdatesLine.FindStringSubmatch(r.Body)
	if m == nil {
		t.Fatalf("the frontend's metrics have no TLS context updates of its xDS cluster")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitIdle waits for a pool to go idle (its timeout is a minute).
func waitIdle(t *testing.T, ns, pool string) {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, func() error {
		got := cluster.Run(t, "get", "apppool", pool, "-n", ns, "-o", "jsonpath={.status.phase} {.status.replicas}")
		if got != "Idle 0" {
			return fmt.Errorf("phase and replicas %q, want Idle 0", got)
		}
		return nil
	})
}
