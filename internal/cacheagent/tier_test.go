package cacheagent_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localcache"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests send real HTTP through the cache tier the operator renders:
// the real nginx with its nginx.conf, the real agent, and a pool on loopback.

// pool answers with 100 bytes, or /N/... with N bytes, chunked when the path
// has a /chunked/ segment, with "Cache-Control: public, max-age=7" when it
// has a /cc/ segment; it counts the requests that reach it per path.
type pool struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func startPool(t *testing.T) *pool {
	t.Helper()
	p := &pool{hits: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hits[r.URL.Path]++
		p.mu.Unlock()
		size := 100
		if first, _, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); ok {
			if n, err := strconv.Atoi(first); err == nil {
				size = n
			}
		}
		body := strings.Repeat("x", size)
		if strings.Contains(r.URL.Path, "/cc/") {
			w.Header().Set("Cache-Control", "public, max-age=7")
		}
		if strings.Contains(r.URL.Path, "/chunked/") {
			f := w.(http.Flusher)
			for len(body) > 0 {
				n := min(len(body), 1000)
				_, _ = io.WriteString(w, body[:n])
				f.Flush()
				body = body[n:]
			}
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pool) requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[path]
}

func (p *pool) upstream(name string) model.Upstream {
	host, port, _ := net.SplitHostPort(p.srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	return model.Upstream{Pool: name, Address: host, Port: int32(n)}
}

// defaults are IIS's: threshold 2 within 10 s, TTL 30 s, 256 KiB objects.
func defaults(p *pool) model.Cache {
	return model.Cache{
		Name: "static", Namespace: "web",
		FrequentHitThreshold: 2, FrequentHitPeriod: 10 * time.Second, ObjectTTL: 30 * time.Second,
		MaxObjectSizeBytes: 256 << 10, MemorySizeBytes: 64 << 20, ClientCacheMode: "NoControl",
		Replicas: 1, CPUMilli: 1000,
		Upstreams: []model.Upstream{p.upstream("images")},
	}
}

// keepAtFirstRequest is defaults with a threshold of 1: the first response is kept.
func keepAtFirstRequest(p *pool) model.Cache {
	c := defaults(p)
	c.FrequentHitThreshold = 1
	return c
}

func startTier(t *testing.T, c model.Cache) *localcache.Tier {
	t.Helper()
	tier, err := localcache.Start(testutil.Tool(t, "WEBFARM_NGINX", "nginx"), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx:\n%s", tier.Log())
		}
		tier.Stop()
	})
	return tier
}

type answer struct {
	status      int
	cacheStatus string
	header      http.Header
	bodyLen     int
}

// send makes one request to pool "images" (or the pool in the header list).
func send(t *testing.T, tier *localcache.Tier, method, path string, body io.Reader, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, tier.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(vocabulary.PoolHeader, "images")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("X-Cache-Status"), resp.Header, len(b)}
}

func cacheStatuses(t *testing.T, tier *localcache.Tier, n int, path string) []string {
	t.Helper()
	var got []string
	for range n {
		a := send(t, tier, http.MethodGet, path, nil)
		if a.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, a.status)
		}
		got = append(got, a.cacheStatus)
	}
	return got
}

func TestAResponseIsKeptOnceItWasRequestedThresholdTimesWithinThePeriod(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	tests := []struct {
		name      string
		threshold int32
		want      []string
	}{
		{"threshold 1 keeps the first response", 1, []string{"MISS", "HIT", "HIT"}},
		{"threshold 2 keeps the second response, the third is a hit", 2, []string{"MISS", "MISS", "HIT"}},
		{"threshold 3 keeps the third response", 3, []string{"MISS", "MISS", "MISS", "HIT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(p)
			c.FrequentHitThreshold = tt.threshold
			tier := startTier(t, c)
			path := fmt.Sprintf("/threshold-%d.png", tt.threshold)
			got := cacheStatuses(t, tier, len(tt.want), path)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("cache statuses %v, want %v", got, tt.want)
			}
			if n := p.requests(path); n != int(tt.threshold) {
				t.Errorf("the pool served %d requests, want %d", n, tt.threshold)
			}
		})
	}
}

// nginx's own proxy_cache_min_uses would count these within objectTTL (30 s)
// and keep the second response; the agent counts within frequentHitPeriod.
func TestRequestsFartherApartThanTheHitPeriodAreNotFrequent(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := defaults(p)
	// The agent's window runs on a clock the test moves: 10 s pass between
	// the first request and the next three.
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	tier, err := localcache.StartWithClock(testutil.Tool(t, "WEBFARM_NGINX", "nginx"), c, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Stop)
	first := cacheStatuses(t, tier, 1, "/sparse.png")
	mu.Lock()
	clock = clock.Add(c.FrequentHitPeriod + time.Second)
	mu.Unlock()
	then := cacheStatuses(t, tier, 3, "/sparse.png")
	got := slices.Concat(first, then)
	want := []string{"MISS", "MISS", "MISS", "HIT"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cache statuses %v, want %v: the second request came after the period and starts the count afresh", got, want)
	}
}

