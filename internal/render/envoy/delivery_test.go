package envoy_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests run the frontend the operator renders (real Envoy) in front of
// a real nginx on loopback, and measure how it delivers responses.

// The files the worker serves.
var (
	page  = []byte(strings.Repeat("<p class=\"row\">Contoso web farm: application pools, queues and caches.</p>\n", 400))
	small = []byte("a short answer\n")
	// logo is an image: compressed already, so the frontend leaves it alone.
	logo = bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}, 512)
	// download is incompressible, so its transfer time is its size over the limit.
	download = func() []byte {
		b := make([]byte, 384*1024)
		x := uint32(2463534242)
		for i := range b {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b[i] = byte(x)
		}
		return b
	}()
)

// worker runs nginx serving the files on a free loopback port; it names
// itself in the X-Worker header.
func worker(t *testing.T, name string) int {
	t.Helper()
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"page.html": page, "small.txt": small, "logo.png": logo, "download.bin": download} {
		if err := os.WriteFile(filepath.Join(www, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ports, err := testutil.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the test's folders are the caller's alone
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
daemon off;
pid %[2]s/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    types { text/html html; text/plain txt; image/png png; application/octet-stream bin; }
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    server {
        listen 127.0.0.1:%[3]d;
        root %[4]s;
        add_header X-Worker %[5]s always;
    }
}
`, user, dir, ports[0], www, name)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Tool(t, "WEBFARM_NGINX", "nginx"), "-c", path, "-e", "stderr")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGQUIT); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/small.txt", ports[0])
	testutil.Eventually(t, 10*time.Second, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return ports[0]
}

// frontend runs the farm's rendered frontend in front of the worker: sites
// www (www.example) and downloads (downloads.example), both routed to pool
// web.
func frontend(t *testing.T, workerPort int, edit func(*v1.WebFarm)) *localenvoy.Frontend {
	t.Helper()
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{AppPool: "web"}}},
		{Name: "downloads", Hosts: []v1.Hostname{"downloads.example"}, Routes: []v1.Route{{AppPool: "web"}}},
	}}}
	edit(wf)
	return frontendFor(t, wf, map[string][]int{"web": {workerPort}})
}

// frontendFor runs the rendered frontend of farm wf, whose pools (serving
// static content with the API's defaults) have these workers' ports.
func frontendFor(t *testing.T, wf *v1.WebFarm, workers map[string][]int) *localenvoy.Frontend {
	t.Helper()
	return startFrontend(t, wf, workers, nil, nil)
}

// startFrontend runs the rendered frontend of farm wf: its pools have these
// workers' ports and the given specs (unnamed: static content with the API's
// defaults), its cache tiers these ports.
func startFrontend(t *testing.T, wf *v1.WebFarm, workers map[string][]int, specs map[string]v1.AppPoolSpec, caches map[string]int) *localenvoy.Frontend {
	t.Helper()
	wf.Name, wf.Namespace = "contoso", "web"
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	farm, err := model.ResolveFarm(wf, platform)
	if err != nil {
		t.Fatal(err)
	}
	pools, backends := map[string]model.Pool{}, endpoints.Backends{}
	for name, ports := range workers {
		spec, ok := specs[name]
		if !ok {
			spec = v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}}
		}
		pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web"}, Spec: spec}, platform)
		if err != nil {
			t.Fatal(err)
		}
		pools[name] = pool
		for _, port := range ports {
			backends[vocabulary.PoolCluster(name)] = append(backends[vocabulary.PoolCluster(name)], endpoints.Endpoint{Address: "127.0.0.1", Port: uint32(port)})
		}
	}
	for policy, port := range caches {
		backends[vocabulary.CacheCluster(policy)] = []endpoints.Endpoint{{Address: "127.0.0.1", Port: uint32(port)}}
	}
	return runFrontend(t, farm, pools, backends)
}

// runFrontend renders the farm's routing to these backends and runs the
// real Envoy with it on loopback until the test ends.
func runFrontend(t *testing.T, farm model.Farm, pools map[string]model.Pool, backends endpoints.Backends) *localenvoy.Frontend {
	t.Helper()
	routing, err := envoy.FarmRouting(farm, pools, backends)
	if err != nil {
		t.Fatal(err)
	}
	fe, err := localenvoy.Start(testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), t.TempDir(), farm, routing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Stop)
	return fe
}

// client neither asks for compression nor undoes it by itself.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}

func get(t *testing.T, url, host string, headers ...string) (http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (Host %s): %d %s", url, host, resp.StatusCode, body)
	}
	return resp.Header, body
}

func TestCompressionServesTextAsTheClientAcceptsAndLeavesTheRestAlone(t *testing.T) {
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) { wf.Spec.Frontend.Compression = new(true) })
	tests := []struct {
		name, path, acceptEncoding, wantEncoding string
	}{
		{"a page for a client that accepts gzip is gzipped", "/page.html", "gzip", "gzip"},
		{"a page for a client that accepts brotli is brotli-compressed", "/page.html", "br", "br"},
		{"a client that accepts both equally gets brotli", "/page.html", "gzip, br", "br"},
		{"a client that prefers gzip gets gzip", "/page.html", "gzip;q=1.0, br;q=0.5", "gzip"},
		{"a client that accepts no encoding gets the page as it is", "/page.html", "", ""},
		{"a response shorter than the minimum is not compressed", "/small.txt", "gzip, br", ""},
		{"an image is not compressed", "/logo.png", "gzip, br", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header, body := get(t, fe.URL+tt.path, "www.example", "Accept-Encoding", tt.acceptEncoding)
			if got := header.Get("Content-Encoding"); got != tt.wantEncoding {
				t.Fatalf("Content-Encoding %q, want %q", got, tt.wantEncoding)
			}
			if tt.wantEncoding == "" {
				return
			}
			if !strings.Contains(header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("Vary %q lacks Accept-Encoding: caches would serve the compressed page to any client", header.Get("Vary"))
			}
			ratio := float64(len(body)) / float64(len(page))
			t.Logf("%d bytes compressed to %d with %s (%.3f)", len(page), len(body), tt.wantEncoding, ratio)
			if ratio > 0.1 {
				t.Errorf("the repetitive page compressed to %.3f of its size, want at most 0.1", ratio)
			}
			if tt.wantEncoding == "gzip" {
				r, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				plain, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(plain, page) {
					t.Errorf("the gzipped page does not decompress to the page (%d bytes, %v)", len(plain), err)
				}
			}
		})
	}
}

func TestWithoutKeepAliveEachRequestHasAConnectionOfItsOwn(t *testing.T) {
	port := worker(t, "w1")
	for _, tt := range []struct {
		name      string
		keepAlive bool
		wantConns int
	}{
		{"with keep-alive five requests share one connection", true, 1},
		{"without keep-alive five requests open five connections", false, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fe := frontend(t, port, func(wf *v1.WebFarm) { wf.Spec.Frontend.KeepAlive = new(tt.keepAlive) })
			c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			fresh := 0
			for range 5 {
				req, err := http.NewRequest(http.MethodGet, fe.URL+"/small.txt", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = "www.example"
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
					GotConn: func(i httptrace.GotConnInfo) {
						if !i.Reused {
							fresh++
						}
					},
				}))
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if closing := resp.Close; closing == tt.keepAlive {
					t.Errorf("the response says Connection: close = %v", closing)
				}
			}
			accepted, err := fe.Counter("http.farm.downstream_cx_total")
			if err != nil {
				t.Fatal(err)
			}
			if fresh != tt.wantConns || int(accepted) != tt.wantConns {
				t.Errorf("the client opened %d connections and Envoy accepted %d, want %d", fresh, accepted, tt.wantConns)
			}
		})
	}
}

func TestASitesBandwidthLimitPacesItsDownloadsAndNoOtherSite(t *testing.T) {
	const limit = 64 * 1024
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) { wf.Spec.Sites[1].MaxBandwidthBytesPerSecond = limit })
	timed := func(host string) time.Duration {
		start := time.Now()
		_, body := get(t, fe.URL+"/download.bin", host)
		if !bytes.Equal(body, download) {
			t.Fatalf("the download from %s is %d bytes, not the file's %d", host, len(body), len(download))
		}
		return time.Since(start)
	}
	want := time.Duration(float64(len(download)) / limit * float64(time.Second))
	limited := timed("downloads.example")
	free := timed("www.example")
	t.Logf("%d KiB at %d KiB/s: %s (size/limit %s, ratio %.2f); the unlimited site: %s",
		len(download)/1024, limit/1024, limited.Round(time.Millisecond), want, limited.Seconds()/want.Seconds(), free.Round(time.Millisecond))
	if r := limited.Seconds() / want.Seconds(); r < 0.8 || r > 1.2 {
		t.Errorf("the limited download took %.2f times size/limit, want 1.0 ± 0.2", r)
	}
	if free > want/4 {
		t.Errorf("the unlimited site took %s: the limit is not the site's own", free)
	}
}
