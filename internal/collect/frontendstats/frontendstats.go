// Package frontendstats reads the farms' Envoy frontends: each pool's
// requests, 5xx responses, queue refusals, waiting and active requests, and
// what each worker was sent; and which routing configuration each frontend
// runs. It turns them into the operator's metrics and into observations:
// refusals for the pools' status.queue, activity for the idle timeout,
// per-worker requests for recycling, bursts of 5xx as worker failures, and
// each frontend's configuration for the farm's status.frontendConfig.
package frontendstats

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/collect"
	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// The operator's own figures of each pool, read from its farms' Envoy
// frontends: what the queue refused, what waits and runs, what failed.
var (
	queueRejected = metrics.PoolCounter("webfarm_pool_queue_rejected_total",
		"Requests the frontends answered 503 because the pool's queue was full.")
	queueTimedOut = metrics.PoolCounter("webfarm_pool_queue_timeouts_total",
		"Requests the frontends answered 503 because they waited longer than the pool's queue timeout.")
	poolRequests = metrics.PoolCounter("webfarm_pool_requests_total",
		"Requests the frontends sent to the pool's workers.")
	pool5xx = metrics.PoolCounter("webfarm_pool_responses_5xx_total",
		"5xx responses from the pool's workers, as the frontends saw them.")
	poolWaiting = metrics.PoolGauge("webfarm_pool_requests_waiting",
		"Requests waiting in the pool's queue at the frontends.")
	poolActive = metrics.PoolGauge("webfarm_pool_requests_active",
		"Requests at the pool's workers.")
)

// FrontendStats reads every farm's Envoy frontends every Interval. It runs
// on the leader only: the pools' status counts each refusal once.
type FrontendStats struct {
	Client   client.Client
	Interval time.Duration
	HTTP     *http.Client
	// Port is the frontends' status port (0: vocabulary.FrontendStatusPort).
	Port int
	// Observations receives the refusals, a pool's bursts of 5xx responses
	// as worker failures (rapid-fail protection), the activity (a frontend that
	// cannot be read keeps its namespace's pools active: unknown is not
	// quiet) and the per-worker requests, summed over the frontends.
	Observations *observations.Store
	// Pools names the pools to look at again: new refusals, a burst of 5xx.
	Pools *observations.Notifier
	// Farms, when set, names the farms whose frontends' configuration changed.
	Farms *observations.Notifier

	// baselined: the first reading after this replica became the leader is
	// done. Envoys read then may have counted under another leader: their
	// first reading is a baseline. An Envoy first seen later was not ready
	// (or did not exist) at the previous reading: all it counted is new.
	baselined bool
	mu        sync.Mutex
	last      map[types.UID]map[string]envoystats.Pool  // per frontend pod, per pool: the previous reading
	failing   map[types.UID]bool                        // frontends whose last reading failed
	configs   map[types.UID]observations.FrontendConfig // per frontend pod: its configuration at the last reading
	farms     map[types.NamespacedName]bool             // the farms whose frontends' configurations are stored
}

// NeedLeaderElection: only the leader counts.
func (s *FrontendStats) NeedLeaderElection() bool { return true }

// Start reads the frontends until ctx ends.
func (s *FrontendStats) Start(ctx context.Context) error {
	s.last = map[types.UID]map[string]envoystats.Pool{}
	s.failing = map[types.UID]bool{}
	return collect.Every(ctx, s.Interval, s.collect)
}

// poolTotals are one pool's figures summed over its farms' frontends.
type poolTotals struct {
	rejected, timedOut, requests, responses5xx uint64 // growth since the last reading
	waiting, active                            uint64
}

