package drain_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"webfarm.dev/operator/internal/drain"
)

func TestADrainEndsBetweenItsBoundsOnceNoFarmConnectionIsOpen(t *testing.T) {
	const minimum, maximum = 10 * time.Second, 25 * time.Second
	cases := []struct {
		name    string
		elapsed time.Duration
		open    int
		counted bool
		want    bool
	}{
		{"it goes on before the minimum though nothing is open", 9 * time.Second, 0, true, false},
		{"it goes on before the minimum when the admin failed", 9 * time.Second, 0, false, false},
		{"it ends at the minimum when nothing is open", minimum, 0, true, true},
		{"it goes on after the minimum while a connection is open", 12 * time.Second, 1, true, false},
		{"it ends after the minimum when the admin cannot count", 12 * time.Second, -1, false, true},
		{"it ends at the maximum with connections still open", maximum, 3, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := drain.Done(c.elapsed, c.open, c.counted, minimum, maximum); got != c.want {
				t.Fatalf("Done(%s, %d open, counted %v) = %v, want %v", c.elapsed, c.open, c.counted, got, c.want)
			}
		})
	}
}

func TestOpenConnectionsCountTheFarmsListenersOnly(t *testing.T) {
	cases := []struct {
		name, stats string
		want        int
	}{
		{"HTTP and HTTPS add up", "http.farm.downstream_cx_active: 2\nhttp.farm_https.downstream_cx_active: 3\n", 5},
		{"a farm without HTTPS sites has only the HTTP gauge", "http.farm.downstream_cx_active: 4\n", 4},
		{"the status listener's probes and scrapes do not count", "http.status.downstream_cx_active: 7\nhttp.farm.downstream_cx_active: 0\n", 0},
		{"other farm gauges do not count", "http.farm.downstream_cx_active_x: 9\nhttp.farm.downstream_rq_active: 2\n", 0},
		{"no stats at all is nothing open", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := drain.OpenConnections(strings.NewReader(c.stats))
			if err != nil || got != c.want {
				t.Fatalf("OpenConnections = %d, %v; want %d", got, err, c.want)
			}
		})
	}
	if _, err := drain.OpenConnections(strings.NewReader("http.farm.downstream_cx_active: many\n")); err == nil {
		t.Error("a gauge that is not a number was accepted")
	}
}

// admin is a fake Envoy admin: it records the drain call and answers the
// stats query with the open connections that open returns.
type admin struct {
	failed atomic.Bool
	open   func() int
}

func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == drain.FailPath:
		a.failed.Store(true)
	case r.Method == http.MethodGet && r.URL.RequestURI() == drain.StatsPath:
		fmt.Fprintf(w, "http.farm.downstream_cx_active: %d\n", a.open())
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.RequestURI(), http.StatusNotFound)
	}
}

func run(t *testing.T, addr string, minimum, maximum time.Duration) drain.Result {
	t.Helper()
	o := drain.Options{Admin: addr, Minimum: minimum, Maximum: maximum, Poll: 5 * time.Millisecond}
	return drain.Run(context.Background(), &http.Client{Timeout: time.Second}, o)
}

func TestRunFailsTheHealthCheckThenWaitsForTheConnections(t *testing.T) {
	const minimum, maximum = 100 * time.Millisecond, 2 * time.Second
	t.Run("with nothing open it ends at the minimum", func(t *testing.T) {
		a := &admin{open: func() int { return 0 }}
		s := httptest.NewServer(a)
		defer s.Close()
		res := run(t, s.Listener.Addr().String(), minimum, maximum)
		if !a.failed.Load() || res.Err != nil {
			t.Fatalf("health check failed %v, error %v", a.failed.Load(), res.Err)
		}
		if res.Elapsed < minimum || res.Elapsed >= maximum {
			t.Fatalf("ended after %s, want the minimum %s", res.Elapsed, minimum)
		}
	})
	t.Run("it ends once the last connection is closed after the minimum", func(t *testing.T) {
		start := time.Now()
		closed := start.Add(2 * minimum)
		a := &admin{open: func() int {
			if time.Now().Before(closed) {
				return 2
			}
			return 0
		}}
		s := httptest.NewServer(a)
		defer s.Close()
		res := run(t, s.Listener.Addr().String(), minimum, maximum)
		if res.Open != 0 || time.Now().Before(closed) || res.Elapsed >= maximum {
			t.Fatalf("ended after %s with %d open, want after the connections closed at %s", res.Elapsed, res.Open, closed.Sub(start))
		}
	})
	t.Run("a connection that stays open ends the drain at the maximum", func(t *testing.T) {
		a := &admin{open: func() int { return 1 }}
		s := httptest.NewServer(a)
		defer s.Close()
		res := run(t, s.Listener.Addr().String(), minimum, 300*time.Millisecond)
		if res.Open != 1 || res.Elapsed < 300*time.Millisecond {
			t.Fatalf("ended after %s with %d open, want the maximum", res.Elapsed, res.Open)
		}
	})
	t.Run("an admin that does not answer costs the minimum and is reported", func(t *testing.T) {
		s := httptest.NewServer(http.NotFoundHandler())
		addr := s.Listener.Addr().String()
		s.Close()
		res := run(t, addr, minimum, maximum)
		if res.Err == nil || res.Elapsed < minimum || res.Elapsed >= maximum {
			t.Fatalf("ended after %s with error %v, want the minimum and an error", res.Elapsed, res.Err)
		}
	})
}
