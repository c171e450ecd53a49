package benchkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
)

func renderedPool(t *testing.T) string {
	t.Helper()
	p, err := StaticPool("bench", "www")
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
	layout := PoolLayout{ContentDir: dir + "/www", TmpDir: dir + "/pool", HTTPPort: 41000, StatusPort: 41001}
	withH2 := layout
	withH2.H2Port = 41002
	tests := []struct {
		name     string
		layout   PoolLayout
		contains []string
		lacks    []string
	}{
		{"the pool worker serves the content on loopback ports, its temporary files in the work directory", layout,
			[]string{"listen 127.0.0.1:41000 default_server reuseport;", "listen 127.0.0.1:41001;", "root " + dir + "/www$webfarm_site_directory;", "video/mp4 mp4",
				"pid " + dir + "/pool/nginx.pid;", "client_body_temp_path " + dir + "/pool/client_body;"},
			[]string{nginx.ContentDir, " /tmp/nginx.pid", "http2"}},
		{"for HTTP/2 to the pool the worker also listens on a port of its own", withH2,
			[]string{"listen 127.0.0.1:41000 default_server reuseport;", "listen 127.0.0.1:41002 http2 reuseport;"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := LocalPoolConfig(renderedPool(t), tt.layout)
			if err != nil {
				t.Fatal(err)
			}
			testutil.ExpectText(t, "the config", conf, tt.contains, tt.lacks)
			testutil.NginxCheck(t, conf)
		})
	}
	t.Run("no path of the pod is left", func(t *testing.T) {
		// The work directory is under /tmp above: here it is not.
		conf, err := LocalPoolConfig(renderedPool(t), PoolLayout{ContentDir: "/bench/www", TmpDir: "/bench/pool", HTTPPort: 1234, StatusPort: 1235})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(conf, nginx.ContentDir) || strings.Contains(conf, " "+nginx.TmpDir+"/") {
			t.Errorf("a path of the pod is left:\n%s", conf)
		}
	})
	t.Run("a renderer that moved the pool's port is noticed", func(t *testing.T) {
		changed := strings.ReplaceAll(renderedPool(t), "listen 8080 ", "listen 9090 ")
		if _, err := LocalPoolConfig(changed, layout); err == nil {
			t.Error("no error")
		}
	})
	t.Run("PoolConfig renders the pool and moves it", func(t *testing.T) {
		p, err := StaticPool("bench", "www")
		if err != nil {
			t.Fatal(err)
		}
		got, err := PoolConfig(p, layout)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := LocalPoolConfig(renderedPool(t), layout)
		if got != want {
			t.Error("PoolConfig differs from LocalPoolConfig of the rendered config")
		}
	})
}

func TestProxyConfig(t *testing.T) {
	tests := []struct {
		name     string
		layout   ProxyLayout
		contains []string
	}{
		{"the baseline keeps ingress-nginx's upstream keep-alive and unbuffered responses",
			ProxyLayout{TmpDir: t.TempDir(), Port: 41010, Upstream: 41000, Workers: 1},
			[]string{"worker_processes 1;", "server 127.0.0.1:41000;", "keepalive 320;", "keepalive_requests 10000;",
				"keepalive_timeout 60s;", `proxy_set_header Connection "";`, "proxy_buffering off;", "listen 127.0.0.1:41010 "}},
		{"the baseline that races the farm's frontend logs every request as ingress-nginx does",
			ProxyLayout{TmpDir: t.TempDir(), Port: 41013, Upstream: 41000, Workers: 1, AccessLog: true},
			[]string{"log_format upstreaminfo ", "$upstream_response_time $upstream_status $request_id';", "/access.log upstreaminfo;",
				`set $proxy_upstream_name "bench-pool-80";`}},
		{"the reference proxy buffers responses as nginx does by default",
			ProxyLayout{TmpDir: t.TempDir(), Port: 41011, Upstream: 41000, Workers: 2, BufferResponses: true},
			[]string{"worker_processes 2;", "proxy_buffering on;"}},
		{"the HTTPS proxy speaks TLS 1.3 and HTTP/2 with ingress-nginx's session settings",
			ProxyLayout{TmpDir: t.TempDir(), Port: 41012, Upstream: 41000, Workers: 1, TLS: testCertificate(t)},
			[]string{"listen 127.0.0.1:41012 ssl http2 ", "ssl_protocols TLSv1.3;", "ssl_session_cache shared:SSL:10m;",
				"ssl_session_tickets off;", "ssl_buffer_size 4k;", "keepalive 320;", "proxy_set_header X-Forwarded-Proto $scheme;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := ProxyConfig(tt.layout)
			if err != nil {
				t.Fatal(err)
			}
			testutil.ExpectText(t, "the config", conf, tt.contains, nil)
			testutil.NginxCheck(t, conf)
		})
	}
}
