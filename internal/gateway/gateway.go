// Package gateway makes a farm a Gateway API implementation: it decides,
// from a Gateway of the operator's GatewayClass and the routes that name it,
// which routes attach to which listeners, what each route's and the
// Gateway's status say, and which sites the farm's frontend serves for them.
//
// It is pure: the controllers read the objects, call Attach, and write the
// statuses (the leader) or route the sites (every replica). Every replica
// computes the same answer from the same objects.
package gateway

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

// ControllerName is the GatewayClass controllerName the operator serves.
const ControllerName gwv1.GatewayController = "webfarm.dev/gateway-controller"

// Group and kinds of the objects a route may name.
const (
	GroupGateway  = gwv1.GroupName
	GroupWebFarm  = "webfarm.dev"
	KindGateway   = "Gateway"
	KindHTTPRoute = "HTTPRoute"
	KindService   = "Service"
	KindAppPool   = "AppPool"
	KindWebFarm   = "WebFarm"
	// KindCachePolicy is the ExtensionRef filter that sends a rule's
	// requests through a farm's cache tier.
	KindCachePolicy = "CachePolicy"
	// KindSiteContent is the ExtensionRef filter that serves a rule from a
	// folder of its AppPools' content.
	KindSiteContent = "SiteContent"
)

// ReasonHostnameConflict: another namespace's route (or the farm's own
// inline site) claimed a host name first. Gateway API lets implementations
// add reasons; a hosting provider needs this one, so that one tenant
// cannot take another's host.
const ReasonHostnameConflict gwv1.RouteConditionReason = "HostnameConflict"

// Farm is what the Gateway's farm tells the translation.
type Farm struct {
	// Name is the WebFarm serving the Gateway, in its namespace.
	Name string
	// Problem says why the farm cannot serve the Gateway (empty: it can).
	Problem string
	// HTTPPort is the port the farm's frontend Service serves HTTP on.
	HTTPPort int32
	// HTTPSPort is the port it serves HTTPS on.
	HTTPSPort int32
	// Hosts are the farm's inline sites' host names: the farm's own, never
	// taken by a route.
	Hosts []string
	// TLSHosts are the host names of the inline sites with a certificate
	// of their own; DefaultCertificate: one of those sites answers clients
	// whose server name no certificate names.
	TLSHosts           []string
	DefaultCertificate bool
	// Addresses are the frontend Service's addresses (none yet: the
	// Gateway is not Programmed).
	Addresses []string
}

// Backend is an object a route's backendRef may name, as found.
type Backend struct {
	// Ports are a Service's ports (an AppPool has none to give).
	Ports []int32
	// ClusterIP is a Service's cluster address (empty for a headless
	// Service, whose pods the frontend finds by its DNS name).
	ClusterIP string
	// TargetPorts are a Service's target ports by port, those given as
	// numbers: a headless Service's pods are reached on them.
	TargetPorts map[int32]int32
	// H2CPorts are a Service's ports whose appProtocol is kubernetes.io/h2c:
	// the frontend speaks HTTP/2 in clear text to them.
	H2CPorts map[int32]bool
}

// AppProtocolH2C is the Service port's appProtocol of HTTP/2 over clear
// text (with prior knowledge), as Gateway API names it.
const AppProtocolH2C = "kubernetes.io/h2c"

// Inputs are the objects the translation of one Gateway reads.
type Inputs struct {
	Gateway *gwv1.Gateway
	Farm    Farm
	// Routes are the HTTPRoutes with a parentRef naming the Gateway.
	Routes []*gwv1.HTTPRoute
	// NamespaceLabels are the labels of the routes' namespaces.
	NamespaceLabels map[string]map[string]string
	// Grants are the ReferenceGrants of the namespaces the routes refer to.
	Grants []*gwv1.ReferenceGrant
	// Backends are the Services and AppPools found, by kind, then
	// namespace/name.
	Backends map[string]map[types.NamespacedName]Backend
	// CachePolicies are the names of the farm namespace's CachePolicies.
	CachePolicies map[string]bool
	// UnloadedCertificates are the Secrets of the Gateway's namespace that
	// the farm's frontends mount but could not load (missing, malformed, a
	// key that does not match): the frontends, not the operator, read
	// Secrets.
	UnloadedCertificates map[string]bool
	// SiteContents are the specs of the SiteContents of the routes'
	// namespaces, by namespace/name.
	SiteContents map[types.NamespacedName]v1.SiteContentSpec
}

