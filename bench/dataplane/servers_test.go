package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
)

func renderedPool(t *testing.T) string {
	t.Helper()
	p, err := benchPool()
	if err != nil {
		t.Fatal(err)
	}
	conf, err := nginx.PoolConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

func TestLocalPoolConfig(t *testing.T) {
	dir := t.TempDir() // nginx -t opens the pid file's folder
	if err := os.MkdirAll(filepath.Join(dir, "pool"), 0o755); err != nil {
		t.Fatal(err)
	}
	layout := poolLayout{contentDir: dir + "/www", tmpDir: dir + "/pool", httpPort: 41000, statusPort: 41001}
	withH2 := layout
	withH2.h2Port = 41002
	tests := []struct {
		name     string
		layout   poolLayout
		contains []string
		lacks    []string
	}{
		{"the pool worker serves the content on loopback ports, its temporary files in the work directory", layout,
			[]string{"listen 127.0.0.1:41000 default_server reuseport;", "listen 127.0.0.1:41001;", "root " + dir + "/www;",
				"pid " + dir + "/pool/nginx.pid;", "client_body_temp_path " + dir + "/pool/client_body;"},
			[]string{"/srv/www", " /tmp/nginx.pid", "http2"}},
		{"for HTTP/2 to the pool the worker also listens on a port of its own", withH2,
			[]string{"listen 127.0.0.1:41000 default_server reuseport;", "listen 127.0.0.1:41002 http2 reuseport;"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := localPoolConfig(renderedPool(t), tt.layout)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(conf, s) {
					t.Errorf("the config lacks %q", s)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(conf, s) {
					t.Errorf("the config still has %q", s)
				}
			}
			testutil.NginxCheck(t, conf)
		})
	}
	t.Run("a renderer that moved the pool's port is noticed", func(t *testing.T) {
		changed := strings.ReplaceAll(renderedPool(t), "listen 8080 ", "listen 9090 ")
		if _, err := localPoolConfig(changed, layout); err == nil {
			t.Error("no error")
		}
	})
}

func TestProxyConfig(t *testing.T) {
	tests := []struct {
		name     string
		layout   proxyLayout
		contains []string
	}{
		{"the baseline keeps ingress-nginx's upstream keep-alive and unbuffered responses",
			proxyLayout{TmpDir: t.TempDir(), Port: 41010, Upstream: 41000, Workers: 1},
			[]string{"worker_processes 1;", "server 127.0.0.1:41000;", "keepalive 320;", "keepalive_requests 10000;",
				"keepalive_timeout 60s;", `proxy_set_header Connection "";`, "proxy_buffering off;", "listen 127.0.0.1:41010 "}},
		{"the reference proxy buffers responses as nginx does by default",
			proxyLayout{TmpDir: t.TempDir(), Port: 41011, Upstream: 41000, Workers: 2, BufferResponses: true},
			[]string{"worker_processes 2;", "proxy_buffering on;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := proxyConfig(tt.layout)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(conf, s) {
					t.Errorf("the config lacks %q", s)
				}
			}
			testutil.NginxCheck(t, conf)
		})
	}
}

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
	layout := poolLayout{httpPort: 41000, statusPort: 41001, h2Port: 41002}
	f, err := farmFrontend(farm, pool, settings, layout, envoyPorts{http: 41020, status: 41021, admin: 41022}, "/tmp/bench/envoy.json")
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
