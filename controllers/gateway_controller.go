package controllers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// Gateway API: a Gateway of a GatewayClass whose controllerName is
// gateway.ControllerName is served by a WebFarm of its namespace, the one its
// spec.infrastructure.parametersRef names (group webfarm.dev, kind WebFarm),
// or else one the operator makes for it, named after it and owned by it. The
// farm's frontend serves the routes attached to the Gateway beside the
// farm's inline sites. The leader writes the statuses (this file); every
// replica routes the sites (RoutingReconciler, through gatewaysServed).

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses;gateways;httproutes;referencegrants,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses/status;gateways/status,verbs=patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes/status,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=webfarm.dev,resources=webfarms,verbs=create;update
// +kubebuilder:rbac:groups=webfarm.dev,resources=sitecontents,verbs=get;list;watch

// Field indexes on HTTPRoutes: the Gateways they name ("namespace/name"),
// the Services they send to and the SiteContents their rules name.
const (
	indexRouteGateways     = "gateway.parentRefs"
	indexRouteServices     = "gateway.serviceRefs"
	indexRouteSiteContents = "gateway.siteContentRefs"
)

// GatewayClassReconciler accepts the GatewayClasses of the operator's
// controller name.
type GatewayClassReconciler struct {
	Client client.Client
}

func (r *GatewayClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var gc gwv1.GatewayClass
	if err := r.Client.Get(ctx, req.NamespacedName, &gc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if gc.Spec.ControllerName != gateway.ControllerName {
		return ctrl.Result{}, nil
	}
	before := gc.DeepCopy()
	accepted := metav1.Condition{
		Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
		Reason: string(gwv1.GatewayClassReasonAccepted), Message: "served by the webfarm operator",
		ObservedGeneration: gc.Generation,
	}
	if _, problem, err := classTemplate(ctx, r.Client, &gc); err != nil {
		return ctrl.Result{}, err
	} else if problem != "" {
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.GatewayClassReasonInvalidParameters), problem
	}
	meta.SetStatusCondition(&gc.Status.Conditions, accepted)
	if equality.Semantic.DeepEqual(before.Status, gc.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Client.Status().Patch(ctx, &gc, client.MergeFrom(before))
}

// classTemplate is the WebFarm a GatewayClass's parametersRef names: the
// template of the farms the operator makes for its Gateways (their
// frontend, session affinity and refusal), so that a platform team sizes
// them once. nil without a parametersRef; problem says why one is unusable.
func classTemplate(ctx context.Context, c client.Reader, gc *gwv1.GatewayClass) (*v1.WebFarm, string, error) {
	ref := gc.Spec.ParametersRef
	if ref == nil {
		return nil, "", nil
	}
	if string(ref.Group) != gateway.GroupWebFarm || string(ref.Kind) != gateway.KindWebFarm || ref.Namespace == nil {
		return nil, fmt.Sprintf("parametersRef names %s/%s %s: a webfarm.dev WebFarm, with its namespace", ref.Group, ref.Kind, ref.Name), nil
	}
	var farm v1.WebFarm
	if err := c.Get(ctx, client.ObjectKey{Namespace: string(*ref.Namespace), Name: ref.Name}, &farm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("parametersRef: WebFarm %s/%s not found", *ref.Namespace, ref.Name), nil
		}
		return nil, "", err
	}
	return &farm, "", nil
}

// GatewayReconciler makes each Gateway's farm when the operator owns it,
// and writes the statuses of the Gateway and its routes.
type GatewayReconciler struct {
	Client client.Client
	// Observations holds what the farms' frontends made of their
	// certificates (nil: no frontend is read, every Secret is taken as
	// loading).
	Observations *observations.Store
	// Translations are shared with the farms' controllers (nil: each
	// reconcile translates).
	Translations *Translations
	// StatusWriters is how many route statuses are written at once (at
	// least 1).
	StatusWriters int
}

