package controllers

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/gateway"
)

func translationInputs() gateway.Inputs {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "hosting", UID: "gw", Generation: 1}}
	route := func(name string) *gwv1.HTTPRoute {
		return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID(name), Generation: 1, ResourceVersion: "1"}}
	}
	return gateway.Inputs{
		Gateway: gw, Farm: gateway.Farm{Name: "hosting", HTTPPort: 80, Hosts: []string{"www.example"}},
		Routes:          []*gwv1.HTTPRoute{route("a"), route("b")},
		NamespaceLabels: map[string]map[string]string{"tenant": {"team": "a"}, "infra": nil},
		Backends:        map[string]map[types.NamespacedName]gateway.Backend{gateway.KindAppPool: {{Namespace: "infra", Name: "web"}: {}}},
		CachePolicies:   map[string]bool{"static": true},
	}
}

func TestATranslationIsReusedWhileWhatItReadsHolds(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(in *gateway.Inputs)
		reused bool
	}{
		{"nothing changed", func(*gateway.Inputs) {}, true},
		{"the routes are listed in another order", func(in *gateway.Inputs) { in.Routes[0], in.Routes[1] = in.Routes[1], in.Routes[0] }, true},
		{"a route's status was written (a new resource version, the same generation)", func(in *gateway.Inputs) {
			r := in.Routes[0].DeepCopy()
			r.ResourceVersion, r.Status.Parents = "2", []gwv1.RouteParentStatus{{ControllerName: gateway.ControllerName}}
			in.Routes[0] = r
		}, true},
		{"a route's spec changed", func(in *gateway.Inputs) {
			r := in.Routes[0].DeepCopy()
			r.Generation = 2
			in.Routes[0] = r
		}, false},
		{"a route was added", func(in *gateway.Inputs) {
			in.Routes = append(in.Routes, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c", UID: "c", Generation: 1}})
		}, false},
		{"a route was deleted", func(in *gateway.Inputs) { in.Routes = in.Routes[:1] }, false},
		{"the Gateway's spec changed", func(in *gateway.Inputs) {
			gw := in.Gateway.DeepCopy()
			gw.Generation = 2
			in.Gateway = gw
		}, false},
		{"a namespace's labels changed", func(in *gateway.Inputs) { in.NamespaceLabels["tenant"] = map[string]string{"team": "b"} }, false},
		{"the farm's inline hosts changed", func(in *gateway.Inputs) { in.Farm.Hosts = []string{"shop.example"} }, false},
		{"the frontend got an address", func(in *gateway.Inputs) { in.Farm.Addresses = []string{"10.0.0.1"} }, false},
		{"a pool appeared", func(in *gateway.Inputs) {
			in.Backends[gateway.KindAppPool][types.NamespacedName{Namespace: "infra", Name: "images"}] = gateway.Backend{}
		}, false},
		{"a Service's port changed", func(in *gateway.Inputs) {
			in.Backends[gateway.KindService] = map[types.NamespacedName]gateway.Backend{{Namespace: "tenant", Name: "app"}: {Ports: []int32{8080}}}
		}, false},
		{"a ReferenceGrant changed", func(in *gateway.Inputs) {
			in.Grants = []*gwv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{UID: "grant", ResourceVersion: "7"}}}
		}, false},
		{"a cache policy went away", func(in *gateway.Inputs) { delete(in.CachePolicies, "static") }, false},
		{"the farm's HTTPS port changed", func(in *gateway.Inputs) { in.Farm.HTTPSPort = 8443 }, false},
		{"the farm got an inline HTTPS site", func(in *gateway.Inputs) {
			in.Farm.TLSHosts, in.Farm.DefaultCertificate = []string{"www.example"}, true
		}, false},
		{"a headless Service's target port changed", func(in *gateway.Inputs) {
			in.Backends[gateway.KindService] = map[types.NamespacedName]gateway.Backend{
				{Namespace: "tenant", Name: "app"}: {Ports: []int32{8080}, TargetPorts: map[int32]int32{8080: 3000}}}
		}, false},
		{"a tenant's SiteContent changed", func(in *gateway.Inputs) {
			in.SiteContents = map[types.NamespacedName]v1.SiteContentSpec{{Namespace: "tenant", Name: "shop"}: {Directory: "shop"}}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := translationInputs()
			before := fingerprint(in)
			tt.change(&in)
			if got := fingerprint(in) == before; got != tt.reused {
				t.Errorf("translation reused: %v, want %v", got, tt.reused)
			}
		})
	}
}