// Result is what the translation decided.
type Result struct {
	Gateway gwv1.GatewayStatus
	// RouteParents are, per route, the statuses of its parentRefs that name
	// this Gateway, in the route's parentRefs order.
	RouteParents map[types.NamespacedName][]gwv1.RouteParentStatus
	// Sites are the farm's sites for the attached routes: one per host
	// name, sorted by host.
	Sites []Site
	// TLSListeners are the Gateway's HTTPS listeners the frontend serves,
	// in the Gateway's order, each with the Secret its pods mount.
	TLSListeners []model.TLSListener
}

// listener is a listener of the Gateway with what was decided about it.
type listener struct {
	spec       gwv1.Listener
	conditions []metav1.Condition
	kinds      []gwv1.RouteGroupKind
	attached   int32
	usable     bool
	// secret is an HTTPS listener's certificate Secret, in the Gateway's
	// namespace (empty: none the frontend can mount).
	secret string
}

func (l *listener) https() bool { return l.spec.Protocol == gwv1.HTTPSProtocolType }

// Attach decides the Gateway's status, its routes' statuses and the sites
// the farm serves for them.
func Attach(in Inputs) Result {
	gen := in.Gateway.Generation
	listeners := checkListeners(in, gen)
	res := Result{RouteParents: map[types.NamespacedName][]gwv1.RouteParentStatus{}}
	var claims []claim
	for _, r := range sortedRoutes(in.Routes) {
		key := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
		var parents []gwv1.RouteParentStatus
		for _, ref := range r.Spec.ParentRefs {
			if !namesGateway(ref, r.Namespace, in.Gateway) {
				continue
			}
			status, hosts := attachRoute(in, r, ref, listeners)
			parents = append(parents, status)
			for _, h := range hosts {
				claims = append(claims, claim{host: h.name, https: h.https, route: r, parent: len(parents) - 1})
			}
		}
		if len(parents) > 0 {
			res.RouteParents[key] = parents
		}
	}
	res.Sites = sites(in, claims, res.RouteParents)
	res.Gateway = gatewayStatus(in, listeners, gen)
	for _, l := range listeners {
		if l.usable && l.https() {
			res.TLSListeners = append(res.TLSListeners, model.TLSListener{
				Name: in.Gateway.Name + "/" + string(l.spec.Name), ServerName: hostnameOf(l.spec), SecretName: l.secret,
			})
		}
	}
	return res
}

func hostnameOf(l gwv1.Listener) string {
	if l.Hostname == nil {
		return ""
	}
	return string(*l.Hostname)
}

// sortedRoutes orders routes oldest first, then by namespace and name:
// Gateway API's precedence for conflicts.
func sortedRoutes(routes []*gwv1.HTTPRoute) []*gwv1.HTTPRoute {
	out := slices.Clone(routes)
	slices.SortFunc(out, olderFirst)
	return out
}

func olderFirst(a, b *gwv1.HTTPRoute) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// namesGateway: the parentRef names this Gateway.
func namesGateway(ref gwv1.ParentReference, routeNamespace string, gw *gwv1.Gateway) bool {
	group, kind, ns := valueOr(ref.Group, GroupGateway), valueOr(ref.Kind, KindGateway), valueOr(ref.Namespace, routeNamespace)
	return group == GroupGateway && kind == KindGateway && ns == gw.Namespace && string(ref.Name) == gw.Name
}

