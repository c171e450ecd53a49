package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/devcluster"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// certificate is the site's certificate, the same for every HTTPS path: an
// ECDSA P-256 key, issued by a CA the benchmark makes at its start.
type certificate struct {
	ca              *benchkit.CA
	certPEM, keyPEM []byte
}

func newCertificate() (*certificate, error) {
	ca, err := benchkit.NewCA()
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, _, err := ca.Issue(siteHost)
	if err != nil {
		return nil, err
	}
	return &certificate{ca: ca, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// benchTLSFarm is benchFarm with HTTPS: the site has a certificate (the
// Secret's name matters only in a cluster) and the frontend accepts TLS 1.3
// only, as the nginx proxy does.
func benchTLSFarm() (model.Farm, error) {
	wf := benchWebFarm()
	wf.Spec.Sites[0].TLS = v1.SiteTLS{SecretName: "www-tls"}
	wf.Spec.Frontend.TLS.MinVersion = "1.3"
	return resolveBenchFarm(wf)
}

// writeSecretVolume writes the certificate where the frontend of dir reads
// the site's Secret (localenvoy.CertDir), laid out as the kubelet writes a
// Secret volume: the files in a directory of their own, reached through the
// "..data" link that the SDS files name.
func (c *certificate) writeSecretVolume(dir, site string) error {
	certDir := localenvoy.CertDir(dir, site)
	version := filepath.Join(certDir, "..2026_01_01_00_00_00.000000000")
	if err := os.MkdirAll(version, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": c.certPEM, "tls.key": c.keyPEM} {
		if err := os.WriteFile(filepath.Join(version, name), data, 0o600); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(certDir, name)); err != nil {
			return err
		}
	}
	return os.Symlink(filepath.Base(version), filepath.Join(certDir, "..data"))
}

// writeCertificates gives a farm's TLS sites their certificate in dir: the
// rendered SDS files, and the certificate where they name it. It returns
// the bootstrap with the pod's config and Secret directories moved into
// dir; a farm without TLS keeps it unchanged.
func writeCertificates(dir string, farm model.Farm, bootstrap []byte, cert *certificate) ([]byte, error) {
	certs := farm.Certificates()
	if len(certs) == 0 {
		return bootstrap, nil
	}
	if cert == nil {
		return nil, errors.New("a farm with TLS sites needs a certificate")
	}
	if err := localenvoy.WriteCertConfig(dir, farm); err != nil {
		return nil, err
	}
	for _, c := range certs {
		if err := cert.writeSecretVolume(dir, c.Name); err != nil {
			return nil, err
		}
	}
	return []byte(localenvoy.LocalPaths(dir, string(bootstrap))), nil
}

// writeFiles writes the certificate and key as nginx reads them.
func (c *certificate) writeFiles(dir string) (*benchkit.ProxyTLS, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := &benchkit.ProxyTLS{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	for path, data := range map[string][]byte{out.CertFile: c.certPEM, out.KeyFile: c.keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// httpsClient fetches from addr as a browser of siteHost would, trusting
// the benchmark's CA, over HTTP/2 or HTTP/1.1; only TLS 1.3.
func (c *certificate) httpsClient(addr string, h2 bool) *http.Client {
	cfg := &tls.Config{RootCAs: c.ca.Pool, ServerName: siteHost, MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}}
	if h2 {
		cfg.NextProtos = []string{"h2"}
	}
	tr := &http.Transport{
		TLSClientConfig:   cfg,
		ForceAttemptHTTP2: h2,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // never HTTP/2
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// httpsRoutes are the two protocols' routes through one HTTPS server.
func httpsRoutes(base route, c *certificate) []*route {
	var out []*route
	for _, p := range []protocol{protoHTTPS, protoH2} {
		r := base
		r.proto, r.id = p, base.id+"-"+string(p)
		r.url = "https://" + siteHost
		r.client = c.httpsClient(r.addr, p == protoH2)
		r.cert = c
		out = append(out, &r)
	}
	return out
}

// waitHTTPS waits until a route serves the first file over TLS: Envoy's
// readiness does not wait for a listener's certificate.
func waitHTTPS(ctx context.Context, r *route, s *benchkit.Server, path string) error {
	err := devcluster.Poll(ctx, readyTimeout, 50*time.Millisecond, func() error {
		if err := s.Exited(); err != nil {
			return devcluster.Stop(err)
		}
		_, err := benchkit.Get(ctx, r.client, r.url+path, siteHost, nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s not ready over HTTPS: %w", r.name, err)
	}
	return nil
}
