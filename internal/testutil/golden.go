// Package testutil holds helpers shared by the tests: golden files and the real
// tools (nginx, Envoy) that check rendered configs.
package testutil

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"webfarm.dev/operator/internal/devcluster"
)

var update = flag.Bool("update", false, "rewrite golden files from the current output")

// Golden compares got with testdata/<name>, or rewrites the file with -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (create it with: make update-golden): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the rendered output; if the change is intended, run make update-golden and review the diff.\n--- got ---\n%s", path, got)
	}
}

// Tool returns the path of a real tool the tests run: the file named by the
// environment variable (the Makefile points it into bin/), else bin/<name> of
// the repository. A missing tool fails the test: hack/install-tools.sh installs it.
func Tool(t *testing.T, envVar, name string) string {
	t.Helper()
	candidates := []string{os.Getenv(envVar), filepath.Join(RepoRoot(), "bin", name)}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Fatalf("%s not found (set %s or run: make tools)", name, envVar)
	return ""
}

// RepoRoot is the repository's top folder, found from the working
// directory (a test runs in its package's folder): the source paths compiled
// into the binary are the module's, not the disk's (-trimpath).
func RepoRoot() string {
	root, err := devcluster.RepoRoot()
	if err != nil {
		panic(err)
	}
	return root
}
