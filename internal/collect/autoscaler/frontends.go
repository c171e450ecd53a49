package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/capacity"
	"webfarm.dev/operator/internal/collect/prometheus"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Default Prometheus queries of the farms' frontends, Go templates given
// the farm's .Namespace and .Farm (and an empty .Pool), one series per pod
// labelled "pod": the requests/s of the HTTP connection managers that serve
// the farm's sites ("farm" in clear text, "farm_https" over TLS; the status
// listener's probes and scrapes are not the farm's load), and those over
// TLS alone.
const (
	DefaultFrontendRequestsQuery      = `sum by (pod) (rate(envoy_http_downstream_rq_total{namespace="{{.Namespace}}",envoy_http_conn_manager_prefix=~"farm|farm_https"}[1m]))`
	DefaultFrontendHTTPSRequestsQuery = `sum by (pod) (rate(envoy_http_downstream_rq_total{namespace="{{.Namespace}}",envoy_http_conn_manager_prefix="farm_https"}[1m]))`
)

// frontendGauges are the metrics of the farms' frontends' reports.
var frontendGauges = capacityGauges{
	recommended: metrics.FarmGauge("webfarm_frontend_recommended_replicas",
		"Frontends the farm's load needs from the latest measurement (frontend.autoscaling follows it; without, a report)."),
	megacyclesPerRequest: metrics.FarmGauge("webfarm_frontend_megacycles_per_request",
		"CPU cycles per request of the farm's frontends, in millions (their CPU at their nodes' clock rates over their requests/s)."),
	requiredMHz: metrics.FarmGauge("webfarm_frontend_required_mhz",
		"Cycles per second, in millions, the farm's frontends' load needs at the target CPU utilisation."),
	unavailable: metrics.FarmGauge("webfarm_frontend_metrics_unavailable",
		"1 while the autoscaler cannot measure the farm's frontends."),
}

// errNoFrontendMeasured: no ready frontend has both its figures, so the
// farm's load is unknown (not zero).
var errNoFrontendMeasured = errors.New("no frontend has both its requests and CPU measured")

// measureFrontends reports the capacity of every farm with ready
// frontends (a GatewayClass's template farm runs none), as it does a pool
// of fixed size's; noAnswer is the error of a Prometheus that did not
// answer the pools' queries of this sweep.
func (a *Autoscaler) measureFrontends(ctx context.Context, noAnswer error) {
	log := ctrl.LoggerFrom(ctx).WithName("autoscaler")
	var farms v1.WebFarmList
	if err := a.Client.List(ctx, &farms); err != nil {
		log.Error(err, "listing farms")
		return
	}
	if a.frontends == nil {
		a.frontends = map[types.NamespacedName]*autoscale.State{}
	}
	seen := map[types.NamespacedName]bool{}
	for i := range farms.Items {
		f := &farms.Items[i]
		key := client.ObjectKeyFromObject(f)
		resolved, err := a.Models.Farm(f)
		if err != nil {
			continue // its reconciler reports the invalid spec
		}
		pods, err := a.readyPods(ctx, f.Namespace, map[string]string{vocabulary.LabelComponent: vocabulary.ComponentFrontend, vocabulary.LabelInstance: f.Name})
		if err != nil {
			log.Info("reading a farm's frontends", "farm", key.String(), "error", err.Error())
			continue
		}
		if len(pods) == 0 {
			continue
		}
		seen[key] = true
		state := a.frontends[key]
		if state == nil {
			state = &autoscale.State{}
			a.frontends[key] = state
		}
		obs, https := autoscale.Observation{At: time.Now(), Err: noAnswer}, (*float64)(nil)
		if noAnswer == nil {
			obs, https = a.observeFrontends(ctx, f, pods)
		}
		if errors.Is(obs.Err, prometheus.ErrNoAnswer) {
			noAnswer = obs.Err
		}
		fe := resolved.Frontend
		current := fe.Replicas
		if fe.Autoscaling != nil {
			if current, err = a.deploymentReplicas(ctx, types.NamespacedName{Namespace: f.Namespace, Name: vocabulary.FrontendName(f.Name)}); err != nil {
				log.Info("reading a farm's frontends", "farm", key.String(), "error", err.Error())
				continue
			}
		}
		d := plan(state, frontendPolicy(fe, a.DefaultMHz), fe.Autoscaling != nil, current, obs)
		frontendGauges.record(key, d)
		if a.Observations.SetFrontendScale(key, d, https, obs.At) || d.Scaled {
			a.Farms.Notify(key)
		}
	}
	for key := range a.frontends {
		if !seen[key] {
			delete(a.frontends, key)
			a.Observations.ForgetFrontendScale(key)
			metrics.ForgetFarm(key.Namespace, key.Name)
		}
	}
}

