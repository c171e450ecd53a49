package identity

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCA(t *testing.T) *CA {
	t.Helper()
	certPEM, keyPEM, err := NewCA(epoch)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestAFarmIdentityNamesItsFarmAndChainsToTheCA(t *testing.T) {
	ca := newCA(t)
	issued, err := ca.IssueFarm("shop", "www", epoch, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := parse(t, issued.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: epoch.Add(time.Hour),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("a farm identity does not verify as a client: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: epoch.Add(time.Hour),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a farm identity verifies as a server")
	}
	ns, farm, err := FarmOf(cert)
	if err != nil || ns != "shop" || farm != "www" {
		t.Errorf("FarmOf = %q, %q, %v; want shop, www", ns, farm, err)
	}
	if got, want := cert.URIs[0].String(), "spiffe://webfarm.dev/ns/shop/webfarm/www"; got != want {
		t.Errorf("URI SAN %s, want %s", got, want)
	}
	if !issued.NotAfter.Equal(epoch.Add(24*time.Hour)) || !cert.NotAfter.Equal(issued.NotAfter) {
		t.Errorf("expires %s (certificate %s), want %s", issued.NotAfter, cert.NotAfter, epoch.Add(24*time.Hour))
	}
	if _, err := tls.X509KeyPair(issued.CertPEM, issued.KeyPEM); err != nil {
		t.Errorf("the key does not match the certificate: %v", err)
	}
}

func TestTheServingCertificateNamesTheServiceAndServesOnly(t *testing.T) {
	ca := newCA(t)
	issued, err := ca.IssueServer([]string{"xds.webfarm-system.svc"}, epoch, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := parse(t, issued.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "xds.webfarm-system.svc", CurrentTime: epoch,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the serving certificate does not verify for its name: %v", err)
	}
	if _, _, err := FarmOf(cert); err == nil {
		t.Error("the serving certificate names a farm")
	}
}

func TestParseFarmURI(t *testing.T) {
	tests := []struct {
		name, uri string
		ok        bool
	}{
		{"a farm's identity names its namespace and farm", "spiffe://webfarm.dev/ns/shop/webfarm/www", true},
		{"another trust domain names no farm", "spiffe://example.com/ns/shop/webfarm/www", false},
		{"another scheme names no farm", "https://webfarm.dev/ns/shop/webfarm/www", false},
		{"another kind of object names no farm", "spiffe://webfarm.dev/ns/shop/apppool/www", false},
		{"a path with more parts names no farm", "spiffe://webfarm.dev/ns/shop/webfarm/www/extra", false},
		{"a namespace that is no DNS label names no farm", "spiffe://webfarm.dev/ns/Shop_1/webfarm/www", false},
		{"an empty farm name names no farm", "spiffe://webfarm.dev/ns/shop/webfarm/", false},
		{"a query names no farm", "spiffe://webfarm.dev/ns/shop/webfarm/www?x=1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.uri)
			if err != nil {
				t.Fatal(err)
			}
			ns, farm, err := ParseFarmURI(u)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseFarmURI(%s) = %q, %q, %v; want ok %v", tt.uri, ns, farm, err, tt.ok)
			}
			if tt.ok && (ns != "shop" || farm != "www") {
				t.Errorf("got %s/%s, want shop/www", ns, farm)
			}
		})
	}
}

func TestNeedsRenewal(t *testing.T) {
	at, notAfter := epoch, epoch.Add(24*time.Hour)
	tests := []struct {
		name string
		now  time.Time
		want bool
	}{
		{"a fresh certificate is kept", epoch.Add(time.Minute), false},
		{"a certificate just short of two thirds of its life is kept", epoch.Add(16*time.Hour - time.Second), false},
		{"a certificate at two thirds of its life is renewed", epoch.Add(16 * time.Hour), true},
		{"an expired certificate is renewed", epoch.Add(25 * time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsRenewal(at, notAfter, tt.now); got != tt.want {
				t.Errorf("NeedsRenewal at %s = %v, want %v", tt.now.Sub(at), got, tt.want)
			}
		})
	}
}

func TestTheServingCertificateIsRenewedAtTwoThirdsOfItsLife(t *testing.T) {
	now := epoch
	a, err := NewAuthority(newCA(t), []string{"xds.test"}, time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.servingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	now = epoch.Add(39 * time.Minute)
	if same, _ := a.servingCertificate(); same != first {
		t.Error("the serving certificate changed before two thirds of its life")
	}
	now = epoch.Add(40 * time.Minute)
	renewed, _ := a.servingCertificate()
	if renewed == first {
		t.Fatal("the serving certificate was not renewed at two thirds of its life")
	}
	if got := renewed.Leaf.NotAfter; !got.Equal(now.Add(time.Hour)) {
		t.Errorf("the renewed certificate expires %s, want %s", got, now.Add(time.Hour))
	}
}

func TestAnAuthorityRefusesALifetimeUnderAMinute(t *testing.T) {
	if _, err := NewAuthority(newCA(t), []string{"xds.test"}, 30*time.Second, time.Now); err == nil {
		t.Error("a 30s lifetime was accepted")
	}
}
