package envoy_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// openTLS completes a TLS handshake with the frontend for host: a
// connection the frontend holds open for the site, or the error of one it
// closed. A handshake the frontend answers at all takes milliseconds, so
// the deadline only bounds a test gone wrong.
func openTLS(fe *localenvoy.Frontend, ca *testutil.CA, host string) (*tls.Conn, error) {
	raw, err := net.DialTimeout("tcp", fe.HTTPSAddress, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, &tls.Config{ServerName: host, RootCAs: ca.Pool, NextProtos: []string{"http/1.1"}})
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// A site's connection bound (IIS MaxConnections), as clients see it: past
// the bound a new connection to the site is closed before its handshake,
// the farm's other site still takes connections, and a closed connection
// frees its place.
func TestASitesConnectionBoundClosesItsExtraConnectionsAndNoOtherSites(t *testing.T) {
	const bound = 3
	ca := testutil.MustCA(t, "test CA", time.Hour)
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "web"}},
			TLS: v1.SiteTLS{SecretName: "shop-tls"}, MaxConnections: bound},
		{Name: "blog", Hosts: []v1.Hostname{"blog.example"}, Routes: []v1.Route{{AppPool: "web"}},
			TLS: v1.SiteTLS{SecretName: "blog-tls"}},
	}}}
	fe := startTLSFrontend(t, wf, []int{appWorker(t, "app-1")}, func(dir string) {
		for _, site := range []string{"shop", "blog"} {
			c, k, _ := ca.MustIssue(t, site+".example")
			writeSecretVolume(t, localenvoy.CertDir(dir, site), c, k)
		}
	})

	var held []*tls.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for i := range bound {
		c, err := openTLS(fe, ca, "shop.example")
		if err != nil {
			t.Fatalf("connection %d of %d to the site: %v", i+1, bound, err)
		}
		held = append(held, c)
	}

	t.Run("a connection past the site's bound is closed before its handshake", func(t *testing.T) {
		if c, err := openTLS(fe, ca, "shop.example"); err == nil {
			c.Close()
			t.Fatalf("connection %d to a site bound to %d completed its handshake", bound+1, bound)
		}
		limited, err := fe.Counter("connection_limit." + envoy.SiteConnectionsStatPrefix("shop") + ".limited_connections")
		if err != nil {
			t.Fatal(err)
		}
		if limited == 0 {
			t.Error("Envoy counted no limited connection for the site")
		}
	})

	t.Run("the farm's other site still takes connections and is served", func(t *testing.T) {
		resp, err := httpsClient(fe, ca, false).Get("https://blog.example/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s, want 200", resp.Status)
		}
	})

	t.Run("a closed connection frees its place for a new one", func(t *testing.T) {
		held[0].Close()
		held = held[1:]
		// Envoy counts the close on its own worker: poll for the place.
		testutil.Eventually(t, 10*time.Second, func() error {
			c, err := openTLS(fe, ca, "shop.example")
			if err != nil {
				return fmt.Errorf("no new connection after one of %d closed: %w", bound, err)
			}
			held = append(held, c)
			return nil
		})
		// The new connection is served.
		const req = "GET / HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n"
		c := held[len(held)-1]
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 12)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(buf); err != nil || string(buf) != "HTTP/1.1 200" {
			t.Errorf("the new connection's answer starts %q (%v), want HTTP/1.1 200", buf, err)
		}
	})
}
