package activator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// pools is a pool whose worker becomes ready readyAfter its start.
type pools struct {
	worker     string
	readyAfter time.Duration
	mu         sync.Mutex
	startedAt  time.Time
	starts     atomic.Int32
	noWorker   atomic.Pointer[error] // why no worker is coming (nil: one is)
}

func (p *pools) NoWorkerComing(context.Context, string, string) error {
	if why := p.noWorker.Load(); why != nil {
		return *why
	}
	return nil
}

func (p *pools) ReadyWorker(context.Context, string, string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.worker, !p.startedAt.IsZero() && time.Since(p.startedAt) >= p.readyAfter
}

// Serves: farm web/hosting routes to pool web/shop, no other farm to any pool.
func (p *pools) Serves(_ context.Context, namespace, farm, pool string) bool {
	return namespace == "web" && farm == "hosting" && pool == "shop"
}

func (p *pools) Start(context.Context, string, string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.startedAt.IsZero() {
		return false, nil
	}
	p.startedAt = time.Now()
	p.starts.Add(1)
	return true, nil
}

// worker is an HTTP server standing for a pool's worker: it echoes what it got.
func worker(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Host+" "+r.URL.RequestURI()+" xff="+r.Header.Get("X-Forwarded-For")+" activate="+r.Header.Get(Header))
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func request(pool string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/cart?id=7", nil)
	r.Host = "shop.example"
	r.Header.Set("X-Forwarded-For", "192.0.2.10")
	if pool != "" {
		r.Header.Set(Header, pool)
	}
	return r
}

func TestAnIdlePoolsFirstRequestStartsItAndIsServed(t *testing.T) {
	p := &pools{worker: worker(t), readyAfter: 300 * time.Millisecond}
	var coldStart time.Duration
	a := &Activator{Pools: p, Timeout: 5 * time.Second, MaxWaiting: 10, Poll: 20 * time.Millisecond,
		ColdStart: func(_, _ string, took time.Duration) { coldStart = took }}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, request("web/shop"))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if got, want := w.Body.String(), "shop.example /cart?id=7 xff=192.0.2.10 activate="; got != want {
		t.Errorf("the worker got %q, want %q (host, path and client address as they came, the activator's header gone)", got, want)
	}
	if p.starts.Load() != 1 {
		t.Errorf("%d starts, want 1", p.starts.Load())
	}
	if coldStart < 300*time.Millisecond || coldStart > 2*time.Second {
		t.Errorf("cold start %s, want about 300ms", coldStart)
	}
}

func TestRequestsWaitingForAStartingPool(t *testing.T) {
	tests := []struct {
		name       string
		readyAfter time.Duration
		requests   int
		maxWaiting int
		wantOK     int
		wantBody   string // of the refusals
	}{
		{"twenty requests at once start the pool once and are all served", 200 * time.Millisecond, 20, 50, 20, ""},
		{"requests beyond the start queue are refused at once", time.Second, 8, 5, 5, QueueFullBody},
		{"a pool that does not start in time gets 503", time.Hour, 3, 10, 0, TimeoutBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pools{worker: worker(t), readyAfter: tt.readyAfter}
			a := &Activator{Pools: p, Timeout: 2 * time.Second, MaxWaiting: tt.maxWaiting, Poll: 20 * time.Millisecond}
			var wg sync.WaitGroup
			var ok atomic.Int32
			errs := make(chan string, tt.requests)
			for range tt.requests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					w := httptest.NewRecorder()
					a.ServeHTTP(w, request("web/shop"))
					switch {
					case w.Code == http.StatusOK:
						ok.Add(1)
					case w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || w.Body.String() != tt.wantBody:
						errs <- w.Body.String()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Errorf("unexpected answer %q", e)
			}
			if int(ok.Load()) != tt.wantOK {
				t.Errorf("%d served, want %d", ok.Load(), tt.wantOK)
			}
			if p.starts.Load() != 1 {
				t.Errorf("%d starts, want 1", p.starts.Load())
			}
			if n := a.Waiting("web", "shop"); n != 0 {
				t.Errorf("%d still counted as waiting", n)
			}
		})
	}
}

// A request held for a worker that is not coming (rapid-fail protection
// stopped the pool, or its status says its workers cannot start) gets that
// answer as soon as the pool's status says so, not after the activator's
// timeout.
func TestARequestWaitingForAWorkerThatIsNotComingGetsItsAnswerAtOnce(t *testing.T) {
	answered := func(body string) func(got string) bool {
		return func(got string) bool {
			return strings.HasPrefix(got, "HTTP/1.1 503 Service Unavailable\r\n") && strings.HasSuffix(got, "\r\n\r\n"+body)
		}
	}
	tests := []struct {
		name      string
		mode      string
		why       error
		saidAfter time.Duration
		want      func(got string) bool
	}{
		{"in L7 mode a request waiting when the pool stops gets the stopped pool's 503", model.UnavailableL7, ErrPoolStopped, 300 * time.Millisecond,
			answered(vocabulary.PoolStoppedBody)},
		{"in L7 mode a request for a pool already stopped gets the same", model.UnavailableL7, ErrPoolStopped, 0,
			answered(vocabulary.PoolStoppedBody)},
		{"in L4 mode a request waiting when the pool stops gets not one byte before the connection closes", model.UnavailableL4, ErrPoolStopped, 300 * time.Millisecond,
			func(got string) bool { return got == "" }},
		{"in L7 mode a request waiting when the pool's workers are found unable to start gets the cannot-start 503", model.UnavailableL7, ErrPoolCannotStart, 300 * time.Millisecond,
			answered(CannotStartBody)},
		{"in L7 mode a request for a pool whose workers cannot start gets the same", model.UnavailableL7, ErrPoolCannotStart, 0,
			answered(CannotStartBody)},
		{"in L4 mode a request for a pool whose workers cannot start gets not one byte before the connection closes", model.UnavailableL4, ErrPoolCannotStart, 0,
			func(got string) bool { return got == "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pools{worker: worker(t), readyAfter: time.Hour}
			if tt.saidAfter == 0 {
				p.noWorker.Store(&tt.why)
			}
			a := &Activator{Pools: p, Timeout: time.Minute, MaxWaiting: 10, Poll: 20 * time.Millisecond}
			s := httptest.NewServer(a)
			t.Cleanup(s.Close)
			say := time.AfterFunc(tt.saidAfter, func() { p.noWorker.Store(&tt.why) })
			defer say.Stop()
			begun := time.Now()
			got := rawGet(t, strings.TrimPrefix(s.URL, "http://"), model.UnavailableResponseHeader+": "+tt.mode)
			if !tt.want(got) {
				t.Errorf("the activator answered %q", got)
			}
			if took := time.Since(begun); took > tt.saidAfter+2*time.Second {
				t.Errorf("answered %s after the request, want within a poll of the status saying so at %s", took, tt.saidAfter)
			}
			if n := a.Waiting("web", "shop"); n != 0 {
				t.Errorf("%d still counted as waiting", n)
			}
		})
	}
}