func (s *FrontendStats) collect(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("frontend-stats")
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.MatchingLabels{
		vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentFrontend,
	}); err != nil {
		log.Error(err, "listing frontend pods")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configs == nil {
		s.configs, s.farms = map[types.UID]observations.FrontendConfig{}, map[types.NamespacedName]bool{}
	}
	configs := map[types.NamespacedName][]observations.FrontendConfig{}
	totals := map[types.NamespacedName]*poolTotals{}
	perWorker := map[types.NamespacedName]map[string]int64{}
	seen, listed := map[types.UID]bool{}, map[types.UID]bool{}
	for _, pod := range pods.Items {
		listed[pod.UID] = true
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !health.PodReady(&pod) {
			continue
		}
		if c, ok := s.readConfig(ctx, &pod); ok {
			farm := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[vocabulary.LabelInstance]}
			configs[farm] = append(configs[farm], c)
		}
		now, err := s.read(ctx, pod.Status.PodIP)
		if err != nil {
			// Logged when a frontend starts failing, not at every reading.
			if !s.failing[pod.UID] {
				log.Info("reading a frontend's stats", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
			}
			s.failing[pod.UID] = true
			s.Observations.TouchNamespace(pod.Namespace, time.Now())
			continue
		}
		delete(s.failing, pod.UID)
		seen[pod.UID] = true
		before, known := s.last[pod.UID]
		countAll := !known && s.baselined
		for pool, p := range now {
			key := types.NamespacedName{Namespace: pod.Namespace, Name: pool}
			t := totals[key]
			if t == nil {
				t = &poolTotals{}
				totals[key] = t
			}
			if prev, ok := before[pool]; ok || countAll {
				t.rejected += envoystats.Delta(prev.QueueRejected, p.QueueRejected)
				t.timedOut += envoystats.Delta(prev.QueueTimedOut, p.QueueTimedOut)
				t.requests += envoystats.Delta(prev.Requests, p.Requests)
				t.responses5xx += envoystats.Delta(prev.Responses5xx, p.Responses5xx)
			}
			t.waiting += p.Waiting
			t.active += p.Active
			addPerWorker(perWorker, key, p.PerWorker)
		}
		s.last[pod.UID] = now
	}
	s.baselined = true
	log.V(1).Info("read the frontends", "pods", len(seen), "pools", len(totals))
	// Forget the frontends that are gone; one whose reading failed keeps its
	// previous reading, so that its next one counts only what is new.
	maps.DeleteFunc(s.last, func(uid types.UID, _ map[string]envoystats.Pool) bool { return !listed[uid] })
	maps.DeleteFunc(s.failing, func(uid types.UID, _ bool) bool { return !listed[uid] })
	maps.DeleteFunc(s.configs, func(uid types.UID, _ observations.FrontendConfig) bool { return !listed[uid] })
	s.storeConfigs(configs)
	for key, byIP := range perWorker {
		s.Observations.SetRequests(key, byIP)
	}
	now := time.Now()
	for key, t := range totals {
		queueRejected.WithLabelValues(key.Namespace, key.Name).Add(float64(t.rejected))
		queueTimedOut.WithLabelValues(key.Namespace, key.Name).Add(float64(t.timedOut))
		poolRequests.WithLabelValues(key.Namespace, key.Name).Add(float64(t.requests))
		pool5xx.WithLabelValues(key.Namespace, key.Name).Add(float64(t.responses5xx))
		poolWaiting.WithLabelValues(key.Namespace, key.Name).Set(float64(t.waiting))
		poolActive.WithLabelValues(key.Namespace, key.Name).Set(float64(t.active))
		if t.requests > 0 {
			s.Observations.Touch(key, now)
		}
		notify := t.rejected+t.timedOut > 0 // the pool's status.queue counts them
		s.Observations.AddRefusals(key, int64(t.rejected), int64(t.timedOut), now)
		if f, ok := errorBurst(t, s.Interval, now); ok {
			log.Info("a burst of 5xx counts as a worker failure", "pool", key.String(), "failure", f.Reason)
			s.Observations.AddFailure(key, f)
			metrics.WorkerFailures.WithLabelValues(key.Namespace, key.Name).Inc()
			notify = true
		}
		if notify {
			s.Pools.Notify(key)
		}
	}
}

// addPerWorker adds one frontend's per-worker request counts to a pool's:
// each frontend counts what it sent since it started.
func addPerWorker(into map[types.NamespacedName]map[string]int64, pool types.NamespacedName, counts map[string]uint64) {
	if len(counts) == 0 {
		return
	}
	byIP := into[pool]
	if byIP == nil {
		byIP = map[string]int64{}
		into[pool] = byIP
	}
	for address, n := range counts {
		byIP[workerIP(address)] += int64(n)
	}
}

