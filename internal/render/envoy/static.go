package envoy

import (
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"webfarm.dev/operator/internal/model"
)

// StaticBootstrap is a farm's bootstrap with its routing delivered statically
// instead of over xDS: the route configuration inlined into the farm's
// listener, the endpoints into the clusters. The Envoy it configures serves
// exactly what the operator would send it, with no xDS client: the golden
// tests validate it with the real Envoy, and the data-plane benchmark runs it.
func StaticBootstrap(f model.Farm, r Routing) (*bootstrapv3.Bootstrap, error) {
	raw, err := Bootstrap(f)
	if err != nil {
		return nil, err
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("reading the rendered bootstrap: %w", err)
	}
	b.DynamicResources = nil
	routes := map[string]*routev3.RouteConfiguration{}
	for _, rc := range r.Routes {
		routes[rc.Name] = rc
	}
	for _, l := range r.Listeners {
		l = proto.Clone(l).(*listenerv3.Listener)
		if l.Name == ListenerName || l.Name == HTTPSListenerName {
			if err := EditHCM(l, func(hcm *hcmv3.HttpConnectionManager) {
				hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: routes[hcm.GetRds().GetRouteConfigName()]}
			}); err != nil {
				return nil, err
			}
		}
		b.StaticResources.Listeners = append(b.StaticResources.Listeners, l)
	}
	endpoints := map[string]*endpointv3.ClusterLoadAssignment{}
	for _, e := range r.Endpoints {
		endpoints[e.ClusterName] = e
	}
	for _, c := range r.Clusters {
		c = proto.Clone(c).(*clusterv3.Cluster)
		if c.GetEdsClusterConfig() != nil {
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
			c.EdsClusterConfig = nil
			c.LoadAssignment = endpoints[c.Name]
		}
		b.StaticResources.Clusters = append(b.StaticResources.Clusters, c)
	}
	return &b, nil
}

// EditHCM changes the HTTP connection manager of each of a listener's filter
// chains in place (the last filter of each: a site's connection limit may
// come before it).
func EditHCM(l *listenerv3.Listener, edit func(*hcmv3.HttpConnectionManager)) error {
	for _, chain := range l.FilterChains {
		filter := chain.Filters[len(chain.Filters)-1]
		var hcm hcmv3.HttpConnectionManager
		if err := filter.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		edit(&hcm)
		filter.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&hcm)}
	}
	return nil
}
