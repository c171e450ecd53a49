package nginx_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localpool"
	"webfarm.dev/operator/internal/vocabulary"
)

// A pool's worker serves the site the frontend names in its headers: the
// site's default documents before the pool's, the site's error pages in
// place of its own answers. Real nginx, as rendered; the headers as the
// frontend sends them.
func TestAWorkerServesTheSiteItsHeadersName(t *testing.T) {
	ports, err := testutil.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"index.html":                 "the pool's root\n",
		"default.htm":                "the root's default.htm\n",
		"shop/index.html":            "shop index.html\n",
		"shop/default.htm":           "shop default.htm\n",
		"shop/file.txt":              "a file\n",
		"shop/bare/file.txt":         "a folder without a default document\n",
		"shop/errors/403.html":       "shop forbids it\n",
		"shop/errors/404.html":       "shop has no such page\n",
		"shop/errors/405.html":       "shop takes no such method\n",
		"shop/errors/502.html":       "shop's application is down\n",
		"shop/errors/deeper/404.htm": "a page in a deeper folder\n",
	}
	const static, poolDocuments, appDown = "static", "pool documents", "app down"
	pools := map[string]model.Pool{static: basePool(), poolDocuments: basePool(), appDown: basePool()}
	pools[poolDocuments] = withDocuments(pools[poolDocuments], "default.htm", "index.html")
	pools[appDown] = withApp(pools[appDown], int32(ports[0])) // nobody listens

	site := func(headers ...string) []string {
		return append([]string{vocabulary.SiteDirectoryHeader + ": shop"}, headers...)
	}
	documents := func(d string) string { return vocabulary.SiteDocumentsHeader + ": " + d }
	pages := func(p string) string { return vocabulary.SiteErrorPagesHeader + ": " + p }
	tests := []struct {
		name       string
		pool       string
		method     string
		path       string
		headers    []string
		wantStatus int
		wantBody   string
	}{
		{"without headers the pool's root and its default documents are served", static, "GET", "/", nil, 200, "the pool's root\n"},
		{"a pool's own default documents are tried in their order", poolDocuments, "GET", "/", nil, 200, "the root's default.htm\n"},
		{"a site's directory is its root", static, "GET", "/file.txt", site(), 200, "a file\n"},
		{"a site without default documents of its own has the pool's", static, "GET", "/", site(), 200, "shop index.html\n"},
		{"a site's default documents come before the pool's", static, "GET", "/", site(documents("default.htm")), 200, "shop default.htm\n"},
		{"a site's later default document serves when the first is missing", static, "GET", "/", site(documents("home.html default.htm")), 200, "shop default.htm\n"},
		{"a folder without any of the site's documents is forbidden", static, "GET", "/", site(documents("home.html")), 403, ""},
		{"a site's 403 page answers a folder without a default document", static, "GET", "/bare/", site(pages("403=/errors/403.html")), 403, "shop forbids it\n"},
		{"a site's 404 page answers a missing file", static, "GET", "/missing", site(pages("403=/errors/403.html 404=/errors/404.html")), 404, "shop has no such page\n"},
		{"a site's error page may lie in a deeper folder", static, "GET", "/missing", site(pages("404=/errors/deeper/404.htm")), 404, "a page in a deeper folder\n"},
		{"a site's 405 page answers a form posted to a file", static, "POST", "/file.txt", site(pages("405=/errors/405.html")), 405, "shop takes no such method\n"},
		{"a missing error page leaves the worker's own answer", static, "GET", "/missing", site(pages("404=/errors/none.html")), 404, "404 Not Found"},
		{"a site without error pages gets the worker's own answer", static, "GET", "/missing", site(), 404, "404 Not Found"},
		{"an error page that climbs is ignored", static, "GET", "/missing", site(pages("404=/../index.html")), 404, "404 Not Found"},
		{"a default document that climbs is ignored", static, "GET", "/bare/", site(documents("../file.txt")), 403, ""},
		{"a site directory that climbs is refused", static, "GET", "/index.html", []string{vocabulary.SiteDirectoryHeader + ": shop/.."}, 400, ""},
		{"a site's 502 page replaces the farm's when its app is down", appDown, "GET", "/bare/", site(pages("502=/errors/502.html")), 502, "shop's application is down\n"},
		{"without a 502 page the farm's own answer says the app is down", appDown, "GET", "/bare/", site(), 502, nginx.AppUnreachableBody},
	}
	workers := map[string]localpool.Worker{}
	for name, p := range pools {
		workers[name] = localpool.StartWithContent(t, p, files)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, strings.TrimSuffix(workers[tt.pool].URL, "/")+tt.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.headers {
				name, value, _ := strings.Cut(h, ": ")
				req.Header.Set(name, value)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("got %d %q, want %d with %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func withDocuments(p model.Pool, docs ...string) model.Pool {
	p.Content.DefaultDocuments = docs
	return p
}

func withApp(p model.Pool, port int32) model.Pool {
	p.App = &model.App{Image: "registry.example.com/shop:1", Port: port}
	return p
}