func (r *GatewayReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var gw gwv1.Gateway
	if err := r.Client.Get(ctx, req.NamespacedName, &gw); err != nil {
		if apierrors.IsNotFound(err) {
			r.Translations.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ours, err := servedClass(ctx, r.Client, &gw)
	if err != nil || !ours {
		return ctrl.Result{}, err
	}
	// A farm the API server refuses is the Gateway's problem to report,
	// not an error to retry.
	refused := ""
	if err := r.ensureOwnFarm(ctx, &gw); apierrors.IsInvalid(err) {
		refused = "the operator cannot make the Gateway's WebFarm: " + err.Error()
	} else if err != nil {
		return ctrl.Result{}, err
	}
	in, res, err := r.Translations.Translate(ctx, r.Client, &gw)
	if err != nil {
		return ctrl.Result{}, err
	}
	unloaded := r.unloadedCertificates(&gw, types.NamespacedName{Namespace: gw.Namespace, Name: in.Farm.Name})
	if refused != "" || len(unloaded) > 0 {
		// Only the statuses depend on these: translated again for them,
		// the shared translation left as it is.
		in.Farm.Problem = cmp.Or(refused, in.Farm.Problem)
		in.UnloadedCertificates = unloaded
		res = gateway.Attach(in)
	}
	// The routes as they are now: a translation reused since holds them
	// as they were, and their statuses may have been written since.
	routes, err := routesOf(ctx, r.Client, &gw)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeRouteStatuses(ctx, &gw, routes, res.RouteParents); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeGatewayStatus(ctx, &gw, res.Gateway)
}

// unloadedCertificates are the Gateway listeners' Secrets that some ready
// frontend of the farm mounts but did not load. The certificates collector
// reads them; the farm's status change (CertificatesReady) brings the
// Gateway back here.
func (r *GatewayReconciler) unloadedCertificates(gw *gwv1.Gateway, farm types.NamespacedName) map[string]bool {
	if r.Observations == nil {
		return nil
	}
	frontends, ok := r.Observations.Certificates(farm)
	if !ok {
		return nil
	}
	out := map[string]bool{}
	for _, l := range gw.Spec.Listeners {
		if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
			continue
		}
		secret := string(l.TLS.CertificateRefs[0].Name)
		c := model.Certificate{Name: model.GatewayCertificateName(secret), SecretName: secret}
		if !certificateLoaded(c, frontends) {
			out[secret] = true
		}
	}
	return out
}

// routesOf are the HTTPRoutes naming a Gateway, shared with the cache:
// read-only (20,000 deep copies a reconcile would cost more than the rest).
func routesOf(ctx context.Context, c client.Reader, gw *gwv1.Gateway) ([]*gwv1.HTTPRoute, error) {
	var routes gwv1.HTTPRouteList
	if err := c.List(ctx, &routes, client.MatchingFields{indexRouteGateways: gw.Namespace + "/" + gw.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*gwv1.HTTPRoute, len(routes.Items))
	for i := range routes.Items {
		out[i] = &routes.Items[i]
	}
	return out, nil
}

// servedClass: the Gateway's class is one of the operator's.
func servedClass(ctx context.Context, c client.Reader, gw *gwv1.Gateway) (bool, error) {
	var gc gwv1.GatewayClass
	if err := c.Get(ctx, client.ObjectKey{Name: string(gw.Spec.GatewayClassName)}, &gc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return gc.Spec.ControllerName == gateway.ControllerName, nil
}

// farmOf names the WebFarm serving a Gateway, and whether the operator
// makes it (no parametersRef).
func farmOf(gw *gwv1.Gateway) (name string, own bool, problem string) {
	if gw.Spec.Infrastructure == nil || gw.Spec.Infrastructure.ParametersRef == nil {
		return ownFarmName(gw.Name), true, ""
	}
	ref := gw.Spec.Infrastructure.ParametersRef
	if string(ref.Group) != gateway.GroupWebFarm || string(ref.Kind) != gateway.KindWebFarm {
		return "", false, fmt.Sprintf("infrastructure.parametersRef names %s/%s: a farm's Gateway names a webfarm.dev WebFarm", ref.Group, ref.Kind)
	}
	return ref.Name, false, ""
}

// ownFarmName is the name of the farm the operator makes for a Gateway:
// the Gateway's, when it is a WebFarm name (a DNS label of at most 50
// characters: the farm's children add suffixes); else its first 41
// characters, dots made dashes, and a hash of the whole name.
func ownFarmName(gatewayName string) string {
	if len(gatewayName) <= 50 && farmNamePattern.MatchString(gatewayName) {
		return gatewayName
	}
	h := sha256.Sum256([]byte(gatewayName))
	prefix := strings.Trim(strings.ReplaceAll(gatewayName[:min(len(gatewayName), 41)], ".", "-"), "-")
	return prefix + "-" + hex.EncodeToString(h[:4])
}

var farmNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ensureOwnFarm makes the farm of a Gateway without parametersRef: a
// WebFarm named after it (ownFarmName), owned by it (deleted with it), serving HTTP on its
// first HTTP listener's port, its frontend as its class's template says;
// and keeps it so.
func (r *GatewayReconciler) ensureOwnFarm(ctx context.Context, gw *gwv1.Gateway) error {
	name, own, _ := farmOf(gw)
	if !own {
		return nil
	}
	var gc gwv1.GatewayClass
	if err := r.Client.Get(ctx, client.ObjectKey{Name: string(gw.Spec.GatewayClassName)}, &gc); err != nil {
		return client.IgnoreNotFound(err)
	}
	template, _, err := classTemplate(ctx, r.Client, &gc)
	if err != nil {
		return err
	}
	want := ownFarmSpec(gw, template)
	digest, err := specDigest(want)
	if err != nil {
		return err
	}
	var farm v1.WebFarm
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: name}, &farm)
	switch {
	case apierrors.IsNotFound(err):
		farm = v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: name,
			Labels:      map[string]string{vocabulary.LabelManagedBy: vocabulary.ManagedBy},
			Annotations: map[string]string{gatewayFarmSpecAnnotation: digest}}, Spec: want}
		if err := controllerutil.SetControllerReference(gw, &farm, r.Client.Scheme()); err != nil {
			return err
		}
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, &farm))
	case err != nil:
		return err
	case !metav1.IsControlledBy(&farm, gw):
		return nil // farmFacts reports it
	}
	// The API server fills in defaults, so the live spec is not the wanted
	// one: the digest of the wanted spec says whether it changed.
	if farm.Annotations[gatewayFarmSpecAnnotation] == digest {
		return nil
	}
	farm.Spec = want
	metav1.SetMetaDataAnnotation(&farm.ObjectMeta, gatewayFarmSpecAnnotation, digest)
	return r.Client.Update(ctx, &farm)
}

