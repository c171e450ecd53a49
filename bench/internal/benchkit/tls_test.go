package benchkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// testCertificate writes a certificate of a new CA for www.bench.example
// into a temporary directory.
func testCertificate(t *testing.T) *ProxyTLS {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _, err := ca.Issue("www.bench.example")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := &ProxyTLS{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	for path, data := range map[string][]byte{out.CertFile: certPEM, out.KeyFile: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestTheCAIssuesECDSAP256CertificatesItsPoolVerifies(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _, err := ca.Issue("www.bench.example", "other.example")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "other.example"}); err != nil {
		t.Errorf("the CA's pool does not verify its certificate: %v", err)
	}
}
