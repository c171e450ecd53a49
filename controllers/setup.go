package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/activator"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/internal/xds"
)

// ControllerOptions tune every controller.
type ControllerOptions struct {
	// MaxConcurrentReconciles per controller; several farms, pools and
	// policies converge in parallel.
	MaxConcurrentReconciles int
	// Clock tells every reconciler the time (nil: the real clock).
	Clock clock.PassiveClock
	// XDS, when set, receives each farm's routing (the routing controller).
	XDS *xds.Server
	// GatewayAPI: the cluster has Gateway API's CRDs, so farms serve the
	// Gateways of the operator's GatewayClasses (see GatewayAPIInstalled).
	GatewayAPI bool
	// ActivityWatched: a collector reads the frontends' statistics, so the
	// observations know each pool's activity (idle timeout, on-demand start).
	ActivityWatched bool
	// ActivatorAddress, when set (and the platform has an activator port),
	// is where the activator listens for requests to pools that start on
	// demand.
	ActivatorAddress string
	// DefaultNodeMHz is the clock rate of a node without
	// vocabulary.NodeMHzLabel (0: vocabulary.DefaultNodeMHz): the frontends
	// weigh a pool's workers by their nodes' clocks.
	DefaultNodeMHz float64
	// Identity, when set, issues the farms' control identities; the
	// activator then asks each frontend for its farm's certificate.
	Identity *identity.Authority
}

func (o ControllerOptions) controller() controller.Options {
	return controller.Options{MaxConcurrentReconciles: max(1, o.MaxConcurrentReconciles)}
}

// Field indexes on WebFarms, so that a pool or policy finds the farms that
// use it (the autoscaler lists a pool's farms by IndexFarmPools).
const (
	IndexFarmPools    = "spec.appPools"
	indexFarmPolicies = "spec.cachePolicies"
)

// CacheOptions are the operator's cache: only the objects it generates (a
// cluster's other ConfigMaps, Deployments and pods never fill its memory),
// but every Service (a Gateway API route may send to any), and, when
// namespaces are given, only theirs (the chart then grants the operator's
// rules in those namespaces alone).
func CacheOptions(namespaces []string) cache.Options {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{vocabulary.LabelManagedBy: vocabulary.ManagedBy})}
	o := cache.Options{
		DefaultTransform: withoutRouteManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:            managed,
			&corev1.ConfigMap{}:             managed,
			&corev1.ServiceAccount{}:        managed,
			&policyv1.PodDisruptionBudget{}: managed,
			&networkingv1.NetworkPolicy{}:   managed,
			// EndpointSlices carry their Service's labels.
			&discoveryv1.EndpointSlice{}: managed,
			// Worker pods carry their pod template's labels (rapid-fail protection).
			&corev1.Pod{}: managed,
		}}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// withoutRouteManagedFields drops the managedFields of HTTPRoutes before
// they are cached: the operator never applies routes (its applier reads the
// managedFields of what it applies), and they are about half of a small
// object: with 20,000 routes, memory. A transform of every informer, not of
// HTTPRoutes' alone: that would need Gateway API installed to start.
func withoutRouteManagedFields(o any) (any, error) {
	if r, ok := o.(*gwv1.HTTPRoute); ok {
		r.SetManagedFields(nil)
	}
	return o, nil
}

// The metrics endpoint checks each scraper's token and its right to the path.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Observations are what the collectors see, and how they wake the
// reconcilers of each kind.
type Observations struct {
	Store                  *observations.Store
	Farms, Pools, Policies *observations.Notifier
}