// gatewayFarmSpecAnnotation holds the digest of the spec the operator last
// gave a Gateway's own farm.
const gatewayFarmSpecAnnotation = "webfarm.dev/gateway-farm-spec"

func specDigest(spec v1.WebFarmSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))[:16], nil
}

// ownFarmSpec is the spec of the farm the operator makes for a Gateway:
// the template's frontend, affinity and refusal (its sites and TLS are its
// own), on the Gateway's HTTP and HTTPS ports.
func ownFarmSpec(gw *gwv1.Gateway, template *v1.WebFarm) v1.WebFarmSpec {
	var spec v1.WebFarmSpec
	if template != nil {
		spec.Frontend = *template.Spec.Frontend.DeepCopy()
		spec.Frontend.TLS = v1.FrontendTLS{}
		spec.SessionAffinity = *template.Spec.SessionAffinity.DeepCopy()
		spec.UnavailableResponse = template.Spec.UnavailableResponse
	}
	if i := slices.IndexFunc(gw.Spec.Listeners, func(l gwv1.Listener) bool { return l.Protocol == gwv1.HTTPProtocolType }); i >= 0 {
		spec.Frontend.Service.Port = gw.Spec.Listeners[i].Port
	}
	if i := slices.IndexFunc(gw.Spec.Listeners, func(l gwv1.Listener) bool { return l.Protocol == gwv1.HTTPSProtocolType }); i >= 0 {
		spec.Frontend.Service.HTTPSPort = gw.Spec.Listeners[i].Port
	}
	return spec
}

