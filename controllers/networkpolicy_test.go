package controllers_test

import (
	"fmt"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// frontendsAdmitted are the farms whose frontends a policy admits, in the
// order of its rules' peers.
func frontendsAdmitted(np *networkingv1.NetworkPolicy, component string) []string {
	var names []string
	for _, r := range np.Spec.Ingress {
		for _, p := range r.From {
			if p.PodSelector != nil && p.PodSelector.MatchLabels["app.kubernetes.io/name"] == "webfarm-"+component {
				names = append(names, p.PodSelector.MatchLabels["app.kubernetes.io/instance"])
			}
		}
	}
	return names
}

// policyAdmits waits until the named policy admits exactly these farms'
// frontends and these cache tiers.
func policyAdmits(t *testing.T, ns, name string, farms, tiers []string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		np := &networkingv1.NetworkPolicy{}
		if err := get(np, ns, name); err != nil {
			return err
		}
		gotFarms, gotTiers := frontendsAdmitted(np, "frontend"), frontendsAdmitted(np, "cache")
		if !slices.Equal(gotFarms, farms) || !slices.Equal(gotTiers, tiers) {
			return fmt.Errorf("%s admits frontends %v and tiers %v; want %v and %v", name, gotFarms, gotTiers, farms, tiers)
		}
		return nil
	})
}

func TestAPoolsPolicyFollowsTheFarmsThatRouteToIt(t *testing.T) {
	ns := newNamespace(t)
	shop, other := webFarm(ns, "shop"), webFarm(ns, "other")
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), shop, other)

	policyAdmits(t, ns, "shop-pool", []string{"other", "shop"}, []string{"static"})
	policyAdmits(t, ns, "blog-pool", []string{"other", "shop"}, nil)
	policyAdmits(t, ns, "static-cache", []string{"other", "shop"}, nil)

	// The other farm stops routing to the blog and through the cache tier.
	update(t, other, func() {
		other.Spec.Sites = []v1.Site{{Name: "shop", Hosts: []v1.Hostname{"other.example.com"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "shop"}}}}
	})
	policyAdmits(t, ns, "blog-pool", []string{"shop"}, nil)
	policyAdmits(t, ns, "static-cache", []string{"shop"}, nil)
	policyAdmits(t, ns, "shop-pool", []string{"other", "shop"}, []string{"static"})
}
