package main

import (
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/testutil"
)

func envoyGatewayForTest(t *testing.T, tls *benchkit.ProxyTLS) *bootstrapv3.Bootstrap {
	t.Helper()
	dump, err := envoyGatewayDump(envoyGatewayXDS)
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoyGatewayBootstrap(dump, envoyGatewayLayout{HTTPPort: 41001, HTTPSPort: 41002, AdminPort: 41003, Upstream: 41000, TLS: tls})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrapJSON(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func listenerHCM(t *testing.T, l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	t.Helper()
	chain := l.DefaultFilterChain
	if len(l.FilterChains) > 0 {
		chain = l.FilterChains[0]
	}
	var hcm hcmv3.HttpConnectionManager
	if err := chain.Filters[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	return &hcm
}

func TestEnvoyGatewaysConfiguration(t *testing.T) {
	files := &benchkit.ProxyTLS{CertFile: "/tmp/bench/tls.crt", KeyFile: "/tmp/bench/tls.key"}
	t.Run("it needs no control plane: no xDS, no cluster or listener of Envoy Gateway's own", func(t *testing.T) {
		b := envoyGatewayForTest(t, files)
		if b.DynamicResources != nil || b.ClusterManager != nil {
			t.Errorf("dynamic resources %v, cluster manager %v", b.DynamicResources, b.ClusterManager)
		}
		for _, c := range b.StaticResources.Clusters {
			if c.GetEdsClusterConfig() != nil || c.Name == "xds_cluster" || c.Name == "prometheus_stats" {
				t.Errorf("cluster %s", c.Name)
			}
		}
		if got := len(b.StaticResources.Listeners); got != 2 {
			t.Errorf("%d listeners, want the Gateway's 2", got)
		}
	})
	t.Run("it keeps Envoy Gateway's settings for every request", func(t *testing.T) {
		b := envoyGatewayForTest(t, nil)
		if !b.GetDeferredStatOptions().GetEnableDeferredCreationStats() || b.GetOverloadManager() == nil || !b.GetStatsConfig().GetUseAllDefaultTags().GetValue() {
			t.Errorf("bootstrap lost its stats options or overload manager")
		}
		l := b.StaticResources.Listeners[0]
		h := listenerHCM(t, l)
		if len(h.AccessLog) != 1 || len(h.HttpFilters) != 1 || !h.GetNormalizePath().GetValue() || l.GetPerConnectionBufferLimitBytes().GetValue() != 32768 {
			t.Errorf("listener %s changed: access log %v, filters %v", l.Name, h.AccessLog, h.HttpFilters)
		}
	})
	t.Run("in clear text it has the HTTP listener only, on loopback, with its routes inlined", func(t *testing.T) {
		b := envoyGatewayForTest(t, nil)
		if len(b.StaticResources.Listeners) != 1 || len(b.StaticResources.Secrets) != 0 {
			t.Fatalf("listeners %d, secrets %d", len(b.StaticResources.Listeners), len(b.StaticResources.Secrets))
		}
		l := b.StaticResources.Listeners[0]
		if a := l.Address.GetSocketAddress(); a.Address != "127.0.0.1" || a.GetPortValue() != 41001 {
			t.Errorf("address %v", a)
		}
		if rc := listenerHCM(t, l).GetRouteConfig(); rc.GetVirtualHosts()[0].Domains[0] != siteHost {
			t.Errorf("route configuration %v", rc)
		}
	})
	t.Run("every cluster sends to the pool worker on loopback", func(t *testing.T) {
		for _, c := range envoyGatewayForTest(t, nil).StaticResources.Clusters {
			ep := c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().Address.GetSocketAddress()
			if ep.Address != "127.0.0.1" || ep.GetPortValue() != 41000 {
				t.Errorf("cluster %s sends to %v", c.Name, ep)
			}
		}
	})
	t.Run("with TLS the Secret is a static one read from the benchmark's files", func(t *testing.T) {
		b := envoyGatewayForTest(t, files)
		secrets := b.StaticResources.Secrets
		if len(secrets) != 1 || secrets[0].GetTlsCertificate().GetCertificateChain().GetFilename() != files.CertFile {
			t.Fatalf("secrets %v", secrets)
		}
		for _, l := range b.StaticResources.Listeners {
			for _, fc := range l.FilterChains {
				if fc.TransportSocket == nil {
					continue
				}
				var ctx tlsv3.DownstreamTlsContext
				if err := fc.TransportSocket.GetTypedConfig().UnmarshalTo(&ctx); err != nil {
					t.Fatal(err)
				}
				ref := ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs[0]
				if ref.Name != secrets[0].Name || ref.SdsConfig != nil || l.Address.GetSocketAddress().GetPortValue() != 41002 {
					t.Errorf("listener %s: certificate %v", l.Name, ref)
				}
			}
		}
	})
}

func TestEnvoyAcceptsEnvoyGatewaysConfigurationMadeStatic(t *testing.T) {
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
		conf, err := bootstrapJSON(envoyGatewayForTest(t, files))
		if err != nil {
			t.Fatal(err)
		}
		testutil.EnvoyCheck(t, string(conf))
	}
}
