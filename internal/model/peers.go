package model

import (
	"slices"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// Peers are the workloads of one namespace that send requests to a pool or a
// cache tier: the frontends of Farms and the cache tiers of CachePolicies
// (names sorted, without repeats). A pool's or tier's NetworkPolicy admits
// them and nothing else of the tenants'.
type Peers struct {
	Farms         []string
	CachePolicies []string
}

// PoolPeers are who reach the pool among the farms of its namespace: every
// farm whose routes (inline, or its Gateways' as its status lists them) send
// to it, and the cache tiers those routes go through on the way.
func PoolPeers(pool string, farms []v1.WebFarm) Peers {
	var p Peers
	for i := range farms {
		f := &farms[i]
		reaches := slices.Contains(f.Status.GatewayAppPools, pool)
		for _, s := range f.Spec.Sites {
			for _, r := range s.Routes {
				if string(r.AppPool) != pool {
					continue
				}
				reaches = true
				if r.CachePolicy != "" {
					p.CachePolicies = append(p.CachePolicies, string(r.CachePolicy))
				}
			}
		}
		for _, c := range f.Status.GatewayCachedPools {
			if c.AppPool == pool {
				reaches = true
				p.CachePolicies = append(p.CachePolicies, c.CachePolicy)
			}
		}
		if reaches {
			p.Farms = append(p.Farms, f.Name)
		}
	}
	return p.sorted()
}

// CachePeers are who reach the cache tier of a policy among the farms of its
// namespace: the farms whose routes (inline or their Gateways') go through it.
func CachePeers(policy string, farms []v1.WebFarm) Peers {
	var p Peers
	for i := range farms {
		f := &farms[i]
		reaches := slices.ContainsFunc(f.Status.GatewayCachedPools, func(c v1.CachedPool) bool { return c.CachePolicy == policy })
		for _, s := range f.Spec.Sites {
			reaches = reaches || slices.ContainsFunc(s.Routes, func(r v1.Route) bool { return string(r.CachePolicy) == policy })
		}
		if reaches {
			p.Farms = append(p.Farms, f.Name)
		}
	}
	return p.sorted()
}

func (p Peers) sorted() Peers {
	return Peers{Farms: slices.Compact(slices.Sorted(slices.Values(p.Farms))),
		CachePolicies: slices.Compact(slices.Sorted(slices.Values(p.CachePolicies)))}
}
