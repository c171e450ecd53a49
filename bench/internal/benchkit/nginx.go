package benchkit

import (
	"fmt"
	"strings"
	"text/template"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
)

// StaticPool is an AppPool with every field left to its default (500m CPU:
// one nginx worker) serving static files, resolved as the operator resolves
// it: the pool worker both benchmarks load.
func StaticPool(namespace, name string) (model.Pool, error) {
	ap := &v1.AppPool{}
	ap.Name, ap.Namespace = name, namespace
	ap.Spec.Content = &v1.Content{Image: v1.ImageContent{Reference: "localhost/bench-content:1"}}
	return model.ResolvePool(ap, model.Platform{})
}

// PoolLayout is where a pool worker's files and ports are on this host
// instead of in its pod.
type PoolLayout struct {
	ContentDir, TmpDir string
	HTTPPort           int
	StatusPort         int
	H2Port             int // 0: no HTTP/2 listener (a dataplane tuning variant adds one)
}

// PoolConfig is the pool's nginx.conf as the operator renders it
// (nginx.PoolConfig), moved to this host (LocalPoolConfig).
func PoolConfig(p model.Pool, l PoolLayout) (string, error) {
	rendered, err := nginx.PoolConfig(p)
	if err != nil {
		return "", err
	}
	return LocalPoolConfig(rendered, l)
}

// LocalPoolConfig moves the rendered pool nginx.conf from the pod's paths and
// ports to the benchmark's, and changes nothing else. Each replacement must
// match: a renderer that changed its paths or ports fails here, loudly.
func LocalPoolConfig(rendered string, l PoolLayout) (string, error) {
	listen := fmt.Sprintf("listen 127.0.0.1:%d default_server reuseport;", l.HTTPPort)
	if l.H2Port != 0 {
		// nginx 1.22 speaks cleartext HTTP/2 (prior knowledge) only on a port of its own.
		listen += fmt.Sprintf("\n        listen 127.0.0.1:%d http2 reuseport;", l.H2Port)
	}
	// The temporary paths go first: the new paths may themselves be under /tmp.
	replacements := []struct{ old, new string }{
		{" " + nginx.TmpDir + "/", " " + l.TmpDir + "/"},
		{"root " + nginx.ContentDir + "$", "root " + l.ContentDir + "$"},
		// The table of media types beside nginx.conf in a pod, written in
		// place: the benchmarks write nginx.conf alone.
		{"include " + nginx.MimeTypesFile + ";", nginx.PoolScripts(model.Pool{})[nginx.MimeTypesFile]},
		{fmt.Sprintf("listen %d default_server reuseport;", nginx.HTTPPort), listen},
		{fmt.Sprintf("listen %d;", nginx.StatusPort), fmt.Sprintf("listen 127.0.0.1:%d;", l.StatusPort)},
	}
	out := rendered
	for _, r := range replacements {
		if !strings.Contains(out, r.old) {
			return "", fmt.Errorf("the rendered pool config has no %q: the renderer changed, adapt bench/internal/benchkit", r.old)
		}
		out = strings.ReplaceAll(out, r.old, r.new)
	}
	return out, nil
}

// ProxyLayout is the baseline proxy's place on this host.
type ProxyLayout struct {
	TmpDir          string
	Port            int
	Upstream        int // the pool worker's port
	Workers         int
	BufferResponses bool // proxy_buffering on instead of ingress-nginx's off
	// AccessLog logs every request as ingress-nginx does by default (its
	// upstreaminfo format, a write per request) into TmpDir/access.log:
	// for a race against the farm's frontend, which logs every request by
	// default too.
	AccessLog bool
	// TLS, when set, makes the proxy an HTTPS server (HTTP/1.1 and HTTP/2 by
	// ALPN) as ingress-nginx sets up a server with a TLS host.
	TLS *ProxyTLS
}

// ProxyTLS is the certificate of an HTTPS proxy.
type ProxyTLS struct {
	CertFile, KeyFile string // PEM: the chain, then the private key
}

// ProxyConfig is the baseline both benchmarks race: an nginx reverse proxy
// in front of the pool worker set up as ingress-nginx sets up its nginx by
// default, with its access log only when the layout asks (the farm's
// frontend logs every request, the cache tier does not), and with the
// pool's own client keep-alive settings (so that neither proxy closes
// client connections during a run).
func ProxyConfig(l ProxyLayout) (string, error) {
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
{{- if .AccessLog}}
    # ingress-nginx's default log format and access log (unbuffered).
    log_format upstreaminfo '$remote_addr - $remote_user [$time_local] "$request" '
        '$status $body_bytes_sent "$http_referer" "$http_user_agent" '
        '$request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] '
        '$upstream_addr $upstream_response_length $upstream_response_time $upstream_status $request_id';
    access_log {{.TmpDir}}/access.log upstreaminfo;
{{- else}}
    access_log off;
{{- end}}
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
{{- if .TLS}}
        # ingress-nginx's server with a TLS host (listen ssl http2), and its
        # TLS defaults but the protocols: TLS 1.3 only. Session tickets stay
        # off and the shared session cache on, as ingress-nginx has them.
        listen 127.0.0.1:{{.Port}} ssl http2 default_server reuseport;
        ssl_certificate {{.TLS.CertFile}};
        ssl_certificate_key {{.TLS.KeyFile}};
        ssl_protocols TLSv1.3;
        ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384;
        ssl_prefer_server_ciphers on;
        ssl_ecdh_curve auto;
        ssl_session_cache shared:SSL:10m;
        ssl_session_timeout 10m;
        ssl_session_tickets off;
        ssl_buffer_size 4k;
        ssl_early_data off;
        http2_max_concurrent_streams 128;
{{- else}}
        listen 127.0.0.1:{{.Port}} default_server reuseport;
{{- end}}

        location / {
{{- if .AccessLog}}
            set $proxy_upstream_name "bench-pool-80";
            set $proxy_alternative_upstream_name "";
{{- end}}
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
