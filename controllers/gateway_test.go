package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// gatewayClass creates a GatewayClass of the operator's controller.
func gatewayClass(t *testing.T) string {
	t.Helper()
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("webfarm-%d", namespaceCounter.Add(1))},
		Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}}
	create(t, gc)
	return gc.Name
}

// tenantNamespace creates a namespace with labels.
func tenantNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := newNamespace(t)
	var n corev1.Namespace
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	if err := k8sClient.Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return ns
}

func httpRoute(ns, name, gwNamespace string, hosts []string, pool string) *gwv1.HTTPRoute {
	gwNS, group, kind := gwv1.Namespace(gwNamespace), gwv1.Group("webfarm.dev"), gwv1.Kind("AppPool")
	poolNS := gwv1.Namespace(gwNamespace)
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public", Namespace: &gwNS}}},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Group: &group, Kind: &kind, Name: gwv1.ObjectName(pool), Namespace: &poolNS},
			}}}}},
		}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

// routeCondition is "Status/Reason" of a route's condition for its first parent.
func routeCondition(ns, name, typ string) (string, error) {
	var r gwv1.HTTPRoute
	if err := get(&r, ns, name); err != nil {
		return "", err
	}
	if len(r.Status.Parents) == 0 {
		return "", fmt.Errorf("HTTPRoute %s/%s has no parent status", ns, name)
	}
	c := meta.FindStatusCondition(r.Status.Parents[0].Conditions, typ)
	if c == nil {
		return "", fmt.Errorf("HTTPRoute %s/%s has no %s condition", ns, name, typ)
	}
	return fmt.Sprintf("%s/%s", c.Status, c.Reason), nil
}

func expectRouteCondition(ns, name, typ, want string) error {
	got, err := routeCondition(ns, name, typ)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("HTTPRoute %s/%s %s is %s, want %s", ns, name, typ, got, want)
	}
	return nil
}