func TestAnEntryUnusedForObjectTTLIsEvicted(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	c.ObjectTTL = time.Second
	tier := startTier(t, c)
	if got := cacheStatuses(t, tier, 2, "/ttl.png"); fmt.Sprint(got) != "[MISS HIT]" {
		t.Fatalf("cache statuses %v, want [MISS HIT]", got)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		s, err := tier.Stats()
		if err != nil {
			return err
		}
		if s.Objects != 0 || s.Evicted != 1 {
			return fmt.Errorf("%d objects, %d evicted; want the entry evicted", s.Objects, s.Evicted)
		}
		return nil
	})
	if got := cacheStatuses(t, tier, 1, "/ttl.png"); got[0] != "MISS" {
		t.Errorf("after eviction: %s, want MISS", got[0])
	}
	if n := p.requests("/ttl.png"); n != 2 {
		t.Errorf("the pool served %d requests, want 2", n)
	}
}

func TestAResponseOverMaxObjectSizeIsNeverKept(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	c.MaxObjectSizeBytes = 10 << 10
	tier := startTier(t, c)
	tests := []struct {
		name  string
		query string
		size  int
		want  string // the second request's cache status
	}{
		{"a 20 KiB response with a Content-Length is not kept", "/20480/a.png", 20480, "MISS"},
		{"a 20 KiB chunked response without a length is not kept", "/20480/chunked/b.png", 20480, "MISS"},
		{"a response of exactly maxObjectSize is kept", "/10240/c.png", 10240, "HIT"},
		{"a 5 KiB chunked response is kept", "/5120/chunked/d.png", 5120, "HIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.query
			var got []string
			for range 2 {
				a := send(t, tier, http.MethodGet, path, nil)
				if a.status != http.StatusOK || a.bodyLen != tt.size {
					t.Fatalf("status %d, %d bytes; want 200, %d bytes", a.status, a.bodyLen, tt.size)
				}
				got = append(got, a.cacheStatus)
			}
			if got[1] != tt.want {
				t.Errorf("cache statuses %v, want the second %s", got, tt.want)
			}
		})
	}
}

func TestRequestsAndResponsesTheCacheNeverKeeps(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	tier := startTier(t, c)
	c.CacheQueryStrings = true
	withQueries := startTier(t, c)
	tests := []struct {
		name    string
		tier    *localcache.Tier
		method  string
		path    string
		body    string
		headers []string
		want    string // the second request's cache status
	}{
		{"a request with a query string is not cached (HTTP.sys's default)", tier, http.MethodGet, "/q.png?v=1", "", nil, "BYPASS"},
		{"a request with a query string is cached when cacheQueryStrings is on", withQueries, http.MethodGet, "/q.png?v=1", "", nil, "HIT"},
		{"cacheQueryStrings keys by the query string", withQueries, http.MethodGet, "/q.png?v=2", "", nil, "HIT"},
		{"a POST is not cached", tier, http.MethodPost, "/form", "a=1", nil, ""},
		{"a PUT is not cached", tier, http.MethodPut, "/put.png", "", nil, ""},
		{"a request with Authorization is not cached", tier, http.MethodGet, "/private.png", "", []string{"Authorization", "Basic dTpw"}, "BYPASS"},
		{"a GET with a body is not cached", tier, http.MethodGet, "/with-body.png", "payload", nil, "BYPASS"},
		{"a zero-length response is not cached", tier, http.MethodGet, "/0/empty.png", "", nil, "MISS"},
		{"a HEAD is answered from the entry a GET made", tier, http.MethodHead, "/head.png", "", nil, "HIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for range 2 {
				var body io.Reader
				if tt.body != "" {
					body = strings.NewReader(tt.body)
				}
				method := tt.method
				if method == http.MethodHead && len(got) == 0 {
					method = http.MethodGet
				}
				a := send(t, tt.tier, method, tt.path, body, tt.headers...)
				if a.status != http.StatusOK {
					t.Fatalf("%s %s: %d", method, tt.path, a.status)
				}
				got = append(got, a.cacheStatus)
			}
			if got[1] != tt.want {
				t.Errorf("cache statuses %q, want the second %q", got, tt.want)
			}
		})
	}
}