func TestARequestThatNamesNoValidPoolIsRefused(t *testing.T) {
	for _, v := range []string{"", "shop", "web/", "/shop", "Web/shop", "web/shop/x", "web/sh op"} {
		a := &Activator{Pools: &pools{}, Timeout: time.Second, MaxWaiting: 1, Poll: time.Millisecond}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, request(v))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s %q: status %d, want 400", Header, v, w.Code)
		}
	}
}

// rawGet sends a GET for the pool over a connection of its own, as the
// frontend does, and returns all it read until the activator closed.
func rawGet(t *testing.T, addr string, headers ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET /cart HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n" + Header + ": web/shop\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	// A connection closed with the request unread may end in a reset.
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading the answer: %v (read %q)", err, got)
	}
	return string(got)
}

// With the farm's unavailableResponse L4 the activator closes the
// connection without an answer where it would answer 503, so the frontend
// resets its client's (TestAnL4FarmResetsWhereTheActivatorGivesUp).
func TestInL4ModeAPoolThatDoesNotStartInTimeGetsACutConnection(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		maxWaiting int
		want       func(got string) bool
	}{
		{"in L4 mode the timed-out request gets not one byte before the connection closes", model.UnavailableL4, 10,
			func(got string) bool { return got == "" }},
		{"in L4 mode a request beyond the start queue gets the same", model.UnavailableL4, 0,
			func(got string) bool { return got == "" }},
		{"in L7 mode the timed-out request gets the whole 503", model.UnavailableL7, 10,
			func(got string) bool {
				return strings.HasPrefix(got, "HTTP/1.1 503 Service Unavailable\r\n") && strings.HasSuffix(got, "\r\n\r\n"+TimeoutBody)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Activator{Pools: &pools{worker: worker(t), readyAfter: time.Hour}, Timeout: 200 * time.Millisecond, MaxWaiting: tt.maxWaiting, Poll: 20 * time.Millisecond}
			s := httptest.NewServer(a)
			t.Cleanup(s.Close)
			if got := rawGet(t, strings.TrimPrefix(s.URL, "http://"), model.UnavailableResponseHeader+": "+tt.mode); !tt.want(got) {
				t.Errorf("the activator answered %q", got)
			}
		})
	}
}

// peer is the TLS state of a client whose verified certificate is cert.
func peer(t *testing.T, certPEM []byte) *tls.ConnectionState {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
}

func TestAFarmWakesOnlyItsOwnPools(t *testing.T) {
	certPEM, keyPEM, err := identity.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := identity.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	farmCert := func(namespace, farm string) *tls.ConnectionState {
		issued, err := ca.IssueFarm(namespace, farm, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return peer(t, issued.CertPEM)
	}
	server, err := ca.IssueServer([]string{"xds.test"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tls  *tls.ConnectionState
		pool string
		want int
	}{
		{"a farm's frontend wakes a pool its farm routes to", farmCert("web", "hosting"), "web/shop", http.StatusOK},
		{"a farm's frontend cannot wake a pool of its namespace its farm does not route to", farmCert("web", "hosting"), "web/admin", http.StatusForbidden},
		{"another farm of the namespace cannot wake the pool", farmCert("web", "other"), "web/shop", http.StatusForbidden},
		{"a farm of another namespace of the same name cannot wake the pool", farmCert("evil", "hosting"), "web/shop", http.StatusForbidden},
		{"a client without a certificate cannot wake the pool", nil, "web/shop", http.StatusForbidden},
		{"a certificate that names no farm cannot wake the pool", peer(t, server.CertPEM), "web/shop", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pools{worker: worker(t)}
			a := &Activator{Pools: p, Timeout: 5 * time.Second, MaxWaiting: 10, Poll: 20 * time.Millisecond, FarmBound: true}
			r := request(tt.pool)
			r.TLS = tt.tls
			w := httptest.NewRecorder()
			a.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status %d (%s), want %d", w.Code, strings.TrimSpace(w.Body.String()), tt.want)
			}
			if want := int32(map[bool]int{true: 1}[tt.want == http.StatusOK]); p.starts.Load() != want {
				t.Errorf("%d starts, want %d", p.starts.Load(), want)
			}
		})
	}
}
