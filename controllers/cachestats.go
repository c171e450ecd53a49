package controllers

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheagent"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
)

// The operator's figures of each cache tier (IIS's "Web Service Cache"
// counters), read from the agents beside its nginx pods.
var (
	cacheHits     = cacheCounter("webfarm_cache_hits_total", "Requests the cache tier answered from its cache.")
	cacheMisses   = cacheCounter("webfarm_cache_misses_total", "Cacheable requests the cache tier sent to the pool (not cached, or expired).")
	cacheBypasses = cacheCounter("webfarm_cache_bypasses_total", "Requests the cache tier never keeps (query string, Authorization, body, method), sent to the pool.")
	cacheStored   = cacheCounter("webfarm_cache_stored_total", "Entries the cache tier added.")
	cacheEvicted  = cacheCounter("webfarm_cache_evictions_total", "Entries removed unused for objectTTL, or least recently used when memorySize was full.")
	cacheFlushed  = cacheCounter("webfarm_cache_flushed_total", "Entries removed by purges.")
	cacheObjects  = cacheGauge("webfarm_cache_objects", "Entries the cache tier holds, over its pods.")
	cacheMemory   = cacheGauge("webfarm_cache_memory_bytes", "Memory the cache tier's entries take, over its pods.")
)

// cacheStatusInterval is how often a cache tier's counters reach its status
// (the metrics follow every reading).
const cacheStatusInterval = 30 * time.Second

var cacheMetrics []interface{ DeleteLabelValues(...string) bool }

func cacheCounter(name, help string) *prometheus.CounterVec {
	m := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"namespace", "cachepolicy"})
	metrics.Registry.MustRegister(m)
	cacheMetrics = append(cacheMetrics, m)
	return m
}

func cacheGauge(name, help string) *prometheus.GaugeVec {
	m := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"namespace", "cachepolicy"})
	metrics.Registry.MustRegister(m)
	cacheMetrics = append(cacheMetrics, m)
	return m
}

// forgetCacheMetrics drops a deleted policy's series.
func forgetCacheMetrics(namespace, policy string) {
	for _, m := range cacheMetrics {
		m.DeleteLabelValues(namespace, policy)
	}
}

// CacheStats reads every cache tier's agents every Interval into the
// operator's metrics, and into each CachePolicy's status every
// StatusInterval. It runs on the leader only, so that the status counts
// each request once.
type CacheStats struct {
	Client         client.Client
	Interval       time.Duration
	StatusInterval time.Duration
	// Agents reads the agents' counters (Port 0: nginx.AgentAdminPort).
	Agents cacheagent.Client

	baselined bool // see FrontendStats: the first reading of a new leader is a baseline
	mu        sync.Mutex
	last      map[types.UID]cacheagent.Stats
	pending   map[types.NamespacedName]*cacheTotals
	written   map[types.NamespacedName]time.Time
}

// cacheTotals are a tier's counters grown since they were last written, and
// its current use.
type cacheTotals struct {
	v1.CacheCounters
	objects, memory int64
}

// NeedLeaderElection: only the leader counts into the status.
func (s *CacheStats) NeedLeaderElection() bool { return true }

// Start reads the agents until ctx ends.
func (s *CacheStats) Start(ctx context.Context) error {
	s.last = map[types.UID]cacheagent.Stats{}
	s.pending = map[types.NamespacedName]*cacheTotals{}
	s.written = map[types.NamespacedName]time.Time{}
	if s.Agents.Port == 0 {
		s.Agents.Port = nginx.AgentAdminPort
	}
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		s.collect(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (s *CacheStats) collect(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("cache-stats")
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.MatchingLabels{k8s.LabelManagedBy: k8s.ManagedBy, k8s.LabelComponent: k8s.ComponentCache}); err != nil {
		log.Error(err, "listing cache pods")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	current := map[types.NamespacedName]*cacheTotals{}
	listed := map[types.UID]bool{}
	tokens := map[types.NamespacedName]string{} // per tier, read once per collection
	for _, pod := range pods.Items {
		listed[pod.UID] = true
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !health.PodReady(&pod) {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[k8s.LabelInstance]}
		token, known := tokens[key]
		if !known {
			var err error
			if token, err = agentToken(ctx, s.Client, key.Namespace, key.Name); err != nil {
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
		t := current[key]
		if t == nil {
			t = &cacheTotals{}
			current[key] = t
		}
		t.objects += now.Objects
		t.memory += now.MemoryBytes
		before, known := s.last[pod.UID]
		if known || s.baselined {
			p := s.pending[key]
			if p == nil {
				p = &cacheTotals{}
				s.pending[key] = p
			}
			grown := counterGrowth(before, now)
			addCounters(&p.CacheCounters, grown)
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
	for uid := range s.last {
		if !listed[uid] {
			delete(s.last, uid)
		}
	}
	for key := range s.written { // tiers gone (or without a ready pod) start afresh
		if current[key] == nil {
			delete(s.written, key)
		}
	}
	for key, t := range current {
		cacheObjects.WithLabelValues(key.Namespace, key.Name).Set(float64(t.objects))
		cacheMemory.WithLabelValues(key.Namespace, key.Name).Set(float64(t.memory))
		if time.Since(s.written[key]) < s.StatusInterval {
			continue
		}
		grown := s.pending[key]
		if grown == nil {
			grown = &cacheTotals{}
		}
		if err := s.record(ctx, key, grown.CacheCounters, t.objects, t.memory); err != nil {
			log.Info("recording a cache tier's counters; retrying at the next reading", "cachepolicy", key.String(), "error", err.Error())
			continue
		}
		delete(s.pending, key)
		s.written[key] = time.Now()
	}
}

// counterGrowth is what an agent counted since its previous reading (all of
// it when the agent restarted: its counters start again at zero).
func counterGrowth(before, now cacheagent.Stats) v1.CacheCounters {
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

func addCounters(to *v1.CacheCounters, c v1.CacheCounters) {
	to.Hits += c.Hits
	to.Misses += c.Misses
	to.Bypasses += c.Bypasses
	to.Stored += c.Stored
	to.Evicted += c.Evicted
	to.Flushed += c.Flushed
}

// hitPercent is hits as a share of every request, one decimal.
func hitPercent(c v1.CacheCounters) string {
	all := c.Hits + c.Misses + c.Bypasses
	if all == 0 {
		return ""
	}
	return strconv.FormatFloat(100*float64(c.Hits)/float64(all), 'f', 1, 64) + "%"
}

// record adds a tier's grown counters to its status and sets its current
// use, guarded by the policy's resourceVersion so a stale read never lowers a
// count; nothing is written when nothing changed.
func (s *CacheStats) record(ctx context.Context, key types.NamespacedName, grown v1.CacheCounters, objects, memory int64) error {
	var policy v1.CachePolicy
	if err := s.Client.Get(ctx, key, &policy); err != nil {
		return client.IgnoreNotFound(err)
	}
	before := policy.DeepCopy()
	st := &policy.Status
	if st.Counters == nil {
		st.Counters = &v1.CacheCounters{}
	}
	addCounters(st.Counters, grown)
	st.HitPercent = hitPercent(*st.Counters)
	st.Objects = &objects
	st.MemoryUsed = resource.NewQuantity(memory, resource.BinarySI)
	if before.Status.MemoryUsed != nil && before.Status.MemoryUsed.Cmp(*st.MemoryUsed) == 0 {
		st.MemoryUsed = before.Status.MemoryUsed
	}
	if equality.Semantic.DeepEqual(before.Status, policy.Status) {
		return nil
	}
	return s.Client.Status().Patch(ctx, &policy, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}
