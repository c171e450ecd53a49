package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestTheCAsCertificatesVerifyAgainstItsPoolWithSerialsInTurn(t *testing.T) {
	ca := MustCA(t, "test CA", time.Hour)
	for want := int64(2); want <= 3; want++ {
		certPEM, keyPEM, serial := ca.MustIssue(t, "shop.example", "www.shop.example")
		if serial != want {
			t.Errorf("serial %d, want %d", serial, want)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		if pair.Leaf.SerialNumber.Int64() != serial {
			t.Errorf("the certificate's serial is %v, Issue said %d", pair.Leaf.SerialNumber, serial)
		}
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "www.shop.example"}); err != nil {
			t.Errorf("the CA's pool does not verify its certificate: %v", err)
		}
	}
}

func TestASelfSignedCertificateIsItsOwnRoot(t *testing.T) {
	certPEM, keyPEM := SelfSigned(t, "blog.example")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(pair.Leaf)
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "blog.example"}); err != nil {
		t.Errorf("it does not verify against itself: %v", err)
	}
}
