package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// routedContent is what a farm's snapshot does for a host: "500" when its
// first route answers it, else the site directory it sends to the pool
// ("" for none).
func routedContent(nodeCluster, host string) (string, error) {
	r, ok := xdsServer.Routing(nodeCluster)
	if !ok {
		return "", fmt.Errorf("no snapshot for %s", nodeCluster)
	}
	hosts, err := r.SiteVirtualHosts()
	if err != nil {
		return "", err
	}
	for _, vh := range hosts {
		if len(vh.Domains) == 0 || vh.Domains[0] != host {
			continue
		}
		route := vh.Routes[len(vh.Routes)-1]
		if d := route.GetDirectResponse(); d != nil {
			return fmt.Sprint(d.Status), nil
		}
		for _, h := range route.RequestHeadersToAdd {
			if h.Header.Key == vocabulary.SiteDirectoryHeader {
				return h.Header.Value, nil
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("no virtual host for %s", host)
}

// A tenant's route names its SiteContent: until it exists the rule is
// ResolvedRefs=False BackendNotFound and answers 500; created, the route
// serves its directory under the tenant's folder; changed, the frontend
// follows; deleted, the rule answers 500 again. The Gateway's controller
// (statuses) and the routing (snapshot) both follow each change.
func TestARoutesSiteContentIsResolvedAndFollowed(t *testing.T) {
	class := gatewayClass(t)
	infra := newNamespace(t)
	tenant := tenantNamespace(t, nil)
	from := gwv1.NamespacesFromAll
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "public"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: gwv1.ObjectName(class),
		Infrastructure:   &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: "webfarm.dev", Kind: "WebFarm", Name: "hosting"}},
		Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}}}},
	}}
	grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "tenants-use-shared-pools"}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(tenant)}},
		To:   []gwv1.ReferenceGrantTo{{Group: "webfarm.dev", Kind: "AppPool"}},
	}}
	shop := httpRoute(tenant, "shop", infra, []string{"shop.example"}, "shared-1")
	shop.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
		ExtensionRef: &gwv1.LocalObjectReference{Group: "webfarm.dev", Kind: "SiteContent", Name: "shop"}}}
	plain := httpRoute(tenant, "plain", infra, []string{"plain.example"}, "shared-1")
	create(t, appPool(infra, "shared-1"), grant,
		&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "hosting"}, Spec: v1.WebFarmSpec{Frontend: v1.Frontend{Replicas: 1}}},
		gw, shop, plain)
	nodeCluster := infra + "/hosting"
	expect := func(host, want string) func() error {
		return func() error {
			got, err := routedContent(nodeCluster, host)
			if err == nil && got != want {
				err = fmt.Errorf("%s is routed with %q, want %q", host, got, want)
			}
			return err
		}
	}

	t.Run("a missing SiteContent is BackendNotFound and its rule answers 500", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error { return expectRouteCondition(tenant, "shop", "ResolvedRefs", "False/BackendNotFound") })
		testutil.Eventually(t, 10*time.Second, func() error { return expectRouteCondition(tenant, "shop", "Accepted", "True/Accepted") })
		testutil.Eventually(t, 10*time.Second, expect("shop.example", "500"))
	})
	t.Run("a tenant's route without a SiteContent serves the tenant's folder", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, expect("plain.example", tenant))
	})
	content := &v1.SiteContent{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "shop"}, Spec: v1.SiteContentSpec{Directory: "shop"}}
	t.Run("the SiteContent created, the route resolves and serves its directory in the tenant's folder", func(t *testing.T) {
		create(t, content)
		testutil.Eventually(t, 10*time.Second, func() error { return expectRouteCondition(tenant, "shop", "ResolvedRefs", "True/ResolvedRefs") })
		testutil.Eventually(t, 10*time.Second, expect("shop.example", tenant+"/shop"))
	})
	t.Run("the SiteContent changed, the frontend serves the new directory", func(t *testing.T) {
		var sc v1.SiteContent
		if err := get(&sc, tenant, "shop"); err != nil {
			t.Fatal(err)
		}
		sc.Spec.Directory = "shop/v2"
		if err := k8sClient.Update(context.Background(), &sc); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, expect("shop.example", tenant+"/shop/v2"))
	})
	t.Run("the SiteContent deleted, the rule answers 500 and the route says why", func(t *testing.T) {
		if err := k8sClient.Delete(context.Background(), content); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() error { return expectRouteCondition(tenant, "shop", "ResolvedRefs", "False/BackendNotFound") })
		testutil.Eventually(t, 10*time.Second, expect("shop.example", "500"))
	})
}
