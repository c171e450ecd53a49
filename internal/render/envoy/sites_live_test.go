package envoy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/testutil/localpool"
	"webfarm.dev/operator/internal/vocabulary"
)

const siteCount = 50

// mediaTypes are files every site holds and the Content-Type each must get:
// the types the short table of earlier releases sent as
// application/octet-stream, and a few it had.
var mediaTypes = map[string]string{
	"clip.mp4": "video/mp4", "clip.webm": "video/webm", "module.wasm": "application/wasm",
	"photo.avif": "image/avif", "archive.zip": "application/zip", "table.csv": "text/csv",
	"song.mp3": "audio/mpeg", "app.js": "text/javascript", "style.css": "text/css",
}

func siteName(i int) string { return fmt.Sprintf("site-%02d", i) }

// siteFiles are the pool's content: a folder per site with its own default
// document (index.html for odd sites, default.htm for even ones, each
// naming its site), its own 404 page and a file of each media type; and a
// file at the content root that no site with a directory may reach.
func siteFiles() map[string]string {
	files := map[string]string{"index.html": "the pool's root\n", "root-secret.txt": "outside every site\n"}
	for i := 1; i <= siteCount; i++ {
		dir := "sites/" + siteName(i) + "/"
		doc := "index.html"
		if i%2 == 0 {
			doc = "default.htm"
		}
		files[dir+doc] = siteName(i) + " home\n"
		files[dir+"errors/404.html"] = siteName(i) + " has no such page\n"
		files[dir+"secret.txt"] = siteName(i) + " secret\n"
		for name := range mediaTypes {
			files[dir+name] = siteName(i) + " " + name + "\n"
		}
	}
	return files
}

