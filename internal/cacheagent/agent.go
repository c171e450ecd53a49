// Package cacheagent is the companion of a cache tier's nginx, in the same
// pod: it decides which responses nginx keeps (IIS's frequent-hit window,
// the size limit, no empty responses), counts the cache's work like IIS's
// "Web Service Cache" counters, and purges entries on request.
//
// nginx answers hits itself; only its misses pass through the agent on their
// way to the pool. The operator's side of the agent's admin API is
// internal/cacheadmin; the configuration and the API's names are in
// internal/vocabulary.
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

	"webfarm.dev/operator/internal/vocabulary"
)

// maxTrackedKeys bounds the memory of the frequent-hit window (about 100 bytes a key).
const maxTrackedKeys = 1 << 20

// Agent is a running cache agent.
type Agent struct {
	cfg    vocabulary.AgentConfig
	store  *store
	lookup *lookups
	hits   *FrequentHits
	// Now is the clock of the frequent-hit window (time.Now; a test can
	// set its own before Run).
	Now func() time.Time
}

// New checks a configuration.
func New(cfg vocabulary.AgentConfig) (*Agent, error) {
	switch {
	case cfg.FrequentHitThreshold < 1:
		return nil, fmt.Errorf("frequentHitThreshold %d must be at least 1", cfg.FrequentHitThreshold)
	case cfg.FrequentHitPeriod <= 0:
		return nil, errors.New("frequentHitPeriod must be positive")
	case cfg.MaxObjectSizeBytes < 1 || cfg.MemorySizeBytes < cfg.MaxObjectSizeBytes:
		return nil, errors.New("maxObjectSizeBytes must be positive and memorySizeBytes at least as large")
	case cfg.CacheDir == "" || cfg.LogSocket == "" || cfg.NginxStatusURL == "" || cfg.ProxyAddress == "" || cfg.AdminAddress == "":
		return nil, errors.New("cacheDir, logSocket, nginxStatusURL, proxyAddress and adminAddress are required")
	case len(cfg.AdminToken) < vocabulary.MinAdminTokenLength:
		return nil, fmt.Errorf("adminToken must have at least %d characters", vocabulary.MinAdminTokenLength)
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
func (a *Agent) Stats(ctx context.Context) (vocabulary.AgentStats, error) {
	hits, err := a.lookup.hitCount(ctx, a.Now())
	if err != nil {
		return vocabulary.AgentStats{}, fmt.Errorf("reading nginx's request count: %w", err)
	}
	objects, bytes := a.store.usage()
	return vocabulary.AgentStats{
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
	mux.HandleFunc("GET "+vocabulary.AgentHealthPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET "+vocabulary.AgentStatsPath, a.authorized(func(w http.ResponseWriter, r *http.Request) {
		s, err := a.Stats(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	}))
	mux.Handle("POST "+vocabulary.AgentPurgePath, a.authorized(func(w http.ResponseWriter, r *http.Request) {
		prefix := ""
		if pool := r.URL.Query().Get("pool"); pool != "" {
			prefix = KeyPrefix(pool)
		}
		n, err := a.store.purge(prefix)
		w.Header().Set(vocabulary.AgentPurgedHeader, fmt.Sprint(n))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

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
// keys as "<pool> <site headers>|<host><uri>" (pool names are DNS labels:
// no spaces).
func KeyPrefix(pool string) string { return pool + " " }

// Main runs the agent from its configuration file until a signal stops it.
func Main(ctx context.Context, configPath string) error {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	var cfg vocabulary.AgentConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	a, err := New(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	return a.Run(ctx)
}
