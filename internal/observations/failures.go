package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"webfarm.dev/operator/internal/health"
)

// AddFailure records a failure of a pool's worker, for rapid-fail protection.
func (s *Store) AddFailure(pool types.NamespacedName, f health.Failure) {
	s.failures.Add(pool.String(), f)
}

// RecentFailures are a pool's failures in (now - interval, now], oldest first.
func (s *Store) RecentFailures(pool types.NamespacedName, now time.Time, interval time.Duration) []health.Failure {
	return s.failures.Recent(pool.String(), now, interval)
}

// ForgetFailures drops a pool's failures (a restart counts afresh).
func (s *Store) ForgetFailures(pool types.NamespacedName) {
	s.failures.Forget(pool.String())
}
