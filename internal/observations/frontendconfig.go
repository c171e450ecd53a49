package observations

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// FrontendConfig is which routing configuration one ready frontend of a
// farm runs, as its Envoy says.
type FrontendConfig struct {
	Pod     string // the frontend pod's name, its Envoy's node id
	Version string // the configuration's version it runs
	// Rejected counts the updates it refused since it started;
	// RejectedBefore is what it had counted when it took Version.
	Rejected, RejectedBefore uint64
}

// RejectedSince: the frontend refused an update after it took its version.
func (c FrontendConfig) RejectedSince() bool { return c.Rejected > c.RejectedBefore }

// SetFrontendConfigs stores which configuration each ready frontend of a
// farm runs, in the order of their pod names (none: nothing to judge); it
// reports whether that changed, for the WebFarm reconciler to look again.
func (s *Store) SetFrontendConfigs(farm types.NamespacedName, frontends []FrontendConfig) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	prev, ok := s.configs[farm]
	if len(frontends) == 0 {
		delete(s.configs, farm)
		return ok
	}
	s.configs[farm] = frontends
	return !ok || !slices.Equal(prev, frontends)
}

// FrontendConfigs is which configuration each of a farm's frontends runs;
// false: nothing to judge. Read only.
func (s *Store) FrontendConfigs(farm types.NamespacedName) ([]FrontendConfig, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.configs[farm]
	return c, ok
}
