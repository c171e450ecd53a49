package hostile_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"webfarm.dev/operator/internal/testutil/sharedmodels"
)

// farmOrPool matches a manifest of a WebFarm or an AppPool: the objects
// the models hold.
var farmOrPool = regexp.MustCompile(`(?m)^\s*kind:\s*"?(WebFarm|AppPool)"?\s*$`)

// TestEveryConsumerSeesTheSameModel stores the samples and every hostile
// manifest of a farm or a pool that the API server accepts, each set in a
// namespace of its own, and requires the reconcilers, the routing
// controller and the collectors to see one model of each farm and pool,
// resolved with the operator's platform (internal/testutil/sharedmodels).
func TestEveryConsumerSeesTheSameModel(t *testing.T) {
	sets := []manifestSet{samplesIn(t, filepath.Join("..", "..", "config", "samples"))}
	for _, tc := range hostileCases() {
		if tc.refused == nil && slices.ContainsFunc(tc.manifests, farmOrPool.MatchString) {
			sets = append(sets, manifestSet{name: tc.name, manifests: tc.manifests})
		}
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			for _, m := range set.manifests {
				if _, err := apply(t, ns, m); err != nil {
					t.Fatalf("the API server refused a manifest it accepts in TestHostileManifests: %v", shorten(err.Error()))
				}
			}
			sharedmodels.Check(t, k8s, platform, ns)
		})
	}
}