// 30 objects of 100 KiB through a 1 MiB cache: every request is served and
// the memory never exceeds the bound (the agent admits nothing past it);
// nginx's cache manager then evicts the least recently used entries down to
// 80 %, and new objects enter again.
func TestAFullCacheEvictsTheLeastRecentlyUsedAndFailsNoRequest(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	c.MemorySizeBytes = 1 << 20
	tier := startTier(t, c)
	object := func(i int) string { return fmt.Sprintf("/102400/lru-%d.png", i) }
	for i := range 30 {
		a := send(t, tier, http.MethodGet, object(i), nil)
		if a.status != http.StatusOK || a.bodyLen != 102400 {
			t.Fatalf("object %d: status %d, %d bytes", i, a.status, a.bodyLen)
		}
		s, err := tier.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if s.MemoryBytes > c.MemorySizeBytes {
			t.Fatalf("after object %d: %d bytes cached, over memorySize %d", i, s.MemoryBytes, c.MemorySizeBytes)
		}
	}
	// Admitted in order until the memory was full: objects 0 to kept-1.
	var kept int
	testutil.Eventually(t, 5*time.Second, func() error {
		s, err := tier.Stats()
		if err != nil {
			return err
		}
		if kept = int(s.Stored); kept < 5 || kept > 10 || s.Objects != s.Stored-s.Evicted {
			return fmt.Errorf("%d objects stored, %d held, %d evicted; want 5 to 10 of 100 KiB in 1 MiB", s.Stored, s.Objects, s.Evicted)
		}
		return nil
	})
	testutil.Eventually(t, 15*time.Second, func() error {
		s, err := tier.Stats()
		if err != nil {
			return err
		}
		if s.Evicted == 0 || s.MemoryBytes > c.MemorySizeBytes/10*8 {
			return fmt.Errorf("%d objects in %d bytes, %d evicted; want the cache manager to evict down to 80 %%", s.Objects, s.MemoryBytes, s.Evicted)
		}
		return nil
	})
	if got := send(t, tier, http.MethodGet, object(kept-1), nil).cacheStatus; got != "HIT" {
		t.Errorf("the most recently used object: %s, want HIT", got)
	}
	send(t, tier, http.MethodGet, object(29), nil)
	if got := send(t, tier, http.MethodGet, object(29), nil).cacheStatus; got != "HIT" {
		t.Errorf("a new object after the eviction: %s, want HIT (kept)", got)
	}
	if got := send(t, tier, http.MethodGet, object(0), nil).cacheStatus; got != "MISS" {
		t.Errorf("the least recently used object: %s, want MISS (evicted)", got)
	}
}

func TestTheClientCacheHeadersAreOnResponses(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	tests := []struct {
		name         string
		mode         string
		maxAge       time.Duration
		cacheControl string
		expires      time.Duration // 0: no Expires header
	}{
		{"NoControl passes the pool's own Cache-Control", "NoControl", 0, "public, max-age=7", 0},
		{"DisableCache tells clients not to cache", "DisableCache", 0, "no-cache", -time.Second},
		{"UseMaxAge sets max-age", "UseMaxAge", time.Hour, "max-age=3600", 0},
		{"UseExpires sets Expires and the matching max-age", "UseExpires", 24 * time.Hour, "max-age=86400", 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults(p)
			c.FrequentHitThreshold = 1
			c.ClientCacheMode, c.ClientMaxAge = tt.mode, tt.maxAge
			tier := startTier(t, c)
			for _, want := range []string{"MISS", "HIT"} {
				a := send(t, tier, http.MethodGet, "/100/cc/page.png", nil)
				if a.cacheStatus != want {
					t.Fatalf("cache status %s, want %s", a.cacheStatus, want)
				}
				if got := a.header.Get("Cache-Control"); got != tt.cacheControl {
					t.Errorf("%s: Cache-Control %q, want %q", want, got, tt.cacheControl)
				}
				if tt.expires == 0 {
					if got := a.header.Get("Expires"); got != "" {
						t.Errorf("%s: Expires %q, want none", want, got)
					}
					continue
				}
				exp, err := http.ParseTime(a.header.Get("Expires"))
				if err != nil {
					t.Fatalf("%s: Expires %q: %v", want, a.header.Get("Expires"), err)
				}
				if d := time.Until(exp) - tt.expires; d < -5*time.Second || d > 5*time.Second {
					t.Errorf("%s: Expires %s is %s from now, want %s", want, exp, time.Until(exp), tt.expires)
				}
			}
		})
	}
}

