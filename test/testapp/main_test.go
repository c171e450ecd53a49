package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// After ?hang=1 the application answers nothing, its health check included,
// as a deadlocked one: the kubelet's ping then fails.
func TestAHangStopsEveryLaterAnswerHealthCheckIncluded(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.Handle("/", app(&counters{}, "worker-1"))
	server := httptest.NewServer(hangable(mux))
	defer server.Close()
	get := func(path string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := get("/healthz"); err != nil {
		t.Fatalf("before the hang: %v", err)
	}
	for _, path := range []string{"/?hang=1", "/healthz", "/"} {
		if err := get(path); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("GET %s after the hang: %v, want no answer before the client gives up", path, err)
		}
	}
}

// ?grow=N keeps N MiB more, as a leaking application does; a request over
// the bound is refused.
func TestGrowKeepsTheMemoryItWasAskedFor(t *testing.T) {
	server := httptest.NewServer(app(&counters{}, "worker-1"))
	defer server.Close()
	body := func(path string) (int, string) {
		resp, err := http.Get(server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	held := len(leak.blocks)
	if _, got := body("/?grow=3"); got != fmt.Sprintf("app on worker-1: holds %d MiB\n", held+3) {
		t.Errorf("after ?grow=3: %q", got)
	}
	if status, _ := body("/?grow=100000"); status != http.StatusBadRequest {
		t.Errorf("?grow=100000: %d, want 400", status)
	}
}
