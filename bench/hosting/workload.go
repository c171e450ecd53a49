package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/vocabulary"
)

// The hosting provider's objects, in its infrastructure namespace.
const (
	infraNS     = "hosting"
	farmName    = "shared"
	gatewayName = "public"
	className   = "webfarm"
	// grantFromMax is Gateway API's limit on a ReferenceGrant's from list.
	grantFromMax = 16
)

// workload is the shape of the benchmark: routes (one host name each)
// spread evenly over tenant namespaces, each routed to one of the shared pools.
type workload struct {
	routes, namespaces, pools int
}

func (w workload) validate() error {
	switch {
	case w.pools < 1 || w.namespaces < 1:
		return fmt.Errorf("-pools and -namespaces must be at least 1")
	case w.routes < w.pools:
		return fmt.Errorf("-routes (%d) must be at least -pools (%d): the first routes measure the Envoy with one route per pool", w.routes, w.pools)
	}
	return nil
}

func tenantNS(n int) string    { return fmt.Sprintf("tenant-%03d", n) }
func poolName(p int) string    { return fmt.Sprintf("pool-%02d", p) }
func routeName(i int) string   { return fmt.Sprintf("site-%05d", i) }
func routeHost(i int) string   { return fmt.Sprintf("site-%05d.example", i) }
func changedHost(k int) string { return fmt.Sprintf("changed-%03d.example", k) }

// routeNS and routePool place route i: round robin over the namespaces and
// the pools, so that the first `pools` routes reach every pool.
func (w workload) routeNS(i int) string   { return tenantNS(i % w.namespaces) }
func (w workload) routePool(i int) string { return poolName(i % w.pools) }

// namespaces are the tenants' namespaces and the provider's.
func (w workload) namespaceObjects() []*corev1.Namespace {
	out := []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: infraNS}}}
	for n := range w.namespaces {
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS(n)}})
	}
	return out
}

// route is HTTPRoute i: one host name to its shared pool, attached to the
// provider's Gateway.
func (w workload) route(i int) *gwv1.HTTPRoute {
	gwNS, group, kind := gwv1.Namespace(infraNS), gwv1.Group(gateway.GroupWebFarm), gwv1.Kind(gateway.KindAppPool)
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.routeNS(i), Name: routeName(i)},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gatewayName, Namespace: &gwNS}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(routeHost(i))},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Group: &group, Kind: &kind, Name: gwv1.ObjectName(w.routePool(i)), Namespace: &gwNS},
			}}}}},
		},
	}
}

// acceptedStatus is the status the operator gives an attached route: what
// the baseline writes for each.
func acceptedStatus(r *gwv1.HTTPRoute) gwv1.RouteStatus {
	cond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: r.Generation, LastTransitionTime: metav1.Now()}
	}
	return gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{
		ParentRef:      r.Spec.ParentRefs[0],
		ControllerName: gateway.ControllerName,
		Conditions:     []metav1.Condition{cond("Accepted", "Accepted"), cond("ResolvedRefs", "ResolvedRefs")},
	}}}
}

// setup are the objects that exist before the clock starts: the
// GatewayClass, the pools, the farm (with one inline site of its own), its
// Gateway admitting routes from every namespace, and the ReferenceGrants
// that let the tenants' routes use the shared pools.
func (w workload) setup() []client.Object {
	out := []client.Object{&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}}}
	for p := range w.pools {
		out = append(out, &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: infraNS, Name: poolName(p)}, Spec: v1.AppPoolSpec{
			Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "content"}},
		}})
	}
	out = append(out, &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: infraNS, Name: farmName}, Spec: v1.WebFarmSpec{
		Sites: []v1.Site{{Name: "provider", Hosts: []v1.Hostname{"www.provider.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: v1.ObjectName(poolName(0))}}}},
	}})
	all := gwv1.NamespacesFromAll
	out = append(out, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: infraNS, Name: gatewayName}, Spec: gwv1.GatewaySpec{
		GatewayClassName: className,
		Infrastructure:   &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: gateway.GroupWebFarm, Kind: gateway.KindWebFarm, Name: farmName}},
		Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, AllowedRoutes: &gwv1.AllowedRoutes{
			Namespaces: &gwv1.RouteNamespaces{From: &all},
		}}},
	}})
	for _, g := range w.grants() {
		out = append(out, g)
	}
	return out
}

// grants let every tenant namespace's routes name the shared pools, 16
// namespaces a grant (Gateway API's limit).
func (w workload) grants() []*gwv1.ReferenceGrant {
	var out []*gwv1.ReferenceGrant
	for start := 0; start < w.namespaces; start += grantFromMax {
		g := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: infraNS, Name: fmt.Sprintf("tenants-%03d", start/grantFromMax)},
			Spec: gwv1.ReferenceGrantSpec{To: []gwv1.ReferenceGrantTo{{Group: gateway.GroupWebFarm, Kind: gateway.KindAppPool}}}}
		for n := start; n < min(start+grantFromMax, w.namespaces); n++ {
			g.Spec.From = append(g.Spec.From, gwv1.ReferenceGrantFrom{Group: gwv1.GroupName, Kind: gateway.KindHTTPRoute, Namespace: gwv1.Namespace(tenantNS(n))})
		}
		out = append(out, g)
	}
	return out
}

// endpointSlice stands in for what the EndpointSlice controller (not part of
// the test control plane) makes of pool p's Service: one ready worker, the
// benchmark's server for that pool.
func endpointSlice(p int, address string, port int) *discoveryv1.EndpointSlice {
	name := poolName(p)
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: infraNS, Name: name + "-bench", Labels: map[string]string{
			vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentPool, vocabulary.LabelInstance: name,
			discoveryv1.LabelServiceName: name + "-" + vocabulary.ComponentPool,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{address}, Conditions: discoveryv1.EndpointConditions{
			Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false),
		}}},
	}
}
