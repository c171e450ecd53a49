package nginx_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
)

// The queue timeout runs in the worker's real nginx with its njs script: the
// rendered config and script, moved to a loopback port and a temporary folder.
func TestAWorkerRefusesARequestThatWaitedLongerThanTheQueueTimeout(t *testing.T) {
	p := basePool()
	p.CPUMilli = 1000
	p.QueueTimeout = time.Second
	url := startPoolWorker(t, p)

	now := func(offset time.Duration) string {
		return strconv.FormatInt(time.Now().Add(offset).UnixMilli(), 10)
	}
	tests := []struct {
		name     string
		queuedAt string // "" sends no header
		want     int
	}{
		{"a request that waited two seconds is refused", now(-2 * time.Second), model.QueueTimeoutStatus},
		{"a request that waited 100 ms is served", now(-100 * time.Millisecond), http.StatusOK},
		{"a request just stamped is served", now(0), http.StatusOK},
		{"a request without a stamp is served (it did not come through a frontend queue)", "", http.StatusOK},
		{"a stamp that is not a number is ignored", "yesterday", http.StatusOK},
		{"a stamp in the future (another node's clock) is served", now(time.Minute), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.queuedAt != "" {
				req.Header.Set(model.QueuedAtHeader, tt.queuedAt)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// startPoolWorker runs a pool's rendered nginx.conf and scripts on a free
// loopback port with one page of content, until the test ends.
func startPoolWorker(t *testing.T, p model.Pool) string {
	t.Helper()
	bin := testutil.Tool(t, "WEBFARM_NGINX", "nginx")
	dir := t.TempDir()
	// nginx's workers run as nobody when the test runs as root.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	content := filepath.Join(dir, "www")
	if err := os.MkdirAll(content, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(content, "index.html"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf, err := nginx.PoolConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	port, statusPort := freePort(t), freePort(t)
	for _, r := range []struct{ old, new string }{
		{" " + nginx.TmpDir + "/", " " + dir + "/"},
		{"root " + nginx.ContentDir + ";", "root " + content + ";"},
		{fmt.Sprintf("listen %d ", nginx.HTTPPort), fmt.Sprintf("listen 127.0.0.1:%d ", port)},
		{fmt.Sprintf("listen %d;", nginx.StatusPort), fmt.Sprintf("listen 127.0.0.1:%d;", statusPort)},
	} {
		if !strings.Contains(conf, r.old) {
			t.Fatalf("the rendered config has no %q", r.old)
		}
		conf = strings.ReplaceAll(conf, r.old, r.new)
	}
	files := nginx.PoolScripts(p)
	files[nginx.ConfigFile] = conf
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "-p", dir, "-e", "stderr", "-c", filepath.Join(dir, nginx.ConfigFile))
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// TERM: the master stops its workers too.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("nginx:\n%s", log.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testutil.Eventually(t, 10*time.Second, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
	return url
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
