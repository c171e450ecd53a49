package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"webfarm.dev/operator/internal/cpu"
)

// ObserveCPU records a pool's CPU use against its limit (percent); it
// returns whether the pool is now over its limit for at least interval,
// and whether that changed with this reading.
func (s *Store) ObserveCPU(pool types.NamespacedName, percent float64, limit int32, interval time.Duration, now time.Time) (over, changed bool) {
	return s.cpu.Observe(pool.String(), percent, limit, interval, now)
}

// CPU is a pool's latest CPU reading.
func (s *Store) CPU(pool types.NamespacedName) cpu.Reading {
	return s.cpu.Latest(pool.String())
}

// ForgetCPU drops a pool's CPU readings (a restart starts them afresh).
func (s *Store) ForgetCPU(pool types.NamespacedName) {
	s.cpu.Forget(pool.String())
}
