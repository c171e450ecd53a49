package controllers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/xds"
)

// ControllerOptions tune every controller.
type ControllerOptions struct {
	// MaxConcurrentReconciles per controller; several farms, pools and
	// policies converge in parallel.
	MaxConcurrentReconciles int
	// XDS, when set, receives each farm's routing (the routing controller).
	XDS *xds.Server
	// FrontendStatsInterval, when set, is how often the leader reads the
	// farms' Envoy frontends for the pools' queue figures.
	FrontendStatsInterval time.Duration
	// Prometheus, when set, is where the CPU monitor reads the pools' CPU
	// (the kubelet's cAdvisor counters), every CPUMonitorInterval.
	Prometheus         promv1.API
	CPUMonitorInterval time.Duration
}

func (o ControllerOptions) controller() controller.Options {
	return controller.Options{MaxConcurrentReconciles: max(1, o.MaxConcurrentReconciles)}
}

// Field indexes on WebFarms, so that a pool or policy finds the farms that use it.
const (
	indexFarmPools    = "spec.appPools"
	indexFarmPolicies = "spec.cachePolicies"
)

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
	if err := (&WebFarmReconciler{Client: c, Applier: applier, Platform: platform, Recorder: recorder}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	failures, readings, poolEvents := &health.Log{}, &cpu.Tracker{}, make(chan event.GenericEvent, 64)
	if err := (&AppPoolReconciler{Client: c, Applier: applier, Platform: platform, Recorder: recorder,
		Failures: failures, CPU: readings, Events: poolEvents}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	if opts.Prometheus != nil {
		monitor := &CPUMonitor{Client: c, Prometheus: opts.Prometheus, Interval: max(time.Second, opts.CPUMonitorInterval),
			Readings: readings, Pools: poolEvents}
		if err := mgr.Add(monitor); err != nil {
			return err
		}
	}
	if err := (&CachePolicyReconciler{Client: c, Applier: applier, Platform: platform, Recorder: recorder}).SetupWithManager(mgr, opts); err != nil {
		return err
	}
	if opts.FrontendStatsInterval > 0 {
		stats := &FrontendStats{Client: c, Interval: opts.FrontendStatsInterval, HTTP: &http.Client{Timeout: 2 * time.Second},
			Failures: failures, Pools: poolEvents}
		if err := mgr.Add(stats); err != nil {
			return err
		}
	}
	if opts.XDS == nil {
		return nil
	}
	return (&RoutingReconciler{Client: c, Platform: platform, XDS: opts.XDS}).SetupWithManager(mgr, opts)
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
