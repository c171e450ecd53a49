package main

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/k8s"
)

// The CRDs' limits on a farm's shape.
const (
	maxSitesPerFarm = 500
	maxHostsPerSite = 100
)

// workload is the benchmark's set of farms: each farm has poolsPerFarm sites,
// each site hostsPerSite host names and one route "/" to its own AppPool. The
// first site of each farm also routes "/static" to its pool through the farm's
// CachePolicy, so that every farm has a cache tier.
type workload struct {
	farms, poolsPerFarm, hostsPerSite int
}

func (w workload) validate() error {
	switch {
	case w.farms < 1:
		return fmt.Errorf("-farms must be at least 1")
	case w.poolsPerFarm < 1 || w.poolsPerFarm > maxSitesPerFarm:
		return fmt.Errorf("-pools-per-farm must be 1-%d (a farm has at most %d sites, one pool each)", maxSitesPerFarm, maxSitesPerFarm)
	case w.hostsPerSite < 1 || w.hostsPerSite > maxHostsPerSite:
		return fmt.Errorf("-hosts-per-site must be 1-%d", maxHostsPerSite)
	}
	return nil
}

func (w workload) poolCount() int { return w.farms * w.poolsPerFarm }
func (w workload) hostCount() int { return w.farms * w.poolsPerFarm * w.hostsPerSite }

// childCount is how many child objects the operator makes for the workload:
// a pool's, a farm's frontend's, and a cache tier per farm (every farm routes
// through its policy). The counts per parent come from the renderer's structs.
func (w workload) childCount() int {
	return w.poolCount()*childrenPer[k8s.PoolObjects]() +
		w.farms*(childrenPer[k8s.FrontendObjects]()+childrenPer[k8s.CacheObjects]())
}

// childrenPer is how many objects a parent gets: one per field of its
// renderer's struct (k8s.PoolObjects, FrontendObjects, CacheObjects), as its
// reconciler applies every one. A child added to the renderer raises the
// expected count, so a baseline that does not create it fails the run.
func childrenPer[T k8s.PoolObjects | k8s.FrontendObjects | k8s.CacheObjects]() int {
	return reflect.TypeFor[T]().NumField()
}

func farmName(f int) string    { return fmt.Sprintf("farm-%03d", f) }
func poolName(f, p int) string { return fmt.Sprintf("f%03d-p%03d", f, p) }
func policyName(f int) string  { return fmt.Sprintf("f%03d-cache", f) }
func contentName(f int) string { return fmt.Sprintf("f%03d-content", f) }

// pools are the AppPools: nginx workers serving static files from a ConfigMap.
func (w workload) pools(ns string) []*v1.AppPool {
	var out []*v1.AppPool
	for f := range w.farms {
		for p := range w.poolsPerFarm {
			out = append(out, &v1.AppPool{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: poolName(f, p)},
				Spec: v1.AppPoolSpec{
					Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: v1.ObjectName(contentName(f))}},
				},
			})
		}
	}
	return out
}

// policies are one CachePolicy per farm, with the defaults (IIS output cache).
func (w workload) policies(ns string) []*v1.CachePolicy {
	var out []*v1.CachePolicy
	for f := range w.farms {
		out = append(out, &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: policyName(f)}})
	}
	return out
}

// webFarms are the farms, each with its sites, host names and routes.
func (w workload) webFarms(ns string) []*v1.WebFarm {
	var out []*v1.WebFarm
	for f := range w.farms {
		farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: farmName(f)}}
		for p := range w.poolsPerFarm {
			site := v1.Site{
				Name:   fmt.Sprintf("site-%03d", p),
				Routes: []v1.Route{{PathPrefix: "/", AppPool: v1.ObjectName(poolName(f, p))}},
			}
			for h := range w.hostsPerSite {
				site.Hosts = append(site.Hosts, v1.Hostname(fmt.Sprintf("h%03d.s%03d.f%03d.example.com", h, p, f)))
			}
			if p == 0 {
				site.Routes = append(site.Routes, v1.Route{PathPrefix: "/static", AppPool: v1.ObjectName(poolName(f, p)), CachePolicy: v1.ObjectName(policyName(f))})
			}
			farm.Spec.Sites = append(farm.Spec.Sites, site)
		}
		out = append(out, farm)
	}
	return out
}

// contents are the users' ConfigMaps the pools serve: one per farm, which
// its pools share. They exist before the run starts (a pool waits for its
// content), as a site's content does before its pool is made.
func (w workload) contents(ns string) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for f := range w.farms {
		out = append(out, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: contentName(f)},
			Data: map[string]string{"index.html": "farm " + farmName(f) + "\n"}})
	}
	return out
}

// parents lists every custom resource in creation order: pools, policies, farms
// (the order `kubectl apply -f dir/` would use for files named by kind).
func (w workload) parents(ns string) []client.Object {
	var out []client.Object
	for _, p := range w.pools(ns) {
		out = append(out, p)
	}
	for _, p := range w.policies(ns) {
		out = append(out, p)
	}
	for _, f := range w.webFarms(ns) {
		out = append(out, f)
	}
	return out
}

// cachedPool is the pool behind farm f's cache policy.
func cachedPool(f int) string { return poolName(f, 0) }
