// Package identity issues the certificates of the operator's control
// traffic: the frontends of a farm prove which farm they are to the xDS
// server and the activator with a client certificate whose URI SAN names
// the farm (FarmURI), and the operator proves itself with a serving
// certificate for its Service's DNS name. Both come from one CA the operator
// keeps in a Secret of its own namespace. The functions here are pure: the
// time is always given.
package identity

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TrustDomain is the SPIFFE trust domain of farm identities.
const TrustDomain = "webfarm.dev"

// caLifetime: the CA outlives any operator installation; its rotation is a
// new Secret (and so a reissue of every identity).
const caLifetime = 10 * 365 * 24 * time.Hour

// backdate covers clocks a little behind the operator's.
const backdate = 5 * time.Minute

// FarmURI names a farm: spiffe://webfarm.dev/ns/<namespace>/webfarm/<name>.
func FarmURI(namespace, farm string) *url.URL {
	return &url.URL{Scheme: "spiffe", Host: TrustDomain, Path: "/ns/" + namespace + "/webfarm/" + farm}
}

// ParseFarmURI reads a farm's namespace and name from its URI, refusing any
// other shape: a certificate of the CA that names no farm grants nothing.
func ParseFarmURI(u *url.URL) (namespace, farm string, err error) {
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if u.Scheme != "spiffe" || u.Host != TrustDomain || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
		len(parts) != 4 || parts[0] != "ns" || parts[2] != "webfarm" ||
		len(validation.IsDNS1123Label(parts[1])) > 0 || len(validation.IsDNS1123Subdomain(parts[3])) > 0 {
		return "", "", fmt.Errorf("%q is not a farm identity (spiffe://%s/ns/<namespace>/webfarm/<name>)", u.String(), TrustDomain)
	}
	return parts[1], parts[3], nil
}

// FarmOf is the farm a verified client certificate names: exactly one URI SAN.
func FarmOf(cert *x509.Certificate) (namespace, farm string, err error) {
	if len(cert.URIs) != 1 {
		return "", "", fmt.Errorf("the certificate names %d URIs, want one farm identity", len(cert.URIs))
	}
	return ParseFarmURI(cert.URIs[0])
}

// CA signs the identities.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewCA makes a CA valid from now; it returns its PEM certificate and key.
func NewCA(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "webfarm-operator control CA"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := sign(template, template, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	return pemBlock("CERTIFICATE", der), keyPEM, err
}

// ParseCA reads a CA from its PEM certificate and key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the control CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, errors.New("the control CA: not a CA certificate with a signing key")
	}
	return &CA{Cert: cert, Key: signer, CertPEM: certPEM}, nil
}

// Issued is a certificate the CA signed, with its key, in PEM.
type Issued struct {
	CertPEM, KeyPEM []byte
	// At is when it was issued; NotAfter when it expires.
	At, NotAfter time.Time
}

// IssueFarm issues a farm's client certificate, valid for lifetime from now.
func (ca *CA) IssueFarm(namespace, farm string, now time.Time, lifetime time.Duration) (Issued, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: namespace + "/" + farm},
		URIs:        []*url.URL{FarmURI(namespace, farm)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now, lifetime)
}

// IssueServer issues the operator's serving certificate for dnsNames.
func (ca *CA) IssueServer(dnsNames []string, now time.Time, lifetime time.Duration) (Issued, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: dnsNames[0]},
		DNSNames:    dnsNames,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now, lifetime)
}

func (ca *CA) issue(template *x509.Certificate, now time.Time, lifetime time.Duration) (Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	template.NotBefore, template.NotAfter = now.Add(-backdate), notAfter
	template.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := sign(template, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Issued{}, err
	}
	keyPEM, err := encodeKey(key)
	return Issued{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM, At: now, NotAfter: notAfter}, err
}

// RenewAt is when a certificate issued at and expiring at notAfter is
// renewed: at two thirds of its life, which leaves a third for the kubelet
// to deliver the new one (about a minute) and for retries.
func RenewAt(at, notAfter time.Time) time.Time {
	return at.Add(notAfter.Sub(at) * 2 / 3)
}

// NeedsRenewal: a certificate is renewed from RenewAt on.
func NeedsRenewal(at, notAfter, now time.Time) bool { return !now.Before(RenewAt(at, notAfter)) }

// Pool is a certificate pool of the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func sign(template, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, template, parent, pub, key)
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
