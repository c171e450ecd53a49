package nginx_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localpool"
)

// A worker whose app is down (crashed, restarting) answers with the farm's
// short text, not nginx's HTML error page; what the app answers itself,
// 502 included, passes unchanged. Real nginx, as rendered.
func TestAWorkerThatCannotReachItsAppAnswersTheFarmsOwn502(t *testing.T) {
	ports, err := testutil.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	nobodyListens := int32(ports[0])
	appSays502 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "the app's own answer\n")
	}))
	t.Cleanup(appSays502.Close)
	_, port, err := net.SplitHostPort(appSays502.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	appPort, _ := strconv.Atoi(port)

	tests := []struct {
		name     string
		content  bool
		protocol model.AppProtocol
		appPort  int32
		wantBody string
	}{
		{"an app-only pool whose app is down answers the farm's 502", false, "", nobodyListens, nginx.AppUnreachableBody},
		{"a pool with content whose app is down answers the farm's 502 for what is not a file", true, "", nobodyListens, nginx.AppUnreachableBody},
		{"a pool whose HTTP/2 app is down answers the farm's 502", false, model.AppHTTP2, nobodyListens, nginx.AppUnreachableBody},
		{"an app's own 502 passes unchanged", false, "", int32(appPort), "the app's own answer\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePool()
			if !tt.content {
				p.Content = model.Content{}
			}
			p.App = &model.App{Image: "registry.example.com/shop:1", Port: tt.appPort, Protocol: tt.protocol}
			worker := localpool.Start(t, p)
			resp, err := http.Get(worker.URL + "not-a-file")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway || string(body) != tt.wantBody {
				t.Errorf("got %d %q, want 502 %q", resp.StatusCode, body, tt.wantBody)
			}
			if resp.Header.Get("X-Webfarm-Worker") == "" {
				t.Error("no X-Webfarm-Worker header: the access log could not name the worker")
			}
		})
	}
}
