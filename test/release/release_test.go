// Package release tests publishing a release (hack/release.sh, `make
// release`) to the real local registry and verifying it
// (hack/verify-release.sh): every image signed and carrying a signed SBOM
// that lists its software, and verification failing on an unsigned image, an
// image replaced under its tag and a signature by another key.
package release

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/testutil"
)

// A version and registry paths of this test's own, so it never overwrites a
// release the local cluster or the e2e suite installs.
const version = "0.0.0-releasetest"

func localRegistry() string {
	if r := os.Getenv("WEBFARM_LOCAL_REGISTRY"); r != "" {
		return r
	}
	return "127.0.0.1:5000"
}

// script runs a hack/ script of the repository and returns its output.
func script(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	root := testutil.RepoRoot()
	cmd := exec.CommandContext(ctx, filepath.Join(root, name), args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustScript(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := script(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// push pushes an image archive to REPOSITORY:TAG and returns its digest.
func push(t *testing.T, archive, to string) string {
	t.Helper()
	digestFile := filepath.Join(t.TempDir(), "digest")
	mustScript(t, "hack/images/push.sh", "--to", to, "--digest-file", digestFile, archive)
	b, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// withEnv writes a copy of release.env with some of its values replaced.
func withEnv(t *testing.T, releaseEnv string, replace map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(releaseEnv)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(string(b)) {
		key, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		if value, ok := replace[key]; ok {
			line = key + "=" + value + "\n"
		}
		lines = append(lines, line)
	}
	path := filepath.Join(t.TempDir(), "release.env")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAPublishedReleaseIsSignedAndDescribedAndVerificationCatchesTampering(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("publishing a release builds images, which needs root (debootstrap, file ownership): run make test as root")
	}
	root := testutil.RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "bin", "manager")); err != nil {
		build := exec.CommandContext(t.Context(), "make", "-s", "build")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
	}
	registry := localRegistry() + "/webfarm-releasetest"
	dist := t.TempDir()
	start := time.Now()
	mustScript(t, "hack/release.sh", "--registry", registry, "--version", version, "--dist", dist)
	t.Logf("published and signed in %s", time.Since(start).Round(time.Second))
	releaseEnv := filepath.Join(dist, "release.env")

	out := mustScript(t, "hack/verify-release.sh", "--env", releaseEnv)
	for _, want := range []string{
		"nginx-light 1.22.1-9",             // the nginx image's Debian packages, with versions
		"libc6 2.36-",                      // the glibc package Envoy's libraries came from
		"sigs.k8s.io/controller-runtime v", // the operator's Go modules
		"/charts/webfarm-operator@sha256:", // the chart is signed too
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verification output does not mention %q:\n%s", want, out)
		}
	}

	otherKey := filepath.Join(t.TempDir(), "other")
	keygen := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "cosign"), "generate-key-pair", "--output-key-prefix", otherKey)
	keygen.Env = append(os.Environ(), "COSIGN_PASSWORD=")
	if b, err := keygen.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, b)
	}
	images := filepath.Join(root, "bin", "images")
	// Each case tampers with the release and names what verification must say.
	// The last one replaces a released tag, so it runs last.
	for _, tc := range []struct {
		name    string
		tamper  func(t *testing.T) []string // verify-release.sh's arguments
		wantErr string
	}{
		{
			name: "an image that was pushed but never signed fails verification",
			tamper: func(t *testing.T) []string {
				unsigned := registry + "/unsigned"
				digest := push(t, filepath.Join(images, "operator.tar"), unsigned+"/webfarm-operator:"+version)
				return []string{"--env", withEnv(t, releaseEnv, map[string]string{"REGISTRY": unsigned, "OPERATOR_DIGEST": digest})}
			},
			wantErr: "the operator image is not signed by the release's signer",
		},
		{
			name: "a release checked against another signer's key fails verification",
			tamper: func(t *testing.T) []string {
				return []string{"--env", releaseEnv, "--key", otherKey + ".pub"}
			},
			wantErr: "the operator image is not signed by the release's signer",
		},
		{
			name: "an image replaced under its released tag fails verification",
			tamper: func(t *testing.T) []string {
				push(t, filepath.Join(images, "nginx.tar"), registry+"/webfarm-envoy:"+version)
				return []string{"--env", releaseEnv}
			},
			wantErr: "the envoy image was altered: " + registry + "/webfarm-envoy:" + version + " now names sha256:",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.tamper(t)
			out, err := script(t, "hack/verify-release.sh", args...)
			if err == nil {
				t.Fatalf("verification passed, want it to fail saying %q:\n%s", tc.wantErr, out)
			}
			if !strings.Contains(out, tc.wantErr) {
				t.Errorf("verification failed without saying %q:\n%s", tc.wantErr, out)
			}
		})
	}
}
