package main

import (
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"webfarm.dev/operator/internal/render/envoy"
)

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
