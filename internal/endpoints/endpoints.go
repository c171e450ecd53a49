// Package endpoints reads the addresses behind the operator's Services from
// their EndpointSlices: what the frontends route to, and what the activator
// waits for.
package endpoints

import (
	discoveryv1 "k8s.io/api/discovery/v1"

	"webfarm.dev/operator/internal/vocabulary"
)

// State is what the frontend may do with an upstream address.
type State int

const (
	// Ready takes new requests.
	Ready State = iota
	// Draining is terminating but still serving: it finishes what it
	// has (and, with cookie affinity, its sticky clients) but takes no new
	// clients.
	Draining
)

// Endpoint is one upstream address (a pod's IP and serving port).
type Endpoint struct {
	Address string
	Port    uint32
	State   State
	// Node runs the endpoint's pod ("" when the EndpointSlice does not say).
	Node string
	// Weight is the endpoint's share of new requests against the other
	// endpoints of its cluster (0: an equal share, Envoy's default).
	Weight uint32
}

// Backends holds the endpoints of each Envoy cluster (named by
// vocabulary.PoolCluster and vocabulary.CacheCluster).
type Backends map[string][]Endpoint

// FromSlices turns the EndpointSlices of the operator's Services (which carry
// their Service's component and instance labels) into each cluster's
// endpoints: ready ones take requests, terminating ones that still serve drain.
func FromSlices(endpointSlices []discoveryv1.EndpointSlice) Backends {
	b := Backends{}
	for _, s := range endpointSlices {
		var cluster string
		switch s.Labels[vocabulary.LabelComponent] {
		case vocabulary.ComponentPool:
			cluster = vocabulary.PoolCluster(s.Labels[vocabulary.LabelInstance])
		case vocabulary.ComponentCache:
			cluster = vocabulary.CacheCluster(s.Labels[vocabulary.LabelInstance])
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
				b[cluster] = append(b[cluster], Endpoint{Address: address, Port: port, State: state, Node: nodeName(e)})
			}
		}
	}
	return b
}

func nodeName(e discoveryv1.Endpoint) string {
	if e.NodeName == nil {
		return ""
	}
	return *e.NodeName
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
func endpointState(c discoveryv1.EndpointConditions) (State, bool) {
	ready := c.Ready == nil || *c.Ready
	serving := c.Serving != nil && *c.Serving
	terminating := c.Terminating != nil && *c.Terminating
	switch {
	case ready && !terminating:
		return Ready, true
	case serving || (ready && terminating):
		return Draining, true
	}
	return 0, false
}
