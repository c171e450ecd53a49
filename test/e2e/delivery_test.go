//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

const (
	// deliveryRate is the site's bandwidth limit (IIS MaxBandwidth): 32 KiB/s.
	deliveryRate = 32 << 10
	// deliveryDownload is a download of four seconds at that rate (in base64
	// it stays under kubectl apply's 256 KiB annotation limit).
	deliveryDownload = 128 << 10
)

// deliveryFarm serves a text page and a download from one pool, through a
// frontend that compresses, closes every connection and paces the site.
func deliveryFarm(t *testing.T) (manifest, page string) {
	t.Helper()
	page = "<html><body>" + strings.Repeat("<p>The quick brown fox jumps over the lazy dog.</p>\n", 800) + "</body></html>\n"
	download := make([]byte, deliveryDownload)
	if _, err := rand.Read(download); err != nil { // random: nothing to compress
		t.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: delivery-content}
data:
  page.html: %q
binaryData:
  download.bin: %s
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: files}
spec:
  content: {configMap: {name: delivery-content}}
  healthCheck: {path: /page.html}   # the content has no index: "/" answers 403
  replicas: 1
  cpu: 100m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: delivery}
spec:
  sites:
  - name: main
    hosts: [delivery.example]
    routes: [{pathPrefix: /, appPool: files}]
    maxBandwidthBytesPerSecond: %d
  frontend:
    replicas: 1
    cpu: 200m
    compression: true
    keepAlive: false
`, page, base64.StdEncoding.EncodeToString(download), deliveryRate), page
}

// The frontend's delivery settings on the cluster, with figures: a text
// page compressed (its ratio stated), a download paced to the site's
// bandwidth limit (1.0 ± 0.2 times size/limit), and keep-alive off seen as
// one connection per request.
func TestTheFrontendCompressesPacesAndClosesAsTheFarmSays(t *testing.T) {
	ns := cluster.Namespace(t)
	manifest, page := deliveryFarm(t)
	cluster.Apply(t, ns, manifest)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/delivery", "apppool/files")
	front := cluster.ServiceURL(t, ns, "delivery-frontend")
	framework.ExpectBody(t, time.Minute, front+"/page.html", "quick brown fox", "Host: delivery.example")

	// The transport neither asks for nor undoes compression: the test does.
	get := func(path, encoding string, trace *httptrace.ClientTrace) (delivered, []byte, time.Duration) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, front+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "delivery.example"
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		if trace != nil {
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		}
		start := time.Now()
		resp, err := deliveryClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return delivered{Header: resp.Header, Close: resp.Close}, body, time.Since(start)
	}

	t.Run("a text page is compressed as the client prefers", func(t *testing.T) {
		for _, encoding := range []string{"gzip", "br"} {
			resp, body, _ := get("/page.html", encoding, nil)
			if got := resp.Header.Get("Content-Encoding"); got != encoding {
				t.Fatalf("Accept-Encoding %s: Content-Encoding %q", encoding, got)
			}
			ratio := float64(len(page)) / float64(len(body))
			t.Logf("%s: %d bytes of HTML sent as %d (ratio %.0f:1)", encoding, len(page), len(body), ratio)
			if ratio < 10 {
				t.Errorf("%s: ratio %.1f, want at least 10 for this repetitive page", encoding, ratio)
			}
		}
		if resp, body, _ := get("/page.html", "", nil); resp.Header.Get("Content-Encoding") != "" || string(body) != page {
			t.Errorf("without Accept-Encoding: Content-Encoding %q, %d bytes; want the page as it is", resp.Header.Get("Content-Encoding"), len(body))
		}
	})

	t.Run("a download takes its size over the site's bandwidth limit", func(t *testing.T) {
		resp, body, took := get("/download.bin", "gzip", nil)
		if len(body) != deliveryDownload || resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("%d bytes, Content-Encoding %q; want %d, none (random bytes are not compressed)", len(body), resp.Header.Get("Content-Encoding"), deliveryDownload)
		}
		want := time.Duration(float64(deliveryDownload) / deliveryRate * float64(time.Second))
		ratio := took.Seconds() / want.Seconds()
		t.Logf("%d KiB at a limit of %d KiB/s took %s: %.2f times size/limit", deliveryDownload>>10, deliveryRate>>10, took.Round(10*time.Millisecond), ratio)
		if ratio < 0.8 || ratio > 1.2 {
			t.Errorf("took %.2f times size/limit, want 1.0 ± 0.2", ratio)
		}
	})

	t.Run("with keep-alive off every request opens its own connection", func(t *testing.T) {
		var reused, fresh int
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused++
			} else {
				fresh++
			}
		}}
		for range 5 {
			resp, _, _ := get("/page.html", "gzip", trace)
			if !resp.Close {
				t.Errorf("a response without Connection: close")
			}
		}
		t.Logf("5 requests on a keep-alive client: %d connections opened, %d reused", fresh, reused)
		if fresh != 5 || reused != 0 {
			t.Errorf("%d connections opened and %d reused, want 5 and 0", fresh, reused)
		}
	})
}

// delivered is what a response said besides its body.
type delivered struct {
	Header http.Header
	Close  bool
}

// deliveryClient keeps connections when the server lets it, and leaves
// compression to the test.
var deliveryClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