// checkListeners decides each listener's conditions. The farm's frontend
// serves HTTP on one port and HTTPS on another: a listener elsewhere, or of
// another protocol, is not accepted.
func checkListeners(in Inputs, gen int64) []*listener {
	gw, farm := in.Gateway, in.Farm
	out := make([]*listener, 0, len(gw.Spec.Listeners))
	seen := map[string]int{}
	for _, l := range gw.Spec.Listeners {
		li := &listener{spec: l}
		accepted := condition(string(gwv1.ListenerConditionAccepted), true, string(gwv1.ListenerReasonAccepted), "the farm's frontend serves this listener", gen)
		switch {
		case l.Protocol != gwv1.HTTPProtocolType && l.Protocol != gwv1.HTTPSProtocolType:
			accepted = condition(string(gwv1.ListenerConditionAccepted), false, string(gwv1.ListenerReasonUnsupportedProtocol),
				fmt.Sprintf("protocol %s is not served: the farm's frontend serves HTTP and HTTPS", l.Protocol), gen)
		case l.Protocol == gwv1.HTTPProtocolType && farm.HTTPPort != 0 && l.Port != farm.HTTPPort:
			accepted = condition(string(gwv1.ListenerConditionAccepted), false, string(gwv1.ListenerReasonPortUnavailable),
				fmt.Sprintf("the farm's frontend serves HTTP on port %d", farm.HTTPPort), gen)
		case l.Protocol == gwv1.HTTPSProtocolType && farm.HTTPSPort != 0 && l.Port != farm.HTTPSPort:
			accepted = condition(string(gwv1.ListenerConditionAccepted), false, string(gwv1.ListenerReasonPortUnavailable),
				fmt.Sprintf("the farm's frontend serves HTTPS on port %d", farm.HTTPSPort), gen)
		case l.Protocol == gwv1.HTTPSProtocolType && (l.TLS == nil || (l.TLS.Mode != nil && *l.TLS.Mode != gwv1.TLSModeTerminate)):
			accepted = condition(string(gwv1.ListenerConditionAccepted), false, string(gwv1.ListenerReasonUnsupportedProtocol),
				"HTTPS is served with tls.mode Terminate", gen)
		}
		kinds, badKinds := supportedKinds(l.AllowedRoutes)
		if accepted.Reason == string(gwv1.ListenerReasonUnsupportedProtocol) {
			kinds, badKinds = []gwv1.RouteGroupKind{}, "" // no route kind is served on it
		}
		li.kinds = kinds
		resolved := condition(string(gwv1.ListenerConditionResolvedRefs), true, string(gwv1.ListenerReasonResolvedRefs), "", gen)
		if l.Protocol == gwv1.HTTPSProtocolType && l.TLS != nil {
			var problem certificateProblem
			li.secret, problem = certificateOf(in, l.TLS.CertificateRefs)
			if problem.reason != "" {
				resolved = condition(string(gwv1.ListenerConditionResolvedRefs), false, string(problem.reason), problem.message, gen)
			}
		}
		if badKinds != "" {
			resolved = condition(string(gwv1.ListenerConditionResolvedRefs), false, string(gwv1.ListenerReasonInvalidRouteKinds),
				"route kinds not served: "+badKinds, gen)
		}
		host := hostnameOf(l)
		conflicted := condition(string(gwv1.ListenerConditionConflicted), false, string(gwv1.ListenerReasonNoConflicts), "", gen)
		key := fmt.Sprintf("%d/%s/%s", l.Port, l.Protocol, host)
		if first, dup := seen[key]; dup {
			conflicted = condition(string(gwv1.ListenerConditionConflicted), true, string(gwv1.ListenerReasonHostnameConflict),
				fmt.Sprintf("listener %s has the same port, protocol and host name", gw.Spec.Listeners[first].Name), gen)
		} else {
			seen[key] = len(out)
		}
		if l.Protocol == gwv1.HTTPSProtocolType {
			switch {
			case host == "" && farm.DefaultCertificate:
				conflicted = condition(string(gwv1.ListenerConditionConflicted), true, string(gwv1.ListenerReasonHostnameConflict),
					"the farm's inline HTTPS sites answer clients of any other server name: give the listener a hostname", gen)
			case slices.Contains(farm.TLSHosts, host):
				conflicted = condition(string(gwv1.ListenerConditionConflicted), true, string(gwv1.ListenerReasonHostnameConflict),
					"an inline site of the farm serves "+host+" with a certificate of its own", gen)
			}
		}
		// A Secret the frontends could not load keeps its listener: the
		// frontends mount it, and serve it once it is fixed.
		mountable := l.Protocol != gwv1.HTTPSProtocolType || li.secret != ""
		li.usable = accepted.Status == metav1.ConditionTrue && conflicted.Status == metav1.ConditionFalse && len(kinds) > 0 && mountable
		programmed := condition(string(gwv1.ListenerConditionProgrammed), true, string(gwv1.ListenerReasonProgrammed), "", gen)
		if !li.usable || farm.Problem != "" || resolved.Status == metav1.ConditionFalse {
			programmed = condition(string(gwv1.ListenerConditionProgrammed), false, string(gwv1.ListenerReasonInvalid), "the listener is not served", gen)
		}
		li.conditions = []metav1.Condition{accepted, resolved, conflicted, programmed}
		out = append(out, li)
	}
	return out
}

