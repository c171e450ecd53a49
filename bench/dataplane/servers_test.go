package main

import (
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

func benchFrontend(t *testing.T, list string) *frontend {
	t.Helper()
	farm, err := benchFarm()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := benchPool()
	if err != nil {
		t.Fatal(err)
	}
	settings, err := parseSettings(list)
	if err != nil {
		t.Fatal(err)
	}
	layout := benchkit.PoolLayout{HTTPPort: 41000, StatusPort: 41001, H2Port: 41002}
	f, err := farmFrontend(farm, pool, settings, layout, localenvoy.Ports{HTTP: 41020, Status: 41021, Admin: 41022}, "/tmp/bench/envoy.json")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func farmHCM(t *testing.T, b *bootstrapv3.Bootstrap) *hcmv3.HttpConnectionManager {
	t.Helper()
	l, err := farmListener(b)
	if err != nil {
		t.Fatal(err)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	return &hcm
}

func TestFarmFrontend(t *testing.T) {
	tests := []struct {
		name     string
		settings string
		check    func(t *testing.T, f *frontend)
	}{
		{"as rendered, the frontend serves the farm's routes on loopback without an xDS server", "", func(t *testing.T, f *frontend) {
			b := f.bootstrap
			if b.DynamicResources != nil {
				t.Error("dynamic resources left")
			}
			for _, c := range b.StaticResources.Clusters {
				if c.GetType() != clusterv3.Cluster_STATIC {
					t.Errorf("cluster %s is %s, not static", c.Name, c.GetType())
				}
			}
			l, _ := farmListener(b)
			if sa := l.Address.GetSocketAddress(); sa.Address != "127.0.0.1" || sa.GetPortValue() != 41020 {
				t.Errorf("farm listener on %s:%d", sa.Address, sa.GetPortValue())
			}
			if rc := farmHCM(t, b).GetRouteConfig(); len(rc.GetVirtualHosts()) != 1 || rc.VirtualHosts[0].Domains[0] != siteHost {
				t.Errorf("routes not inlined: %v", rc)
			}
			ep := poolClusters(b)[0].LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().Address.GetSocketAddress()
			if ep.GetPortValue() != 41000 {
				t.Errorf("pool endpoint port %d", ep.GetPortValue())
			}
		}},
		{"Envoy gets the arguments of the operator's Deployment, with this host's config path", "", func(t *testing.T, f *frontend) {
			i := slices.Index(f.args, "--config-path")
			if i < 0 || f.args[i+1] != "/tmp/bench/envoy.json" {
				t.Errorf("args %v", f.args)
			}
			if slices.ContainsFunc(f.args, func(a string) bool { return strings.Contains(a, "$(") }) {
				t.Errorf("a variable left in %v", f.args)
			}
		}},
		{"the concurrency setting replaces the rendered worker count", "concurrency=3", func(t *testing.T, f *frontend) {
			i := slices.Index(f.args, "--concurrency")
			if i < 0 || f.args[i+1] != "3" || slices.Index(f.args[i+1:], "--concurrency") >= 0 {
				t.Errorf("args %v", f.args)
			}
		}},
		{"header settings change the connection manager", "no-request-id,skip-xff,server-passthrough,no-stream-idle-timeout", func(t *testing.T, f *frontend) {
			h := farmHCM(t, f.bootstrap)
			if h.GetGenerateRequestId().GetValue() || !h.SkipXffAppend || h.ServerHeaderTransformation != hcmv3.HttpConnectionManager_PASS_THROUGH ||
				h.GetStreamIdleTimeout() == nil || h.GetStreamIdleTimeout().AsDuration() != 0 {
				t.Errorf("hcm %v", h)
			}
		}},
		{"HTTP/2 to the pool goes to the worker's HTTP/2 port", "upstream-max-requests=5000,upstream-h2", func(t *testing.T, f *frontend) {
			c := poolClusters(f.bootstrap)[0]
			ep := c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().Address.GetSocketAddress()
			if !f.upstreamH2 || ep.GetPortValue() != 41002 || c.TypedExtensionProtocolOptions[protocolOptionsKey] == nil {
				t.Errorf("cluster %v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, benchFrontend(t, tt.settings))
		})
	}
}

func TestEveryKnobGivesABootstrapEnvoyAccepts(t *testing.T) {
	var all []string
	for _, k := range knobs {
		all = append(all, k.name)
	}
	f := benchFrontend(t, strings.Join(all, ","))
	conf, err := bootstrapJSON(f.bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	testutil.EnvoyCheck(t, string(conf), envoy.NodeIDArgs("bench-frontend")...)
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name    string
		list    string
		want    []string
		wantErr bool
	}{
		{"none means no settings", "none", nil, false},
		{"settings keep their order and values", "buffer=64k, no-request-id", []string{"buffer=64k", "no-request-id"}, false},
		{"an unknown knob is refused", "turbo", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSettings(tt.list)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.String())
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("got %v, want %v", names, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    uint32
		wantErr bool
	}{
		{"empty gives the default", "", 32 * kib, false},
		{"plain bytes", "16384", 16384, false},
		{"k is kibibytes", "64k", 64 * kib, false},
		{"m is mebibytes", "1m", kib * kib, false},
		{"zero is refused", "0", 0, true},
		{"words are refused", "lots", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSize(tt.value, 32*kib)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseSize(%q) = %d, %v", tt.value, got, err)
			}
		})
	}
}
