package envoy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// A browser loads a page from one pool and its images from another with one
// cookie jar: with cookie affinity it keeps its worker in both pools.
func TestABrowserKeepsItsWorkerInEveryPoolItUses(t *testing.T) {
	workers := map[string][]int{
		"www":    {worker(t, "www-1"), worker(t, "www-2")},
		"images": {worker(t, "images-1"), worker(t, "images-2")},
	}
	fe := frontendFor(t, &v1.WebFarm{Spec: v1.WebFarmSpec{
		Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{
			{PathPrefix: "/", AppPool: "www"},
			{PathPrefix: "/images", AppPool: "images"},
		}}},
		SessionAffinity: v1.SessionAffinity{Type: v1.AffinityCookie, Cookie: &v1.AffinityCookieSpec{Name: "CONTOSO"}},
	}}, workers)

	for browser := range 4 {
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		load := func(path string) string {
			t.Helper()
			// The cookie jar keys cookies by host: browse as www.example, connect to the frontend.
			req, err := http.NewRequest(http.MethodGet, strings.Replace(fe.URL, "127.0.0.1", "www.example", 1)+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
			return resp.Header.Get("X-Worker")
		}
		c.Transport = &http.Transport{DialContext: dialFrontend(fe.URL)}
		first := map[string]string{}
		for page := range 50 {
			got := map[string]string{"www": load("/page.html"), "images": load("/images/logo.png")}
			if page == 0 {
				first = got
				continue
			}
			for pool, w := range got {
				if w != first[pool] {
					t.Fatalf("browser %d: page load %d reached %s worker %s, the first reached %s", browser, page+1, pool, w, first[pool])
				}
			}
		}
		var names []string
		for _, ck := range jar.Cookies(mustURL(t, "http://www.example/")) {
			names = append(names, ck.Name)
		}
		t.Logf("browser %d kept www worker %s and images worker %s over 50 page loads; cookies %v", browser, first["www"], first["images"], names)
		if fmt.Sprint(names) != "[CONTOSO.www CONTOSO.images]" && fmt.Sprint(names) != "[CONTOSO.images CONTOSO.www]" {
			t.Errorf("cookies %v, want one per pool (CONTOSO.www, CONTOSO.images)", names)
		}
	}
}

// dialFrontend connects every request to the frontend, whatever host its URL names.
func dialFrontend(frontendURL string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	address := strings.TrimPrefix(frontendURL, "http://")
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