// certificateProblem says why a listener's certificate is not served
// (reason empty: it is).
type certificateProblem struct {
	reason  gwv1.ListenerConditionReason
	message string
}

// certificateOf is the Secret an HTTPS listener's frontend mounts (empty:
// none it can), and what is wrong with it. The frontend serves one
// certificate a listener: the first named. Its pods mount it, so it is a
// Secret of the Gateway's namespace; the frontends report whether it loads.
func certificateOf(in Inputs, refs []gwv1.SecretObjectReference) (string, certificateProblem) {
	if len(refs) == 0 {
		return "", certificateProblem{gwv1.ListenerReasonInvalidCertificateRef, "no certificateRefs: the listener needs a Secret"}
	}
	ref := refs[0]
	group, kind, ns := valueOr(ref.Group, ""), valueOr(ref.Kind, "Secret"), valueOr(ref.Namespace, in.Gateway.Namespace)
	switch {
	case group != "" || kind != "Secret":
		return "", certificateProblem{gwv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("certificateRef %s/%s %s: a core Secret", group, kind, ref.Name)}
	case ns != in.Gateway.Namespace && !secretGranted(in.Grants, in.Gateway.Namespace, ns, string(ref.Name)):
		return "", certificateProblem{gwv1.ListenerReasonRefNotPermitted,
			fmt.Sprintf("no ReferenceGrant in namespace %s lets Gateways of %s refer to Secret %s", ns, in.Gateway.Namespace, ref.Name)}
	case ns != in.Gateway.Namespace:
		return "", certificateProblem{gwv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("Secret %s/%s: the farm's frontend pods mount their certificates, and a pod mounts Secrets of its own namespace only "+
				"(the operator reads no Secret): keep the certificate in %s", ns, ref.Name, in.Gateway.Namespace)}
	case in.UnloadedCertificates[string(ref.Name)]:
		return string(ref.Name), certificateProblem{gwv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("the farm's frontends cannot load Secret %s: it must exist with a PEM tls.crt and its tls.key", ref.Name)}
	}
	return string(ref.Name), certificateProblem{}
}

// secretGranted: a ReferenceGrant in the Secret's namespace lets Gateways
// of from refer to it.
func secretGranted(grants []*gwv1.ReferenceGrant, from, to, name string) bool {
	for _, g := range grants {
		if g.Namespace != to {
			continue
		}
		fromOK := slices.ContainsFunc(g.Spec.From, func(f gwv1.ReferenceGrantFrom) bool {
			return string(f.Group) == GroupGateway && f.Kind == KindGateway && string(f.Namespace) == from
		})
		toOK := slices.ContainsFunc(g.Spec.To, func(t gwv1.ReferenceGrantTo) bool {
			return t.Group == "" && t.Kind == "Secret" && (t.Name == nil || string(*t.Name) == name)
		})
		if fromOK && toOK {
			return true
		}
	}
	return false
}

// supportedKinds are the listener's route kinds the farm serves, and the
// others it names.
func supportedKinds(allowed *gwv1.AllowedRoutes) ([]gwv1.RouteGroupKind, string) {
	httpRoute := gwv1.RouteGroupKind{Group: ptr(gwv1.Group(GroupGateway)), Kind: KindHTTPRoute}
	if allowed == nil || len(allowed.Kinds) == 0 {
		return []gwv1.RouteGroupKind{httpRoute}, ""
	}
	var kinds []gwv1.RouteGroupKind
	var bad []string
	for _, k := range allowed.Kinds {
		group := GroupGateway
		if k.Group != nil {
			group = string(*k.Group)
		}
		if group == GroupGateway && k.Kind == KindHTTPRoute {
			kinds = append(kinds, httpRoute)
			continue
		}
		bad = append(bad, group+"/"+string(k.Kind))
	}
	return kinds, strings.Join(bad, ", ")
}