// gatewayInputs reads what the translation of a Gateway needs.
func gatewayInputs(ctx context.Context, c client.Reader, gw *gwv1.Gateway) (gateway.Inputs, error) {
	in := gateway.Inputs{Gateway: gw, NamespaceLabels: map[string]map[string]string{},
		SiteContents: map[types.NamespacedName]v1.SiteContentSpec{},
		Backends:     map[string]map[types.NamespacedName]gateway.Backend{gateway.KindService: {}, gateway.KindAppPool: {}}}
	farm, err := farmFacts(ctx, c, gw)
	if err != nil {
		return in, err
	}
	in.Farm = farm
	routes, err := routesOf(ctx, c, gw)
	if err != nil {
		return in, err
	}
	targets := map[string]bool{gw.Namespace: true}
	for _, r := range routes {
		in.Routes = append(in.Routes, r)
		for _, rule := range r.Spec.Rules {
			for _, ref := range gateway.ObjectRefs(rule) {
				ns := r.Namespace
				if ref.Namespace != nil {
					ns = string(*ref.Namespace)
				}
				targets[ns] = true
				if ref.Group == nil || *ref.Group == "" {
					if err := addService(ctx, c, in.Backends, types.NamespacedName{Namespace: ns, Name: string(ref.Name)}); err != nil {
						return in, err
					}
				}
			}
		}
		for _, name := range siteContentRefs(r) {
			if err := addSiteContent(ctx, c, in.SiteContents, types.NamespacedName{Namespace: r.Namespace, Name: name}); err != nil {
				return in, err
			}
		}
	}
	for _, l := range gw.Spec.Listeners {
		if l.TLS != nil && len(l.TLS.CertificateRefs) > 0 && l.TLS.CertificateRefs[0].Namespace != nil {
			targets[string(*l.TLS.CertificateRefs[0].Namespace)] = true
		}
	}
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return in, err
	}
	for _, ns := range namespaces.Items {
		in.NamespaceLabels[ns.Name] = ns.Labels
	}
	for ns := range targets {
		var grants gwv1.ReferenceGrantList
		if err := c.List(ctx, &grants, client.InNamespace(ns)); err != nil {
			return in, err
		}
		for i := range grants.Items {
			in.Grants = append(in.Grants, &grants.Items[i])
		}
	}
	var policies v1.CachePolicyList
	if err := c.List(ctx, &policies, client.InNamespace(gw.Namespace)); err != nil {
		return in, err
	}
	in.CachePolicies = map[string]bool{}
	for _, p := range policies.Items {
		in.CachePolicies[p.Name] = true
	}
	var pools v1.AppPoolList
	if err := c.List(ctx, &pools, client.InNamespace(gw.Namespace)); err != nil {
		return in, err
	}
	for _, p := range pools.Items {
		in.Backends[gateway.KindAppPool][types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = gateway.Backend{}
	}
	return in, nil
}

// addService records a Service a route names, if it exists.
func addService(ctx context.Context, c client.Reader, backends map[string]map[types.NamespacedName]gateway.Backend, key types.NamespacedName) error {
	if _, seen := backends[gateway.KindService][key]; seen {
		return nil
	}
	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil {
		return client.IgnoreNotFound(err)
	}
	b := gateway.Backend{}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		b.ClusterIP = svc.Spec.ClusterIP
	}
	for _, p := range svc.Spec.Ports {
		b.Ports = append(b.Ports, p.Port)
		if p.TargetPort.Type == intstr.Int {
			if b.TargetPorts == nil {
				b.TargetPorts = map[int32]int32{}
			}
			b.TargetPorts[p.Port] = cmp.Or(p.TargetPort.IntVal, p.Port)
		}
		if p.AppProtocol != nil && *p.AppProtocol == gateway.AppProtocolH2C {
			if b.H2CPorts == nil {
				b.H2CPorts = map[int32]bool{}
			}
			b.H2CPorts[p.Port] = true
		}
	}
	backends[gateway.KindService][key] = b
	return nil
}

// siteContentRefs are the SiteContents a route's rules name (ExtensionRef
// filters, of the route's namespace).
func siteContentRefs(r *gwv1.HTTPRoute) []string {
	var out []string
	for _, rule := range r.Spec.Rules {
		for _, f := range rule.Filters {
			if ref := f.ExtensionRef; f.Type == gwv1.HTTPRouteFilterExtensionRef && ref != nil &&
				string(ref.Group) == gateway.GroupWebFarm && string(ref.Kind) == gateway.KindSiteContent {
				out = append(out, string(ref.Name))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// addSiteContent records a SiteContent a route names, if it exists.
func addSiteContent(ctx context.Context, c client.Reader, contents map[types.NamespacedName]v1.SiteContentSpec, key types.NamespacedName) error {
	if _, seen := contents[key]; seen {
		return nil
	}
	var sc v1.SiteContent
	if err := c.Get(ctx, key, &sc); err != nil {
		return client.IgnoreNotFound(err)
	}
	contents[key] = sc.Spec
	return nil
}

// farmFacts is what the Gateway's farm tells the translation.
func farmFacts(ctx context.Context, c client.Reader, gw *gwv1.Gateway) (gateway.Farm, error) {
	name, _, problem := farmOf(gw)
	f := gateway.Farm{Name: name, Problem: problem}
	if problem != "" {
		return f, nil
	}
	var farm v1.WebFarm
	if err := c.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: name}, &farm); err != nil {
		if apierrors.IsNotFound(err) {
			f.Problem = fmt.Sprintf("WebFarm %s not found in namespace %s", name, gw.Namespace)
			return f, nil
		}
		return f, err
	}
	if _, own, _ := farmOf(gw); own && !metav1.IsControlledBy(&farm, gw) {
		f.Problem = fmt.Sprintf("WebFarm %s exists and is not this Gateway's: name it in infrastructure.parametersRef to serve the Gateway with it", name)
		return f, nil
	}
	f.HTTPPort = cmp.Or(farm.Spec.Frontend.Service.Port, 80)
	f.HTTPSPort = cmp.Or(farm.Spec.Frontend.Service.HTTPSPort, 443)
	for _, s := range farm.Spec.Sites {
		for _, h := range s.Hosts {
			f.Hosts = append(f.Hosts, string(h))
			if s.TLS.SecretName != "" {
				f.TLSHosts = append(f.TLSHosts, string(h))
			}
		}
		f.DefaultCertificate = f.DefaultCertificate || s.TLS.SecretName != ""
	}
	var svc corev1.Service
	err := c.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: vocabulary.FrontendName(name)}, &svc)
	if err != nil && !apierrors.IsNotFound(err) {
		return f, err
	}
	if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		f.Addresses = append(f.Addresses, svc.Spec.ClusterIP)
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			f.Addresses = append(f.Addresses, ing.IP)
		}
	}
	return f, nil
}