// workerIP is an endpoint address's IP ("10.0.0.5:8080" -> "10.0.0.5").
func workerIP(address string) string {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	return host
}

// Bursts of 5xx responses from a pool's workers count as one worker failure
// per reading: at least burstMinimum of them, and at least half of what the
// pool answered. Refusals by the queue are not failures: the frontend's own
// 503s for a full queue, and the workers' refusals of requests that waited
// too long (Envoy counts both among the cluster's 5xx).
const burstMinimum = 10

func errorBurst(t *poolTotals, interval time.Duration, now time.Time) (health.Failure, bool) {
	refused := t.rejected + t.timedOut
	fromWorkers := t.responses5xx - min(t.responses5xx, refused)
	answered := t.requests - min(t.requests, refused)
	if fromWorkers < burstMinimum || 2*fromWorkers < answered {
		return health.Failure{}, false
	}
	return health.Failure{At: now, Reason: fmt.Sprintf("%d of %d responses were 5xx within %s", fromWorkers, answered, interval)}, true
}

// readConfig reads which configuration a frontend runs; false: it could not
// be read, and says nothing (its pool figures' reading logs why).
func (s *FrontendStats) readConfig(ctx context.Context, pod *corev1.Pod) (observations.FrontendConfig, bool) {
	port := s.Port
	if port == 0 {
		port = vocabulary.FrontendStatusPort
	}
	url := fmt.Sprintf("http://%s:%d%s?%s", pod.Status.PodIP, port, vocabulary.FrontendMetricsPath, envoystats.ConfigQuery)
	now, err := collect.Get(ctx, s.HTTP, url, envoystats.Configuration)
	if err != nil || now.Version == "" {
		return observations.FrontendConfig{}, false
	}
	prev, known := s.configs[pod.UID]
	c := nextConfig(prev, known, pod.Name, now)
	s.configs[pod.UID] = c
	return c, true
}

// nextConfig is a frontend's configuration from its reading now and its
// previous one (known: there was one). What it refused since it took its
// version is told by its counter of refusals: its count when it took the
// version is the one read before, so a refusal read together with a new
// version counts as after it. An Envoy first read, or restarted (its
// counter went down), may have refused anything since its version.
func nextConfig(prev observations.FrontendConfig, known bool, pod string, now envoystats.Config) observations.FrontendConfig {
	c := observations.FrontendConfig{Pod: pod, Version: now.Version, Rejected: now.Rejected, RejectedBefore: prev.RejectedBefore}
	switch {
	case !known || now.Rejected < prev.Rejected:
		c.RejectedBefore = 0
	case now.Version != prev.Version:
		c.RejectedBefore = prev.Rejected
	}
	return c
}

// storeConfigs stores each farm's frontends' configurations, in the order of
// their pod names, forgets those of farms no frontend of which was read,
// and names the farms whose configurations changed.
func (s *FrontendStats) storeConfigs(configs map[types.NamespacedName][]observations.FrontendConfig) {
	for farm := range s.farms {
		if _, ok := configs[farm]; !ok {
			configs[farm] = nil
		}
	}
	clear(s.farms)
	for farm, frontends := range configs {
		slices.SortFunc(frontends, func(a, b observations.FrontendConfig) int { return strings.Compare(a.Pod, b.Pod) })
		if len(frontends) > 0 {
			s.farms[farm] = true
		}
		if s.Observations.SetFrontendConfigs(farm, frontends) && s.Farms != nil {
			s.Farms.Notify(farm)
		}
	}
}

// read fetches one frontend's pool figures from its status port.
func (s *FrontendStats) read(ctx context.Context, ip string) (map[string]envoystats.Pool, error) {
	port := s.Port
	if port == 0 {
		port = vocabulary.FrontendStatusPort
	}
	url := fmt.Sprintf("http://%s:%d%s?%s", ip, port, vocabulary.FrontendMetricsPath, envoystats.Query)
	return collect.Get(ctx, s.HTTP, url, envoystats.Parse)
}
