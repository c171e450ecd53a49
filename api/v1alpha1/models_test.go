package v1alpha1_test

import (
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/sharedmodels"
)

// platform is what the operator's flags would give it.
var platform = model.Platform{
	Images:  model.Images{Envoy: "docker.io/envoyproxy/envoy:v1.40.0", Nginx: "docker.io/library/nginx:1.29", CacheAgent: "ghcr.io/webfarm/operator:dev", PullPolicy: "IfNotPresent"},
	XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000, ActivatorPort: 18081, ActivationTimeout: time.Minute,
}

// TestEveryConsumerSeesTheSameModelOfAnAcceptedManifest stores each
// AppPool and WebFarm manifest of the validation tables that the API
// server accepts and requires the reconcilers, the routing controller and
// the collectors to see one model of it (internal/testutil/sharedmodels).
func TestEveryConsumerSeesTheSameModelOfAnAcceptedManifest(t *testing.T) {
	for _, table := range []struct {
		kind  string
		cases []manifestCase
	}{{"AppPool", appPoolCases}, {"WebFarm", webFarmCases}} {
		ns := newNamespace(t)
		for _, tc := range table.cases {
			if len(tc.want) > 0 {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				obj := patched(t, table.kind, tc.patch)
				if err := testutil.CreateStrict(k8s, ns, obj); err != nil {
					t.Fatalf("the API server refused a manifest its table accepts: %v", err)
				}
				defer remove(t, obj)
				sharedmodels.Check(t, k8s, platform, ns)
			})
		}
	}
}
