package nginx_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localpool"
)

// In a pool with content and an app, the content lies over the app: a file
// that exists is served, everything else is the app's, folders without an
// index file ("/" included) too. Real nginx, as rendered.
func TestInAPoolWithContentAndAnAppWhatIsNotAFileIsTheApps(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "app: "+r.Method+" "+r.URL.RequestURI()+"\n")
	}))
	t.Cleanup(app.Close)
	_, port, err := net.SplitHostPort(app.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	appPort, _ := strconv.Atoi(port)
	ports, err := testutil.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	nobodyListens := int32(ports[0])

	withIndex := map[string]string{
		"index.html":         "the home page\n",
		"style.css":          "body {}\n",
		"docs/index.htm":     "the docs\n",
		"images/logo.svg":    "<svg/>\n",
		"downloads/file.txt": "a file\n",
	}
	withoutIndex := map[string]string{
		"style.css":          "body {}\n",
		"downloads/file.txt": "a file\n",
	}
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	tests := []struct {
		name       string
		content    map[string]string
		appPort    int32
		method     string
		path       string
		wantStatus int
		wantBody   string
		wantHeader [2]string
	}{
		{"the home page is served from content when it has an index file", withIndex, int32(appPort), "GET", "/", 200, "the home page\n", [2]string{}},
		{"a file is served from content", withIndex, int32(appPort), "GET", "/style.css", 200, "body {}\n", [2]string{}},
		{"a folder's index.htm is served from content", withIndex, int32(appPort), "GET", "/docs/", 200, "the docs\n", [2]string{}},
		{"a folder named without its slash is redirected to it", withIndex, int32(appPort), "GET", "/docs", 301, "", [2]string{"Location", "/docs/"}},
		{"what is not a file goes to the app with its query", withIndex, int32(appPort), "GET", "/cart?item=7", 200, "app: GET /cart?item=7\n", [2]string{}},
		{"the home page goes to the app when content has no index file", withoutIndex, int32(appPort), "GET", "/", 200, "app: GET /\n", [2]string{}},
		{"a query on the home page goes to the app with it", withoutIndex, int32(appPort), "GET", "/?page=2", 200, "app: GET /?page=2\n", [2]string{}},
		{"a folder without an index file goes to the app", withoutIndex, int32(appPort), "GET", "/downloads/", 200, "app: GET /downloads/\n", [2]string{}},
		{"a form posted to a folder without an index file reaches the app", withoutIndex, int32(appPort), "POST", "/", 200, "app: POST /\n", [2]string{}},
		{"files beside a missing index are still served from content", withoutIndex, int32(appPort), "GET", "/downloads/file.txt", 200, "a file\n", [2]string{}},
		{"the home page without an index file answers the farm's 502 when the app is down", withoutIndex, nobodyListens, "GET", "/", 502, nginx.AppUnreachableBody, [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePool()
			p.App = &model.App{Image: "registry.example.com/shop:1", Port: tt.appPort}
			worker := localpool.StartWithContent(t, p, tt.content)
			var body io.Reader
			if tt.method == http.MethodPost {
				body = strings.NewReader("item=7")
			}
			req, err := http.NewRequest(tt.method, strings.TrimSuffix(worker.URL, "/")+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("got %d %q, want %d", resp.StatusCode, got, tt.wantStatus)
			}
			if tt.wantBody != "" && string(got) != tt.wantBody {
				t.Errorf("got body %q, want %q", got, tt.wantBody)
			}
			if h := tt.wantHeader; h[0] != "" && !strings.HasSuffix(resp.Header.Get(h[0]), h[1]) {
				t.Errorf("got %s %q, want it to end in %q", h[0], resp.Header.Get(h[0]), h[1])
			}
		})
	}
}
