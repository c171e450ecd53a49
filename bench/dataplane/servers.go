package main

import (
	"fmt"
	"strings"
	"text/template"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/nginx"
)

// Names of the benchmark's farm, as a user would write them.
const (
	benchNamespace = "bench"
	poolName       = "www"
	siteHost       = "www.bench.example"
)

// benchPool is an AppPool with every field left to its default (500m CPU: one
// nginx worker) serving static files, resolved as the operator resolves it.
func benchPool() (model.Pool, error) {
	ap := &v1.AppPool{}
	ap.Name, ap.Namespace = poolName, benchNamespace
	ap.Spec.Content = &v1.Content{Image: &v1.ImageContent{Reference: "localhost/bench-content:1"}}
	return model.ResolvePool(ap, model.Platform{})
}

// benchFarm is a WebFarm with one site whose single route "/" goes to the
// pool, every other field left to its default.
func benchFarm() (model.Farm, error) {
	wf := &v1.WebFarm{}
	wf.Name, wf.Namespace = "bench", benchNamespace
	wf.Spec.Sites = []v1.Site{{
		Name:   "www",
		Hosts:  []v1.Hostname{siteHost},
		Routes: []v1.Route{{AppPool: poolName}},
	}}
	// The static bootstrap drops the xDS cluster; a loopback address keeps the
	// rendered one from naming a host that would be looked up.
	return model.ResolveFarm(wf, model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000})
}

// poolLayout is where a pool worker's files and ports are on this host
// instead of in its pod.
type poolLayout struct {
	contentDir, tmpDir string
	httpPort           int
	statusPort         int
	h2Port             int // 0: no HTTP/2 listener (a tuning variant adds one)
}

// localPoolConfig moves the rendered pool nginx.conf from the pod's paths and
// ports to the benchmark's, and changes nothing else. Each replacement must
// match: a renderer that changed its paths or ports fails here, loudly.
func localPoolConfig(rendered string, l poolLayout) (string, error) {
	listen := fmt.Sprintf("listen 127.0.0.1:%d default_server reuseport;", l.httpPort)
	if l.h2Port != 0 {
		// nginx 1.22 speaks cleartext HTTP/2 (prior knowledge) only on a port of its own.
		listen += fmt.Sprintf("\n        listen 127.0.0.1:%d http2 reuseport;", l.h2Port)
	}
	// The temporary paths go first: the new paths may themselves be under /tmp.
	replacements := []struct{ old, new string }{
		{" " + nginx.TmpDir + "/", " " + l.tmpDir + "/"},
		{"root " + nginx.ContentDir + ";", "root " + l.contentDir + ";"},
		{fmt.Sprintf("listen %d default_server reuseport;", nginx.HTTPPort), listen},
		{fmt.Sprintf("listen %d;", nginx.StatusPort), fmt.Sprintf("listen 127.0.0.1:%d;", l.statusPort)},
	}
	out := rendered
	for _, r := range replacements {
		if !strings.Contains(out, r.old) {
			return "", fmt.Errorf("the rendered pool config has no %q: the renderer changed, adapt bench/dataplane", r.old)
		}
		out = strings.ReplaceAll(out, r.old, r.new)
	}
	return out, nil
}

// proxyLayout is the baseline proxy's place on this host.
type proxyLayout struct {
	TmpDir          string
	Port            int
	Upstream        int // the pool worker's port
	Workers         int
	BufferResponses bool // proxy_buffering on instead of ingress-nginx's off
}

// proxyConfig is the baseline: an nginx reverse proxy in front of the pool
// worker set up as ingress-nginx sets up its nginx by default, without the
// access log (neither the pool nor the farm's Envoy logs requests) and with
// the pool's own client keep-alive settings (so that neither proxy closes
// client connections during a run).
func proxyConfig(l proxyLayout) (string, error) {
	var b strings.Builder
	if err := proxyTemplate.Execute(&b, l); err != nil {
		return "", err
	}
	return b.String(), nil
}

var proxyTemplate = template.Must(template.New("proxy").Parse(`# The baseline: an nginx reverse proxy as ingress-nginx configures it.
worker_processes {{.Workers}};
daemon off;
pid {{.TmpDir}}/nginx.pid;
error_log stderr warn;

events {
    worker_connections 16384;
}

http {
    access_log off;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 10000;
    client_body_temp_path {{.TmpDir}}/client_body;
    proxy_temp_path {{.TmpDir}}/proxy;
    fastcgi_temp_path {{.TmpDir}}/fastcgi;
    uwsgi_temp_path {{.TmpDir}}/uwsgi;
    scgi_temp_path {{.TmpDir}}/scgi;

    # ingress-nginx's upstream keep-alive defaults.
    upstream pool {
        server 127.0.0.1:{{.Upstream}};
        keepalive 320;
        keepalive_requests 10000;
        keepalive_timeout 60s;
        keepalive_time 1h;
    }

    server {
        listen 127.0.0.1:{{.Port}} default_server reuseport;

        location / {
            proxy_pass http://pool;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Request-ID $request_id;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Host $host;
            proxy_set_header X-Forwarded-Port $server_port;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Scheme $scheme;
            proxy_set_header Proxy "";
            proxy_connect_timeout 5s;
            proxy_send_timeout 60s;
            proxy_read_timeout 60s;
            proxy_buffering {{if .BufferResponses}}on{{else}}off{{end}};
            proxy_buffer_size 4k;
            proxy_buffers 4 4k;
            proxy_next_upstream error timeout;
        }
    }
}
`))

// envoyPorts are the frontend's ports on this host.
type envoyPorts struct {
	http, status, admin int
}

// farmBackends is the farm's only pool with its one worker.
func farmBackends(port int) envoy.Backends {
	return envoy.Backends{envoy.PoolCluster(poolName): {{Address: "127.0.0.1", Port: uint32(port)}}}
}
