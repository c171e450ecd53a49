package devcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadPublished(t *testing.T) {
	for _, tc := range []struct {
		name, env  string
		wantErr    string
		wantValues []string
		plainHTTP  bool
	}{
		{
			name: "a release on the loopback registry is installed from it over plain HTTP with every image pinned",
			env: "REGISTRY=127.0.0.1:5000/webfarm-dev\nVERSION=0.2.0\nOPERATOR_DIGEST=sha256:aa\nENVOY_DIGEST=sha256:bb\nNGINX_DIGEST=sha256:cc\n" +
				"CHART_DIGEST=sha256:dd\nCHART=oci://127.0.0.1:5000/webfarm-dev/charts/webfarm-operator\n",
			wantValues: []string{"image.registry=127.0.0.1:5000/webfarm-dev", "image.digest=sha256:aa",
				"workloadImages.envoy.digest=sha256:bb", "workloadImages.nginx.digest=sha256:cc"},
			plainHTTP: true,
		},
		{
			name: "a release on a public registry is installed over HTTPS",
			env: "# published\nREGISTRY=ghcr.io/webfarm-dev\nVERSION=1.0.0\nOPERATOR_DIGEST=sha256:aa\nENVOY_DIGEST=sha256:bb\nNGINX_DIGEST=sha256:cc\n" +
				"CHART=oci://ghcr.io/webfarm-dev/charts/webfarm-operator\n",
			wantValues: []string{"image.registry=ghcr.io/webfarm-dev", "image.digest=sha256:aa",
				"workloadImages.envoy.digest=sha256:bb", "workloadImages.nginx.digest=sha256:cc"},
		},
		{
			name:    "a release without an image's digest is refused",
			env:     "REGISTRY=r\nVERSION=1.0.0\nOPERATOR_DIGEST=sha256:aa\nENVOY_DIGEST=sha256:bb\nCHART=oci://r/charts/webfarm-operator\n",
			wantErr: "no digest of the nginx image",
		},
		{
			name:    "a release whose chart is not an OCI reference is refused",
			env:     "REGISTRY=r\nVERSION=1.0.0\nOPERATOR_DIGEST=sha256:aa\nENVOY_DIGEST=sha256:bb\nNGINX_DIGEST=sha256:cc\nCHART=charts/webfarm-operator\n",
			wantErr: "chart missing",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "release.env")
			if err := os.WriteFile(path, []byte(tc.env), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := ReadPublished(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Values(); !slices.Equal(got, tc.wantValues) {
				t.Errorf("values %v, want %v", got, tc.wantValues)
			}
			if p.PlainHTTP() != tc.plainHTTP {
				t.Errorf("plain HTTP %v, want %v", p.PlainHTTP(), tc.plainHTTP)
			}
		})
	}
}

func TestAReleaseFromTheRepositoryHasNoValuesOfItsOwn(t *testing.T) {
	if v := (Published{}).Values(); v != nil {
		t.Errorf("values %v, want none (the chart's defaults)", v)
	}
}