// listenerHost is a host name a route claims on a listener, and whether
// that listener is HTTPS.
type listenerHost struct {
	name  string
	https bool
}

// attachRoute decides one parentRef of a route: the listeners it attaches
// to, its conditions and the host names it claims there.
func attachRoute(in Inputs, r *gwv1.HTTPRoute, ref gwv1.ParentReference, listeners []*listener) (gwv1.RouteParentStatus, []listenerHost) {
	gen := r.Generation
	status := gwv1.RouteParentStatus{ParentRef: ref, ControllerName: ControllerName}
	refused := func(reason gwv1.RouteConditionReason, msg string) (gwv1.RouteParentStatus, []listenerHost) {
		status.Conditions = []metav1.Condition{
			condition(string(gwv1.RouteConditionAccepted), false, string(reason), msg, gen),
			resolvedRefs(in, r, gen),
		}
		return status, nil
	}
	if in.Farm.Problem != "" {
		return refused(gwv1.RouteReasonPending, "the Gateway's farm cannot serve it: "+in.Farm.Problem)
	}
	if what := unsupported(r, in.Gateway.Namespace); what != "" {
		return refused(gwv1.RouteReasonUnsupportedValue, what)
	}
	var named []*listener
	for _, l := range listeners {
		if ref.SectionName != nil && l.spec.Name != *ref.SectionName {
			continue
		}
		if ref.Port != nil && l.spec.Port != *ref.Port {
			continue
		}
		named = append(named, l)
	}
	if len(named) == 0 {
		return refused(gwv1.RouteReasonNoMatchingParent, "no listener of the Gateway has that section name and port")
	}
	var allowed []*listener
	for _, l := range named {
		if l.usable && admits(l.spec, in.Gateway.Namespace, r.Namespace, in.NamespaceLabels[r.Namespace]) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		return refused(gwv1.RouteReasonNotAllowedByListeners,
			fmt.Sprintf("no listener admits HTTPRoutes from namespace %s", r.Namespace))
	}
	var hosts []listenerHost
	for _, l := range allowed {
		matched := intersect(l.spec.Hostname, r.Spec.Hostnames)
		if len(matched) == 0 {
			continue
		}
		l.attached++
		for _, h := range matched {
			hosts = append(hosts, listenerHost{name: h, https: l.https()})
		}
	}
	if len(hosts) == 0 {
		return refused(gwv1.RouteReasonNoMatchingListenerHostname, "no host name of the route matches a listener's")
	}
	slices.SortFunc(hosts, func(a, b listenerHost) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(boolInt(a.https), boolInt(b.https)))
	})
	status.Conditions = []metav1.Condition{
		condition(string(gwv1.RouteConditionAccepted), true, string(gwv1.RouteReasonAccepted), "", gen),
		resolvedRefs(in, r, gen),
	}
	return status, slices.Compact(hosts)
}

// admits: the listener's allowedRoutes take routes from the namespace.
func admits(l gwv1.Listener, gatewayNamespace, routeNamespace string, nsLabels map[string]string) bool {
	from := gwv1.NamespacesFromSame
	var selector *metav1.LabelSelector
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
		if l.AllowedRoutes.Namespaces.From != nil {
			from = *l.AllowedRoutes.Namespaces.From
		}
		selector = l.AllowedRoutes.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return routeNamespace == gatewayNamespace
	case gwv1.NamespacesFromSelector:
		s, err := metav1.LabelSelectorAsSelector(selector)
		return err == nil && selector != nil && s.Matches(labels.Set(nsLabels))
	}
	return false
}