// writeGatewayStatus updates the Gateway's status when it changed,
// keeping each condition's transition time while its status holds.
func (r *GatewayReconciler) writeGatewayStatus(ctx context.Context, gw *gwv1.Gateway, want gwv1.GatewayStatus) error {
	before := gw.DeepCopy()
	gw.Status.Addresses = want.Addresses
	mergeConditions(&gw.Status.Conditions, want.Conditions)
	listeners := make([]gwv1.ListenerStatus, 0, len(want.Listeners))
	for _, l := range want.Listeners {
		i := slices.IndexFunc(gw.Status.Listeners, func(old gwv1.ListenerStatus) bool { return old.Name == l.Name })
		if i >= 0 {
			conds := gw.Status.Listeners[i].Conditions
			mergeConditions(&conds, l.Conditions)
			l.Conditions = conds
		} else {
			conds := []metav1.Condition{}
			mergeConditions(&conds, l.Conditions)
			l.Conditions = conds
		}
		if l.SupportedKinds == nil {
			l.SupportedKinds = []gwv1.RouteGroupKind{}
		}
		listeners = append(listeners, l)
	}
	gw.Status.Listeners = listeners
	if equality.Semantic.DeepEqual(before.Status, gw.Status) {
		return nil
	}
	// The operator alone writes a Gateway's status: no lock needed. A
	// Gateway deleted meanwhile has no status to write.
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, gw, client.MergeFrom(before)))
}

// mergeConditions sets each wanted condition, keeping the transition time
// of one whose status did not change, and drops the others.
func mergeConditions(conds *[]metav1.Condition, want []metav1.Condition) {
	for _, c := range want {
		meta.SetStatusCondition(conds, c)
	}
	*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool {
		return !slices.ContainsFunc(want, func(w metav1.Condition) bool { return w.Type == c.Type })
	})
}

// writeRouteStatuses sets, on each route, the parent statuses for this
// Gateway; those of other parents (and other controllers) stay. Only the
// routes whose status changes are written, several at once, as a client of
// the API server writes them (one Gateway is one work-queue key, so its
// 20,000 routes would otherwise be written one after another). The routes
// given are shared with the cache: a route is copied before it changes.
func (r *GatewayReconciler) writeRouteStatuses(ctx context.Context, gw *gwv1.Gateway, routes []*gwv1.HTTPRoute,
	parents map[types.NamespacedName][]gwv1.RouteParentStatus) error {
	writes, ctx := errgroup.WithContext(ctx)
	writes.SetLimit(max(r.StatusWriters, 1))
	for _, route := range routes {
		want := parents[types.NamespacedName{Namespace: route.Namespace, Name: route.Name}]
		if statusHolds(route, gw, want) {
			continue
		}
		status := routeStatus(route, gw, want)
		if equality.Semantic.DeepEqual(route.Status, status) {
			continue
		}
		writes.Go(func() error {
			changed := route.DeepCopy()
			changed.Status = status
			// Other controllers may write their own parents' entries: the
			// update is refused if the route changed since it was read, and
			// the reconcile runs again.
			if err := r.Client.Status().Update(ctx, changed); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		})
	}
	return writes.Wait()
}

