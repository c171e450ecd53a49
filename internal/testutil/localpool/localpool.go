// Package localpool runs a pool worker's nginx on loopback for tests: the
// nginx.conf and scripts the operator renders for an AppPool, moved to a
// free loopback port and a private folder, with the real nginx. A pool with
// an app proxies to its App.Port on 127.0.0.1, as in its pod.
package localpool

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
)

// IndexPage is the content a pool with static content serves at "/".
const IndexPage = "hello\n"

// Worker is a running pool worker.
type Worker struct {
	// URL is the worker's HTTP endpoint ("http://127.0.0.1:port/").
	URL  string
	Port int
	// H2CPort takes HTTP/2 without TLS, in a worker of a pool whose app
	// speaks HTTP/2 or gRPC (0 otherwise).
	H2CPort int

	cmd *exec.Cmd
}

// Quit asks nginx to quit gracefully (SIGQUIT), as its pod does after the
// drain pause.
func (w Worker) Quit() error { return w.cmd.Process.Signal(syscall.SIGQUIT) }

// Start runs p's rendered nginx.conf and scripts until the test ends and
// waits until the worker answers "/". A pool with content serves IndexPage
// as its index.html.
func Start(t *testing.T, p model.Pool) Worker {
	t.Helper()
	return StartWithContent(t, p, map[string]string{"index.html": IndexPage})
}

// StartWithContent is Start with the pool's content given as files: paths
// relative to the content root (folders made as needed) and their text.
func StartWithContent(t *testing.T, p model.Pool, contentFiles map[string]string) Worker {
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
	for name, text := range contentFiles {
		file := filepath.Join(content, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf, err := nginx.PoolConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := testutil.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	port, statusPort, h2cPort := ports[0], ports[1], 0
	moves := []struct{ old, new string }{
		{" " + nginx.TmpDir + "/", " " + dir + "/"},
		{fmt.Sprintf("listen %d ", nginx.HTTPPort), fmt.Sprintf("listen 127.0.0.1:%d ", port)},
		{fmt.Sprintf("listen %d;", nginx.StatusPort), fmt.Sprintf("listen 127.0.0.1:%d;", statusPort)},
	}
	if p.HTTP2() {
		h2cPort = ports[2]
		moves = append(moves, struct{ old, new string }{fmt.Sprintf("listen %d ", nginx.H2CPort), fmt.Sprintf("listen 127.0.0.1:%d ", h2cPort)})
	}
	if p.Content.Source != model.ContentNone {
		moves = append(moves, struct{ old, new string }{"root " + nginx.ContentDir + "$", "root " + content + "$"})
	}
	for _, r := range moves {
		if !strings.Contains(conf, r.old) {
			t.Fatalf("the rendered config has no %q", r.old)
		}
		conf = strings.ReplaceAll(conf, r.old, r.new)
	}
	files := nginx.PoolScripts(p)
	if files == nil {
		files = map[string]string{}
	}
	files[nginx.ConfigFile] = conf
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "-p", dir, "-e", "stderr", "-c", filepath.Join(dir, nginx.ConfigFile))
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// TERM: the master stops its workers too, open connections included.
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
	return Worker{URL: url, Port: port, H2CPort: h2cPort, cmd: cmd}
}
