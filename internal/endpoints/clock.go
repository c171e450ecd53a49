package endpoints

import (
	"math"
	"slices"
	"strconv"

	"webfarm.dev/operator/internal/vocabulary"
)

// A pool's workers get requests in proportion to their nodes' clock rates,
// the figure the autoscaler counts them at: a worker on a 550 MHz node takes
// fewer requests than one on a 900 MHz node, so that both run as hot as the
// pool's CPU figure says.

// NodeMHz is the clock rate a node's labels give (vocabulary.NodeMHzLabel),
// else fallback: a missing, unreadable, zero, negative or infinite value
// says nothing.
func NodeMHz(labels map[string]string, fallback float64) float64 {
	if mhz, err := strconv.ParseFloat(labels[vocabulary.NodeMHzLabel], 64); err == nil && mhz > 0 && !math.IsInf(mhz, 0) {
		return mhz
	}
	return fallback
}

// Clocks are the clock rates of nodes in MHz, by node name; a node not
// listed (or an endpoint whose node is unknown) runs at Default.
type Clocks struct {
	ByNode  map[string]float64
	Default float64
}

func (c Clocks) of(node string) float64 {
	if mhz, ok := c.ByNode[node]; ok {
		return mhz
	}
	return c.Default
}

// Nodes are the distinct nodes, sorted, that run the endpoints of these
// clusters: those whose clocks WeightedByClock reads.
func (b Backends) Nodes(clusters []string) []string {
	var nodes []string
	for _, c := range clusters {
		for _, e := range b[c] {
			if e.Node != "" {
				nodes = append(nodes, e.Node)
			}
		}
	}
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// WeightedByClock is a copy of the backends in which the endpoints of these
// clusters (the pools') weigh their nodes' clock rates. The other clusters
// (cache tiers, which hash URLs to keep each object in one cache) keep
// equal shares.
func (b Backends) WeightedByClock(clusters []string, clocks Clocks) Backends {
	out := make(Backends, len(b))
	for name, eps := range b {
		out[name] = eps
	}
	for _, c := range clusters {
		eps := b[c]
		if len(eps) == 0 {
			continue
		}
		mhz := make([]float64, len(eps))
		for i, e := range eps {
			mhz[i] = clocks.of(e.Node)
		}
		weights := ClockWeights(mhz)
		if weights == nil {
			continue
		}
		weighted := slices.Clone(eps)
		for i := range weighted {
			weighted[i].Weight = weights[i]
		}
		out[c] = weighted
	}
	return out
}

// maxWeight is the most Envoy accepts for the sum of a locality's weights
// (and so for any one).
const maxWeight = math.MaxUint32

// ClockWeights are the load-balancing weights of endpoints on nodes of these
// clock rates (MHz): proportional to them, in lowest terms (550 and 900 MHz
// weigh 11 and 18), each at least 1 and their sum within Envoy's limit. nil
// when all rates are equal: equal shares, which Envoy gives without weights.
func ClockWeights(mhz []float64) []uint32 {
	weights := make([]uint64, len(mhz))
	for i, m := range mhz {
		if !(m >= 1) { // below 1 MHz, or NaN
			m = 1
		}
		weights[i] = uint64(math.Round(min(m, maxWeight)))
	}
	if !slices.ContainsFunc(weights, func(w uint64) bool { return w != weights[0] }) {
		return nil
	}
	divisor := weights[0]
	for _, w := range weights[1:] {
		divisor = gcd(divisor, w)
	}
	var sum uint64
	for i := range weights {
		weights[i] /= divisor
		sum += weights[i]
	}
	if sum > maxWeight {
		// Scale into the limit, leaving room for the weights that round up to 1.
		room := maxWeight - uint64(len(weights))
		for i, w := range weights {
			weights[i] = max(1, w*room/sum)
		}
	}
	out := make([]uint32, len(weights))
	for i, w := range weights {
		out[i] = uint32(w)
	}
	return out
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