// virtualHosts lists a farm's snapshot's virtual hosts as "domain->cluster".
func virtualHosts(nodeCluster string) ([]string, error) {
	r, ok := xdsServer.Routing(nodeCluster)
	if !ok {
		return nil, fmt.Errorf("no snapshot for %s", nodeCluster)
	}
	hosts, err := r.SiteVirtualHosts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, vh := range hosts {
		for _, d := range vh.Domains {
			cluster := vh.Routes[len(vh.Routes)-1].GetRoute().GetCluster()
			out = append(out, d+"->"+cluster)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Three tenants attach routes to a hosting provider's Gateway: the two whose
// namespace the listener selects are served by the farm's shared pool, the
// third is refused with its reason; a host claimed by two tenants goes to
// the older route, and passes to the other when the older is removed.
func TestTenantsRoutesAttachToTheFarmsGateway(t *testing.T) {
	class := gatewayClass(t)
	infra := newNamespace(t)
	tenantA := tenantNamespace(t, map[string]string{"hosting": "customer"})
	tenantB := tenantNamespace(t, map[string]string{"hosting": "customer"})
	other := tenantNamespace(t, nil)

	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "hosting"}, Spec: v1.WebFarmSpec{
		Sites: []v1.Site{{Name: "provider", Hosts: []v1.Hostname{"www.provider.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "shared-1"}}}},
	}}
	from := gwv1.NamespacesFromSelector
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "public"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: gwv1.ObjectName(class),
		Infrastructure:   &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: "webfarm.dev", Kind: "WebFarm", Name: "hosting"}},
		Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, AllowedRoutes: &gwv1.AllowedRoutes{
			Namespaces: &gwv1.RouteNamespaces{From: &from, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"hosting": "customer"}}},
		}}},
	}}
	grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: infra, Name: "tenants-use-shared-pools"}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{
			{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(tenantA)},
			{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(tenantB)},
			{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(other)},
		},
		To: []gwv1.ReferenceGrantTo{{Group: "webfarm.dev", Kind: "AppPool"}},
	}}
	create(t, appPool(infra, "shared-1"), farm, gw, grant,
		httpRoute(tenantA, "shop", infra, []string{"a.example"}, "shared-1"))
	testutil.Eventually(t, 10*time.Second, func() error { return expectRouteCondition(tenantA, "shop", "Accepted", "True/Accepted") })
	var first gwv1.HTTPRoute
	if err := get(&first, tenantA, "shop"); err != nil {
		t.Fatal(err)
	}
	// Creation times have a second's resolution: the second tenant's
	// route is made in a later second, so that the first is the older.
	testutil.Eventually(t, 5*time.Second, func() error {
		if time.Since(first.CreationTimestamp.Time) <= time.Second {
			return fmt.Errorf("waiting for a later creation second")
		}
		return nil
	})
	create(t, httpRoute(tenantB, "blog", infra, []string{"b.example", "a.example"}, "shared-1"),
		httpRoute(other, "intruder", infra, []string{"o.example"}, "shared-1"))
	nodeCluster := infra + "/hosting"

	t.Run("the GatewayClass and the Gateway are accepted and the Gateway has its farm's address", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			var gc gwv1.GatewayClass
			if err := get(&gc, "", class); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(gc.Status.Conditions, "Accepted") {
				return fmt.Errorf("GatewayClass conditions: %+v", gc.Status.Conditions)
			}
			var g gwv1.Gateway
			if err := get(&g, infra, "public"); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(g.Status.Conditions, "Accepted") || len(g.Status.Listeners) != 1 {
				return fmt.Errorf("Gateway status: %+v", g.Status)
			}
			if n := g.Status.Listeners[0].AttachedRoutes; n != 2 {
				return fmt.Errorf("listener has %d attached routes, want 2", n)
			}
			var svc corev1.Service
			if err := get(&svc, infra, vocabulary.FrontendName("hosting")); err != nil {
				return err
			}
			if len(g.Status.Addresses) == 0 || g.Status.Addresses[0].Value != svc.Spec.ClusterIP {
				return fmt.Errorf("Gateway addresses %+v, want the frontend Service's %s", g.Status.Addresses, svc.Spec.ClusterIP)
			}
			return nil
		})
	})
	t.Run("a namespace the listener does not select is refused with its reason", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			return expectRouteCondition(other, "intruder", "Accepted", "False/NotAllowedByListeners")
		})
	})
	t.Run("the farm's snapshot serves the attached hosts beside its inline site, on the shared pool", func(t *testing.T) {
		want := []string{"a.example->pool/shared-1", "b.example->pool/shared-1", "www.provider.example->pool/shared-1"}
		testutil.Eventually(t, 10*time.Second, func() error {
			got, err := virtualHosts(nodeCluster)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("virtual hosts %v, want %v", got, want)
			}
			return nil
		})
	})
	t.Run("the farm's status counts the routes' hosts and names the pools they reach", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			var f v1.WebFarm
			if err := get(&f, infra, "hosting"); err != nil {
				return err
			}
			if got := fmt.Sprintf("%d %v", f.Status.HostCount, f.Status.GatewayAppPools); got != "3 [shared-1]" {
				return fmt.Errorf("hostCount and gatewayAppPools: %s, want 3 [shared-1]", got)
			}
			return nil
		})
	})
	t.Run("the newer claim of a host keeps the route accepted and names the lost host", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			var r gwv1.HTTPRoute
			if err := get(&r, tenantB, "blog"); err != nil {
				return err
			}
			if len(r.Status.Parents) == 0 {
				return fmt.Errorf("no status yet")
			}
			c := meta.FindStatusCondition(r.Status.Parents[0].Conditions, "Accepted")
			if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "a.example") {
				return fmt.Errorf("Accepted: %+v", c)
			}
			return nil
		})
	})
	t.Run("a pool only a route reaches has its workers' endpoints followed in the snapshot", func(t *testing.T) {
		create(t, appPool(infra, "tenant-only"), httpRoute(tenantA, "docs", infra, []string{"docs.example"}, "tenant-only"))
		t.Cleanup(func() {
			_ = k8sClient.Delete(context.Background(), &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: tenantA, Name: "docs"}})
		})
		slice := endpointSlice(infra, "tenant-only-pool-x", vocabulary.ComponentPool, "tenant-only", endpoint("10.244.7.1", true, true, false))
		create(t, slice)
		testutil.Eventually(t, 10*time.Second, func() error {
			got, err := endpointsOf(nodeCluster, vocabulary.PoolCluster("tenant-only"))
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != "[10.244.7.1:8080 HEALTHY]" {
				return fmt.Errorf("endpoints %v", got)
			}
			return nil
		})
		update(t, slice, func() { slice.Endpoints = append(slice.Endpoints, endpoint("10.244.7.2", true, true, false)) })
		testutil.Eventually(t, 10*time.Second, func() error {
			got, err := endpointsOf(nodeCluster, vocabulary.PoolCluster("tenant-only"))
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != "[10.244.7.1:8080 HEALTHY 10.244.7.2:8080 HEALTHY]" {
				return fmt.Errorf("endpoints %v after a second worker", got)
			}
			return nil
		})
	})
	t.Run("a route created before its pool and the pool's workers is served with their endpoints once they exist", func(t *testing.T) {
		// The pool's name reaches the farm's indexes only when the farm's
		// status names it, after the slice's event has passed.
		create(t, httpRoute(tenantA, "late", infra, []string{"late.example"}, "late-pool"))
		t.Cleanup(func() {
			_ = k8sClient.Delete(context.Background(), &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: tenantA, Name: "late"}})
		})
		create(t, endpointSlice(infra, "late-pool-pool-x", vocabulary.ComponentPool, "late-pool", endpoint("10.244.8.1", true, true, false)))
		create(t, appPool(infra, "late-pool"))
		testutil.Eventually(t, 10*time.Second, func() error {
			got, err := endpointsOf(nodeCluster, vocabulary.PoolCluster("late-pool"))
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != "[10.244.8.1:8080 HEALTHY]" {
				return fmt.Errorf("endpoints %v", got)
			}
			hosts, err := virtualHosts(nodeCluster)
			if err != nil {
				return err
			}
			if !slices.Contains(hosts, "late.example->pool/late-pool") {
				return fmt.Errorf("virtual hosts %v, want late.example->pool/late-pool among them", hosts)
			}
			return nil
		})
	})
	t.Run("a tenant removing its route removes only its hosts, and the host passes to the next claim", func(t *testing.T) {
		if err := k8sClient.Delete(context.Background(), &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: tenantA, Name: "shop"}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			var r gwv1.HTTPRoute
			if err := get(&r, tenantB, "blog"); err != nil {
				return err
			}
			c := meta.FindStatusCondition(r.Status.Parents[0].Conditions, "Accepted")
			if c == nil || strings.Contains(c.Message, "a.example") {
				return fmt.Errorf("Accepted still names the lost host: %+v", c)
			}
			got, err := virtualHosts(nodeCluster)
			if err != nil {
				return err
			}
			if want := []string{"a.example->pool/shared-1", "b.example->pool/shared-1", "www.provider.example->pool/shared-1"}; !slices.Equal(got, want) {
				return fmt.Errorf("virtual hosts %v, want %v", got, want)
			}
			return nil
		})
	})
	t.Run("a request mirror to a tenant's Service is loaded with the route and copies its requests to it", func(t *testing.T) {
		copied := httpRoute(tenantA, "copied", infra, []string{"copy.example"}, "shared-1")
		port := gwv1.PortNumber(8080)
		copied.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
			BackendRef: gwv1.BackendObjectReference{Name: "shadow", Port: &port}}}}
		create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tenantA, Name: "shadow"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}, copied)
		mirror := vocabulary.ServiceCluster(tenantA, "shadow", 8080)
		testutil.Eventually(t, 10*time.Second, func() error {
			if err := expectRouteCondition(tenantA, "copied", "ResolvedRefs", "True/ResolvedRefs"); err != nil {
				return err
			}
			r, ok := xdsServer.Routing(nodeCluster)
			if !ok {
				return fmt.Errorf("no snapshot for %s", nodeCluster)
			}
			if !slices.ContainsFunc(r.Clusters, func(c *clusterv3.Cluster) bool { return c.Name == mirror }) {
				return fmt.Errorf("no cluster %s in the snapshot", mirror)
			}
			hosts, err := r.SiteVirtualHosts()
			if err != nil {
				return err
			}
			for _, vh := range hosts {
				if !slices.Contains(vh.Domains, "copy.example") {
					continue
				}
				if m := vh.Routes[len(vh.Routes)-1].GetRoute().GetRequestMirrorPolicies(); len(m) != 1 || m[0].Cluster != mirror {
					return fmt.Errorf("copy.example's mirrors %v, want %s", m, mirror)
				}
				return nil
			}
			return fmt.Errorf("no virtual host for copy.example")
		})
	})
}