func TestAPurgeRemovesAPoolsEntriesOrAll(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	c.Upstreams = append(c.Upstreams, p.upstream("shop"))
	tier := startTier(t, c)
	get := func(pool, path string) string {
		return send(t, tier, http.MethodGet, path, nil, vocabulary.PoolHeader, pool).cacheStatus
	}
	for _, pool := range []string{"images", "shop"} {
		get(pool, "/logo.png")
		if got := get(pool, "/logo.png"); got != "HIT" {
			t.Fatalf("%s: %s, want HIT before the purge", pool, got)
		}
	}
	if n, err := tier.Purge("images"); err != nil || n != 1 {
		t.Fatalf("purging pool images removed %d entries (%v), want 1", n, err)
	}
	if got := get("images", "/logo.png"); got != "MISS" {
		t.Errorf("images after its purge: %s, want MISS", got)
	}
	if got := get("shop", "/logo.png"); got != "HIT" {
		t.Errorf("shop after images' purge: %s, want HIT", got)
	}
	if n, err := tier.Purge(""); err != nil || n != 2 {
		t.Fatalf("purging everything removed %d entries (%v), want 2", n, err)
	}
	if got := get("shop", "/logo.png"); got != "MISS" {
		t.Errorf("shop after a full purge: %s, want MISS", got)
	}
	s, err := tier.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.Flushed != 3 || s.Flushes != 2 || s.Evicted != 0 {
		t.Errorf("%d flushed in %d flushes, %d evicted; want 3 in 2, none evicted", s.Flushed, s.Flushes, s.Evicted)
	}
}

func TestTheCountersFollowTheCachesWork(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	tier := startTier(t, c)
	for range 4 {
		send(t, tier, http.MethodGet, "/1000/counted.png", nil)
	}
	// 400 more hits from 8 connections at once: counted exactly, not sampled.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				send(t, tier, http.MethodGet, "/1000/counted.png", nil)
			}
		})
	}
	wg.Wait()
	send(t, tier, http.MethodGet, "/bypassed.png?q=1", nil)
	if a := send(t, tier, http.MethodGet, "/unknown-pool.png", nil, vocabulary.PoolHeader, "nosuchpool"); a.status != http.StatusMisdirectedRequest {
		t.Fatalf("a request for a pool the tier does not front: %d, want 421", a.status)
	}
	want := vocabulary.AgentStats{Hits: 403, Misses: 1, Bypasses: 2, Stored: 1, Objects: 1}
	testutil.Eventually(t, 5*time.Second, func() error {
		s, err := tier.Stats()
		if err != nil {
			return err
		}
		memory := s.MemoryBytes
		s.MemoryBytes = 0
		if s != want || memory < 1000 {
			return fmt.Errorf("stats %+v with %d bytes, want %+v with at least 1000 bytes", s, memory, want)
		}
		return nil
	})
}

// The admin port is reachable from every pod: a purge or a read of the
// counters without the tier's token is refused, and purges nothing.
func TestTheAdminEndpointAsksForTheTiersToken(t *testing.T) {
	t.Parallel()
	p := startPool(t)
	c := keepAtFirstRequest(p)
	tier := startTier(t, c)
	get := func() string {
		return send(t, tier, http.MethodGet, "/logo.png", nil, vocabulary.PoolHeader, "images").cacheStatus
	}
	get()
	if got := get(); got != "HIT" {
		t.Fatalf("%s, want HIT before the purges", got)
	}
	tests := []struct {
		name          string
		method, path  string
		authorization string
		want          int
	}{
		{"a purge without a token is refused", http.MethodPost, vocabulary.AgentPurgePath, "", http.StatusUnauthorized},
		{"a purge with another token is refused", http.MethodPost, vocabulary.AgentPurgePath, "Bearer " + strings.Repeat("0", 64), http.StatusUnauthorized},
		{"a purge with the token but not as a bearer token is refused", http.MethodPost, vocabulary.AgentPurgePath, tier.AdminToken, http.StatusUnauthorized},
		{"a purge with the token and more is refused", http.MethodPost, vocabulary.AgentPurgePath, "Bearer " + tier.AdminToken + "x", http.StatusUnauthorized},
		{"the counters without a token are refused", http.MethodGet, vocabulary.AgentStatsPath, "", http.StatusUnauthorized},
		{"the health check needs no token", http.MethodGet, vocabulary.AgentHealthPath, "", http.StatusOK},
		{"the counters with the token are served", http.MethodGet, vocabulary.AgentStatsPath, "Bearer " + tier.AdminToken, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tier.AdminURL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.authorization != "" {
				req.Header.Set("Authorization", tt.authorization)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s: %s, want %d", tt.method, tt.path, resp.Status, tt.want)
			}
		})
	}
	if got := get(); got != "HIT" {
		t.Errorf("%s after the refused purges, want HIT: a refused purge removed the entry", got)
	}
	if n, err := tier.Purge(""); err != nil || n != 1 {
		t.Errorf("a purge with the token removed %d entries (%v), want 1", n, err)
	}
}
