//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/test/e2e/framework"
)

// certManagerIssuers is how cert-manager's users make a private CA: a
// self-signed Issuer signs a CA Certificate, whose Secret backs a CA Issuer
// that signs the sites' certificates.
const certManagerIssuers = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: farm-ca}
spec:
  isCA: true
  commonName: farm e2e CA
  secretName: farm-ca
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: Issuer}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: farm-ca}
spec: {ca: {secretName: farm-ca}}
`

// certManagerSite is the site's Certificate, into the Secret the farm names,
// and the farm.
var certManagerSite = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: shop}
spec:
  secretName: shop-tls
  dnsNames: [shop.example]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: farm-ca, kind: Issuer}
---
` + testAppPool("web", 1) + `apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: issued}
spec:
  sites:
  - name: shop
    hosts: [shop.example]
    routes: [{appPool: web}]
    tls: {secretName: shop-tls}
  frontend:
    replicas: 1
    # One Envoy spends up to 170m on 200 new plain-HTTP connections a
    # second (recycling_test.go), and a TLS handshake each adds more: at
    # 100m it was throttled every period, and on a busy machine requests
    # outlived the client's timeout.
    cpu: 300m
`

// cert-manager (built from its module, installed by its chart) issues a
// site's certificate into the Secret the farm names, and the farm serves
// it; a renewal cert-manager makes is served under 200 requests/s over
// HTTPS without a failed request.
func TestCertManager(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests
	cluster.InstallCertManager(t)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	// The webhook answers once the cainjector has given the API server its
	// CA: until then, creating cert-manager's objects fails.
	framework.Eventually(t, 2*time.Minute, func() error {
		_, err := cluster.Kubectl.RunWithInput(ctx, certManagerIssuers, "apply", "-n", ns, "-f", "-")
		return err
	})
	cluster.Run(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "certificate/farm-ca", "issuer/farm-ca")
	cluster.Apply(t, ns, certManagerSite)
	cluster.Run(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "certificate/shop")
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/issued", "apppool/web")

	ip := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", ns, "issued-frontend", "-o", "jsonpath={.spec.clusterIP}"))
	port := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", ns, "issued-frontend", "-o", `jsonpath={.spec.ports[?(@.name=="https")].port}`))
	site := siteOverHTTPS(net.JoinHostPort(ip, port), "shop.example")
	issued := secretCertificate(t, ns, "shop-tls")
	site.trust(issued.ca)

	t.Run("the farm serves the certificate cert-manager issued", func(t *testing.T) {
		framework.Eventually(t, 3*time.Minute, func() error {
			return site.serves(issued.leaf)
		})
	})
	t.Run("a renewal cert-manager makes is served under load without a failed request", func(t *testing.T) {
		loadAcross(t, 200, site.get, func() string {
			// As `cmctl renew` does: the Issuing condition tells cert-manager
			// to issue the certificate again now.
			cluster.Run(t, "patch", "certificate", "shop", "-n", ns, "--subresource=status", "--type=json", "-p",
				`[{"op":"add","path":"/status/conditions/-","value":{"type":"Issuing","status":"True",`+
					`"reason":"ManuallyTriggered","message":"Certificate re-issuance manually triggered"}}]`)
			var renewed *x509.Certificate
			framework.Eventually(t, 2*time.Minute, func() error {
				c := secretCertificate(t, ns, "shop-tls").leaf
				if c.SerialNumber.Cmp(issued.leaf.SerialNumber) == 0 {
					return errors.New("shop-tls still holds the first certificate")
				}
				renewed = c
				return nil
			})
			renewedAt := time.Now()
			// The kubelet refreshes Secret volumes within about a minute.
			framework.Eventually(t, 3*time.Minute, func() error { return site.serves(renewed) })
			return fmt.Sprintf("renewed certificate (serial %x) served %s after cert-manager wrote it",
				renewed.SerialNumber, time.Since(renewedAt).Round(time.Second))
		})
	})
}

// issuedCertificate is a Secret's certificate and the CA that signed it.
type issuedCertificate struct {
	leaf, ca *x509.Certificate
}

// secretCertificate reads a kubernetes.io/tls Secret that cert-manager
// wrote: tls.crt and ca.crt.
func secretCertificate(t *testing.T, ns, name string) issuedCertificate {
	t.Helper()
	var s corev1.Secret
	if err := cluster.Client(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	parse := func(key string) *x509.Certificate {
		block, _ := pem.Decode(s.Data[key])
		if block == nil {
			t.Fatalf("Secret %s has no PEM certificate in %s", name, key)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("Secret %s, %s: %v", name, key, err)
		}
		return c
	}
	return issuedCertificate{leaf: parse(corev1.TLSCertKey), ca: parse("ca.crt")}
}

// httpsSite fetches https://host/ from a frontend address, a new connection
// for each request, verifying the certificate against the trusted CAs.
type httpsSite struct {
	address, host string
	roots         *x509.CertPool
}

func siteOverHTTPS(address, host string) *httpsSite {
	return &httpsSite{address: address, host: host, roots: x509.NewCertPool()}
}

func (s *httpsSite) trust(ca *x509.Certificate) { s.roots.AddCert(ca) }

// fetch sends one GET and returns the answer and the certificate served.
func (s *httpsSite) fetch() (framework.Response, *x509.Certificate, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: s.roots},
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.address)
		},
	}}
	resp, err := hc.Get("https://" + s.host + "/")
	if err != nil {
		return framework.Response{}, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return framework.Response{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}, resp.TLS.PeerCertificates[0], err
}

func (s *httpsSite) get() (framework.Response, error) {
	r, _, err := s.fetch()
	return r, err
}

// serves checks that a request is answered with want (issuer and serial as
// the client sees them).
func (s *httpsSite) serves(want *x509.Certificate) error {
	r, got, err := s.fetch()
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return fmt.Errorf("status %d: %q", r.Status, r.Body)
	}
	if got.Issuer.String() != want.Issuer.String() || got.SerialNumber.Cmp(want.SerialNumber) != 0 {
		return fmt.Errorf("served certificate from %q serial %x, want from %q serial %x",
			got.Issuer, got.SerialNumber, want.Issuer, want.SerialNumber)
	}
	return nil
}
