package envoy

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"webfarm.dev/operator/internal/model"
)

func TestDeltaResources(t *testing.T) {
	farmRouting := func() Routing {
		r, err := FarmRouting(contoso(), contosoPools(), contosoBackends())
		if err != nil {
			t.Fatal(err)
		}
		https := emptyRouteConfig("farm-https", contoso().Frontend)
		https.VirtualHosts = []*routev3.VirtualHost{{Name: "shop", Domains: []string{"shop.contoso.example"}}}
		r.Routes = append(r.Routes, https)
		return r
	}
	tests := []struct {
		name  string
		check func(t *testing.T, given Routing, routes []*routev3.RouteConfiguration)
	}{
		{"the farm route configuration names its VHDS source and holds no virtual host", func(t *testing.T, _ Routing, routes []*routev3.RouteConfiguration) {
			if routes[0].GetName() != RouteConfigName || routes[0].GetVhds().GetConfigSource().GetAds() == nil || len(routes[0].GetVirtualHosts()) > 0 {
				t.Errorf("farm route configuration: %v", routes[0])
			}
		}},
		{"every virtual host is a resource named under the route configuration, as Envoy reads it", func(t *testing.T, given Routing, _ []*routev3.RouteConfiguration) {
			want := given.Routes[0].GetVirtualHosts()
			if len(given.FarmVirtualHosts) != len(want) {
				t.Fatalf("%d virtual host resources, want %d", len(given.FarmVirtualHosts), len(want))
			}
			for i, res := range given.FarmVirtualHosts {
				b, err := proto.Marshal(res.Encoded)
				if err != nil {
					t.Fatal(err)
				}
				var onTheWire routev3.VirtualHost
				if err := proto.Unmarshal(b, &onTheWire); err != nil {
					t.Fatal(err)
				}
				named := proto.Clone(want[i]).(*routev3.VirtualHost)
				named.Name = "farm/" + want[i].GetName()
				if res.Name != named.Name || !proto.Equal(&onTheWire, named) {
					t.Errorf("virtual host %d: %s, want %s with its routes", i, onTheWire.GetName(), named.Name)
				}
			}
		}},
		{"the HTTPS route configuration stays whole", func(t *testing.T, given Routing, routes []*routev3.RouteConfiguration) {
			if len(routes) != 2 || routes[1] != given.Routes[1] {
				t.Errorf("routes: %v", routes)
			}
		}},
		{"the routing given is not changed", func(t *testing.T, given Routing, _ []*routev3.RouteConfiguration) {
			want := farmRouting()
			for i := range want.Routes {
				if !proto.Equal(given.Routes[i], want.Routes[i]) {
					t.Errorf("route configuration %s changed", want.Routes[i].GetName())
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := farmRouting()
			tt.check(t, given, DeltaResources(given.Routes))
		})
	}
}

func TestFarmRoutingReusingRendersWhatChanged(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *model.Farm, pools map[string]model.Pool)
		// reused: the unchanged site's virtual host is the one remembered.
		reused bool
	}{
		{"a site that did not change is not rendered again", func(f *model.Farm, _ map[string]model.Pool) {
			f.Sites[0].Hosts = []string{"other.contoso.example"}
		}, true},
		{"a pool's change renders every site", func(_ *model.Farm, pools map[string]model.Pool) {
			p := pools["www"]
			p.QueueTimeout = time.Second
			pools["www"] = p
		}, false},
		{"a farm setting's change renders every site", func(f *model.Farm, _ map[string]model.Pool) {
			f.Frontend.RequestTimeout = time.Minute
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memory := &VirtualHosts{}
			f, pools := contoso(), contosoPools()
			first, err := FarmRoutingReusing(f, pools, contosoBackends(), memory)
			if err != nil {
				t.Fatal(err)
			}
			tt.change(&f, pools)
			got, err := FarmRoutingReusing(f, pools, contosoBackends(), memory)
			if err != nil {
				t.Fatal(err)
			}
			want, err := FarmRouting(f, pools, contosoBackends())
			if err != nil {
				t.Fatal(err)
			}
			hosts, err := got.SiteVirtualHosts()
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != want.Version || len(hosts) != len(want.Routes[0].VirtualHosts) {
				t.Fatalf("version %s with %d virtual hosts, want %s with %d", got.Version, len(hosts), want.Version, len(want.Routes[0].VirtualHosts))
			}
			for i, vh := range hosts {
				if !proto.Equal(vh, want.Routes[0].VirtualHosts[i]) {
					t.Errorf("virtual host %s differs from the one rendered without memory", vh.GetName())
				}
			}
			if reused := got.FarmVirtualHosts[1].Encoded == first.FarmVirtualHosts[1].Encoded; reused != tt.reused {
				t.Errorf("unchanged site's virtual host reused: %v, want %v", reused, tt.reused)
			}
		})
	}
}
