package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NginxCheck runs the real `nginx -t` on a config and fails the test with
// nginx's own message when nginx rejects it. Files the config loads (by
// name, relative to nginx.conf) are written beside it.
func NginxCheck(t *testing.T, config string, beside ...map[string]string) {
	t.Helper()
	nginx := Tool(t, "WEBFARM_NGINX", "nginx")
	dir := t.TempDir()
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, files := range beside {
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-e", "stderr", "-c", path).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t rejected the config: %v\n%s", err, out)
	}
}

// EnvoyCheck runs the real `envoy --mode validate` on a bootstrap and fails the
// test with Envoy's own message when Envoy rejects it.
func EnvoyCheck(t *testing.T, config string, args ...string) {
	t.Helper()
	envoy := Tool(t, "WEBFARM_ENVOY", "envoy")
	dir := t.TempDir()
	path := filepath.Join(dir, "envoy.json")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"--mode", "validate", "-c", path, "-l", "error", "--use-dynamic-base-id"}, args...)
	cmd := exec.Command(envoy, args...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("envoy --mode validate rejected the config: %v\n%s", err, out)
	}
}
