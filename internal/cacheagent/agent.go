// Package cacheagent is the companion of a cache tier's nginx, in the same
// pod: it decides which responses nginx keeps (IIS's frequent-hit window,
// the size limit, no empty responses), counts the cache's work like IIS's
// "Web Service Cache" counters, and purges entries on request.
//
// nginx answers hits itself; only its misses pass through the agent on their
// way to the pool. Client is the operator's side of the agent's admin API.
package cacheagent

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// Config is the agent's configuration file, rendered by the operator beside
// the cache tier's nginx.conf.
type Config struct {
	FrequentHitThreshold int      `json:"frequentHitThreshold"`
	FrequentHitPeriod    Duration `json:"frequentHitPeriod"`
	MaxObjectSizeBytes   int64    `json:"maxObjectSizeBytes"`
	MemorySizeBytes      int64    `json:"memorySizeBytes"` // the agent admits no response that would outgrow it
	CacheDir             string   `json:"cacheDir"`
	LogSocket            string   `json:"logSocket"`
	NginxStatusURL       string   `json:"nginxStatusURL"` // nginx's stub_status: its request count
	ProxyAddress         string   `json:"proxyAddress"`   // misses from nginx (loopback)
	AdminAddress         string   `json:"adminAddress"`   // stats and purges, for the operator
	// AdminToken is the bearer token the admin endpoint asks of every
	// request but the health check: the port is reachable from any pod, and
	// a purge empties the cache.
	AdminToken string            `json:"adminToken"`
	Upstreams  map[string]string `json:"upstreams"` // pool -> host:port of its Service
}

// Duration is a time.Duration written as Go duration text ("10s").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// maxTrackedKeys bounds the memory of the frequent-hit window (about 100 bytes a key).
const maxTrackedKeys = 1 << 20

// Stats are one cache replica's counters since it started, named after
// IIS's "Web Service Cache" counters.
type Stats struct {
	Hits        int64 `json:"hits"`        // answered from the cache
	Misses      int64 `json:"misses"`      // looked up, not there (or expired): sent to the pool
	Bypasses    int64 `json:"bypasses"`    // never cacheable (query string, Authorization, body, method): sent to the pool
	Stored      int64 `json:"stored"`      // entries added (IIS "Total URIs Cached")
	Evicted     int64 `json:"evicted"`     // entries removed unused for objectTTL, or least recently used when memory was full
	Flushed     int64 `json:"flushed"`     // entries removed by purges (IIS "Total Flushed URIs")
	Flushes     int64 `json:"flushes"`     // purges (IIS "URI Cache Flushes")
	Objects     int64 `json:"objects"`     // entries held now (IIS "Current URIs Cached")
	MemoryBytes int64 `json:"memoryBytes"` // memory the entries take now (IIS "Current File Cache Memory Usage")
}

// Paths of the admin endpoint.
const (
	StatsPath  = "/stats"
	PurgePath  = "/purge" // POST; ?pool=NAME purges one pool's entries, none purges all
	HealthPath = "/healthz"
	// PurgedHeader of a purge's answer is the number of entries it removed.
	PurgedHeader = "X-Webfarm-Purged"
)

// Agent is a running cache agent.
type Agent struct {
	cfg    Config
	store  *store
	lookup *lookups
	hits   *FrequentHits
	// Now is the clock of the frequent-hit window (time.Now; a test can
	// set its own before Run).
	Now func() time.Time
}

