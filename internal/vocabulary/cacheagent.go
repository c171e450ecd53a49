package vocabulary

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// The cache tier's agent, beside its nginx: the operator renders its
// configuration file into the tier's ConfigMap and reads its counters and
// asks for purges on its admin port.
const (
	AgentAdminPort  = 8083
	AgentConfigFile = "cache-agent.json"
)

// AgentConfig is the agent's configuration file, rendered by the operator
// beside the cache tier's nginx.conf.
type AgentConfig struct {
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

// AgentStats are one cache replica's counters since it started, named after
// IIS's "Web Service Cache" counters: the answer of AgentStatsPath.
type AgentStats struct {
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

// Paths of the agent's admin endpoint.
const (
	AgentStatsPath  = "/stats"
	AgentPurgePath  = "/purge" // POST; ?pool=NAME purges one pool's entries, none purges all
	AgentHealthPath = "/healthz"
	// AgentPurgedHeader of a purge's answer is the number of entries it removed.
	AgentPurgedHeader = "X-Webfarm-Purged"
)

// Headers between the cache tier's nginx and the agent. nginx sends a
// request's cache key only when the request may be cached at all, and caches
// a response only when the agent admits it: a missing header is "no".
const (
	CacheKeyHeader    = "X-Webfarm-Cache-Key"
	CacheLookupHeader = "X-Webfarm-Cache-Lookup" // nginx's cache status of the request: MISS or EXPIRED
	CacheAdmitHeader  = "X-Webfarm-Cache-Admit"
)

// MinAdminTokenLength refuses guessable tokens (the operator makes 64
// random hex digits).
const MinAdminTokenLength = 32

// NewAdminToken is a new tier's admin token: 32 random bytes in hex.
func NewAdminToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// AdminTokenOf is the admin token in an agent's configuration file; "" for
// a file someone broke or a token too short to keep.
func AdminTokenOf(configFile string) string {
	var cfg AgentConfig
	if err := json.Unmarshal([]byte(configFile), &cfg); err != nil || len(cfg.AdminToken) < MinAdminTokenLength {
		return ""
	}
	return cfg.AdminToken
}
