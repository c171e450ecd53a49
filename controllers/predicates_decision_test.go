package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

func TestAFarmsRoutingWakesForWhatItsIndexesRead(t *testing.T) {
	farm := func(generation int64, labels map[string]string, status v1.WebFarmStatus) *v1.WebFarm {
		return &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Generation: generation, Labels: labels}, Status: status}
	}
	pools := func(names ...string) v1.WebFarmStatus { return v1.WebFarmStatus{GatewayAppPools: names} }
	for _, tt := range []struct {
		name     string
		old, new *v1.WebFarm
		passes   bool
	}{
		{"a spec change passes", farm(1, nil, pools()), farm(2, nil, pools()), true},
		{"a label change passes", farm(1, nil, pools()), farm(1, map[string]string{"a": "b"}, pools()), true},
		{"a pool its Gateway routes now reach passes, though only the status says so", farm(1, nil, pools("shared")), farm(1, nil, pools("shared", "tenant-only")), true},
		{"a pool its Gateway routes reach no more passes", farm(1, nil, pools("shared", "tenant-only")), farm(1, nil, pools("shared")), true},
		{"a pool now reached through a cache tier passes", farm(1, nil, pools("shared")),
			farm(1, nil, v1.WebFarmStatus{GatewayAppPools: []string{"shared"}, GatewayCachedPools: []v1.CachedPool{{CachePolicy: "static", AppPool: "shared"}}}), true},
		{"another status change passes nothing", farm(1, nil, pools("shared")), farm(1, nil, v1.WebFarmStatus{GatewayAppPools: []string{"shared"}, HostCount: 3}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := routingInputs.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.passes {
				t.Errorf("passes %v, want %v", got, tt.passes)
			}
		})
	}
}
