// Package operator assembles the operator on a manager: the controllers,
// and the leader-only collectors that feed their observations. The
// controllers import no collector; this is where the two meet, for the
// operator's binary (cmd/manager) and for the tests that run it whole.
package operator

import (
	"cmp"
	"net/http"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/collect/autoscaler"
	"webfarm.dev/operator/internal/collect/cachestats"
	"webfarm.dev/operator/internal/collect/certificates"
	"webfarm.dev/operator/internal/collect/cpumonitor"
	"webfarm.dev/operator/internal/collect/frontendstats"
	"webfarm.dev/operator/internal/collect/workermemory"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Options tune the controllers and say which collectors run.
type Options struct {
	Controllers controllers.ControllerOptions
	// FrontendStatsInterval, when set, is how often the leader reads the
	// farms' Envoy frontends for the pools' queue figures and the
	// configuration each frontend runs (and the cache
	// tiers' counters and the frontends' certificates as often).
	FrontendStatsInterval time.Duration
	// Prometheus, when set, is where the CPU monitor reads the pools' CPU
	// (the kubelet's cAdvisor counters), every CPUMonitorInterval.
	Prometheus         promv1.API
	CPUMonitorInterval time.Duration
	// Autoscale configures the autoscaler of pools with spec.autoscaling
	// (it runs when Prometheus is set).
	Autoscale autoscaler.Options
}

// Setup registers the controllers and the collectors the options ask for
// with a manager. They share one store of models resolved with the
// platform: the collectors measure the pools and farms the reconcilers
// render.
func Setup(mgr ctrl.Manager, platform model.Platform, opts Options) error {
	opts.Controllers.ActivityWatched = opts.FrontendStatsInterval > 0
	// The frontends weigh the workers at the clock rates the autoscaler counts them at.
	opts.Controllers.DefaultNodeMHz = cmp.Or(opts.Controllers.DefaultNodeMHz, opts.Autoscale.DefaultNodeMHz)
	opts.Controllers.GatewayAPI = controllers.GatewayAPIInstalled(mgr.GetRESTMapper())
	if !opts.Controllers.GatewayAPI {
		ctrl.Log.Info("Gateway API's CRDs are not installed: farms serve their inline sites alone (restart the operator after installing them)")
	}
	models := model.NewModels(platform)
	o, err := controllers.SetupAll(mgr, models, opts.Controllers)
	if err != nil {
		return err
	}
	return addCollectors(mgr, models, opts, o)
}

// addCollectors adds the leader-only collectors the options ask for: they
// read the reconcilers' models, write into the observations' store and
// notify the farms', pools' and policies' reconcilers.
func addCollectors(mgr ctrl.Manager, models *model.Models, opts Options, o controllers.Observations) error {
	c := mgr.GetClient()
	var collectors []manager.Runnable
	if opts.Prometheus != nil {
		interval := max(time.Second, opts.CPUMonitorInterval)
		scaler, err := autoscaler.New(opts.Autoscale, c, opts.Prometheus, controllers.IndexFarmPools, o.Store, o.Pools)
		if err != nil {
			return err
		}
		scaler.Models, scaler.Farms = models, o.Farms
		collectors = append(collectors,
			&cpumonitor.CPUMonitor{Client: c, Prometheus: opts.Prometheus, Interval: interval, Observations: o.Store, Pools: o.Pools, Models: models},
			&workermemory.WorkerMemory{Client: c, Prometheus: opts.Prometheus, Interval: interval, Observations: o.Store},
			scaler)
	}
	if opts.FrontendStatsInterval > 0 {
		collectors = append(collectors,
			&frontendstats.FrontendStats{Client: c, Interval: opts.FrontendStatsInterval, HTTP: &http.Client{Timeout: 2 * time.Second},
				Observations: o.Store, Pools: o.Pools, Farms: o.Farms},
			// The cache tiers' counters, read as often; their status changes less often.
			&cachestats.CacheStats{Client: c, Interval: opts.FrontendStatsInterval, StatusInterval: cachestats.StatusInterval,
				Agents:       cacheadmin.Client{HTTP: &http.Client{Timeout: 2 * time.Second}, Port: vocabulary.AgentAdminPort},
				Observations: o.Store, Policies: o.Policies},
			// What each frontend made of the HTTPS sites' certificates.
			&certificates.Certificates{Client: c, Models: models, Interval: opts.FrontendStatsInterval,
				HTTP: &http.Client{Timeout: 2 * time.Second}, Observations: o.Store, Farms: o.Farms})
	}
	for _, r := range collectors {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return nil
}
