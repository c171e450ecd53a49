package k8s

import (
	discoveryv1 "k8s.io/api/discovery/v1"

	"webfarm.dev/operator/internal/render/envoy"
)

// Backends turns the EndpointSlices of the operator's Services (which carry
// their Service's component and instance labels) into each cluster's
// endpoints: ready ones take requests, terminating ones that still serve drain.
func Backends(endpointSlices []discoveryv1.EndpointSlice) envoy.Backends {
	b := envoy.Backends{}
	for _, s := range endpointSlices {
		var cluster string
		switch s.Labels[LabelComponent] {
		case ComponentPool:
			cluster = envoy.PoolCluster(s.Labels[LabelInstance])
		case ComponentCache:
			cluster = envoy.CacheCluster(s.Labels[LabelInstance])
		default:
			continue
		}
		port, ok := httpPort(s)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			state, serving := endpointState(e.Conditions)
			if !serving {
				continue
			}
			for _, address := range e.Addresses {
				b[cluster] = append(b[cluster], envoy.Endpoint{Address: address, Port: port, State: state})
			}
		}
	}
	return b
}

func httpPort(s discoveryv1.EndpointSlice) (uint32, bool) {
	for _, p := range s.Ports {
		if p.Name != nil && *p.Name == "http" && p.Port != nil {
			return uint32(*p.Port), true
		}
	}
	return 0, false
}

// endpointState follows the EndpointSlice conventions: nil ready means ready;
// a terminating endpoint that still serves is draining.
func endpointState(c discoveryv1.EndpointConditions) (envoy.EndpointState, bool) {
	ready := c.Ready == nil || *c.Ready
	serving := c.Serving != nil && *c.Serving
	terminating := c.Terminating != nil && *c.Terminating
	switch {
	case ready && !terminating:
		return envoy.EndpointReady, true
	case serving || (ready && terminating):
		return envoy.EndpointDraining, true
	}
	return 0, false
}