// A Gateway that names no farm gets one of its own, owned by it, sized by
// its GatewayClass's template farm; a change of the template reaches it.
// The template runs no frontend, so it gets no identity either.
func TestAGatewayWithoutAFarmGetsItsOwn(t *testing.T) {
	ns := newNamespace(t)
	templateNS := gwv1.Namespace(ns)
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("webfarm-%d", namespaceCounter.Add(1))},
		Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: "webfarm.dev", Kind: "WebFarm", Name: "small", Namespace: &templateNS}}}
	create(t, gc)
	template := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "small"}, Spec: v1.WebFarmSpec{
		Frontend: v1.Frontend{Replicas: 1, CPU: ptr.To(resource.MustParse("50m"))}}}
	create(t, template)
	class := gc.Name
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: gwv1.ObjectName(class),
		Listeners:        []gwv1.Listener{{Name: "http", Port: 8080, Protocol: gwv1.HTTPProtocolType}},
	}}
	create(t, gw)
	testutil.Eventually(t, 10*time.Second, func() error {
		var farm v1.WebFarm
		if err := get(&farm, ns, "edge"); err != nil {
			return err
		}
		if owner := metav1.GetControllerOf(&farm); owner == nil || owner.Kind != "Gateway" || owner.Name != "edge" {
			return fmt.Errorf("WebFarm edge's controller is %+v", owner)
		}
		if farm.Spec.Frontend.Service.Port != 8080 {
			return fmt.Errorf("the farm serves HTTP on %d, want the listener's 8080", farm.Spec.Frontend.Service.Port)
		}
		if farm.Spec.Frontend.Replicas != 1 || farm.Spec.Frontend.CPU.String() != "50m" {
			return fmt.Errorf("the farm's frontend has %d replicas of %s CPU, want the template's 1 of 50m", farm.Spec.Frontend.Replicas, farm.Spec.Frontend.CPU)
		}
		var g gwv1.Gateway
		if err := get(&g, ns, "edge"); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(g.Status.Conditions, "Programmed") {
			return fmt.Errorf("Gateway conditions: %+v", g.Status.Conditions)
		}
		return nil
	})
	testutil.Eventually(t, 10*time.Second, func() error {
		var small v1.WebFarm
		if err := get(&small, ns, "small"); err != nil {
			return err
		}
		if err := readyCondition(&small, func() []metav1.Condition { return small.Status.Conditions }, metav1.ConditionTrue, v1.ReasonGatewayClassTemplate); err != nil {
			return err
		}
		var d appsv1.Deployment
		if err := get(&d, ns, vocabulary.FrontendName("small")); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the template farm has a frontend Deployment (%v)", err)
		}
		return nil
	})
	var identity corev1.Secret
	if err := get(&identity, ns, vocabulary.FrontendIdentityName("small")); !apierrors.IsNotFound(err) {
		t.Errorf("the template farm has an identity Secret (%v), want none: it runs no frontend", err)
	}
	update(t, template, func() { template.Spec.Frontend.Replicas = 3 })
	testutil.Eventually(t, 10*time.Second, func() error {
		var farm v1.WebFarm
		if err := get(&farm, ns, "edge"); err != nil {
			return err
		}
		if farm.Spec.Frontend.Replicas != 3 {
			return fmt.Errorf("the farm's frontend has %d replicas after the template's change to 3", farm.Spec.Frontend.Replicas)
		}
		return nil
	})
}

