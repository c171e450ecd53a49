// Package cachestats reads the counters of every cache tier's agents (IIS's
// "Web Service Cache" counters) into the operator's metrics, and into
// observations that the CachePolicy reconciler puts in each policy's status.
package cachestats

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/collect"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// The operator's figures of each cache tier, read from the agents beside its
// nginx pods.
var (
	cacheHits     = metrics.CacheCounter("webfarm_cache_hits_total", "Requests the cache tier answered from its cache.")
	cacheMisses   = metrics.CacheCounter("webfarm_cache_misses_total", "Cacheable requests the cache tier sent to the pool (not cached, or expired).")
	cacheBypasses = metrics.CacheCounter("webfarm_cache_bypasses_total", "Requests the cache tier never keeps (query string, Authorization, body, method), sent to the pool.")
	cacheStored   = metrics.CacheCounter("webfarm_cache_stored_total", "Entries the cache tier added.")
	cacheEvicted  = metrics.CacheCounter("webfarm_cache_evictions_total", "Entries removed unused for objectTTL, or least recently used when memorySize was full.")
	cacheFlushed  = metrics.CacheCounter("webfarm_cache_flushed_total", "Entries removed by purges.")
	cacheObjects  = metrics.CacheGauge("webfarm_cache_objects", "Entries the cache tier holds, over its pods.")
	cacheMemory   = metrics.CacheGauge("webfarm_cache_memory_bytes", "Memory the cache tier's entries take, over its pods.")
)

// StatusInterval is how often a cache tier's counters are due for its
// status (the metrics follow every reading).
const StatusInterval = 30 * time.Second

// CacheStats reads every cache tier's agents every Interval into the
// operator's metrics and the observations, and publishes each tier's
// figures for its CachePolicy's status every StatusInterval. It runs on the
// leader only, so that the status counts each request once.
type CacheStats struct {
	Client         client.Client
	Interval       time.Duration
	StatusInterval time.Duration
	// Agents reads the agents' counters (Port 0: vocabulary.AgentAdminPort).
	Agents       cacheadmin.Client
	Observations *observations.Store
	// Policies names the policies whose figures are due for their status.
	Policies *observations.Notifier

	baselined bool // see frontendstats: the first reading of a new leader is a baseline
	mu        sync.Mutex
	last      map[types.UID]vocabulary.AgentStats
	published map[types.NamespacedName]time.Time
}

// use is a tier's current use, summed over its pods.
type use struct{ objects, memory int64 }

// NeedLeaderElection: only the leader counts.
func (s *CacheStats) NeedLeaderElection() bool { return true }

// Start reads the agents until ctx ends.
func (s *CacheStats) Start(ctx context.Context) error {
	s.last = map[types.UID]vocabulary.AgentStats{}
	s.published = map[types.NamespacedName]time.Time{}
	if s.Agents.Port == 0 {
		s.Agents.Port = vocabulary.AgentAdminPort
	}
	return collect.Every(ctx, s.Interval, s.collect)
}

func (s *CacheStats) collect(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("cache-stats")
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.MatchingLabels{vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentCache}); err != nil {
		log.Error(err, "listing cache pods")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	current := map[types.NamespacedName]*use{}
	listed := map[types.UID]bool{}
	tokens := map[types.NamespacedName]string{} // per tier, read once per collection
	for _, pod := range pods.Items {
		listed[pod.UID] = true
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !health.PodReady(&pod) {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[vocabulary.LabelInstance]}
		token, known := tokens[key]
		if !known {
			var err error
			if token, err = cacheadmin.AgentToken(ctx, s.Client, key.Namespace, key.Name); err != nil {
				log.Error(err, "reading a cache tier's agent token", "cachepolicy", key.String())
				continue
			}
			tokens[key] = token
		}
		now, err := s.Agents.Stats(ctx, pod.Status.PodIP, token)
		if err != nil {
			log.V(1).Info("reading a cache agent", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
			continue
		}
		u := current[key]
		if u == nil {
			u = &use{}
			current[key] = u
		}
		u.objects += now.Objects
		u.memory += now.MemoryBytes
		before, known := s.last[pod.UID]
		if known || s.baselined {
			grown := counterGrowth(before, now)
			s.Observations.AddCacheGrowth(key, grown)
			cacheHits.WithLabelValues(key.Namespace, key.Name).Add(float64(grown.Hits))
			cacheMisses.WithLabelValues(key.Namespace, key.Name).Add(float64(grown.Misses))
			cacheBypasses.WithLabelValues(key.Namespace, key.Name).Add(float64(grown.Bypasses))
			cacheStored.WithLabelValues(key.Namespace, key.Name).Add(float64(grown.Stored))
			cacheEvicted.WithLabelValues(key.Namespace, key.Name).Add(float64(grown.Evicted))
			cacheFlushed.WithLabelValues(key.Namespace, key.Name).Add(float64(grown.Flushed))
		}
		s.last[pod.UID] = now
	}
	s.baselined = true
	maps.DeleteFunc(s.last, func(uid types.UID, _ vocabulary.AgentStats) bool { return !listed[uid] })
	// Tiers gone (or without a ready pod) start afresh.
	maps.DeleteFunc(s.published, func(key types.NamespacedName, _ time.Time) bool { return current[key] == nil })
	for key, u := range current {
		cacheObjects.WithLabelValues(key.Namespace, key.Name).Set(float64(u.objects))
		cacheMemory.WithLabelValues(key.Namespace, key.Name).Set(float64(u.memory))
		if time.Since(s.published[key]) < s.StatusInterval {
			continue
		}
		s.Observations.PublishCacheTier(key, u.objects, u.memory)
		s.published[key] = time.Now()
		s.Policies.Notify(key)
	}
}

// counterGrowth is what an agent counted since its previous reading (all of
// it when the agent restarted: its counters start again at zero).
func counterGrowth(before, now vocabulary.AgentStats) v1.CacheCounters {
	d := func(a, b int64) int64 {
		if b < a {
			return b
		}
		return b - a
	}
	return v1.CacheCounters{
		Hits: d(before.Hits, now.Hits), Misses: d(before.Misses, now.Misses), Bypasses: d(before.Bypasses, now.Bypasses),
		Stored: d(before.Stored, now.Stored), Evicted: d(before.Evicted, now.Evicted), Flushed: d(before.Flushed, now.Flushed),
	}
}
