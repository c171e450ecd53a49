package main

import (
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/testutil"
)

func minimalHCM(t *testing.T, l minimalLayout) *hcmv3.HttpConnectionManager {
	t.Helper()
	var hcm hcmv3.HttpConnectionManager
	if err := minimalBootstrap(l).StaticResources.Listeners[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	return &hcm
}

func TestMinimalEnvoy(t *testing.T) {
	tlsFiles := &benchkit.ProxyTLS{CertFile: "/tmp/bench/tls.crt", KeyFile: "/tmp/bench/tls.key"}
	tests := []struct {
		name  string
		tls   *benchkit.ProxyTLS
		check func(t *testing.T, l minimalLayout)
	}{
		{"it has the router as its only HTTP filter, no access log and no request IDs", nil, func(t *testing.T, l minimalLayout) {
			h := minimalHCM(t, l)
			if len(h.HttpFilters) != 1 || h.HttpFilters[0].Name != "envoy.filters.http.router" {
				t.Errorf("filters %v", h.HttpFilters)
			}
			if len(h.AccessLog) > 0 || h.GetGenerateRequestId().GetValue() || h.GenerateRequestId == nil {
				t.Errorf("access log %v, request IDs %v", h.AccessLog, h.GenerateRequestId)
			}
		}},
		{"it proxies every request to the pool worker's port", nil, func(t *testing.T, l minimalLayout) {
			c := minimalBootstrap(l).StaticResources.Clusters[0]
			ep := c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().Address.GetSocketAddress()
			if ep.GetPortValue() != 41000 || len(c.CircuitBreakers.GetThresholds()) > 0 {
				t.Errorf("cluster %v", c)
			}
		}},
		{"in clear text it has no TLS", nil, func(t *testing.T, l minimalLayout) {
			if ts := minimalBootstrap(l).StaticResources.Listeners[0].FilterChains[0].TransportSocket; ts != nil {
				t.Errorf("transport socket %v", ts)
			}
		}},
		{"with TLS it serves the certificate's files over TLS 1.3", tlsFiles, func(t *testing.T, l minimalLayout) {
			if ts := minimalBootstrap(l).StaticResources.Listeners[0].FilterChains[0].TransportSocket; ts.GetName() != "envoy.transport_sockets.tls" {
				t.Errorf("transport socket %v", ts)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, minimalLayout{Port: 41030, AdminPort: 41031, Upstream: 41000, TLS: tt.tls})
		})
	}
}

func TestMinimalEnvoyAcceptsItsBootstrap(t *testing.T) {
	dir := t.TempDir()
	cert, err := newCertificate()
	if err != nil {
		t.Fatal(err)
	}
	files, err := cert.writeFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, files := range []*benchkit.ProxyTLS{nil, files} {
		conf, err := bootstrapJSON(minimalBootstrap(minimalLayout{Port: 41030, AdminPort: 41031, Upstream: 41000, TLS: files}))
		if err != nil {
			t.Fatal(err)
		}
		testutil.EnvoyCheck(t, string(conf))
	}
}
