package envoy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
)

func farm() model.Farm {
	return model.Farm{
		Name: "shop", Namespace: "web",
		Platform: model.Platform{XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000},
	}
}

func TestBootstrap(t *testing.T) {
	otherXDS := farm()
	otherXDS.Name, otherXDS.Platform.XDSHost, otherXDS.Platform.XDSPort = "blog", "10.0.0.7", 9000
	controlTLS := farm()
	controlTLS.Platform.ControlTLS = true

	tests := []struct {
		name   string
		golden string
		farm   model.Farm
	}{
		{"a farm's Envoy fetches its config from the operator over ADS", "bootstrap.json", farm()},
		{"the xDS address comes from the operator's platform settings", "bootstrap-other-xds.json", otherXDS},
		{"over mutual TLS the Envoy presents its farm's identity and verifies the operator's Service name, both read from the mounted Secret", "bootstrap-control-tls.json", controlTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envoy.Bootstrap(tt.farm)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tt.golden, got)
			testutil.EnvoyCheck(t, withLocalSDS(t, tt.farm, string(got)), envoy.NodeIDArgs("frontend-0")...)
		})
	}
}

func TestBootstrapKeepsTheAdminInterfaceOnLoopback(t *testing.T) {
	got, err := envoy.Bootstrap(farm())
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Admin struct {
			Address struct {
				SocketAddress struct {
					Address string `json:"address"`
				} `json:"socket_address"`
			} `json:"address"`
		} `json:"admin"`
		Node struct {
			Cluster string `json:"cluster"`
		} `json:"node"`
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	if b.Admin.Address.SocketAddress.Address != "127.0.0.1" {
		t.Errorf("admin listens on %q, want 127.0.0.1", b.Admin.Address.SocketAddress.Address)
	}
	if b.Node.Cluster != "web/shop" {
		t.Errorf("node cluster %q, want web/shop", b.Node.Cluster)
	}
}

func TestBootstrapIsDeterministic(t *testing.T) {
	first, err := envoy.Bootstrap(farm())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if got, _ := envoy.Bootstrap(farm()); string(got) != string(first) {
			t.Fatal("rendering the same farm twice gave different bootstraps")
		}
	}
}

// withLocalSDS moves the pod's config and identity directories of a
// rendered bootstrap into the test's, with the SDS files the ConfigMap would
// hold: Envoy checks that they exist.
func withLocalSDS(t *testing.T, f model.Farm, doc string) string {
	t.Helper()
	config, identity := t.TempDir(), t.TempDir()
	local := func(doc string) string {
		doc = strings.ReplaceAll(doc, envoy.IdentityDir, identity)
		return strings.ReplaceAll(doc, envoy.ConfigDir+"/", config+"/")
	}
	for name, file := range envoy.SDSFiles(f) {
		if err := os.WriteFile(filepath.Join(config, name), []byte(local(file)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return local(doc)
}
