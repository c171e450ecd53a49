// Package release tests publishing a release (hack/release.sh, `make
// release`) to the real local registry and verifying it
// (hack/verify-release.sh): every image an index of the platforms the docs
// promise, the arm64 images' programs AArch64 ones with their libraries (this
// amd64 host cannot run them), every index and image signed and every image
// carrying a signed SBOM that lists its software, and verification failing on
// an unsigned image, an image replaced under its tag, a signature by another
// key, and an index whose platforms' images were swapped or dropped.
package release

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/devcluster"
	"webfarm.dev/operator/internal/testutil"
)

// A version and registry paths of this test's own, so it never overwrites a
// release the local cluster or the e2e suite installs.
const version = "0.0.0-releasetest"

// The platforms of each image of a release, as README and docs/images.md promise them.
var promised = map[string][]string{
	"operator": {"linux/amd64", "linux/arm64"},
	"envoy":    {"linux/amd64", "linux/arm64"},
	"nginx":    {"linux/amd64", "linux/arm64"},
}

// The programs of each arm64 image that a pod runs or loads, and that must
// find every library they need in the image.
var arm64Programs = map[string][]string{
	"operator": {"/manager"},
	"envoy":    {"/usr/local/bin/envoy"},
	"nginx":    {"/usr/sbin/nginx", "/usr/bin/curl", "/usr/lib/nginx/modules/ngx_http_js_module.so"},
}

func localRegistry() string {
	if r := os.Getenv("WEBFARM_LOCAL_REGISTRY"); r != "" {
		return r
	}
	return "127.0.0.1:5000"
}

// script runs a hack/ script of the repository and returns its output.
func script(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	// A first release builds the arm64 images and, cold, the operator's
	// dependencies for arm64 (several minutes on two cores).
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
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

// pushIndex pushes image archives as one index to REPOSITORY:TAG and returns its digest.
func pushIndex(t *testing.T, to string, archives ...string) string {
	t.Helper()
	digestFile := filepath.Join(t.TempDir(), "digest")
	mustScript(t, "hack/images/push.sh", append([]string{"--index", "--to", to, "--digest-file", digestFile}, archives...)...)
	b, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// localSigningKey is the per-user key hack/release.sh signs loopback releases with.
func localSigningKey() string {
	cache := os.Getenv("WEBFARM_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "webfarm-operator")
	}
	return filepath.Join(cache, "signing", "cosign.key")
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
	mustScript(t, "hack/release.sh", "--registry", registry, "--version", version, "--dist", dist,
		"--platforms", "linux/amd64,linux/arm64")
	t.Logf("built, published and signed in %s", time.Since(start).Round(time.Second))
	releaseEnv := filepath.Join(dist, "release.env")
	published, err := devcluster.ReadPublished(releaseEnv)
	if err != nil {
		t.Fatal(err)
	}

	for name, want := range promised {
		t.Run("the "+name+" image is one index of the promised platforms, its arm64 programs AArch64 ones with their libraries", func(t *testing.T) {
			repository := registry + "/webfarm-" + name
			index, err := readManifest(repository, published.Digests[name])
			if err != nil {
				t.Fatal(err)
			}
			if index.MediaType != "application/vnd.oci.image.index.v1+json" {
				t.Fatalf("%s@%s is a %s, want an OCI image index", repository, published.Digests[name], index.MediaType)
			}
			if got := platforms(index); !slices.Equal(got, want) {
				t.Fatalf("the index lists %v, the docs promise %v", got, want)
			}
			arm64, err := imageOf(index, "linux/arm64")
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := unpackImage(repository, arm64, root); err != nil {
				t.Fatal(err)
			}
			for _, program := range arm64Programs[name] {
				libs, err := checkAArch64(root, program)
				if err != nil {
					t.Errorf("the linux/arm64 image: %v", err)
					continue
				}
				t.Logf("%s (linux/arm64): AArch64, with the %d libraries it loads", program, len(libs))
			}
		})
	}

	out := mustScript(t, "hack/verify-release.sh", "--env", releaseEnv)
	for _, want := range []string{
		"nginx-light 1.22.1-9",               // the nginx image's Debian packages, with versions
		"libc6 2.36-",                        // the glibc package Envoy's libraries came from
		"sigs.k8s.io/controller-runtime v",   // the operator's Go modules
		"/charts/webfarm-operator@sha256:",   // the chart is signed too
		"(linux/arm64): signed; signed SBOM", // each platform's image too, with its own SBOM
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
	// signIndex signs an index alone (not its images) with the release's key,
	// as someone holding the key but tampering with an image would.
	signIndex := func(t *testing.T, ref string) {
		t.Helper()
		sign := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "cosign"), "sign", "--yes",
			"--key", localSigningKey(), "--tlog-upload=false", "--allow-http-registry", "--allow-insecure-registry", ref)
		sign.Env = append(os.Environ(), "COSIGN_PASSWORD=")
		if b, err := sign.CombinedOutput(); err != nil {
			t.Fatalf("cosign sign %s: %v\n%s", ref, err, b)
		}
	}
	operatorTag := registry + "/webfarm-operator:" + version
	// Each case tampers with the release and names what verification must say.
	// The last three replace a released tag (the envoy one, then the
	// operator's, checked first), so they run last, in this order.
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
		{
			name: "a signed index whose arm64 image was swapped for another fails verification",
			tamper: func(t *testing.T) []string {
				digest := pushIndex(t, operatorTag, filepath.Join(images, "operator.tar"), filepath.Join(images, "nginx-arm64.tar"))
				signIndex(t, registry+"/webfarm-operator@"+digest)
				return []string{"--env", withEnv(t, releaseEnv, map[string]string{"OPERATOR_DIGEST": digest})}
			},
			wantErr: "the operator image: its linux/arm64 image is not signed by the release's signer",
		},
		{
			name: "a signed index that dropped a platform fails verification",
			tamper: func(t *testing.T) []string {
				digest := pushIndex(t, operatorTag, filepath.Join(images, "operator.tar"))
				signIndex(t, registry+"/webfarm-operator@"+digest)
				return []string{"--env", withEnv(t, releaseEnv, map[string]string{"OPERATOR_DIGEST": digest})}
			},
			wantErr: "the operator image lists the platforms linux/amd64, the release has linux/amd64,linux/arm64",
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
