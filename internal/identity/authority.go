package identity

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/vocabulary"
)

// Keys of an identity Secret (a farm's, mounted by its frontends): the
// certificate and key as kubernetes.io/tls has them, and the CA that signs
// the operator's serving certificate.
const (
	CertKey = vocabulary.IdentityCertKey
	KeyKey  = vocabulary.IdentityKeyKey
	CAKey   = vocabulary.IdentityCAKey
)

// Authority is the operator's CA at work: the serving certificate of its
// xDS server and activator, renewed in memory before it expires, and the
// farms' identities.
type Authority struct {
	ca          *CA
	serverNames []string
	lifetime    time.Duration
	now         func() time.Time

	mu      sync.Mutex
	serving *tls.Certificate
	renewAt time.Time
}

// NewAuthority issues certificates of lifetime from ca; the serving
// certificate names serverNames (the Service's DNS names the frontends dial).
func NewAuthority(ca *CA, serverNames []string, lifetime time.Duration, now func() time.Time) (*Authority, error) {
	if len(serverNames) == 0 || lifetime < time.Minute {
		return nil, fmt.Errorf("control identities: want a server name and a lifetime of a minute or more, got %v and %s", serverNames, lifetime)
	}
	return &Authority{ca: ca, serverNames: serverNames, lifetime: lifetime, now: now}, nil
}

// Lifetime is how long an issued certificate is valid.
func (a *Authority) Lifetime() time.Duration { return a.lifetime }

// CAPEM is the CA certificate the frontends verify the operator by.
func (a *Authority) CAPEM() []byte { return a.ca.CertPEM }

// IssueFarm issues a farm's identity, valid from now.
func (a *Authority) IssueFarm(namespace, farm string) (Issued, error) {
	return a.ca.IssueFarm(namespace, farm, a.now(), a.lifetime)
}

// ServerTLS is the xDS server's and the activator's TLS: TLS 1.3 only, a
// client certificate of the CA required. Which farm it names is checked by
// each server against what the client asks for.
func (a *Authority) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      a.ca.Pool(),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return a.servingCertificate() },
	}
}

// servingCertificate is the current serving certificate, issued anew once
// it reaches RenewAt: each handshake after that gets the new one.
func (a *Authority) servingCertificate() (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.serving != nil && now.Before(a.renewAt) {
		return a.serving, nil
	}
	issued, err := a.ca.IssueServer(a.serverNames, now, a.lifetime)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(append(issued.CertPEM, a.ca.CertPEM...), issued.KeyPEM)
	if err != nil {
		return nil, err
	}
	a.serving, a.renewAt = &pair, RenewAt(issued.At, issued.NotAfter)
	return a.serving, nil
}

// PeerFarm is the farm a connection's verified client certificate names.
func PeerFarm(state *tls.ConnectionState) (namespace, farm string, err error) {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return "", "", errors.New("no verified client certificate")
	}
	return FarmOf(state.VerifiedChains[0][0])
}

// LoadOrCreateCA reads the CA from its Secret (key), creating the Secret
// with a new CA when it is absent. It needs get on that one Secret and
// create on Secrets of its namespace, nothing more. Two replicas starting
// at once both try to create it: the loser reads the winner's.
func LoadOrCreateCA(ctx context.Context, c client.Client, key types.NamespacedName, now time.Time) (*CA, error) {
	var s corev1.Secret
	err := c.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		certPEM, keyPEM, caErr := NewCA(now)
		if caErr != nil {
			return nil, caErr
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: "control-ca"}},
			Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{CertKey: certPEM, KeyKey: keyPEM},
		}
		err = c.Create(ctx, &s)
		if apierrors.IsAlreadyExists(err) {
			err = c.Get(ctx, key, &s)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the control CA's Secret %s: %w", key, err)
	}
	return ParseCA(s.Data[CertKey], s.Data[KeyKey])
}
