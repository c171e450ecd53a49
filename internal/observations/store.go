// Package observations is the one store of what the collectors see of each
// pool, cache tier and farm between two decisions: per-worker requests and
// memory, queue refusals, worker failures, CPU readings, the autoscaler's
// decisions and its reports on the farms' frontends, when a pool last got
// requests, the cache tiers' counters, the certificates each farm's
// frontends serve and the configuration each runs;
// and of what a reconciler saw that its status does not keep: since when no
// route names a cache policy.
// The collectors write and tell the reconcilers through a Notifier; the
// reconcilers read when they decide and put what belongs in a status into
// the status they write. Every figure is keyed by its object's namespace and
// name. Safe for concurrent use.
package observations

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/health"
)

// Store holds the observations of every pool, cache tier and farm.
type Store struct {
	mu                sync.Mutex
	requests          map[types.NamespacedName]map[string]int64     // pool -> worker IP -> requests
	memory            map[types.NamespacedName]map[string]int64     // pool -> worker pod -> bytes
	refusals          map[types.NamespacedName]QueueRefusals        // pool -> refusals not yet in its status
	decisions         map[types.NamespacedName]ScaleDecision        // pool -> the autoscaler's latest
	frontendDecisions map[types.NamespacedName]ScaleDecision        // farm -> its frontends' capacity report
	active            map[types.NamespacedName]activity             // pool -> when it last got requests
	cache             map[types.NamespacedName]*cacheTier           // cache policy -> its tier's figures
	certificates      map[types.NamespacedName]FrontendCertificates // farm -> its frontends' certificates
	configs           map[types.NamespacedName][]FrontendConfig     // farm -> the configuration each frontend runs
	cpu               cpu.Tracker                                   // keyed by the pool's "namespace/name"
	failures          health.Log                                    // keyed by the pool's "namespace/name"
}

// initialise makes the maps; s.mu is held.
func (s *Store) initialise() {
	if s.requests != nil {
		return
	}
	s.requests = map[types.NamespacedName]map[string]int64{}
	s.memory = map[types.NamespacedName]map[string]int64{}
	s.refusals = map[types.NamespacedName]QueueRefusals{}
	s.decisions = map[types.NamespacedName]ScaleDecision{}
	s.frontendDecisions = map[types.NamespacedName]ScaleDecision{}
	s.active = map[types.NamespacedName]activity{}
	s.cache = map[types.NamespacedName]*cacheTier{}
	s.certificates = map[types.NamespacedName]FrontendCertificates{}
	s.configs = map[types.NamespacedName][]FrontendConfig{}
}

// ForgetPool drops a deleted pool's figures.
func (s *Store) ForgetPool(pool types.NamespacedName) {
	s.mu.Lock()
	delete(s.requests, pool)
	delete(s.memory, pool)
	delete(s.refusals, pool)
	delete(s.decisions, pool)
	delete(s.active, pool)
	s.mu.Unlock()
	s.cpu.Forget(pool.String())
	s.failures.Forget(pool.String())
}

// ForgetCacheTier drops a deleted cache policy's figures and notes.
func (s *Store) ForgetCacheTier(policy types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cache, policy)
}

// ForgetFarm drops a deleted farm's figures.
func (s *Store) ForgetFarm(farm types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.certificates, farm)
	delete(s.configs, farm)
	delete(s.frontendDecisions, farm)
}