// statusHolds: the route's status already says, for the Gateway, what is
// wanted. It reads without copying: most of a Gateway's 20,000 routes are
// up to date at each reconcile.
func statusHolds(route *gwv1.HTTPRoute, gw *gwv1.Gateway, want []gwv1.RouteParentStatus) bool {
	i := 0
	for _, p := range route.Status.Parents {
		if p.ControllerName != gateway.ControllerName || !parentNamesGateway(p.ParentRef, route.Namespace, gw) {
			continue
		}
		if i >= len(want) || !equality.Semantic.DeepEqual(p.ParentRef, want[i].ParentRef) || len(p.Conditions) != len(want[i].Conditions) {
			return false
		}
		for _, c := range want[i].Conditions {
			have := meta.FindStatusCondition(p.Conditions, c.Type)
			if have == nil || have.Status != c.Status || have.Reason != c.Reason || have.Message != c.Message ||
				have.ObservedGeneration != c.ObservedGeneration {
				return false
			}
		}
		i++
	}
	return i == len(want)
}

// routeStatus is a route's status with the parent statuses wanted for the
// Gateway, keeping each condition's transition time while its status holds;
// the entries of other parents (and other controllers) stay. The route is
// not changed.
func routeStatus(route *gwv1.HTTPRoute, gw *gwv1.Gateway, want []gwv1.RouteParentStatus) gwv1.HTTPRouteStatus {
	before := route.Status.Parents
	var kept []gwv1.RouteParentStatus
	for _, p := range before {
		if p.ControllerName == gateway.ControllerName && parentNamesGateway(p.ParentRef, route.Namespace, gw) {
			continue
		}
		kept = append(kept, *p.DeepCopy())
	}
	for _, p := range want {
		p = *p.DeepCopy()
		i := slices.IndexFunc(before, func(old gwv1.RouteParentStatus) bool {
			return old.ControllerName == p.ControllerName && equality.Semantic.DeepEqual(old.ParentRef, p.ParentRef)
		})
		conds := []metav1.Condition{}
		if i >= 0 {
			conds = slices.Clone(before[i].Conditions)
		}
		mergeConditions(&conds, p.Conditions)
		p.Conditions = conds
		kept = append(kept, p)
	}
	if kept == nil {
		kept = []gwv1.RouteParentStatus{}
	}
	status := *route.Status.DeepCopy()
	status.Parents = kept
	return status
}

// parentNamesGateway: a parentRef names the Gateway.
func parentNamesGateway(ref gwv1.ParentReference, routeNamespace string, gw *gwv1.Gateway) bool {
	ns := routeNamespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	kind := gateway.KindGateway
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	return kind == gateway.KindGateway && ns == gw.Namespace && string(ref.Name) == gw.Name
}

// gatewayServing is what a farm's Gateways give it to serve: their
// routes' sites and their HTTPS listeners.
type gatewayServing struct {
	sites     []model.Site
	listeners []model.TLSListener
}

// gatewaysServed is what the Gateways of the operator's classes that name
// the farm give it (nothing when none does). The sites are shared with the
// translations: read-only.
func gatewaysServed(ctx context.Context, c client.Reader, t *Translations, farm *v1.WebFarm) (gatewayServing, error) {
	var out gatewayServing
	gateways, err := gatewaysOfFarm(ctx, c, farm.Namespace, farm.Name)
	if err != nil {
		return out, err
	}
	for _, gw := range gateways {
		_, res, err := t.Translate(ctx, c, gw)
		if err != nil {
			return out, err
		}
		out.sites = append(out.sites, res.Sites...)
		out.listeners = append(out.listeners, res.TLSListeners...)
	}
	return out, nil
}

// gatewaysOfFarm lists the Gateways of the operator's classes in a
// namespace that the farm serves, oldest first.
func gatewaysOfFarm(ctx context.Context, c client.Reader, namespace, farm string) ([]*gwv1.Gateway, error) {
	var list gwv1.GatewayList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // Gateway API is not installed
		}
		return nil, err
	}
	var out []*gwv1.Gateway
	for i := range list.Items {
		gw := &list.Items[i]
		if name, _, problem := farmOf(gw); problem != "" || name != farm {
			continue
		}
		if ours, err := servedClass(ctx, c, gw); err != nil || !ours {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, gw)
	}
	slices.SortFunc(out, func(a, b *gwv1.Gateway) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return out, nil
}

// templateOf names a GatewayClass of the operator's whose parametersRef
// names the farm (empty: none).
func templateOf(ctx context.Context, c client.Reader, farm *v1.WebFarm) (string, error) {
	var classes gwv1.GatewayClassList
	if err := c.List(ctx, &classes); err != nil {
		return "", err
	}
	for _, gc := range classes.Items {
		ref := gc.Spec.ParametersRef
		if gc.Spec.ControllerName == gateway.ControllerName && ref != nil && string(ref.Group) == gateway.GroupWebFarm &&
			string(ref.Kind) == gateway.KindWebFarm && ref.Namespace != nil && string(*ref.Namespace) == farm.Namespace && ref.Name == farm.Name {
			return gc.Name, nil
		}
	}
	return "", nil
}

