package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

func TestTheTLSFarmReadsTheBenchmarksCertificateThroughItsRenderedSDSFiles(t *testing.T) {
	farm, err := benchTLSFarm()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := benchPool()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layout := benchkit.PoolLayout{HTTPPort: 41000, StatusPort: 41001}
	f, err := farmFrontend(farm, pool, nil, layout, localenvoy.Ports{HTTP: 41020, Status: 41021, Admin: 41022, HTTPS: 41023}, filepath.Join(dir, "envoy.json"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := bootstrapJSON(f.bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := newCertificate()
	if err != nil {
		t.Fatal(err)
	}
	conf, err = writeCertificates(dir, farm, conf, cert)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(conf)
	t.Run("the HTTPS listener is on loopback and takes TLS 1.3 only", func(t *testing.T) {
		// protojson varies its spaces from build to build.
		compact := regexp.MustCompile(`":\s+`).ReplaceAllString(doc, `":`)
		testutil.ExpectText(t, "the bootstrap", compact,
			[]string{`"name":"` + envoy.HTTPSListenerName + `"`, `"port_value":41023`, `"tls_minimum_protocol_version":"TLSv1_3"`},
			[]string{envoy.ConfigDir + "/", envoy.CertMountDir + "/"})
	})
	t.Run("the certificate is where the SDS file names it, through the Secret volume's ..data link", func(t *testing.T) {
		sds, err := os.ReadFile(filepath.Join(dir, "config", "sds-www.json"))
		if err != nil {
			t.Fatal(err)
		}
		crt := filepath.Join(localenvoy.CertDir(dir, "www"), "..data", "tls.crt")
		if !strings.Contains(string(sds), crt) {
			t.Errorf("the SDS file does not name %s:\n%s", crt, sds)
		}
		if got, err := os.ReadFile(crt); err != nil || string(got) != string(cert.certPEM) {
			t.Errorf("%s: %v", crt, err)
		}
	})
	t.Run("Envoy accepts the bootstrap", func(t *testing.T) {
		testutil.EnvoyCheck(t, doc, envoy.NodeIDArgs("bench-frontend")...)
	})
}

func TestAFarmWithoutTLSKeepsItsBootstrap(t *testing.T) {
	farm, err := benchFarm()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got, err := writeCertificates(dir, farm, []byte(`{"x": "/etc/envoy/a"}`), nil)
	if err != nil || string(got) != `{"x": "/etc/envoy/a"}` {
		t.Errorf("got %s, %v", got, err)
	}
}
