package devcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestASiteCertificateIsTrustedThroughItsCAForItsHostsOnly(t *testing.T) {
	now := time.Now()
	c, err := NewSiteCertificate("shop-tls", []string{"shop.contoso.example"}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	var secret struct {
		Type string            `json:"type"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(c.Secret), &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Type != "kubernetes.io/tls" || !strings.Contains(c.Secret, "name: shop-tls") {
		t.Fatalf("not a TLS Secret named shop-tls:\n%s", c.Secret)
	}
	decode := func(key string) []byte {
		b, err := base64.StdEncoding.DecodeString(secret.Data[key])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pair, err := tls.X509KeyPair(decode("tls.crt"), decode("tls.key"))
	if err != nil {
		t.Fatalf("the Secret's certificate and key do not match: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CA) {
		t.Fatal("the CA is not PEM")
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{{"shop.contoso.example", true}, {"www.contoso.example", false}} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: tc.host, Roots: roots, CurrentTime: now})
		if (err == nil) != tc.ok {
			t.Errorf("verifying for %s: %v, want ok=%v", tc.host, err, tc.ok)
		}
	}
}