// SetupGatewayAPI registers the Gateway API indexes and the leader's
// GatewayClass and Gateway controllers; the Gateway controller shares the
// translations with the farms' controllers and reads the frontends'
// certificates from store.
func SetupGatewayAPI(mgr ctrl.Manager, opts ControllerOptions, translations *Translations, store *observations.Store) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &gwv1.HTTPRoute{}, indexRouteGateways, func(o client.Object) []string {
		r := o.(*gwv1.HTTPRoute)
		var out []string
		for _, p := range r.Spec.ParentRefs {
			ns := r.Namespace
			if p.Namespace != nil {
				ns = string(*p.Namespace)
			}
			if p.Kind == nil || *p.Kind == gateway.KindGateway {
				out = append(out, ns+"/"+string(p.Name))
			}
		}
		return out
	}); err != nil {
		return fmt.Errorf("indexing HTTPRoutes by Gateway: %w", err)
	}
	if err := idx.IndexField(ctx, &gwv1.HTTPRoute{}, indexRouteServices, func(o client.Object) []string {
		r := o.(*gwv1.HTTPRoute)
		var out []string
		for _, rule := range r.Spec.Rules {
			for _, ref := range gateway.ObjectRefs(rule) {
				ns := r.Namespace
				if ref.Namespace != nil {
					ns = string(*ref.Namespace)
				}
				out = append(out, ns+"/"+string(ref.Name))
			}
		}
		return out
	}); err != nil {
		return fmt.Errorf("indexing HTTPRoutes by backend: %w", err)
	}
	if err := idx.IndexField(ctx, &gwv1.HTTPRoute{}, indexRouteSiteContents, func(o client.Object) []string {
		var out []string
		for _, name := range siteContentRefs(o.(*gwv1.HTTPRoute)) {
			out = append(out, o.GetNamespace()+"/"+name)
		}
		return out
	}); err != nil {
		return fmt.Errorf("indexing HTTPRoutes by SiteContent: %w", err)
	}
	c := mgr.GetClient()
	allClasses := func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list gwv1.GatewayClassList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, gc := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: gc.Name}})
		}
		return out
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("gatewayclass").For(&gwv1.GatewayClass{}).
		Watches(&v1.WebFarm{}, handler.EnqueueRequestsFromMapFunc(allClasses)).
		WithOptions(opts.controller()).Complete(&GatewayClassReconciler{Client: c}); err != nil {
		return err
	}
	m := gatewayMapper{c}
	return ctrl.NewControllerManagedBy(mgr).Named("gateway").
		For(&gwv1.Gateway{}).
		Watches(&gwv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(m.allGateways)).
		Watches(&gwv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(m.gatewaysOfRoute), routeSpecChanged).
		Watches(&gwv1.ReferenceGrant{}, handler.EnqueueRequestsFromMapFunc(m.allGateways)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(m.allGateways)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(m.gatewaysOfService)).
		// A farm may be a GatewayClass's template: every Gateway may care.
		Watches(&v1.WebFarm{}, handler.EnqueueRequestsFromMapFunc(m.allGateways)).
		Watches(&v1.AppPool{}, handler.EnqueueRequestsFromMapFunc(m.gatewaysInNamespace)).
		Watches(&v1.CachePolicy{}, handler.EnqueueRequestsFromMapFunc(m.gatewaysInNamespace)).
		Watches(&v1.SiteContent{}, handler.EnqueueRequestsFromMapFunc(m.gatewaysOfSiteContent)).
		WithOptions(opts.controller()).
		Complete(&GatewayReconciler{Client: c, Translations: translations, StatusWriters: opts.MaxConcurrentReconciles, Observations: store})
}

// gatewayMapper maps the objects a Gateway's translation reads to the
// Gateways (requests) it concerns.
type gatewayMapper struct{ c client.Reader }

func (m gatewayMapper) list(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list gwv1.GatewayList
	if err := m.c.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, gw := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
	}
	return out
}

func (m gatewayMapper) allGateways(ctx context.Context, _ client.Object) []reconcile.Request {
	return m.list(ctx)
}

func (m gatewayMapper) gatewaysInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return m.list(ctx, client.InNamespace(o.GetNamespace()))
}

func (m gatewayMapper) gatewaysOfRoute(_ context.Context, o client.Object) []reconcile.Request {
	r := o.(*gwv1.HTTPRoute)
	var out []reconcile.Request
	for _, p := range r.Spec.ParentRefs {
		ns := r.Namespace
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: string(p.Name)}})
	}
	return out
}

