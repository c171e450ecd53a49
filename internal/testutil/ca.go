package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// CA is a throwaway certificate authority that issues the server
// certificates of a test or a benchmark; its clients trust Pool.
type CA struct {
	Pool     *x509.CertPool
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	serial   int64
	validFor time.Duration
}

// NewCA makes a CA named name with an ECDSA P-256 key. It and every
// certificate it issues are valid from an hour ago (clocks differ) until
// validFor from now.
func NewCA(name string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Pool: pool, cert: cert, key: key, serial: 1, validFor: validFor}, nil
}

// MustCA is NewCA for a test, which it fails on an error.
func MustCA(t testing.TB, name string, validFor time.Duration) *CA {
	t.Helper()
	ca, err := NewCA(name, validFor)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Issue returns a server certificate for these host names (the first is
// its common name) with a new ECDSA P-256 key, both in PEM: the leaf alone,
// as the CA is the clients' root. The serial number tells one issue from
// the next.
func (ca *CA) Issue(hosts ...string) (certPEM, keyPEM []byte, serial int64, err error) {
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(ca.validFor),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	certPEM, keyPEM, err = pemCertificate(tmpl, ca.cert, ca.key)
	return certPEM, keyPEM, ca.serial, err
}

// MustIssue is Issue for a test, which it fails on an error.
func (ca *CA) MustIssue(t testing.TB, hosts ...string) (certPEM, keyPEM []byte, serial int64) {
	t.Helper()
	certPEM, keyPEM, serial, err := ca.Issue(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, serial
}

// SelfSigned is a PEM certificate, valid for an hour either side of now,
// and key for host, signed by its own key.
func SelfSigned(t testing.TB, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	certPEM, keyPEM, err := pemCertificate(tmpl, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// pemCertificate makes a new ECDSA P-256 key and the certificate of tmpl
// for it, signed by parent's key (parent nil: by its own), both in PEM.
func pemCertificate(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
