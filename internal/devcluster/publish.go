package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Published is a release that hack/release.sh (make release) pushed to a
// registry, as it describes it in dist/release.env: the chart as an OCI
// artifact, and the images of the operator, Envoy and nginx by digest.
type Published struct {
	Registry string // e.g. 127.0.0.1:5000/webfarm-dev
	Version  string
	Chart    string            // oci://REGISTRY/charts/webfarm-operator
	Digests  map[string]string // operator, envoy, nginx -> sha256:...
}

// LocalPlatforms are the platforms of the images Publish builds and pushes:
// the local cluster's own (its node is linux/amd64), which spares the e2e
// suite and make demo the linux/arm64 builds that make release adds.
// WEBFARM_RELEASE_PLATFORMS (e.g. linux/amd64,linux/arm64) overrides it, to
// run the suite against the indexes of a full release.
func LocalPlatforms() string {
	if p := os.Getenv("WEBFARM_RELEASE_PLATFORMS"); p != "" {
		return p
	}
	return "linux/amd64"
}

// Publish builds and pushes a release to the local cluster's registry on
// loopback (hack/release.sh, which starts the registry if needed) and
// returns what it published. version empty: the chart's own. Unsigned: no
// SBOMs or signatures (make demo's first look).
func Publish(ctx context.Context, root, version string, signed bool, out io.Writer) (Published, error) {
	args := []string{"--platforms", LocalPlatforms()}
	if version != "" {
		args = append(args, "--version", version)
	}
	if !signed {
		args = append(args, "--unsigned")
	}
	if err := runScript(ctx, root, out, "hack/release.sh", args...); err != nil {
		return Published{}, err
	}
	return ReadPublished(filepath.Join(root, "dist", "release.env"))
}

// VerifyPublished checks the release that Publish last published (its
// dist/release.env): every image and the chart signed, every image with a
// signed SBOM, every tag still naming its released digest
// (hack/verify-release.sh).
func VerifyPublished(ctx context.Context, root string, out io.Writer) error {
	return runScript(ctx, root, out, "hack/verify-release.sh", "--env", filepath.Join(root, "dist", "release.env"))
}

// ReadPublished reads a release.env written by hack/release.sh.
func ReadPublished(path string) (Published, error) {
	values, err := readEnv(path)
	if err != nil {
		return Published{}, err
	}
	p := Published{Registry: values["REGISTRY"], Version: values["VERSION"], Chart: values["CHART"], Digests: map[string]string{}}
	for _, name := range []string{"operator", "envoy", "nginx"} {
		p.Digests[name] = values[strings.ToUpper(name)+"_DIGEST"]
		if !strings.HasPrefix(p.Digests[name], "sha256:") {
			return Published{}, fmt.Errorf("%s: no digest of the %s image", path, name)
		}
	}
	if p.Registry == "" || p.Version == "" || !strings.HasPrefix(p.Chart, "oci://") {
		return Published{}, fmt.Errorf("%s: registry, version or chart missing", path)
	}
	return p, nil
}

// Values are the chart values that install exactly this release's images
// from its registry.
func (p Published) Values() []string {
	if p.Chart == "" {
		return nil
	}
	return []string{
		"image.registry=" + p.Registry,
		"image.digest=" + p.Digests["operator"],
		"workloadImages.envoy.digest=" + p.Digests["envoy"],
		"workloadImages.nginx.digest=" + p.Digests["nginx"],
	}
}

// PlainHTTP tells whether the registry is on loopback, spoken to without TLS.
func (p Published) PlainHTTP() bool {
	host, _, _ := strings.Cut(strings.TrimPrefix(p.Chart, "oci://"), "/")
	return strings.HasPrefix(host, "127.") || strings.HasPrefix(host, "localhost:")
}

// PublishPrevious publishes the previous release, for upgrade tests: the
// commit and version that hack/previous-release.env names, checked out of the
// repository's history into bin/previous-release, built and pushed with that
// commit's own hack/release.sh (its operator image, its chart and CRDs; the
// Envoy and nginx images are built by today's scripts).
func PublishPrevious(ctx context.Context, root string, out io.Writer) (Published, error) {
	pinned, err := readEnv(filepath.Join(root, "hack", "previous-release.env"))
	if err != nil {
		return Published{}, err
	}
	commit, version := pinned["PREVIOUS_COMMIT"], pinned["PREVIOUS_VERSION"]
	if commit == "" || version == "" {
		return Published{}, errors.New("hack/previous-release.env names no PREVIOUS_COMMIT and PREVIOUS_VERSION")
	}
	dir := filepath.Join(root, "bin", "previous-release", version)
	if err := os.RemoveAll(dir); err != nil {
		return Published{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Published{}, err
	}
	// The previous release's code, chart and hack/release.sh, with today's
	// image tooling (the rest of hack/): its Envoy and nginx images are
	// today's, so only what the previous operator renders differently rolls
	// pods, and a build of the previous images cannot break on a Debian
	// archive that has moved on. git archive needs the commit in this
	// clone's history (a shallow clone lacks it: fetch with --unshallow).
	extract := exec.CommandContext(ctx, "sh", "-c", `set -e
		git -C "$1" archive "$2" | tar -x -C "$3"
		rm -rf "$3/hack" && cp -a "$1/hack" "$3/hack" && rm -f "$3/hack/release.sh"
		git -C "$1" archive "$2" hack/release.sh | tar -x -C "$3"`, "sh", root, commit, dir)
	if b, err := extract.CombinedOutput(); err != nil {
		return Published{}, fmt.Errorf("checking out the previous release %s (%s): %w: %s", version, commit, err, b)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, "bin", "manager"), "./cmd/manager")
	build.Dir, build.Stdout, build.Stderr = dir, out, out
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return Published{}, fmt.Errorf("building the previous release's operator: %w", err)
	}
	if err := todaysEnvoyDrain(ctx, root, dir, out); err != nil {
		return Published{}, err
	}
	if err := runScript(ctx, dir, out, "hack/release.sh", "--version", version); err != nil {
		return Published{}, err
	}
	return ReadPublished(filepath.Join(dir, "dist", "release.env"))
}

// readEnv reads KEY=VALUE lines (comments and blank lines skipped).
func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if key, value, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			values[key] = value
		}
	}
	return values, nil
}

// todaysEnvoyDrain puts this tree's envoy-drain where today's image tooling
// looks for it when it builds the previous release's Envoy image (the
// images are today's; that release's build makes no envoy-drain): the
// binary this tree built, so that the image is the same, else a build of
// it.
func todaysEnvoyDrain(ctx context.Context, root, dir string, out io.Writer) error {
	to := filepath.Join(dir, "bin", "envoy-drain")
	if b, err := os.ReadFile(filepath.Join(root, "bin", "envoy-drain")); err == nil {
		return os.WriteFile(to, b, 0o755)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", to, "./cmd/envoy-drain")
	build.Dir, build.Stdout, build.Stderr = root, out, out
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return fmt.Errorf("building envoy-drain for the previous release's Envoy image: %w", err)
	}
	return nil
}
