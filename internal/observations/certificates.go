package observations

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"webfarm.dev/operator/internal/envoystats"
)

// FrontendCertificates is what each ready frontend of a farm did with its
// HTTPS sites' certificates, one map (site -> figures) per frontend, in the
// order of the frontends' pod names. Read only.
type FrontendCertificates []map[string]envoystats.Certificate

// SetCertificates stores a farm's frontends' certificates (none: nothing to
// judge, no HTTPS site or no frontend that could be read); it reports
// whether they changed, for the WebFarm reconciler to look again.
func (s *Store) SetCertificates(farm types.NamespacedName, frontends FrontendCertificates) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	prev, ok := s.certificates[farm]
	if len(frontends) == 0 {
		delete(s.certificates, farm)
		return ok
	}
	s.certificates[farm] = frontends
	return !ok || !slices.EqualFunc(prev, frontends, maps.Equal)
}

// Certificates are a farm's frontends' certificates; false: nothing to judge.
func (s *Store) Certificates(farm types.NamespacedName) (FrontendCertificates, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.certificates[farm]
	return c, ok
}
