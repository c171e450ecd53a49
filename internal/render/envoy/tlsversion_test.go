package envoy_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// These tests are a client's view of the HTTPS listener's security
// settings: what a TLS client of each version gets, and what HTTPS answers
// say of the farm's inside.

// tlsVersionFrontend serves site shop over HTTPS, oldest TLS version
// minVersion, in front of a real pool worker (the pool's nginx and an app).
func tlsVersionFrontend(t *testing.T, ca *testutil.CA, minVersion v1.TLSVersion) *localenvoy.Frontend {
	t.Helper()
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{
		Sites: []v1.Site{{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "web"}},
			TLS: v1.SiteTLS{SecretName: "shop-tls"}}},
		Frontend: v1.Frontend{TLS: v1.FrontendTLS{MinVersion: minVersion}},
	}}
	return startTLSFrontend(t, wf, []int{appWorker(t, "app-1")}, func(dir string) {
		c, k, _ := ca.MustIssue(t, "shop.example")
		writeSecretVolume(t, localenvoy.CertDir(dir, "shop"), c, k)
	})
}

// httpsGetAt is a GET of https://shop.example/ by a client that speaks TLS
// up to version max, as a browser limited to that version would send it: the
// answer's status and the TLS version it came over.
func httpsGetAt(fe *localenvoy.Frontend, ca *testutil.CA, maxVersion uint16) (status int, version uint16, err error) {
	c := httpsClient(fe, ca, false)
	c.Transport.(*http.Transport).TLSClientConfig.MaxVersion = maxVersion
	resp, err := c.Get("https://shop.example/")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.TLS.Version, nil
}

func TestATLSClientIsServedFromTheFarmsMinimumVersionOnAndRefusedBelowIt(t *testing.T) {
	ca := testutil.MustCA(t, "test CA", time.Hour)
	tests := []struct {
		name       string
		minVersion v1.TLSVersion
		client     uint16
		served     bool
	}{
		{"a TLS 1.2 client is served where the minimum is 1.2", "1.2", tls.VersionTLS12, true},
		{"a TLS 1.3 client is served where the minimum is 1.2", "1.2", tls.VersionTLS13, true},
		{"a TLS 1.2 client is refused where the minimum is 1.3", "1.3", tls.VersionTLS12, false},
		{"a TLS 1.3 client is served where the minimum is 1.3", "1.3", tls.VersionTLS13, true},
	}
	frontends := map[v1.TLSVersion]*localenvoy.Frontend{"1.2": tlsVersionFrontend(t, ca, "1.2"), "1.3": tlsVersionFrontend(t, ca, "1.3")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, version, err := httpsGetAt(frontends[tt.minVersion], ca, tt.client)
			switch {
			case tt.served && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.served && status != http.StatusOK:
				t.Fatalf("%d, want 200", status)
			case tt.served && version != tt.client:
				t.Errorf("served over TLS %x, want %x", version, tt.client)
			case !tt.served && err == nil:
				t.Errorf("served over TLS %x (%d), want a refused handshake", version, status)
			}
		})
	}
}

func TestHTTPSAnswersNameNoWorkerPodAndNoServer(t *testing.T) {
	ca := testutil.MustCA(t, "test CA", time.Hour)
	fe := tlsVersionFrontend(t, ca, "1.2")
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("over HTTP/%d", map[bool]int{false: 1, true: 2}[h2]), func(t *testing.T) {
			resp, err := httpsClient(fe, ca, h2).Get("https://shop.example/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s, want 200 from the pool", resp.Status)
			}
			if w, s := resp.Header.Get("X-Webfarm-Worker"), resp.Header.Values("Server"); w != "" || len(s) > 0 {
				t.Errorf("X-Webfarm-Worker %q and Server %q, want neither", w, s)
			}
		})
	}
}
