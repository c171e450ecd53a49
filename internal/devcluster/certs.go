package devcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// SiteCertificate is an HTTPS certificate for a sample site, made by a
// throwaway CA (what cert-manager's self-signed issuer gives a user trying
// a farm out): the Secret the farm names, and the CA that clients trust.
type SiteCertificate struct {
	Secret string // a kubernetes.io/tls Secret manifest
	CA     []byte // PEM of the CA that signed it (curl --cacert)
}

// NewSiteCertificate makes a certificate for hosts valid for validFor, in a
// Secret named secretName.
func NewSiteCertificate(secretName string, hosts []string, validFor time.Duration, now time.Time) (SiteCertificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return SiteCertificate{}, err
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "webfarm demo CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return SiteCertificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return SiteCertificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		DNSNames:     hosts,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validFor),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return SiteCertificate{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return SiteCertificate{}, err
	}
	encode := func(kind string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}) }
	b64 := base64.StdEncoding.EncodeToString
	secret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
type: kubernetes.io/tls
data:
  tls.crt: %s
  tls.key: %s
`, secretName, b64(encode("CERTIFICATE", leafDER)), b64(encode("EC PRIVATE KEY", keyDER)))
	return SiteCertificate{Secret: secret, CA: encode("CERTIFICATE", caDER)}, nil
}
