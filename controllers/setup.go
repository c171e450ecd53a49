package controllers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/activator"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/collect/autoscaler"
	"webfarm.dev/operator/internal/collect/cachestats"
	"webfarm.dev/operator/internal/collect/certificates"
	"webfarm.dev/operator/internal/collect/cpumonitor"
	"webfarm.dev/operator/internal/collect/frontendstats"
	"webfarm.dev/operator/internal/collect/workermemory"
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
	// FrontendStatsInterval, when set, is how often the leader reads the
	// farms' Envoy frontends for the pools' queue figures.
	FrontendStatsInterval time.Duration
	// Prometheus, when set, is where the CPU monitor reads the pools' CPU
	// (the kubelet's cAdvisor counters), every CPUMonitorInterval.
	Prometheus         promv1.API
	CPUMonitorInterval time.Duration
	// Autoscale configures the autoscaler of pools with spec.autoscaling
	// (it runs when Prometheus is set).
	Autoscale autoscaler.Options
	// ActivatorAddress, when set (and the platform has an activator port),
	// is where the activator listens for requests to pools that start on
	// demand.
	ActivatorAddress string
}

func (o ControllerOptions) controller() controller.Options {
	return controller.Options{MaxConcurrentReconciles: max(1, o.MaxConcurrentReconciles)}
}

// Field indexes on WebFarms, so that a pool or policy finds the farms that use it.
const (
	indexFarmPools    = "spec.appPools"
	indexFarmPolicies = "spec.cachePolicies"
)

// CacheOptions are the operator's cache: only the objects it generates (a
// cluster's other ConfigMaps, Services and Deployments never fill its
// memory), and, when namespaces are given, only theirs (the chart then
// grants the operator's rules in those namespaces alone).
func CacheOptions(namespaces []string) cache.Options {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{vocabulary.LabelManagedBy: vocabulary.ManagedBy})}
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:            managed,
		&corev1.ConfigMap{}:             managed,
		&corev1.Service{}:               managed,
		&corev1.ServiceAccount{}:        managed,
		&policyv1.PodDisruptionBudget{}: managed,
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

// The metrics endpoint checks each scraper's token and its right to the path.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupAll registers the field indexes and the controllers with a manager:
// one per kind, and the routing controller when opts.XDS is set.
func SetupAll(mgr ctrl.Manager, platform model.Platform, opts ControllerOptions) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1.WebFarm{}, indexFarmPools, func(o client.Object) []string {
		return referencedNames(o.(*v1.WebFarm), func(r v1.Route) v1.ObjectName { return r.AppPool })
	}); err != nil {
		return fmt.Errorf("indexing farms by pool: %w", err)
	}
	if err := idx.IndexField(ctx, &v1.WebFarm{}, indexFarmPolicies, func(o client.Object) []string {
		return referencedNames(o.(*v1.WebFarm), func(r v1.Route) v1.ObjectName { return r.CachePolicy })
	}); err != nil {
		return fmt.Errorf("indexing farms by cache policy: %w", err)
	}
	c, recorder := mgr.GetClient(), mgr.GetEventRecorder("webfarm-operator")
	applier := &apply.Applier{Client: c}
	// What the collectors see, and how they tell the reconcilers.
	store := &observations.Store{}
	notifiers := collectorNotifiers{farms: &observations.Notifier{}, pools: &observations.Notifier{}, policies: &observations.Notifier{}}
	if err := (&WebFarmReconciler{Client: c, Applier: applier, Platform: platform, Recorder: recorder,
		Observations: store, Notifier: notifiers.farms}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	if err := (&AppPoolReconciler{Client: c, APIReader: mgr.GetAPIReader(), Applier: applier, Platform: platform, Recorder: recorder,
		Observations: store, ActivityWatched: opts.FrontendStatsInterval > 0, Notifier: notifiers.pools,
		Clock: opts.Clock}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	if err := (&CachePolicyReconciler{Client: c, APIReader: mgr.GetAPIReader(), Applier: applier, Platform: platform, Recorder: recorder,
		Agents:       cacheadmin.Client{HTTP: &http.Client{Timeout: 5 * time.Second}, Port: vocabulary.AgentAdminPort},
		Observations: store, Notifier: notifiers.policies, Clock: opts.Clock}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	if opts.ActivatorAddress != "" && platform.ActivatorPort > 0 {
		coldStart := func(namespace, pool string, took time.Duration) {
			poolColdStart.WithLabelValues(namespace, pool).Observe(took.Seconds())
		}
		if err := mgr.Add(activator.NewServer(opts.ActivatorAddress, c, platform.ActivationTimeout, coldStart)); err != nil {
			return err
		}
	}
	if err := addCollectors(mgr, platform, opts, store, notifiers); err != nil {
		return err
	}
	if opts.XDS == nil {
		return nil
	}
	return (&RoutingReconciler{Client: c, Platform: platform, XDS: opts.XDS, Clock: opts.Clock}).SetupWithManager(mgr, opts)
}

// collectorNotifiers wake the reconcilers of each kind.
type collectorNotifiers struct{ farms, pools, policies *observations.Notifier }

// addCollectors adds the leader-only collectors the options ask for: they
// write into store and notify the farms', pools' and policies' reconcilers.
func addCollectors(mgr ctrl.Manager, platform model.Platform, opts ControllerOptions, store *observations.Store, n collectorNotifiers) error {
	c := mgr.GetClient()
	var collectors []manager.Runnable
	if opts.Prometheus != nil {
		interval := max(time.Second, opts.CPUMonitorInterval)
		scaler, err := autoscaler.New(opts.Autoscale, c, opts.Prometheus, indexFarmPools, store, n.pools)
		if err != nil {
			return err
		}
		collectors = append(collectors,
			&cpumonitor.CPUMonitor{Client: c, Prometheus: opts.Prometheus, Interval: interval, Observations: store, Pools: n.pools},
			&workermemory.WorkerMemory{Client: c, Prometheus: opts.Prometheus, Interval: interval, Observations: store},
			scaler)
	}
	if opts.FrontendStatsInterval > 0 {
		collectors = append(collectors,
			&frontendstats.FrontendStats{Client: c, Interval: opts.FrontendStatsInterval, HTTP: &http.Client{Timeout: 2 * time.Second},
				Observations: store, Pools: n.pools},
			// The cache tiers' counters, read as often; their status changes less often.
			&cachestats.CacheStats{Client: c, Interval: opts.FrontendStatsInterval, StatusInterval: cachestats.StatusInterval,
				Agents:       cacheadmin.Client{HTTP: &http.Client{Timeout: 2 * time.Second}, Port: vocabulary.AgentAdminPort},
				Observations: store, Policies: n.policies},
			// What each frontend made of the HTTPS sites' certificates.
			&certificates.Certificates{Client: c, Platform: platform, Interval: opts.FrontendStatsInterval,
				HTTP: &http.Client{Timeout: 2 * time.Second}, Observations: store, Farms: n.farms})
	}
	for _, r := range collectors {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return nil
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