// frontendPolicy is the capacity policy of a farm's frontends: their
// frontend.autoscaling, by a pool's rules (the same lead for a rising
// load), or, without it, the report's, as for a pool of fixed size (see
// reportPolicy): their measured load at the API's default target
// utilisation, over every count frontend.replicas allows.
func frontendPolicy(fe model.Frontend, defaultMHz float64) autoscale.Policy {
	p := autoscale.Policy{
		MinReplicas:       1,
		MaxReplicas:       model.MaxFrontendReplicas,
		TargetUtilization: float64(v1.DefaultTargetCPUPercent) / 100,
		ReplicaCores:      float64(fe.CPUMilli) / 1000,
		DefaultMHz:        defaultMHz,
		Replicas:          "frontends",
	}
	if a := fe.Autoscaling; a != nil {
		p.MinReplicas, p.MaxReplicas = a.MinReplicas, a.MaxReplicas
		p.TargetUtilization, p.StabilizationWindow = a.TargetUtilization, a.StabilizationWindow
		p.ScaleUpLead = scaleUpLead
	}
	return p
}

// observeFrontends measures a farm's ready frontends now: their requests/s
// and CPU at their nodes' clock rates, and the requests/s they served over
// TLS (nil: not told apart). A frontend counts only with both its figures:
// its requests without its cycles would understate the cost per request,
// its cycles without its requests overstate it; a frontend left out makes
// the observation incomplete, its load understated, as a pool's is. A
// failed or empty query is an error (unknown, never zero), and so is a farm
// none of whose frontends was measured.
func (a *Autoscaler) observeFrontends(ctx context.Context, f *v1.WebFarm, pods []corev1.Pod) (autoscale.Observation, *float64) {
	o := autoscale.Observation{At: time.Now(), Complete: true}
	vars := queryVars{Namespace: f.Namespace, Farm: f.Name}
	requests, err := a.queryByPod(ctx, a.FrontendRequestsQuery, vars)
	if err != nil {
		o.Err = fmt.Errorf("frontend requests: %w", err)
		return o, nil
	}
	cores, err := a.queryByPod(ctx, a.CPUQuery, vars)
	if err != nil {
		o.Err = fmt.Errorf("frontend CPU: %w", err)
		return o, nil
	}
	// Not told apart is no error: a farm without HTTPS sites has no series.
	overTLS, tlsErr := a.queryByPod(ctx, a.FrontendHTTPSRequestsQuery, vars)
	if errors.Is(tlsErr, prometheus.ErrNoAnswer) {
		o.Err = fmt.Errorf("frontend HTTPS requests: %w", tlsErr)
		return o, nil
	}
	var https float64
	allHTTPS := tlsErr == nil
	for _, pod := range pods {
		r, hasRequests := requests[pod.Name]
		c, hasCores := cores[pod.Name]
		if !hasRequests || !hasCores {
			o.Complete = false
			continue
		}
		o.RequestsPerSecond += r
		o.Workers = append(o.Workers, capacity.Worker{Cores: c, MHz: a.nodeMHz(ctx, pod.Spec.NodeName)})
		t, ok := overTLS[pod.Name]
		https += t
		allHTTPS = allHTTPS && ok
	}
	if len(o.Workers) == 0 {
		o.Err = errNoFrontendMeasured
		return o, nil
	}
	if !allHTTPS {
		return o, nil
	}
	return o, &https
}