// intersect is the host names a route serves on a listener (Gateway API's
// hostname intersection); "*" stands for any host.
func intersect(listenerHost *gwv1.Hostname, routeHosts []gwv1.Hostname) []string {
	if len(routeHosts) == 0 {
		if listenerHost == nil {
			return []string{"*"}
		}
		return []string{string(*listenerHost)}
	}
	if listenerHost == nil {
		out := make([]string, 0, len(routeHosts))
		for _, h := range routeHosts {
			out = append(out, string(h))
		}
		return out
	}
	l := string(*listenerHost)
	var out []string
	for _, h := range routeHosts {
		r := string(h)
		switch {
		case r == l:
			out = append(out, r)
		case wildcardCovers(l, r):
			out = append(out, r)
		case wildcardCovers(r, l):
			out = append(out, l)
		}
	}
	return out
}

// wildcardCovers: pattern is "*.suffix" and host ends in ".suffix" with at
// least one label in front.
func wildcardCovers(pattern, host string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	return ok && strings.HasSuffix(host, suffix) && len(host) > len(suffix) && host != pattern
}

// gatewayStatus is the Gateway's status: accepted when its farm can serve
// it, programmed once the farm's frontend has an address.
func gatewayStatus(in Inputs, listeners []*listener, gen int64) gwv1.GatewayStatus {
	var st gwv1.GatewayStatus
	for _, a := range in.Farm.Addresses {
		st.Addresses = append(st.Addresses, gwv1.GatewayStatusAddress{Type: ptr(gwv1.IPAddressType), Value: a})
	}
	accepted := condition(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonAccepted),
		"served by WebFarm "+in.Farm.Name, gen)
	programmed := condition(string(gwv1.GatewayConditionProgrammed), true, string(gwv1.GatewayReasonProgrammed), "", gen)
	invalid := 0
	for _, l := range listeners {
		if !l.usable {
			invalid++
		}
	}
	switch {
	case in.Farm.Problem != "":
		accepted = condition(string(gwv1.GatewayConditionAccepted), false, string(gwv1.GatewayReasonInvalidParameters), in.Farm.Problem, gen)
		programmed = condition(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonInvalid), in.Farm.Problem, gen)
	case invalid > 0 && invalid == len(listeners):
		msg := "no listener is valid (" + invalidListeners(listeners) + ")"
		accepted = condition(string(gwv1.GatewayConditionAccepted), false, string(gwv1.GatewayReasonListenersNotValid), msg, gen)
		programmed = condition(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonInvalid), msg, gen)
	case invalid > 0:
		// Accepted, as Gateway API says, with the reason that some
		// listeners are not served.
		accepted = condition(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonListenersNotValid),
			"served by WebFarm "+in.Farm.Name+"; listeners not served: "+invalidListeners(listeners), gen)
	case len(in.Farm.Addresses) == 0:
		programmed = condition(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonAddressNotAssigned),
			"the farm's frontend Service has no address yet", gen)
	}
	st.Conditions = []metav1.Condition{accepted, programmed}
	for _, l := range listeners {
		st.Listeners = append(st.Listeners, gwv1.ListenerStatus{
			Name: l.spec.Name, SupportedKinds: l.kinds, AttachedRoutes: l.attached, Conditions: l.conditions,
		})
	}
	return st
}

// invalidListeners names the listeners not served, each with why.
func invalidListeners(listeners []*listener) string {
	var why []string
	for _, l := range listeners {
		if !l.usable {
			why = append(why, string(l.spec.Name)+": "+firstProblem(l.conditions))
		}
	}
	return strings.Join(why, "; ")
}

// firstProblem is the message of a listener's first condition that is not
// as it should be (Conflicted is the one that should be False).
func firstProblem(conds []metav1.Condition) string {
	for _, c := range conds {
		bad := c.Status == metav1.ConditionFalse
		if c.Type == string(gwv1.ListenerConditionConflicted) {
			bad = !bad
		}
		if bad {
			return c.Message
		}
	}
	return "not served"
}

// condition is a metav1.Condition at a generation (its time set when written).
func condition(typ string, status bool, reason, msg string, gen int64) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if msg == "" {
		msg = reason
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(time.Time{})}
}

func ptr[T any](v T) *T { return &v }

// valueOr is an optional reference field's value, or Gateway API's default
// for it when it is not set.
func valueOr[T ~string](p *T, def string) string {
	if p == nil {
		return def
	}
	return string(*p)
}