func TestARouteStatusKeepsWhatIsNotThisGatewaysAndDoesNotChangeTheRoute(t *testing.T) {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "hosting"}}
	infra := gwv1.Namespace("infra")
	ours := gwv1.ParentReference{Namespace: &infra, Name: "hosting"}
	other := gwv1.ParentReference{Namespace: &infra, Name: "elsewhere"}
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	accepted := func(status metav1.ConditionStatus, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: string(gwv1.RouteConditionAccepted), Status: status, Reason: "Accepted", LastTransitionTime: at}
	}
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "site"}}
	route.Status.Parents = []gwv1.RouteParentStatus{
		{ParentRef: other, ControllerName: "example.com/other", Conditions: []metav1.Condition{accepted(metav1.ConditionTrue, since)}},
		{ParentRef: ours, ControllerName: gateway.ControllerName, Conditions: []metav1.Condition{accepted(metav1.ConditionTrue, since)}},
	}
	given := route.DeepCopy()
	for _, tt := range []struct {
		name  string
		want  []gwv1.RouteParentStatus
		check func(t *testing.T, got gwv1.HTTPRouteStatus)
	}{
		{"a condition whose status holds keeps its transition time", []gwv1.RouteParentStatus{
			{ParentRef: ours, ControllerName: gateway.ControllerName, Conditions: []metav1.Condition{accepted(metav1.ConditionTrue, metav1.Now())}},
		}, func(t *testing.T, got gwv1.HTTPRouteStatus) {
			if !equality.Semantic.DeepEqual(got, given.Status) {
				t.Errorf("status %v, want it unchanged", got)
			}
		}},
		{"another controller's parent stays when this Gateway's changes", []gwv1.RouteParentStatus{
			{ParentRef: ours, ControllerName: gateway.ControllerName, Conditions: []metav1.Condition{accepted(metav1.ConditionFalse, metav1.Now())}},
		}, func(t *testing.T, got gwv1.HTTPRouteStatus) {
			if len(got.Parents) != 2 || got.Parents[0].ControllerName != "example.com/other" || got.Parents[1].Conditions[0].Status != metav1.ConditionFalse {
				t.Errorf("parents %v", got.Parents)
			}
		}},
		{"this Gateway's parent goes when the route no longer names it", nil, func(t *testing.T, got gwv1.HTTPRouteStatus) {
			if len(got.Parents) != 1 || got.Parents[0].ControllerName != "example.com/other" {
				t.Errorf("parents %v", got.Parents)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, routeStatus(route, gw, tt.want))
			if !equality.Semantic.DeepEqual(route, given) {
				t.Errorf("the route given changed: %v", route.Status)
			}
		})
	}
}

func TestARouteStatusThatSaysWhatIsWantedIsNotWrittenAgain(t *testing.T) {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "hosting"}}
	infra := gwv1.Namespace("infra")
	ours := gwv1.ParentReference{Namespace: &infra, Name: "hosting"}
	accepted := func(status metav1.ConditionStatus, generation int64) gwv1.RouteParentStatus {
		return gwv1.RouteParentStatus{ParentRef: ours, ControllerName: gateway.ControllerName, Conditions: []metav1.Condition{{
			Type: string(gwv1.RouteConditionAccepted), Status: status, Reason: "Accepted", ObservedGeneration: generation,
			LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}}
	}
	other := gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: "elsewhere"}, ControllerName: "example.com/other"}
	for _, tt := range []struct {
		name  string
		have  []gwv1.RouteParentStatus
		want  []gwv1.RouteParentStatus
		holds bool
	}{
		{"the same conditions hold, whatever their transition time", []gwv1.RouteParentStatus{other, accepted(metav1.ConditionTrue, 1)},
			[]gwv1.RouteParentStatus{accepted(metav1.ConditionTrue, 1)}, true},
		{"a route without this Gateway's entry and none wanted holds", []gwv1.RouteParentStatus{other}, nil, true},
		{"a new route without status does not hold", nil, []gwv1.RouteParentStatus{accepted(metav1.ConditionTrue, 1)}, false},
		{"a condition's status changed", []gwv1.RouteParentStatus{accepted(metav1.ConditionTrue, 1)},
			[]gwv1.RouteParentStatus{accepted(metav1.ConditionFalse, 1)}, false},
		{"a new generation was observed", []gwv1.RouteParentStatus{accepted(metav1.ConditionTrue, 1)},
			[]gwv1.RouteParentStatus{accepted(metav1.ConditionTrue, 2)}, false},
		{"this Gateway's entry is no longer wanted", []gwv1.RouteParentStatus{accepted(metav1.ConditionTrue, 1)}, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "site"}}
			route.Status.Parents = tt.have
			if got := statusHolds(route, gw, tt.want); got != tt.holds {
				t.Errorf("holds: %v, want %v", got, tt.holds)
			}
		})
	}
}

// A Service port's protocol alone is a change: the clusters that reach it
// speak another protocol.
func TestATranslationIsNotReusedOnceAServicePortSpeaksH2C(t *testing.T) {
	with := func(h2c map[int32]bool) uint64 {
		in := translationInputs()
		in.Backends[gateway.KindService] = map[types.NamespacedName]gateway.Backend{
			{Namespace: "tenant", Name: "app"}: {Ports: []int32{8080}, ClusterIP: "10.96.0.9", H2CPorts: h2c}}
		return fingerprint(in)
	}
	if with(nil) == with(map[int32]bool{8080: true}) {
		t.Error("the fingerprint is the same whether the Service's port speaks h2c or not")
	}
}

// The fingerprint lists what Attach reads by hand: a new input must join
// it (or a reused translation would ignore its changes). The frontends'
// certificates are not shared: the Gateway controller adds them to its
// own translation.
func TestTheFingerprintCoversEveryInput(t *testing.T) {
	for _, tt := range []struct {
		typ   reflect.Type
		known []string
	}{
		{reflect.TypeFor[gateway.Inputs](), []string{"Gateway", "Farm", "Routes", "NamespaceLabels", "Grants", "Backends",
			"CachePolicies", "UnloadedCertificates", "SiteContents"}},
		{reflect.TypeFor[gateway.Farm](), []string{"Name", "Problem", "HTTPPort", "HTTPSPort", "Hosts", "TLSHosts",
			"DefaultCertificate", "Addresses"}},
		{reflect.TypeFor[gateway.Backend](), []string{"Ports", "ClusterIP", "TargetPorts", "H2CPorts"}},
	} {
		var fields []string
		for f := range tt.typ.Fields() {
			fields = append(fields, f.Name)
		}
		if !slices.Equal(fields, tt.known) {
			t.Errorf("%s has fields %v; the fingerprint knows %v: add the new ones to fingerprint and to this list",
				tt.typ, fields, tt.known)
		}
	}
}
