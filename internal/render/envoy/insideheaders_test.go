package envoy_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// insideFrontend runs the rendered frontend of a farm whose site www.example
// sends "/" to a real pool worker (the pool's nginx in front of an app) and
// "/cached" to the same worker through a real cache tier.
func insideFrontend(t *testing.T, debugHeaders bool) *localenvoy.Frontend {
	t.Helper()
	workerPort := appWorker(t, "app-1")
	_, tierPort := startCacheTier(t, "pages", "chat", workerPort)
	wf := &v1.WebFarm{Spec: v1.WebFarmSpec{
		Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{
			{PathPrefix: "/", AppPool: "chat"},
			{PathPrefix: "/cached", AppPool: "chat", CachePolicy: "pages"},
		}}},
		Frontend: v1.Frontend{DebugHeaders: ptr.To(debugHeaders)},
	}}
	return startFrontend(t, wf, map[string][]int{"chat": {workerPort}}, nil, map[string]int{"pages": tierPort})
}

func TestAClientLearnsNothingOfTheFarmsInsideUnlessTheFarmSendsDebugHeaders(t *testing.T) {
	// The pool's nginx names its worker by the host name, as a pod's is.
	pod, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	type request struct{ host, path string }
	requests := []request{
		{"www.example", "/"},
		// Through the cache tier, twice: a miss, then a hit of the same answer.
		{"www.example", "/cached/page"},
		{"www.example", "/cached/page"},
		// No site has the host: Envoy's own answer.
		{"nowhere.example", "/"},
	}
	// What the access log names: the pool's worker pod, whoever answered.
	loggedPods := []any{pod, pod, pod, nil}
	tests := []struct {
		name         string
		debugHeaders bool
		// wantWorker and wantServer are what the client sees of each
		// request's X-Webfarm-Worker and Server headers.
		wantWorker []string
		wantServer []string
	}{
		{"by default no answer names its worker pod, Envoy or nginx", false,
			[]string{"", "", "", ""}, []string{"", "", "", ""}},
		{"with debug headers the pools' answers name their worker pod and every answer Envoy", true,
			[]string{pod, pod, pod, ""}, []string{"envoy", "envoy", "envoy", "envoy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := insideFrontend(t, tt.debugHeaders)
			for i, r := range requests {
				status, header, _ := send(t, fe, http.MethodGet, r.host, r.path)
				if want := map[bool]int{true: 404, false: 200}[r.host == "nowhere.example"]; status != want {
					t.Fatalf("GET %s%s: %d, want %d", r.host, r.path, status, want)
				}
				if got := header.Get("X-Webfarm-Worker"); got != tt.wantWorker[i] {
					t.Errorf("GET %s%s: X-Webfarm-Worker %q, want %q", r.host, r.path, got, tt.wantWorker[i])
				}
				if got := strings.Join(header.Values("Server"), ", "); got != tt.wantServer[i] {
					t.Errorf("GET %s%s: Server %q, want %q", r.host, r.path, got, tt.wantServer[i])
				}
			}
			lines := accessLog(t, fe)
			if len(lines) != len(requests) {
				t.Fatalf("%d access log lines for %d requests:\n%v", len(lines), len(requests), lines)
			}
			for i, l := range lines {
				checkFields(t, l, map[string]any{"workerPod": loggedPods[i]})
			}
			if cache := lines[2]["cacheStatus"]; cache != "HIT" {
				t.Errorf("the second request through the cache tier: cacheStatus %v, want HIT", cache)
			}
		})
	}
}