// sitesFarm has a site per folder on one pool, and a site "plain" that
// serves the pool's root.
func sitesFarm() *v1.WebFarm {
	wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "hosting", Namespace: "web"}}
	for i := 1; i <= siteCount; i++ {
		content := v1.RouteContent{Directory: v1.ContentDirectory("sites/" + siteName(i)),
			ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "/errors/404.html"}}}
		if i%2 == 0 {
			content.DefaultDocuments = v1.DefaultDocuments{"default.htm"}
		}
		wf.Spec.Sites = append(wf.Spec.Sites, v1.Site{Name: siteName(i), Hosts: []v1.Hostname{v1.Hostname(siteName(i) + ".example")},
			Routes: []v1.Route{{PathPrefix: "/", AppPool: "sites", Content: content}}})
	}
	wf.Spec.Sites = append(wf.Spec.Sites, v1.Site{Name: "plain", Hosts: []v1.Hostname{"plain.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "sites"}}})
	return wf
}

// sitesFrontend runs the real nginx of a pool with content (as rendered)
// behind the real Envoy of sitesFarm (as rendered).
func sitesFrontend(t *testing.T) (*localenvoy.Frontend, localpool.Worker) {
	t.Helper()
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "sites", Namespace: "web"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "sites"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	worker := localpool.StartWithContent(t, pool, siteFiles())
	farm, err := model.ResolveFarm(sitesFarm(), platform)
	if err != nil {
		t.Fatal(err)
	}
	backends := endpoints.Backends{vocabulary.PoolCluster("sites"): {{Address: "127.0.0.1", Port: uint32(worker.Port)}}}
	return runFrontend(t, farm, map[string]model.Pool{"sites": pool}, backends), worker
}

// rawRequest sends a GET exactly as written (no client's cleaning of the
// path) and returns the status, Content-Type and body.
func rawRequest(t *testing.T, address, host, path string, headers ...string) (int, string, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// Fifty sites share one pool's nginx, each with its own folder: each serves
// its own files with their media types, its own default document and its
// own 404 page. Real Envoy in front of real nginx, both as rendered.
func TestFiftySitesOnOnePoolEachServeTheirOwnContent(t *testing.T) {
	fe, _ := sitesFrontend(t)
	address := strings.TrimPrefix(fe.URL, "http://")
	for i := 1; i <= siteCount; i++ {
		host := siteName(i) + ".example"
		if status, _, body := rawRequest(t, address, host, "/"); status != 200 || body != siteName(i)+" home\n" {
			t.Errorf("%s /: got %d %q, want its own default document", host, status, body)
		}
		if status, _, body := rawRequest(t, address, host, "/no-such-page"); status != 404 || body != siteName(i)+" has no such page\n" {
			t.Errorf("%s /no-such-page: got %d %q, want 404 with its own page", host, status, body)
		}
		for name, want := range mediaTypes {
			status, ctype, body := rawRequest(t, address, host, "/"+name)
			if status != 200 || ctype != want || body != siteName(i)+" "+name+"\n" {
				t.Errorf("%s /%s: got %d %q %q, want 200 %s with its own file", host, name, status, ctype, body, want)
			}
		}
	}
	if status, _, body := rawRequest(t, address, "plain.example", "/"); status != 200 || body != "the pool's root\n" {
		t.Errorf("a site without a directory: got %d %q, want the pool's root", status, body)
	}
	if status, _, body := rawRequest(t, address, "plain.example", "/no-such-page"); status != 404 || strings.Contains(body, "has no such page") {
		t.Errorf("a site without error pages: got %d %q, want the worker's own 404", status, body)
	}
}

// No request reaches a file outside its site's folder: not with encoded
// dots and slashes, double encoding or backslashes, and not with the
// frontend's own site headers sent by the client.
func TestNoRequestLeavesItsSitesFolder(t *testing.T) {
	fe, worker := sitesFrontend(t)
	address := strings.TrimPrefix(fe.URL, "http://")
	others := []string{"site-02 home", "site-02 secret", "outside every site", "the pool's root"}
	tests := []struct {
		name    string
		host    string
		path    string
		headers []string
	}{
		{"dot segments climb to the next site", "site-01.example", "/../site-02/secret.txt", nil},
		{"encoded dots climb to the next site", "site-01.example", "/%2e%2e/site-02/secret.txt", nil},
		{"encoded dots and slashes climb to the next site", "site-01.example", "/%2e%2e%2fsite-02%2fsecret.txt", nil},
		{"an encoded slash after plain dots climbs", "site-01.example", "/..%2f..%2froot-secret.txt", nil},
		{"uppercase encodings climb", "site-01.example", "/%2E%2E/%2E%2E/root-secret.txt", nil},
		{"double-encoded dots climb", "site-01.example", "/%252e%252e/site-02/secret.txt", nil},
		{"encoded backslashes climb", "site-01.example", "/..%5c..%5croot-secret.txt", nil},
		{"backslashes climb", "site-01.example", `/..\..\root-secret.txt`, nil},
		{"dots past the root climb", "site-01.example", "/a/../../../root-secret.txt", nil},
		{"a client's site directory header names another site", "site-01.example", "/secret.txt", []string{vocabulary.SiteDirectoryHeader + ": sites/site-02"}},
		{"a client's site directory header climbs", "site-01.example", "/root-secret.txt", []string{vocabulary.SiteDirectoryHeader + ": .."}},
		{"a client's site directory header on a site without one", "plain.example", "/secret.txt", []string{vocabulary.SiteDirectoryHeader + ": sites/site-02"}},
		{"a client's site directory header sent twice", "plain.example", "/secret.txt", []string{vocabulary.SiteDirectoryHeader + ": sites/site-02", vocabulary.SiteDirectoryHeader + ": sites/site-02"}},
		{"a client's site directory header spelled with underscores", "plain.example", "/secret.txt", []string{"X_Webfarm_Site_Directory: sites/site-02"}},
		{"a client's default documents header names another site's file", "site-01.example", "/", []string{vocabulary.SiteDocumentsHeader + ": ../site-02/secret.txt"}},
		{"a client's error pages header names another site's file", "site-01.example", "/no-such-page", []string{vocabulary.SiteErrorPagesHeader + ": 404=/../site-02/secret.txt"}},
		{"a client's error pages header on a site without pages", "plain.example", "/no-such-page", []string{vocabulary.SiteErrorPagesHeader + ": 404=/sites/site-02/secret.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := rawRequest(t, address, tt.host, tt.path, tt.headers...)
			for _, other := range others {
				if strings.Contains(body, other) && (tt.host != "plain.example" || other != "the pool's root") {
					t.Fatalf("got %d %q: another site's or the root's file", status, body)
				}
			}
			if len(tt.headers) == 0 && status != 400 && status != 404 {
				// A forged header leaves the site's own file; a climbing
				// path has none to serve.
				t.Fatalf("got %d %q, want a refusal (400) or not found (404)", status, body)
			}
		})
	}

	// The worker follows the headers it gets (which is why the frontend
	// sets them), and refuses those that would leave its content root.
	workerAddress := strings.TrimSuffix(strings.TrimPrefix(worker.URL, "http://"), "/")
	if status, _, body := rawRequest(t, workerAddress, "any", "/secret.txt", vocabulary.SiteDirectoryHeader+": sites/site-02"); status != 200 || body != "site-02 secret\n" {
		t.Errorf("the worker with a site directory: got %d %q, want that site's file", status, body)
	}
	for _, bad := range []string{"..", "../sites/site-02", "sites/../..", "/sites/site-02", "sites//site-02", "sites/site-02/", `sites\site-02`, "sites/%2e%2e"} {
		if status, _, body := rawRequest(t, workerAddress, "any", "/secret.txt", vocabulary.SiteDirectoryHeader+": "+bad); status != 400 {
			t.Errorf("the worker with site directory %q: got %d %q, want 400", bad, status, body)
		}
	}
}

// Two routes of one host serve two directories of one pool through one
// cache tier: both reach the pool as the same path, and each keeps its own
// cached answer (the cache key holds the site headers).
func TestACacheTierKeepsTwoDirectoriesOfOnePoolApart(t *testing.T) {
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "sites", Namespace: "web"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "sites"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	worker := localpool.StartWithContent(t, pool, siteFiles())
	tier, tierPort := startCacheTier(t, "static", "sites", worker.Port)
	wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "hosting", Namespace: "web"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{{
		Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{
			{PathPrefix: "/one", AppPool: "sites", CachePolicy: "static", Content: v1.RouteContent{Directory: "sites/site-01"}},
			{PathPrefix: "/two", AppPool: "sites", CachePolicy: "static", Content: v1.RouteContent{Directory: "sites/site-02"}},
		}}}}}
	farm, err := model.ResolveFarm(wf, platform)
	if err != nil {
		t.Fatal(err)
	}
	fe := runFrontend(t, farm, map[string]model.Pool{"sites": pool}, endpoints.Backends{
		vocabulary.PoolCluster("sites"):   {{Address: "127.0.0.1", Port: uint32(worker.Port)}},
		vocabulary.CacheCluster("static"): {{Address: "127.0.0.1", Port: uint32(tierPort)}},
	})
	address := strings.TrimPrefix(fe.URL, "http://")
	for round := range 3 {
		for _, r := range []struct{ path, want string }{{"/one/secret.txt", "site-01 secret\n"}, {"/two/secret.txt", "site-02 secret\n"}} {
			if status, _, body := rawRequest(t, address, "www.example", r.path); status != 200 || body != r.want {
				t.Errorf("round %d %s: got %d %q, want %q", round+1, r.path, status, body, r.want)
			}
		}
	}
	// The agent reads its hits from nginx's request count: soon, not at once.
	testutil.Eventually(t, 10*time.Second, func() error {
		if stats, err := tier.Stats(); err != nil || stats.Hits == 0 {
			return fmt.Errorf("cache stats %+v %v: want hits, or the test shows nothing", stats, err)
		}
		return nil
	})
}
