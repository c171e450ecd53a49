package envoy_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// writeSecretVolume writes tls.crt and tls.key into dir the way the kubelet
// updates a Secret volume: a new timestamped directory, a "..data" link
// swapped to it by a rename, and tls.crt and tls.key linking through
// "..data".
func writeSecretVolume(t *testing.T, dir string, certPEM, keyPEM []byte) {
	t.Helper()
	version := fmt.Sprintf("..%d", time.Now().UnixNano())
	if err := os.MkdirAll(filepath.Join(dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, version, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	if err := os.Symlink(version, filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}
}

// startTLSFrontend runs farm wf (pool "web" on these worker ports) after
// prepare has written the certificates into its directory.
func startTLSFrontend(t *testing.T, wf *v1.WebFarm, ports []int, prepare func(dir string)) *localenvoy.Frontend {
	t.Helper()
	wf.Name, wf.Namespace = "contoso", "web"
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	farm, err := model.ResolveFarm(wf, platform)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := model.ResolvePool(&v1.AppPool{Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	pool.Name, pool.Namespace = "web", "web"
	backends := endpoints.Backends{}
	for _, p := range ports {
		backends[vocabulary.PoolCluster("web")] = append(backends[vocabulary.PoolCluster("web")], endpoints.Endpoint{Address: "127.0.0.1", Port: uint32(p)})
	}
	routing, err := envoy.FarmRouting(farm, map[string]model.Pool{"web": pool}, backends)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range farm.Certificates() {
		if err := os.MkdirAll(localenvoy.CertDir(dir, c.Name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prepare(dir)
	fe, err := localenvoy.Start(testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), dir, farm, routing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Stop)
	return fe
}

// handshake connects to the HTTPS listener with this server name ("": no
// SNI) and returns the connection state.
func handshake(fe *localenvoy.Frontend, serverName string, cfg *tls.Config) (tls.ConnectionState, error) {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg = cfg.Clone()
	cfg.ServerName = serverName
	cfg.InsecureSkipVerify = true // the tests look at the certificate served
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fe.HTTPSAddress, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

// httpsClient sends every request to the frontend's HTTPS listener and
// trusts the test CA; it speaks HTTP/2 when h2 is set.
func httpsClient(fe *localenvoy.Frontend, ca *testutil.CA, h2 bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool},
		ForceAttemptHTTP2: h2,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, fe.HTTPSAddress)
		},
	}
	if !h2 {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestHTTPSServesEachSiteWithItsOwnCertificate(t *testing.T) {
	ca := testutil.MustCA(t, "test CA", time.Hour)
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{
		Sites: []v1.Site{
			{Name: "shop", Hosts: []v1.Hostname{"shop.example", "*.shop.example"}, Routes: []v1.Route{{AppPool: "web"}},
				TLS: v1.SiteTLS{SecretName: "shop-tls", HSTS: v1.HSTS{MaxAgeSeconds: 31536000, IncludeSubDomains: ptr.To(true)}}},
			{Name: "blog", Hosts: []v1.Hostname{"blog.example"}, Routes: []v1.Route{{AppPool: "web"}},
				TLS: v1.SiteTLS{SecretName: "blog-tls", PlainHTTP: v1.PlainHTTPServe}},
			{Name: "broken", Hosts: []v1.Hostname{"broken.example"}, Routes: []v1.Route{{AppPool: "web"}},
				TLS: v1.SiteTLS{SecretName: "broken-tls"}},
			{Name: "missing", Hosts: []v1.Hostname{"missing.example"}, Routes: []v1.Route{{AppPool: "web"}},
				TLS: v1.SiteTLS{SecretName: "missing-tls"}},
			{Name: "plain", Hosts: []v1.Hostname{"plain.example"}, Routes: []v1.Route{{AppPool: "web"}}},
		},
		Frontend:        v1.Frontend{TLS: v1.FrontendTLS{DefaultSite: "blog"}},
		SessionAffinity: v1.SessionAffinity{Type: v1.AffinityCookie, Cookie: &v1.AffinityCookieSpec{SameSite: "Strict"}},
	}}
	serials := map[string]int64{}
	fe := startTLSFrontend(t, wf, []int{echoWorker(t, "w1")}, func(dir string) {
		for site, hosts := range map[string][]string{"shop": {"shop.example", "*.shop.example"}, "blog": {"blog.example"}} {
			c, k, serial := ca.MustIssue(t, hosts...)
			serials[site] = serial
			writeSecretVolume(t, localenvoy.CertDir(dir, site), c, k)
		}
		writeSecretVolume(t, localenvoy.CertDir(dir, "broken"), []byte("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n"), []byte("no key"))
	})

	t.Run("the server name picks each site's certificate, wildcards included", func(t *testing.T) {
		for name, site := range map[string]string{"shop.example": "shop", "www.shop.example": "shop", "blog.example": "blog"} {
			st, err := handshake(fe, name, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := st.PeerCertificates[0].SerialNumber.Int64(); got != serials[site] {
				t.Errorf("%s got certificate %d, want %s's %d", name, got, site, serials[site])
			}
		}
	})
	t.Run("a client without a server name gets the default site's certificate", func(t *testing.T) {
		for _, name := range []string{"", "unknown.example"} {
			st, err := handshake(fe, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.PeerCertificates[0].SerialNumber.Int64(); got != serials["blog"] {
				t.Errorf("server name %q got certificate %d, want the default site's %d", name, got, serials["blog"])
			}
		}
	})
	t.Run("TLS 1.1 is refused and TLS 1.2 and 1.3 are accepted", func(t *testing.T) {
		if _, err := handshake(fe, "shop.example", &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil {
			t.Error("a TLS 1.1 handshake succeeded")
		}
		for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			st, err := handshake(fe, "shop.example", &tls.Config{MinVersion: v, MaxVersion: v})
			if err != nil || st.Version != v {
				t.Errorf("TLS version %x: %v (got %x)", v, err, st.Version)
			}
		}
	})
	t.Run("ALPN negotiates h2 and http/1.1 and both serve", func(t *testing.T) {
		for _, proto := range []string{"h2", "http/1.1"} {
			st, err := handshake(fe, "shop.example", &tls.Config{NextProtos: []string{proto}})
			if err != nil || st.NegotiatedProtocol != proto {
				t.Errorf("offering %s: negotiated %q, %v", proto, st.NegotiatedProtocol, err)
			}
		}
		for _, h2 := range []bool{true, false} {
			resp, err := httpsClient(fe, ca, h2).Get("https://shop.example/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := map[bool]int{true: 2, false: 1}[h2]
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != want {
				t.Errorf("h2=%v: %s over %s", h2, resp.Status, resp.Proto)
			}
		}
	})
	t.Run("plain HTTP is redirected to HTTPS with host, path and query kept, or served", func(t *testing.T) {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for host, want := range map[string]string{"shop.example": "301 https://shop.example/a/b?x=1", "blog.example": "200 ", "plain.example": "200 "} {
			req, _ := http.NewRequest(http.MethodGet, fe.URL+"/a/b?x=1", nil)
			req.Host = host
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Location")); got != want {
				t.Errorf("%s: got %q, want %q", host, got, want)
			}
		}
	})
	t.Run("HSTS is sent over HTTPS for the sites that set it", func(t *testing.T) {
		for host, want := range map[string]string{"shop.example": "max-age=31536000; includeSubDomains", "blog.example": ""} {
			resp, err := httpsClient(fe, ca, false).Get("https://" + host + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Strict-Transport-Security"); got != want {
				t.Errorf("%s: Strict-Transport-Security %q, want %q", host, got, want)
			}
		}
	})
	t.Run("a site without tls is not served over HTTPS", func(t *testing.T) {
		// The default site's certificate, then the Host of a site without tls.
		req, _ := http.NewRequest(http.MethodGet, "https://blog.example/", nil)
		req.Host = "plain.example"
		resp, err := httpsClient(fe, ca, false).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("plain.example over HTTPS: %s, want 404", resp.Status)
		}
	})
	t.Run("the affinity cookie is Secure over HTTPS and has the SameSite asked for", func(t *testing.T) {
		resp, err := httpsClient(fe, ca, false).Get("https://blog.example/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.Header.Get("Set-Cookie"); !strings.Contains(c, "; Secure") || !strings.Contains(c, "SameSite=Strict") {
			t.Errorf("HTTPS Set-Cookie %q, want Secure and SameSite=Strict", c)
		}
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/", nil)
		req.Host = "blog.example"
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.Header.Get("Set-Cookie"); strings.Contains(c, "Secure") || !strings.Contains(c, "SameSite=Strict") {
			t.Errorf("plain HTTP Set-Cookie %q, want SameSite=Strict and not Secure", c)
		}
	})
	t.Run("a malformed or missing certificate fails only its site and shows in the stats", func(t *testing.T) {
		for _, name := range []string{"broken.example", "missing.example"} {
			if _, err := handshake(fe, name, nil); err == nil {
				t.Errorf("a handshake for %s, whose certificate is malformed or missing, succeeded", name)
			}
		}
		if _, err := handshake(fe, "shop.example", nil); err != nil {
			t.Errorf("another site: %v", err)
		}
		for secret, want := range map[string]bool{"broken": false, "missing": false, "shop": true, "blog": true} {
			n, err := fe.Counter("sds." + envoy.CertSecretName(secret) + ".update_success")
			if err != nil {
				t.Fatal(err)
			}
			if (n > 0) != want {
				t.Errorf("%s: update_success %d", secret, n)
			}
		}
		if n, err := fe.Counter("sds." + envoy.CertSecretName("broken") + ".update_rejected"); err != nil || n == 0 {
			t.Errorf("broken: update_rejected %d, %v", n, err)
		}
		// What the operator reads: the Prometheus page.
		certs := reportedCertificates(t, fe)
		for site, loaded := range map[string]bool{"broken": false, "missing": false, "shop": true, "blog": true} {
			c, ok := certs[site]
			if !ok || (c.Loaded > 0) != loaded || (c.Rejected > 0) == loaded {
				t.Errorf("%s on the Prometheus page: %+v (present %v)", site, c, ok)
			}
		}
	})
}

func TestARenewedCertificateIsServedWithoutAFailedRequest(t *testing.T) {
	ca := testutil.MustCA(t, "test CA", time.Hour)
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{{Name: "shop", Hosts: []v1.Hostname{"shop.example"},
		Routes: []v1.Route{{AppPool: "web"}}, TLS: v1.SiteTLS{SecretName: "shop-tls"}}}}}
	var dir string
	fe := startTLSFrontend(t, wf, []int{echoWorker(t, "w1")}, func(d string) {
		dir = d
		c, k, _ := ca.MustIssue(t, "shop.example")
		writeSecretVolume(t, localenvoy.CertDir(d, "shop"), c, k)
	})

	// New connections throughout, so that every request makes a handshake.
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			client := httpsClient(fe, ca, false)
			resp, err := client.Get("https://shop.example/")
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprint(err, resp))
			} else {
				ok.Add(1)
			}
			client.CloseIdleConnections()
		}
	}()

	c, k, renewed := ca.MustIssue(t, "shop.example")
	writeSecretVolume(t, localenvoy.CertDir(dir, "shop"), c, k)
	testutil.Eventually(t, 10*time.Second, func() error {
		st, err := handshake(fe, "shop.example", nil)
		if err != nil || st.PeerCertificates[0].SerialNumber.Int64() != renewed {
			return fmt.Errorf("the renewed certificate is not served yet (%v)", err)
		}
		return nil
	})
	// Keep the loop going a little past the swap.
	n := ok.Load()
	testutil.Eventually(t, 10*time.Second, func() error {
		if ok.Load() < n+20 && failed.Load() == 0 {
			return fmt.Errorf("%d requests since the swap", ok.Load()-n)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed during the renewal, the first: %v", failed.Load(), failed.Load()+ok.Load(), firstErr.Load())
	}
	t.Logf("%d requests, none failed", ok.Load())
}

// The kubelet's first write of a Secret volume renames "..data" before the
// "tls.crt" and "tls.key" links exist: the frontend must not miss it.
func TestACertificateWhoseSecretAppearsLaterIsServedWithoutARestart(t *testing.T) {
	ca := testutil.MustCA(t, "test CA", time.Hour)
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{{Name: "shop", Hosts: []v1.Hostname{"shop.example"},
		Routes: []v1.Route{{AppPool: "web"}}, TLS: v1.SiteTLS{SecretName: "shop-tls"}}}}}
	var dir string
	fe := startTLSFrontend(t, wf, []int{echoWorker(t, "w1")}, func(d string) { dir = d })
	if _, err := handshake(fe, "shop.example", nil); err == nil {
		t.Fatal("a handshake succeeded without a certificate")
	}
	c, k, serial := ca.MustIssue(t, "shop.example")
	writeSecretVolume(t, localenvoy.CertDir(dir, "shop"), c, k)
	testutil.Eventually(t, 10*time.Second, func() error {
		st, err := handshake(fe, "shop.example", nil)
		if err != nil {
			a, _ := fe.Counter("sds.cert_shop.update_attempt")
			r, _ := fe.Counter("sds.cert_shop.update_rejected")
			ok, _ := fe.Counter("sds.cert_shop.update_success")
			return fmt.Errorf("%w (attempts %d, rejected %d, loaded %d)", err, a, r, ok)
		}
		if got := st.PeerCertificates[0].SerialNumber.Int64(); got != serial {
			return fmt.Errorf("certificate %d, want %d", got, serial)
		}
		return nil
	})
}

// reportedCertificates is what a frontend reports of its certificates, read
// from its Prometheus page as the certificates collector reads it.
func reportedCertificates(t *testing.T, fe *localenvoy.Frontend) map[string]envoystats.Certificate {
	t.Helper()
	resp, err := http.Get(fe.AdminURL + vocabulary.FrontendMetricsPath + "?" + envoystats.CertificateQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	certs, err := envoystats.Certificates(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return certs
}
