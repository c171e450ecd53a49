package nginx_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheagent"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

func int32p(v int32) *int32 { return &v }

func basePool() model.Pool {
	return model.Pool{
		Name: "shop", Namespace: "web", Replicas: int32p(2),
		CPUMilli: 500, MemoryBytes: 128 << 20, MaxConcurrentRequests: 100, QueueLength: 1000,
		Content: model.Content{Source: model.ContentConfigMap, Name: "shop-content"},
		Health: model.HealthCheck{Path: "/", Interval: 30 * time.Second, Timeout: 5 * time.Second, FailureThreshold: 3,
			Pinging: true, PingInterval: 30 * time.Second, PingResponseTime: 90 * time.Second, StartupTimeLimit: 90 * time.Second, ShutdownTimeLimit: 90 * time.Second},
	}
}

func TestPoolConfig(t *testing.T) {
	withApp := basePool()
	withApp.CPUMilli = 2500
	withApp.MaxConcurrentRequests = 2000
	withApp.App = &model.App{Image: "registry.example.com/shop:2.1", Port: 3000}
	appOnly := withApp
	appOnly.Content = model.Content{}
	queueTimeout := withApp
	queueTimeout.QueueTimeout = 1500 * time.Millisecond
	grpcApp := queueTimeout
	grpcApp.App = &model.App{Image: "registry.example.com/greeter:1", Port: 9000, Protocol: model.AppGRPC}

	ownDocuments := basePool()
	ownDocuments.Content.DefaultDocuments = []string{"Default.htm", "default.aspx", "iisstart.htm"}

	tests := []struct {
		name   string
		golden string
		pool   model.Pool
	}{
		{"a pool serving static files from a ConfigMap", "pool-static.conf", basePool()},
		{"a pool's own default documents fill the slots its sites' documents do not, the last repeated", "pool-default-documents.conf", ownDocuments},
		{"a pool with static files and an app answers from files first, then the app", "pool-static-and-app.conf", withApp},
		{"a pool with only an app proxies everything to it", "pool-app-only.conf", appOnly},
		{"a pool with a queue timeout refuses requests that waited longer", "pool-queue-timeout.conf", queueTimeout},
		{"a pool whose app speaks gRPC takes HTTP/2 on a port of its own and passes it on as HTTP/2", "pool-grpc.conf", grpcApp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nginx.PoolConfig(tt.pool)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tt.golden, []byte(got))
			testutil.NginxCheck(t, got, nginx.PoolScripts(tt.pool))
		})
	}
}

func TestOnlyAPoolWithAQueueTimeoutNeedsTheQueueScript(t *testing.T) {
	if _, ok := nginx.PoolScripts(basePool())[nginx.QueueScriptFile]; ok {
		t.Errorf("a pool without a queue timeout got %s", nginx.QueueScriptFile)
	}
	p := basePool()
	p.QueueTimeout = time.Second
	if _, ok := nginx.PoolScripts(p)[nginx.QueueScriptFile]; !ok {
		t.Errorf("a pool with a queue timeout lacks %s", nginx.QueueScriptFile)
	}
}

func baseCache() model.Cache {
	return model.Cache{
		Name: "static", Namespace: "web",
		FrequentHitThreshold: 2, FrequentHitPeriod: 10 * time.Second, ObjectTTL: 30 * time.Second,
		MaxObjectSizeBytes: 256 << 10, MemorySizeBytes: 64 << 20, ClientCacheMode: "NoControl",
		Replicas: 2, CPUMilli: 250,
		Upstreams:  []model.Upstream{{Pool: "images", Address: "10.96.0.21", Port: 80}, {Pool: "shop", Address: "10.96.0.20", Port: 80}},
		AdminToken: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	}
}

func TestCacheConfig(t *testing.T) {
	tuned := baseCache()
	tuned.FrequentHitThreshold, tuned.ObjectTTL = 1, 180*time.Second
	tuned.ClientCacheMode, tuned.ClientMaxAge = "UseMaxAge", time.Hour
	tuned.CacheQueryStrings = true
	expires := baseCache()
	expires.ClientCacheMode, expires.ClientMaxAge = "UseExpires", 10*time.Minute
	noPools := baseCache()
	noPools.Upstreams = nil
	oddNames := baseCache()
	oddNames.Upstreams = []model.Upstream{{Pool: "default", Address: "fd00::21", Port: 80}, {Pool: "include", Address: "10.96.0.22", Port: 80}}

	tests := []struct {
		name   string
		golden string
		cache  model.Cache
	}{
		{"the IIS defaults cache after two hits and evict after 30s unused", "cache-defaults.conf", baseCache()},
		{"a tuned policy caches at once, keeps entries 180s and sets max-age", "cache-tuned.conf", tuned},
		{"UseExpires sets an Expires header", "cache-expires.conf", expires},
		{"a cache tier without pools yet answers 421 to everything", "cache-no-pools.conf", noPools},
		{"pools named like map parameters stay names, and an IPv6 Service address is bracketed", "cache-odd-names.conf", oddNames},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nginx.CacheConfig(tt.cache)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tt.golden, []byte(got))
			testutil.NginxCheck(t, got)

			agentConf, err := nginx.CacheAgentConfig(tt.cache)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, strings.TrimSuffix(tt.golden, ".conf")+".agent.json", []byte(agentConf))
			var cfg vocabulary.AgentConfig
			if err := json.Unmarshal([]byte(agentConf), &cfg); err != nil {
				t.Fatalf("the agent cannot read its config: %v", err)
			}
			if _, err := cacheagent.New(cfg); err != nil {
				t.Fatalf("the agent refuses its config: %v", err)
			}
		})
	}
}

func TestTheSamePolicyRendersTheSameConfigWhateverTheOrderOfItsPools(t *testing.T) {
	upstreams := baseCache().Upstreams
	render := func(order []model.Upstream) string {
		m, err := model.ResolveCache(&v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Name: "static", Namespace: "web"}}, order, model.Platform{})
		if err != nil {
			t.Fatal(err)
		}
		conf, err := nginx.CacheConfig(m)
		if err != nil {
			t.Fatal(err)
		}
		return conf
	}
	first := render(upstreams)
	for range 20 {
		shuffled := slices.Clone(upstreams)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if render(shuffled) != first {
			t.Fatal("the same pools in another order gave another config: pods would roll for nothing")
		}
	}
}

func TestWorkerProcessesFollowTheCPU(t *testing.T) {
	tests := []struct {
		name     string
		cpuMilli int64
		want     string
	}{
		{"a quarter CPU still gets one worker", 250, "worker_processes 1;"},
		{"one CPU gets one worker", 1000, "worker_processes 1;"},
		{"two and a half CPUs round up to three workers", 2500, "worker_processes 3;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePool()
			p.CPUMilli = tt.cpuMilli
			got, err := nginx.PoolConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("want %q in config", tt.want)
			}
		})
	}
}
