package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"webfarm.dev/operator/internal/autoscale"
)

// ScaleDecision is the autoscaler's decision for a pool and when it was made.
type ScaleDecision struct {
	autoscale.Decision
	// HTTPSRequestsPerSecond is the part of a farm's frontends' requests/s
	// they served over TLS, when their figures tell it apart (nil: they do
	// not; a pool's decision never has it).
	HTTPSRequestsPerSecond *float64
	At                     time.Time
	notified               time.Time // when the AppPool reconciler was last told
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
	return setDecision(s.decisions, pool, ScaleDecision{Decision: d, At: at})
}

// setDecision stores a decision under key and reports whether its
// reconciler should look at it (see SetScale); s.mu is held.
func setDecision(decisions map[types.NamespacedName]ScaleDecision, key types.NamespacedName, next ScaleDecision) bool {
	d, at := next.Decision, next.At
	prev, ok := decisions[key]
	notify := !ok || prev.Replicas != d.Replicas || prev.MetricsUnavailable != d.MetricsUnavailable ||
		(d.MetricsUnavailable && prev.Reason != d.Reason) || // another failure: its reason holds no figures that churn
		at.Sub(prev.notified) >= statusRefresh
	next.notified = prev.notified
	if notify {
		next.notified = at
	}
	decisions[key] = next
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

// SetFrontendScale stores the capacity report of a farm's frontends and
// the part of their requests/s served over TLS (nil: unknown); it reports,
// as SetScale does, whether the WebFarm reconciler should look at it (the
// frontends' replicas never change, as a fixed pool's).
func (s *Store) SetFrontendScale(farm types.NamespacedName, d autoscale.Decision, https *float64, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	return setDecision(s.frontendDecisions, farm, ScaleDecision{Decision: d, HTTPSRequestsPerSecond: https, At: at})
}

// FrontendScale is the latest capacity report of a farm's frontends, if any.
func (s *Store) FrontendScale(farm types.NamespacedName) (ScaleDecision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.frontendDecisions[farm]
	return d, ok
}

// ForgetFrontendScale drops a farm's report (its frontends no longer run).
func (s *Store) ForgetFrontendScale(farm types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.frontendDecisions, farm)
}
