package model_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

// routing is a farm whose one site has these routes and whose Gateways'
// routes send to gatewayPools and through gatewayCached.
func routing(name string, routes []v1.Route, gatewayPools []string, gatewayCached ...v1.CachedPool) v1.WebFarm {
	return v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   v1.WebFarmSpec{Sites: []v1.Site{{Name: "www", Routes: routes}}},
		Status: v1.WebFarmStatus{GatewayAppPools: gatewayPools, GatewayCachedPools: gatewayCached}}
}

func TestAPoolAdmitsTheFarmsAndCacheTiersThatSendToIt(t *testing.T) {
	tests := []struct {
		name  string
		farms []v1.WebFarm
		want  model.Peers
	}{
		{"no farm routes to the pool: nobody", []v1.WebFarm{routing("other", []v1.Route{{AppPool: "api"}}, nil)}, model.Peers{}},
		{"an inline route makes its farm a peer",
			[]v1.WebFarm{routing("web", []v1.Route{{AppPool: "web"}}, nil)}, model.Peers{Farms: []string{"web"}}},
		{"a cached route adds its cache tier too",
			[]v1.WebFarm{routing("web", []v1.Route{{AppPool: "web", CachePolicy: "static"}}, nil)},
			model.Peers{Farms: []string{"web"}, CachePolicies: []string{"static"}}},
		{"two farms reaching the pool through their Gateways are both peers, sorted",
			[]v1.WebFarm{routing("b", nil, []string{"web"}), routing("a", nil, []string{"api", "web"})},
			model.Peers{Farms: []string{"a", "b"}}},
		{"a Gateway route through a cache tier adds the tier",
			[]v1.WebFarm{routing("gw", nil, nil, v1.CachedPool{CachePolicy: "edge", AppPool: "web"}, v1.CachedPool{CachePolicy: "other", AppPool: "api"})},
			model.Peers{Farms: []string{"gw"}, CachePolicies: []string{"edge"}}},
		{"a farm and a tier named by several routes appear once",
			[]v1.WebFarm{routing("web", []v1.Route{{AppPool: "web", CachePolicy: "static"}, {AppPool: "web", CachePolicy: "static"}, {AppPool: "web"}}, []string{"web"})},
			model.Peers{Farms: []string{"web"}, CachePolicies: []string{"static"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.PoolPeers("web", tt.farms); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PoolPeers = %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestACacheTierAdmitsTheFarmsWhoseRoutesGoThroughIt(t *testing.T) {
	tests := []struct {
		name  string
		farms []v1.WebFarm
		want  model.Peers
	}{
		{"a farm without cached routes is no peer", []v1.WebFarm{routing("web", []v1.Route{{AppPool: "web"}}, []string{"web"})}, model.Peers{}},
		{"an inline route through the tier makes its farm a peer",
			[]v1.WebFarm{routing("web", []v1.Route{{AppPool: "web", CachePolicy: "static"}}, nil)}, model.Peers{Farms: []string{"web"}}},
		{"a Gateway route through the tier makes its farm a peer",
			[]v1.WebFarm{routing("gw", nil, nil, v1.CachedPool{CachePolicy: "static", AppPool: "web"})}, model.Peers{Farms: []string{"gw"}}},
		{"another tier's routes do not count",
			[]v1.WebFarm{routing("web", []v1.Route{{AppPool: "web", CachePolicy: "edge"}}, nil, v1.CachedPool{CachePolicy: "edge", AppPool: "web"})}, model.Peers{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.CachePeers("static", tt.farms); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CachePeers = %+v; want %+v", got, tt.want)
			}
		})
	}
}