// gatewaysOfService: the Gateways of the routes sending to a Service, and
// those of a farm's frontend Service (its address is the Gateway's).
func (m gatewayMapper) gatewaysOfService(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetLabels()[vocabulary.LabelComponent] == vocabulary.ComponentFrontend {
		return m.gatewaysInNamespace(ctx, o)
	}
	var routes gwv1.HTTPRouteList
	if err := m.c.List(ctx, &routes, client.MatchingFields{indexRouteServices: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range routes.Items {
		out = append(out, m.gatewaysOfRoute(ctx, &routes.Items[i])...)
	}
	return out
}

// gatewaysOfSiteContent: the Gateways of the routes naming a SiteContent
// (a change of it re-routes them, its deletion answers them 500).
func (m gatewayMapper) gatewaysOfSiteContent(ctx context.Context, o client.Object) []reconcile.Request {
	var routes gwv1.HTTPRouteList
	if err := m.c.List(ctx, &routes, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{indexRouteSiteContents: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range routes.Items {
		out = append(out, m.gatewaysOfRoute(ctx, &routes.Items[i])...)
	}
	return out
}

// watchFarmsOfGateways adds to a farm controller the watches of what a
// Gateway's translation reads (gatewayInputs), each mapped to the farms
// that serve the Gateways concerned: any change may change their sites.
func watchFarmsOfGateways(b *builder.Builder, c client.Reader) *builder.Builder {
	m := gatewayMapper{c}
	farms := func(gateways func(context.Context, client.Object) []reconcile.Request) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return m.farmsOf(ctx, gateways(ctx, o))
		})
	}
	// A deleted Gateway is read no more: its farm comes from the event.
	farmOfGateway := func(_ context.Context, o client.Object) []reconcile.Request {
		if name, _, problem := farmOf(o.(*gwv1.Gateway)); problem == "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		}
		return nil
	}
	return b.Watches(&gwv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(farmOfGateway)).
		Watches(&gwv1.GatewayClass{}, farms(m.allGateways)).
		Watches(&gwv1.HTTPRoute{}, farms(m.gatewaysOfRoute), routeSpecChanged).
		Watches(&gwv1.ReferenceGrant{}, farms(m.allGateways)).
		Watches(&corev1.Namespace{}, farms(m.allGateways)).
		Watches(&corev1.Service{}, farms(m.gatewaysOfService)).
		Watches(&v1.CachePolicy{}, farms(m.gatewaysInNamespace)).
		// A pool a route names before it exists is in no farm's index
		// (which reads the farm's status): its creation finds the farms
		// of its namespace's Gateways here.
		Watches(&v1.AppPool{}, farms(m.gatewaysInNamespace), existenceChanged).
		Watches(&v1.SiteContent{}, farms(m.gatewaysOfSiteContent))
}

// farmsOf maps Gateways to the farms that serve them.
func (m gatewayMapper) farmsOf(ctx context.Context, gateways []reconcile.Request) []reconcile.Request {
	var out []reconcile.Request
	for _, req := range gateways {
		var gw gwv1.Gateway
		if err := m.c.Get(ctx, req.NamespacedName, &gw); err != nil {
			continue
		}
		if name, _, problem := farmOf(&gw); problem == "" {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gw.Namespace, Name: name}})
		}
	}
	return out
}

// gatewayCachedPools are the cache tiers a Gateway's sites go through, each
// with its pool, sorted.
func gatewayCachedPools(sites []model.Site) []v1.CachedPool {
	var out []v1.CachedPool
	for _, s := range sites {
		for _, route := range s.Routes {
			if route.CachePolicy != "" && route.Pool != "" {
				out = append(out, v1.CachedPool{CachePolicy: route.CachePolicy, AppPool: route.Pool})
			}
		}
	}
	slices.SortFunc(out, func(a, b v1.CachedPool) int {
		return cmp.Or(cmp.Compare(a.CachePolicy, b.CachePolicy), cmp.Compare(a.AppPool, b.AppPool))
	})
	return slices.Compact(out)
}

// gatewayPools are the AppPools a Gateway's sites route to, sorted.
func gatewayPools(sites []model.Site) []string {
	var pools []string
	for _, s := range sites {
		for _, route := range s.Routes {
			if route.Pool != "" {
				pools = append(pools, route.Pool)
			}
			for _, b := range route.Backends {
				if b.Pool != "" {
					pools = append(pools, b.Pool)
				}
			}
		}
	}
	slices.Sort(pools)
	return slices.Compact(pools)
}
