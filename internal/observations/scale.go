package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"webfarm.dev/operator/internal/autoscale"
)

// ScaleDecision is the autoscaler's decision for a pool and when it was made.
type ScaleDecision struct {
	autoscale.Decision
	At       time.Time
	notified time.Time // when the AppPool reconciler was last told
}

// statusRefresh: the measured figures in a pool's status are refreshed at
// most this often when its replicas do not change (each refresh is a write).
const statusRefresh = time.Minute

// SetScale stores a pool's decision; it reports whether the AppPool
// reconciler should look at it: the replicas, the metrics' availability or
// the reason they are unavailable changed, or the status' figures are older
// than statusRefresh.
func (s *Store) SetScale(pool types.NamespacedName, d autoscale.Decision, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	prev, ok := s.decisions[pool]
	notify := !ok || prev.Replicas != d.Replicas || prev.MetricsUnavailable != d.MetricsUnavailable ||
		(d.MetricsUnavailable && prev.Reason != d.Reason) || // another failure: its reason holds no figures that churn
		at.Sub(prev.notified) >= statusRefresh
	next := ScaleDecision{Decision: d, At: at, notified: prev.notified}
	if notify {
		next.notified = at
	}
	s.decisions[pool] = next
	return notify
}

// Scale is a pool's latest decision, if any.
func (s *Store) Scale(pool types.NamespacedName) (ScaleDecision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.decisions[pool]
	return d, ok
}

// ForgetScale drops a pool's decision (no longer autoscaled).
func (s *Store) ForgetScale(pool types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.decisions, pool)
}