// SetupAll registers the field indexes and the controllers with a manager:
// one per kind, and the routing controller when opts.XDS is set. The farm,
// pool and routing controllers share models, resolved with the operator's
// platform; whoever assembles the manager (internal/operator) hands the same
// models to the collectors that feed the observations SetupAll returns.
func SetupAll(mgr ctrl.Manager, models *model.Models, opts ControllerOptions) (Observations, error) {
	var none Observations
	platform := models.Platform()
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1.WebFarm{}, IndexFarmPools, func(o client.Object) []string {
		f := o.(*v1.WebFarm)
		// With the pools its Gateways' routes send to, as its status says.
		names := referencedNames(f, func(r v1.Route) v1.ObjectName { return r.AppPool })
		return slices.Compact(slices.Sorted(slices.Values(append(names, f.Status.GatewayAppPools...))))
	}); err != nil {
		return none, fmt.Errorf("indexing farms by pool: %w", err)
	}
	if err := idx.IndexField(ctx, &v1.WebFarm{}, indexFarmPolicies, func(o client.Object) []string {
		f := o.(*v1.WebFarm)
		names := referencedNames(f, func(r v1.Route) v1.ObjectName { return r.CachePolicy })
		for _, c := range f.Status.GatewayCachedPools {
			names = append(names, c.CachePolicy)
		}
		return slices.Compact(slices.Sorted(slices.Values(names)))
	}); err != nil {
		return none, fmt.Errorf("indexing farms by cache policy: %w", err)
	}
	c, recorder := mgr.GetClient(), mgr.GetEventRecorder("webfarm-operator")
	applier := &apply.Applier{Client: c}
	o := Observations{Store: &observations.Store{}, Farms: &observations.Notifier{}, Pools: &observations.Notifier{}, Policies: &observations.Notifier{}}
	translations := &Translations{}
	if err := (&WebFarmReconciler{Client: c, Applier: applier, Models: models, Recorder: recorder, GatewayAPI: opts.GatewayAPI, Translations: translations,
		Observations: o.Store, Notifier: o.Farms, XDS: opts.XDS, Identity: opts.Identity, Clock: opts.Clock}).SetupWithManager(mgr, opts); err != nil {
		return none, err
	}
	if err := (&AppPoolReconciler{Client: c, APIReader: mgr.GetAPIReader(), Applier: applier, Models: models, Recorder: recorder,
		Observations: o.Store, ActivityWatched: opts.ActivityWatched, Notifier: o.Pools,
		Clock: opts.Clock}).SetupWithManager(mgr, opts); err != nil {
		return none, err
	}
	if err := (&CachePolicyReconciler{Client: c, APIReader: mgr.GetAPIReader(), Applier: applier, Platform: platform, Recorder: recorder,
		Agents:       cacheadmin.Client{HTTP: &http.Client{Timeout: 5 * time.Second}, Port: vocabulary.AgentAdminPort},
		Observations: o.Store, Notifier: o.Policies, Clock: opts.Clock}).SetupWithManager(mgr, opts); err != nil {
		return none, err
	}
	if opts.ActivatorAddress != "" && platform.ActivatorPort > 0 {
		coldStart := func(namespace, pool string, took time.Duration) {
			poolColdStart.WithLabelValues(namespace, pool).Observe(took.Seconds())
		}
		var tlsConfig *tls.Config
		if opts.Identity != nil {
			tlsConfig = opts.Identity.ServerTLS()
		}
		if err := mgr.Add(activator.NewServer(c, activator.ServerOptions{Address: opts.ActivatorAddress, Timeout: platform.ActivationTimeout,
			ColdStart: coldStart, TLS: tlsConfig, FarmPoolsIndex: IndexFarmPools})); err != nil {
			return none, err
		}
	}
	if opts.GatewayAPI {
		if err := SetupGatewayAPI(mgr, opts, translations, o.Store); err != nil {
			return none, err
		}
	}
	if opts.XDS != nil {
		if err := (&RoutingReconciler{GatewayAPI: opts.GatewayAPI, Translations: translations, Client: c, Models: models, XDS: opts.XDS, Clock: opts.Clock,
			DefaultNodeMHz: opts.DefaultNodeMHz}).SetupWithManager(mgr, opts); err != nil {
			return none, err
		}
	}
	return o, nil
}

// GatewayAPIInstalled: the API server serves Gateway API's Gateways and
// HTTPRoutes (v1). Without them the operator serves inline sites alone;
// it looks once, at its start.
func GatewayAPIInstalled(mapper meta.RESTMapper) bool {
	for _, kind := range []string{"Gateway", "HTTPRoute", "GatewayClass", "ReferenceGrant"} {
		if _, err := mapper.RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: kind}, gwv1.GroupVersion.Version); err != nil {
			return false
		}
	}
	return true
}

// referencedNames lists the distinct non-empty names a farm's routes give.
func referencedNames(f *v1.WebFarm, name func(v1.Route) v1.ObjectName) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range f.Spec.Sites {
		for _, r := range s.Routes {
			if n := string(name(r)); n != "" && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}