// A GatewayClass whose parametersRef names no WebFarm is not accepted, and
// says why.
func TestAGatewayClassWithAMissingTemplateIsNotAccepted(t *testing.T) {
	ns := gwv1.Namespace(newNamespace(t))
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("webfarm-%d", namespaceCounter.Add(1))},
		Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: "webfarm.dev", Kind: "WebFarm", Name: "missing", Namespace: &ns}}}
	create(t, gc)
	testutil.Eventually(t, 10*time.Second, func() error {
		var got gwv1.GatewayClass
		if err := get(&got, "", gc.Name); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "Accepted")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "InvalidParameters" || !strings.Contains(c.Message, "missing") {
			return fmt.Errorf("Accepted: %+v", c)
		}
		return nil
	})
}

// A provider's own route names a CachePolicy in an ExtensionRef filter:
// the farm routes the host through the cache tier, whose upstream is the
// route's pool, and the farm's status says so.
func TestARouteGoesThroughTheCacheTierItsFilterNames(t *testing.T) {
	class := gatewayClass(t)
	ns := newNamespace(t)
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "public"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: gwv1.ObjectName(class),
		Infrastructure:   &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: "webfarm.dev", Kind: "WebFarm", Name: "hosting"}},
		Listeners:        []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}},
	}}
	images := httpRoute(ns, "images", ns, []string{"img.example"}, "shared-1")
	images.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
		ExtensionRef: &gwv1.LocalObjectReference{Group: "webfarm.dev", Kind: "CachePolicy", Name: "static"}}}
	create(t, appPool(ns, "shared-1"), cachePolicy(ns, "static"),
		&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosting"}, Spec: v1.WebFarmSpec{Frontend: v1.Frontend{Replicas: 1}}}, gw, images)
	testutil.Eventually(t, 10*time.Second, func() error {
		var f v1.WebFarm
		if err := get(&f, ns, "hosting"); err != nil {
			return err
		}
		if got := fmt.Sprint(f.Status.GatewayCachedPools); got != "[{static shared-1}]" {
			return fmt.Errorf("gatewayCachedPools %s", got)
		}
		var cp v1.CachePolicy
		if err := get(&cp, ns, "static"); err != nil {
			return err
		}
		if got := fmt.Sprint(cp.Status.Pools); got != "[shared-1]" {
			return fmt.Errorf("the cache tier's pools: %s", got)
		}
		got, err := virtualHosts(ns + "/hosting")
		if err != nil {
			return err
		}
		if want := "[img.example->cache/static]"; fmt.Sprint(got) != want {
			return fmt.Errorf("virtual hosts %v, want %s", got, want)
		}
		return nil
	})
}

