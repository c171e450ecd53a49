//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/test/e2e/framework"
)

// httpsFarm: site shop with HTTPS (redirect, HSTS), site blog whose Secret
// does not exist yet, site plain without HTTPS.
var httpsFarm = testAppPool("web", 1) + `apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: secure}
spec:
  sites:
  - name: shop
    hosts: [shop.example]
    routes: [{appPool: web}]
    tls:
      secretName: shop-tls
      hsts: {maxAgeSeconds: 300}
  - name: blog
    hosts: [blog.example]
    routes: [{appPool: web}]
    tls: {secretName: blog-tls}
  - name: plain
    hosts: [plain.example]
    routes: [{appPool: web}]
  frontend:
    replicas: 1
    cpu: 100m
    tls: {defaultSite: shop}
`

// tlsSecret is a kubernetes.io/tls Secret with a new certificate from ca
// for host; serial tells it from the next.
func tlsSecret(t *testing.T, ca *testutil.CA, ns, name, host string) (*corev1.Secret, int64) {
	t.Helper()
	certPEM, keyPEM, serial := ca.MustIssue(t, host)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}, serial
}

// HTTPS through the farm's frontend Service: each site's certificate by
// SNI, the redirect and HSTS, a missing Secret reported and then picked up,
// a renewal served without a restart.
func TestHTTPS(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	kube := cluster.Client(t)
	ctx := context.Background()
	ca := testutil.MustCA(t, "e2e CA", 24*time.Hour)
	shop, _ := tlsSecret(t, ca, ns, "shop-tls", "shop.example")
	if err := kube.Create(ctx, shop); err != nil {
		t.Fatal(err)
	}
	cluster.Apply(t, ns, httpsFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/secure", "apppool/web")
	ip := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", ns, "secure-frontend", "-o", "jsonpath={.spec.clusterIP}"))
	port := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", ns, "secure-frontend", "-o", `jsonpath={.spec.ports[?(@.name=="https")].port}`))
	httpsAddress := net.JoinHostPort(ip, port)
	plainURL := cluster.ServiceURL(t, ns, "secure-frontend")

	// get fetches https://host/ through the Service, verifying the
	// certificate against the test CA.
	type answer struct {
		status, protoMajor int
		proto, hsts        string
	}
	get := func(host string) (answer, *x509.Certificate, error) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: ca.Pool},
			ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, httpsAddress)
			},
		}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get("https://" + host + "/")
		if err != nil {
			return answer{}, nil, err
		}
		resp.Body.Close()
		return answer{resp.StatusCode, resp.ProtoMajor, resp.Proto, resp.Header.Get("Strict-Transport-Security")},
			resp.TLS.PeerCertificates[0], nil
	}
	condition := func() (*metav1.Condition, error) {
		var farm v1.WebFarm
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secure"}, &farm); err != nil {
			return nil, err
		}
		c := meta.FindStatusCondition(farm.Status.Conditions, "CertificatesReady")
		if c == nil {
			return nil, fmt.Errorf("no CertificatesReady condition: %v", farm.Status.Conditions)
		}
		return c, nil
	}

	t.Run("a site is served over HTTP/2 with its own certificate and HSTS", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			a, cert, err := get("shop.example")
			if err != nil {
				return err
			}
			if a.status != http.StatusOK || a.protoMajor != 2 || cert.Subject.CommonName != "shop.example" || a.hsts != "max-age=300" {
				return fmt.Errorf("%d over %s, certificate %s, HSTS %q", a.status, a.proto, cert.Subject.CommonName, a.hsts)
			}
			return nil
		})
	})
	t.Run("plain HTTP is redirected to HTTPS", func(t *testing.T) {
		// The redirect itself, not where it leads (shop.example is not in DNS).
		noFollow := &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequest(http.MethodGet, plainURL+"/a?b=c", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "shop.example"
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "https://shop.example/a?b=c" {
			t.Errorf("%d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("a missing Secret is reported by name and picked up when it appears", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			c, err := condition()
			if err != nil {
				return err
			}
			if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "site blog (Secret blog-tls)") {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
		blog, _ := tlsSecret(t, ca, ns, "blog-tls", "blog.example")
		if err := kube.Create(ctx, blog); err != nil {
			t.Fatal(err)
		}
		// The kubelet refreshes Secret volumes within about a minute.
		framework.Eventually(t, 3*time.Minute, func() error {
			if _, _, err := get("blog.example"); err != nil {
				return err
			}
			c, err := condition()
			if err != nil {
				return err
			}
			if c.Status != metav1.ConditionTrue {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
	})
	t.Run("a renewed certificate is served without a restart", func(t *testing.T) {
		before := cluster.Pods(t, ns, "app.kubernetes.io/instance=secure,app.kubernetes.io/component=frontend")
		renewed, serial := tlsSecret(t, ca, ns, "shop-tls", "shop.example")
		if err := kube.Update(ctx, renewed); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 3*time.Minute, func() error {
			_, cert, err := get("shop.example")
			if err != nil {
				return err
			}
			if cert.SerialNumber.Int64() != serial {
				return fmt.Errorf("certificate %d served, want the renewed %d", cert.SerialNumber.Int64(), serial)
			}
			return nil
		})
		after := cluster.Pods(t, ns, "app.kubernetes.io/instance=secure,app.kubernetes.io/component=frontend")
		if len(before) != len(after) || before[0].UID != after[0].UID {
			t.Errorf("the frontend pods changed: %v -> %v", before, after)
		}
	})
}
