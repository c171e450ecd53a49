package main

import (
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
)

// StaticBootstrap is a farm's Envoy bootstrap (envoy.Bootstrap) with its
// routing (envoy.FarmRouting) delivered statically instead of over xDS: the
// route configuration inlined into the listener, the endpoints into the
// clusters. The Envoy it configures serves exactly what the operator would
// send it; only the xDS client is gone. It does what staticBootstrap of the
// routing tests does, and returns the message so that tuning knobs can change it.
func StaticBootstrap(f model.Farm, r envoy.Routing) (*bootstrapv3.Bootstrap, error) {
	raw, err := envoy.Bootstrap(f)
	if err != nil {
		return nil, err
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("reading the rendered bootstrap: %w", err)
	}
	b.DynamicResources = nil
	for _, l := range r.Listeners {
		l = proto.Clone(l).(*listenerv3.Listener)
		if l.Name == envoy.ListenerName {
			if err := editHCM(l, func(hcm *hcmv3.HttpConnectionManager) {
				hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: r.Routes[0]}
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

// localizeBootstrap moves the frontend's listeners and admin interface from
// the pod's ports to free loopback ports and drops the xDS cluster, which a
// static bootstrap does not use.
func localizeBootstrap(b *bootstrapv3.Bootstrap, p envoyPorts) error {
	ports := map[uint32]int{envoy.HTTPPort: p.http, envoy.StatusPort: p.status, envoy.AdminPort: p.admin}
	move := func(a *corev3.Address) error {
		sa := a.GetSocketAddress()
		port, ok := ports[sa.GetPortValue()]
		if !ok {
			// Two frontends on one host would collide on it.
			return fmt.Errorf("the rendered bootstrap listens on port %d, which the benchmark does not move: adapt bench/dataplane", sa.GetPortValue())
		}
		sa.Address = "127.0.0.1"
		sa.PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: uint32(port)}
		return nil
	}
	if err := move(b.Admin.Address); err != nil {
		return err
	}
	for _, l := range b.StaticResources.Listeners {
		if err := move(l.Address); err != nil {
			return err
		}
	}
	var clusters []*clusterv3.Cluster
	for _, c := range b.StaticResources.Clusters {
		switch {
		case c.LoadAssignment == nil:
			return fmt.Errorf("cluster %s has no endpoints", c.Name)
		case c.GetType() == clusterv3.Cluster_STRICT_DNS:
			continue // the xDS server's cluster
		case c.Name == "admin":
			for _, e := range c.LoadAssignment.Endpoints[0].LbEndpoints {
				if err := move(e.GetEndpoint().Address); err != nil {
					return err
				}
			}
		}
		clusters = append(clusters, c)
	}
	b.StaticResources.Clusters = clusters
	return nil
}

// editHCM changes the HTTP connection manager of a listener in place.
func editHCM(l *listenerv3.Listener, edit func(*hcmv3.HttpConnectionManager)) error {
	filter := l.FilterChains[0].Filters[0]
	var hcm hcmv3.HttpConnectionManager
	if err := filter.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	edit(&hcm)
	a, err := anypb.New(&hcm)
	if err != nil {
		return err
	}
	filter.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
	return nil
}

// farmListener is the listener that carries the farm's traffic.
func farmListener(b *bootstrapv3.Bootstrap) (*listenerv3.Listener, error) {
	for _, l := range b.StaticResources.Listeners {
		if l.Name == envoy.ListenerName {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no listener %q in the bootstrap", envoy.ListenerName)
}

// poolClusters are the clusters of the farm's pools.
func poolClusters(b *bootstrapv3.Bootstrap) []*clusterv3.Cluster {
	var out []*clusterv3.Cluster
	for _, c := range b.StaticResources.Clusters {
		if c.Name == envoy.PoolCluster(poolName) {
			out = append(out, c)
		}
	}
	return out
}

// bootstrapJSON is the bootstrap as Envoy reads it, after Envoy's own
// validation rules.
func bootstrapJSON(b *bootstrapv3.Bootstrap) ([]byte, error) {
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoy bootstrap: %w", err)
	}
	return protojson.MarshalOptions{UseProtoNames: true, Multiline: true}.Marshal(b)
}