// A Gateway's HTTPS listener: its farm serves HTTPS on the listener's port,
// its frontend pods mount the listener's Secret (the operator never reads
// it), and a certificateRef that is not a core Secret is refused with
// InvalidCertificateRef.
func TestAGatewaysHTTPSListenerHasItsFarmMountItsSecret(t *testing.T) {
	ns := newNamespace(t)
	class := gatewayClass(t)
	listener := func(name string, host gwv1.Hostname, kind gwv1.Kind) gwv1.Listener {
		return gwv1.Listener{Name: gwv1.SectionName(name), Port: 8443, Protocol: gwv1.HTTPSProtocolType, Hostname: &host,
			TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Kind: &kind, Name: "edge-tls"}}}}
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: gwv1.ObjectName(class),
		Listeners: []gwv1.Listener{{Name: "http", Port: 8080, Protocol: gwv1.HTTPProtocolType},
			listener("https", "a.example", "Secret"), listener("wrong-kind", "b.example", "ConfigMap")},
	}}
	create(t, gw)
	testutil.Eventually(t, 20*time.Second, func() error {
		var farm v1.WebFarm
		if err := get(&farm, ns, "edge"); err != nil {
			return err
		}
		if farm.Spec.Frontend.Service.HTTPSPort != 8443 {
			return fmt.Errorf("the farm serves HTTPS on %d, want the listener's 8443", farm.Spec.Frontend.Service.HTTPSPort)
		}
		var d appsv1.Deployment
		if err := get(&d, ns, vocabulary.FrontendName("edge")); err != nil {
			return err
		}
		var secrets []string
		for _, v := range d.Spec.Template.Spec.Volumes {
			// Besides its control identity (identity_test.go).
			if v.Secret != nil && v.Secret.SecretName != vocabulary.FrontendIdentityName("edge") {
				secrets = append(secrets, v.Secret.SecretName)
			}
		}
		if !slices.Equal(secrets, []string{"edge-tls"}) {
			return fmt.Errorf("the frontend mounts Secrets %v, want [edge-tls] once", secrets)
		}
		var svc corev1.Service
		if err := get(&svc, ns, vocabulary.FrontendName("edge")); err != nil {
			return err
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "https" && p.Port == 8443 }) {
			return fmt.Errorf("the frontend Service's ports %+v have no https 8443", svc.Spec.Ports)
		}
		var g gwv1.Gateway
		if err := get(&g, ns, "edge"); err != nil {
			return err
		}
		got := map[string]string{}
		for _, l := range g.Status.Listeners {
			if c := meta.FindStatusCondition(l.Conditions, "ResolvedRefs"); c != nil {
				got[string(l.Name)] = string(c.Status) + "/" + c.Reason
			}
		}
		if got["https"] != "True/ResolvedRefs" || got["wrong-kind"] != "False/InvalidCertificateRef" {
			return fmt.Errorf("listeners' ResolvedRefs: %v", got)
		}
		return nil
	})
}
