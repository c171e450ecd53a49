package xds

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// testCA is a new control CA.
func testCA(t *testing.T) *identity.CA {
	t.Helper()
	certPEM, keyPEM, err := identity.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := identity.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// identityDir holds a farm identity as the frontend pod's Secret volume
// does (its files behind "..data"), issued by ca for namespace/farm, with
// trusted, the CA the operator is verified by.
func identityDir(t *testing.T, ca *identity.CA, namespace, farm string, trusted []byte) string {
	t.Helper()
	issued, err := ca.IssueFarm(namespace, farm, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "..data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{vocabulary.IdentityCertKey: issued.CertPEM, vocabulary.IdentityKeyKey: issued.KeyPEM, vocabulary.IdentityCAKey: trusted} {
		if err := os.WriteFile(filepath.Join(data, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAnEnvoyGetsOnlyTheFarmItsIdentityNames runs the real Envoy,
// bootstrapped as a farm's frontend over mutual TLS, against the server
// serving two farms: with its farm's identity it is served that farm; an
// Envoy whose certificate names another farm while it claims this one, or
// whose certificate another CA issued, gets no configuration at all.
func TestAnEnvoyGetsOnlyTheFarmItsIdentityNames(t *testing.T) {
	envoyBin := testutil.Tool(t, "WEBFARM_ENVOY", "envoy")
	ca, stranger := testCA(t), testCA(t)
	authority, err := identity.NewAuthority(ca, []string{"localhost"}, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	free, err := testutil.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := NewServer("127.0.0.1:"+strconv.Itoa(free[0]), authority.ServerTLS())
	served := make(chan error, 1)
	go func() { served <- s.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-served })

	farm := sitesFarm(free[0], "hosting.example")
	farm.Platform.XDSHost, farm.Platform.ControlTLS = "localhost", true
	other := sitesFarm(free[0], "other.example")
	other.Name = "other"
	for _, f := range []model.Farm{farm, other} {
		r, err := envoy.FarmRouting(f, map[string]model.Pool{"web": {Name: "web", MaxConcurrentRequests: 100, QueueLength: 1000}},
			endpoints.Backends{vocabulary.PoolCluster("web"): {{Address: "127.0.0.1", Port: 9}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, envoy.NodeCluster(f), r); err != nil {
			t.Fatal(err)
		}
	}
	version, _ := s.Routing(envoy.NodeCluster(farm))

	// Refused Envoys retry: having tried twice, each has had its answer.
	refusedTwice := func(admin string, before float64) error {
		if n := promtestutil.ToFloat64(streamsRefused.WithLabelValues(refusedOtherFarm)) - before; n < 2 {
			return fmt.Errorf("%v streams refused, want 2", n)
		}
		return nil
	}
	handshakesFailedTwice := func(admin string, _ float64) error {
		// A failed handshake ends the connection: each retry is a new one.
		if n := stat(t, admin, "xds.upstream_cx_total"); n < 2 {
			return fmt.Errorf("%d connections to the xDS server, want 2", n)
		}
		return nil
	}
	tests := []struct {
		name     string
		identity string // the identity's directory
		served   bool
		tried    func(admin string, refusedBefore float64) error // a refused Envoy has had its answer
	}{
		{"an Envoy with its farm's identity gets its farm's configuration", identityDir(t, ca, "web", "hosting", ca.CertPEM), true, nil},
		{"an Envoy claiming another farm's node cluster gets no configuration", identityDir(t, ca, "web", "other", ca.CertPEM), false, refusedTwice},
		{"an Envoy whose identity another CA issued gets no configuration", identityDir(t, stranger, "web", "hosting", ca.CertPEM), false, handshakesFailedTwice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ports, err := testutil.FreePorts(2)
			if err != nil {
				t.Fatal(err)
			}
			refusedBefore := promtestutil.ToFloat64(streamsRefused.WithLabelValues(refusedOtherFarm))
			config := t.TempDir()
			local := func(doc string) string {
				doc = strings.ReplaceAll(doc, envoy.IdentityDir, tt.identity)
				return strings.ReplaceAll(doc, envoy.ConfigDir+"/", config+"/")
			}
			for name, doc := range envoy.SDSFiles(farm) {
				if err := os.WriteFile(filepath.Join(config, name), []byte(local(doc)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			admin := startEnvoyWith(t, envoyBin, farm, ports[0], ports[1], local, tt.served)
			if tt.served {
				testutil.Eventually(t, 30*time.Second, runs(admin, "cluster_manager.cds", version.Version))
				return
			}
			testutil.Eventually(t, 30*time.Second, func() error { return tt.tried(admin, refusedBefore) })
			if n := stat(t, admin, "cds.update_success"); n != 0 {
				t.Errorf("Envoy took %d cluster updates, want none", n)
			}
			if n := stat(t, admin, "lds.update_success"); n != 0 {
				t.Errorf("Envoy took %d listener updates, want none", n)
			}
		})
	}
}