// New checks a configuration.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.FrequentHitThreshold < 1:
		return nil, fmt.Errorf("frequentHitThreshold %d must be at least 1", cfg.FrequentHitThreshold)
	case cfg.FrequentHitPeriod <= 0:
		return nil, errors.New("frequentHitPeriod must be positive")
	case cfg.MaxObjectSizeBytes < 1 || cfg.MemorySizeBytes < cfg.MaxObjectSizeBytes:
		return nil, errors.New("maxObjectSizeBytes must be positive and memorySizeBytes at least as large")
	case cfg.CacheDir == "" || cfg.LogSocket == "" || cfg.NginxStatusURL == "" || cfg.ProxyAddress == "" || cfg.AdminAddress == "":
		return nil, errors.New("cacheDir, logSocket, nginxStatusURL, proxyAddress and adminAddress are required")
	case len(cfg.AdminToken) < MinAdminTokenLength:
		return nil, fmt.Errorf("adminToken must have at least %d characters", MinAdminTokenLength)
	}
	return &Agent{
		cfg:    cfg,
		store:  &store{dir: cfg.CacheDir},
		lookup: &lookups{statusURL: cfg.NginxStatusURL, client: &http.Client{Timeout: 2 * time.Second}},
		Now:    time.Now,
		hits:   NewFrequentHits(cfg.FrequentHitThreshold, time.Duration(cfg.FrequentHitPeriod), maxTrackedKeys),
	}, nil
}

// Stats reads the counters (and nginx's request count, for the hits).
func (a *Agent) Stats(ctx context.Context) (Stats, error) {
	hits, err := a.lookup.hitCount(ctx, a.Now())
	if err != nil {
		return Stats{}, fmt.Errorf("reading nginx's request count: %w", err)
	}
	objects, bytes := a.store.usage()
	return Stats{
		Hits: hits, Misses: a.lookup.misses.Load(), Bypasses: a.lookup.bypasses.Load() + a.lookup.unseen.Load(),
		Stored: a.store.stored.Load(), Evicted: a.store.evicted(),
		Flushed: a.store.flushed.Load(), Flushes: a.store.flushes.Load(),
		Objects: objects, MemoryBytes: bytes,
	}, nil
}

// Run serves until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if err := os.MkdirAll(a.cfg.CacheDir, 0o755); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	watching := make(chan error, 1)
	go a.store.watch(stop, watching)
	if err := <-watching; err != nil {
		return fmt.Errorf("watching %s: %w", a.cfg.CacheDir, err)
	}
	logConn, err := a.lookup.listen(a.cfg.LogSocket)
	if err != nil {
		return fmt.Errorf("log socket %s: %w", a.cfg.LogSocket, err)
	}
	defer logConn.Close()

	servers := []*http.Server{
		{Addr: a.cfg.ProxyAddress, Handler: newMissProxy(a.cfg, a.hits, a.store, a.lookup, a.Now), ReadHeaderTimeout: 10 * time.Second},
		{Addr: a.cfg.AdminAddress, Handler: a.adminHandler(), ReadHeaderTimeout: 10 * time.Second},
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		l, err := net.Listen("tcp", s.Addr)
		if err != nil {
			return err
		}
		go func() { errs <- s.Serve(l) }()
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	return err
}

func (a *Agent) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET "+StatsPath, a.authorized(func(w http.ResponseWriter, r *http.Request) {
		s, err := a.Stats(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	}))
	mux.Handle("POST "+PurgePath, a.authorized(func(w http.ResponseWriter, r *http.Request) {
		prefix := ""
		if pool := r.URL.Query().Get("pool"); pool != "" {
			prefix = KeyPrefix(pool)
		}
		n, err := a.store.purge(prefix)
		w.Header().Set(PurgedHeader, fmt.Sprint(n))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

// MinAdminTokenLength refuses guessable tokens (the operator makes 64
// random hex digits).
const MinAdminTokenLength = 32

// authorized passes requests that carry the admin token and answers 401 to
// the rest, comparing in constant time.
func (a *Agent) authorized(next http.HandlerFunc) http.Handler {
	want := []byte("Bearer " + a.cfg.AdminToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next(w, r)
	})
}

// KeyPrefix starts the cache key of every entry of a pool; nginx.conf builds
// keys as "<pool> <host><uri>" (pool names are DNS labels: no spaces).
func KeyPrefix(pool string) string { return pool + " " }

// Main runs the agent from its configuration file until a signal stops it.
func Main(ctx context.Context, configPath string) error {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	a, err := New(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	return a.Run(ctx)
}
