// Package autoscaler measures every running pool from Prometheus and plans
// its capacity with internal/autoscale: it decides an autoscaled pool's
// workers, and reports what a pool of fixed size needs without changing it.
// It stores the decision in the observations for the AppPool reconciler, the
// one writer of the pool's Deployment.
package autoscaler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"text/template"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promclient "github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/capacity"
	"webfarm.dev/operator/internal/collect"
	"webfarm.dev/operator/internal/collect/prometheus"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// Default Prometheus queries of the autoscaler. Each is a Go template given
// the pool's .Namespace and .Pool (DNS labels: nothing in them needs
// escaping) and must return one series per pod, labelled "pod": requests/s
// per frontend pod from Envoy's per-cluster counters, and CPU cores per
// worker pod from the kubelets' cAdvisor counters. The CPU query measures
// the farms' frontends too, given their .Namespace and .Farm (and an empty
// .Pool).
const (
	DefaultRequestsQuery = `sum by (pod) (rate(envoy_cluster_upstream_rq_total{namespace="{{.Namespace}}",envoy_cluster_name="pool/{{.Pool}}"}[1m]))`
	DefaultCPUQuery      = `sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="{{.Namespace}}",container!="",container!="POD"}[1m]))`
)

// DefaultNodeMHz is the clock rate assumed for a node that does not label
// its own.
const DefaultNodeMHz = vocabulary.DefaultNodeMHz

var (
	poolRecommendedReplicas = metrics.PoolGauge("webfarm_pool_autoscale_recommended_replicas",
		"Workers the autoscaler recommends for the pool from its latest measurement (for a pool of fixed size, a report).")
	poolMegacyclesPerRequest = metrics.PoolGauge("webfarm_pool_megacycles_per_request",
		"CPU cycles per request of the pool, in millions (its workers' CPU at their nodes' clock rates over its requests/s).")
	poolRequiredMHz = metrics.PoolGauge("webfarm_pool_required_mhz",
		"Cycles per second, in millions, the pool's load needs at its target CPU utilisation.")
	poolMetricsUnavailable = metrics.PoolGauge("webfarm_pool_autoscale_metrics_unavailable",
		"1 while the autoscaler cannot measure the pool (an autoscaled pool's replicas hold).")
)

// Options are the autoscaler's settings.
type Options struct {
	// Interval between measurements (the HPA's sync period is 15 s).
	Interval time.Duration
	// RequestsQuery and CPUQuery are Prometheus query templates; empty: the defaults.
	RequestsQuery, CPUQuery string
	// FrontendRequestsQuery and FrontendHTTPSRequestsQuery are the
	// frontends' query templates; empty: the defaults.
	FrontendRequestsQuery, FrontendHTTPSRequestsQuery string
	// DefaultNodeMHz is the clock rate of a node without the vocabulary.NodeMHzLabel
	// (0: DefaultNodeMHz).
	DefaultNodeMHz float64
}

// Autoscaler measures the running pools every Interval. Leader only.
type Autoscaler struct {
	Client     client.Client
	Prometheus promv1.API
	Interval   time.Duration
	// RequestsQuery and CPUQuery are templates (see DefaultRequestsQuery),
	// and so are the frontends' (see DefaultFrontendRequestsQuery).
	RequestsQuery, CPUQuery                           *template.Template
	FrontendRequestsQuery, FrontendHTTPSRequestsQuery *template.Template
	// DefaultMHz is the clock rate of a node without vocabulary.NodeMHzLabel.
	DefaultMHz float64
	// FarmsByPool is the field index of WebFarms by the pools their routes name.
	FarmsByPool  string
	Observations *observations.Store
	Pools        *observations.Notifier
	// Farms, when set, is told of the farms whose frontends' report changed.
	Farms *observations.Notifier
	// Models are the pools as their reconciler resolved them (nil: each
	// measurement resolves them again, without the platform's facts,
	// which the autoscaling settings do not use).
	Models *model.Models

	states map[types.NamespacedName]*autoscale.State
	// frontends are the farms' frontends' states, by farm.
	frontends map[types.NamespacedName]*autoscale.State
	// answers are this sweep's answers by query: the CPU query is the
	// same for every pool and farm of a namespace, and a namespace of
	// many asks it once a sweep instead of once each.
	answers map[string]answer
}

// answer is Prometheus' answer to one query.
type answer struct {
	byPod map[string]float64
	err   error
}

// New builds the autoscaler from the options.
func New(o Options, c client.Client, prom promv1.API, farmsByPool string, store *observations.Store, pools *observations.Notifier) (*Autoscaler, error) {
	parse := func(name, q, fallback string) (*template.Template, error) {
		if q == "" {
			q = fallback
		}
		t, err := template.New(name).Option("missingkey=error").Parse(q)
		if err != nil {
			return nil, fmt.Errorf("autoscaler %s: %w", name, err)
		}
		return t, nil
	}
	requests, err := parse("requests query", o.RequestsQuery, DefaultRequestsQuery)
	if err != nil {
		return nil, err
	}
	cpuQuery, err := parse("CPU query", o.CPUQuery, DefaultCPUQuery)
	if err != nil {
		return nil, err
	}
	frontendRequests, err := parse("frontend requests query", o.FrontendRequestsQuery, DefaultFrontendRequestsQuery)
	if err != nil {
		return nil, err
	}
	frontendHTTPS, err := parse("frontend HTTPS requests query", o.FrontendHTTPSRequestsQuery, DefaultFrontendHTTPSRequestsQuery)
	if err != nil {
		return nil, err
	}
	mhz := o.DefaultNodeMHz
	switch {
	case mhz == 0:
		mhz = DefaultNodeMHz
	case !(mhz > 0) || math.IsInf(mhz, 0):
		return nil, fmt.Errorf("autoscaler default node MHz %v: must be a positive number", mhz)
	}
	interval := o.Interval
	if interval <= 0 {
		interval = 15 * time.Second
	}
	return &Autoscaler{Client: c, Prometheus: prom, Interval: max(time.Second, interval),
		RequestsQuery: requests, CPUQuery: cpuQuery, DefaultMHz: mhz, FarmsByPool: farmsByPool,
		FrontendRequestsQuery: frontendRequests, FrontendHTTPSRequestsQuery: frontendHTTPS,
		Observations: store, Pools: pools}, nil
}

// NeedLeaderElection: the leader's AppPool reconciler applies the decisions.
func (a *Autoscaler) NeedLeaderElection() bool { return true }

// Start measures until ctx ends.
func (a *Autoscaler) Start(ctx context.Context) error {
	a.states = map[types.NamespacedName]*autoscale.State{}
	a.frontends = map[types.NamespacedName]*autoscale.State{}
	return collect.Every(ctx, a.Interval, a.run)
}

// run measures the pools, then the farms' frontends.
//
// Once Prometheus did not answer, the sweep's other pools and frontends
// are not asked: each query would wait for its timeout, and a sweep of
// many would take minutes to report what one query showed.
func (a *Autoscaler) run(ctx context.Context) {
	a.answers = map[string]answer{}
	defer func() { a.answers = nil }()
	noAnswer := a.measurePools(ctx)
	a.measureFrontends(ctx, noAnswer)
}

// measurePools measures every running pool; it returns the error of a
// Prometheus that did not answer, if it did not.
func (a *Autoscaler) measurePools(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("autoscaler")
	var pools v1.AppPoolList
	if err := a.Client.List(ctx, &pools); err != nil {
		log.Error(err, "listing pools")
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var noAnswer error
	for i := range pools.Items {
		p := &pools.Items[i]
		key := client.ObjectKeyFromObject(p)
		if !measured(p) {
			continue
		}
		seen[key] = true
		resolved, err := a.PoolModel(p)
		if err != nil {
			continue // its reconciler reports the invalid spec
		}
		current, err := a.currentReplicas(ctx, key)
		if err != nil {
			log.Info("reading a pool's workers", "pool", key.String(), "error", err.Error())
			continue
		}
		state := a.states[key]
		if state == nil {
			state = &autoscale.State{}
			a.states[key] = state
		}
		obs := autoscale.Observation{At: time.Now(), Err: noAnswer}
		if noAnswer == nil {
			obs = a.observe(ctx, p)
		}
		if errors.Is(obs.Err, prometheus.ErrNoAnswer) {
			noAnswer = obs.Err
		}
		d := plan(state, policyOf(resolved, a.DefaultMHz), resolved.Autoscaling != nil, current, obs)
		poolGauges.record(key, d)
		if a.Observations.SetScale(key, d, obs.At) || d.Scaled {
			a.Pools.Notify(key)
		}
	}
	for key := range a.states {
		if !seen[key] {
			delete(a.states, key)
			a.Observations.ForgetScale(key)
		}
	}
	return noAnswer
}

// PoolModel is the model of the pool the autoscaler measures against, or
// why its spec does not resolve.
func (a *Autoscaler) PoolModel(p *v1.AppPool) (model.Pool, error) {
	return a.Models.Pool(p)
}

// measured: the pool runs workers to measure, autoscaled or not. A stopped
// or idle pool has none.
func measured(p *v1.AppPool) bool {
	return p.Status.Phase != v1.PoolStopped && p.Status.IdleSince == nil
}

// plan decides an autoscaled pool's workers, and reports what a pool of fixed
// size needs without changing its workers.
func plan(s *autoscale.State, p autoscale.Policy, autoscaled bool, current int32, o autoscale.Observation) autoscale.Decision {
	if autoscaled {
		return s.Decide(p, current, o)
	}
	return s.Report(p, current, o)
}

// policyOf is the capacity policy of a resolved pool: its autoscaling
// settings, or the report's for a pool of fixed size.
func policyOf(p model.Pool, defaultMHz float64) autoscale.Policy {
	a := p.Autoscaling
	if a == nil {
		return reportPolicy(p, defaultMHz)
	}
	return autoscale.Policy{
		MinReplicas:               a.MinReplicas,
		MaxReplicas:               a.MaxReplicas,
		TargetUtilization:         a.TargetUtilization,
		ForecastRequestsPerSecond: a.ForecastRequestsPerSecond,
		StabilizationWindow:       a.StabilizationWindow,
		FallbackReplicas:          a.FallbackReplicas,
		ReplicaCores:              float64(p.WorkerCPUMilli()) / 1000,
		DefaultMHz:                defaultMHz,
		ScaleUpLead:               scaleUpLead,
	}
}

// reportPolicy plans a pool of fixed size for its measured load (no
// forecast, no lead: nothing scales) at the API's default target utilisation,
// as spec.autoscaling would without a target; the recommendation may range
// over every count spec.replicas allows.
func reportPolicy(p model.Pool, defaultMHz float64) autoscale.Policy {
	return autoscale.Policy{
		MinReplicas:       1,
		MaxReplicas:       maxPoolReplicas,
		TargetUtilization: float64(v1.DefaultTargetCPUPercent) / 100,
		ReplicaCores:      float64(p.WorkerCPUMilli()) / 1000,
		DefaultMHz:        defaultMHz,
	}
}

// maxPoolReplicas is the most workers spec.replicas and
// spec.autoscaling.maxReplicas accept.
const maxPoolReplicas = 1000

// scaleUpLead is how long a rise of the load takes to reach new workers: the
// queries' one-minute rate, a measurement interval, and a worker's start.
// The autoscaling benchmark found 60 to 150 s equally good (bench/README.md).
const scaleUpLead = 2 * time.Minute

// currentReplicas is the workers the pool's Deployment asks for.
func (a *Autoscaler) currentReplicas(ctx context.Context, key types.NamespacedName) (int32, error) {
	return a.deploymentReplicas(ctx, types.NamespacedName{Namespace: key.Namespace, Name: vocabulary.PoolName(key.Name)})
}

// deploymentReplicas is the pods a Deployment asks for.
func (a *Autoscaler) deploymentReplicas(ctx context.Context, key types.NamespacedName) (int32, error) {
	var d appsv1.Deployment
	if err := a.Client.Get(ctx, key, &d); err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 1, nil // the API's default
	}
	return *d.Spec.Replicas, nil
}

// observe measures a pool now: its requests/s as its farms' frontends
// counted them, and its ready workers' CPU at their nodes' clock rates. A
// failed or empty query is an error (unknown, never zero); a ready pod
// without a series makes the observation incomplete.
func (a *Autoscaler) observe(ctx context.Context, p *v1.AppPool) autoscale.Observation {
	o := autoscale.Observation{At: time.Now(), Complete: true}
	workers, err := a.readyPods(ctx, p.Namespace, map[string]string{vocabulary.LabelComponent: vocabulary.ComponentPool, vocabulary.LabelInstance: p.Name})
	if err != nil {
		o.Err = err
		return o
	}
	frontends, err := a.poolFrontends(ctx, p)
	if err != nil {
		o.Err = err
		return o
	}
	vars := queryVars{Namespace: p.Namespace, Pool: p.Name}
	requests, err := a.queryByPod(ctx, a.RequestsQuery, vars)
	if err != nil {
		o.Err = fmt.Errorf("requests: %w", err)
		return o
	}
	for _, f := range frontends {
		v, ok := requests[f.Name]
		o.RequestsPerSecond += v
		o.Complete = o.Complete && ok
	}
	if len(workers) == 0 {
		return o
	}
	cores, err := a.queryByPod(ctx, a.CPUQuery, vars)
	if err != nil {
		o.Err = fmt.Errorf("CPU: %w", err)
		return o
	}
	for _, w := range workers {
		c, ok := cores[w.Name]
		if !ok {
			o.Complete = false
			continue
		}
		o.Workers = append(o.Workers, capacity.Worker{Cores: c, MHz: a.nodeMHz(ctx, w.Spec.NodeName)})
	}
	return o
}

// queryVars are what the query templates are given: a pool's namespace and
// name, or a farm's for its frontends.
type queryVars struct{ Namespace, Pool, Farm string }

// readyPods lists a namespace's ready pods of the operator with the given labels.
func (a *Autoscaler) readyPods(ctx context.Context, namespace string, labels map[string]string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	match := client.MatchingLabels{vocabulary.LabelManagedBy: vocabulary.ManagedBy}
	for k, v := range labels {
		match[k] = v
	}
	if err := a.Client.List(ctx, &pods, client.InNamespace(namespace), match); err != nil {
		return nil, err
	}
	var ready []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && health.PodReady(&pod) {
			ready = append(ready, pod)
		}
	}
	return ready, nil
}

// poolFrontends are the ready frontend pods of the farms that route to the pool.
func (a *Autoscaler) poolFrontends(ctx context.Context, p *v1.AppPool) ([]corev1.Pod, error) {
	var farms v1.WebFarmList
	if err := a.Client.List(ctx, &farms, client.InNamespace(p.Namespace), client.MatchingFields{a.FarmsByPool: p.Name}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, f := range farms.Items {
		pods, err := a.readyPods(ctx, p.Namespace, map[string]string{vocabulary.LabelComponent: vocabulary.ComponentFrontend, vocabulary.LabelInstance: f.Name})
		if err != nil {
			return nil, err
		}
		out = append(out, pods...)
	}
	return out, nil
}

// nodeMHz is a node's clock rate from its label, else the default. It reads
// the Node's metadata alone, which the routing controller caches already.
func (a *Autoscaler) nodeMHz(ctx context.Context, name string) float64 {
	n := &metav1.PartialObjectMetadata{}
	n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if name == "" || a.Client.Get(ctx, types.NamespacedName{Name: name}, n) != nil {
		return a.DefaultMHz
	}
	return endpoints.NodeMHz(n.Labels, a.DefaultMHz)
}

// queryByPod runs a query template through the collectors' Prometheus
// reader and returns its values by the "pod" label.
func (a *Autoscaler) queryByPod(ctx context.Context, tmpl *template.Template, vars any) (map[string]float64, error) {
	var q bytes.Buffer
	if err := tmpl.Execute(&q, vars); err != nil {
		return nil, err
	}
	if got, ok := a.answers[q.String()]; ok {
		return got.byPod, got.err
	}
	byPod, err := prometheus.ByPodName(ctx, a.Prometheus, q.String())
	if a.answers != nil {
		a.answers[q.String()] = answer{byPod, err}
	}
	return byPod, err
}

// capacityGauges are the metrics of what the autoscaler measured of an
// object and recommends for it.
type capacityGauges struct {
	recommended, megacyclesPerRequest, requiredMHz, unavailable *promclient.GaugeVec
}

var poolGauges = capacityGauges{poolRecommendedReplicas, poolMegacyclesPerRequest, poolRequiredMHz, poolMetricsUnavailable}

// record exports a decision's figures; unknown figures are left out.
func (g capacityGauges) record(key types.NamespacedName, d autoscale.Decision) {
	unavailable := 0.0
	if d.MetricsUnavailable {
		unavailable = 1
	}
	g.unavailable.WithLabelValues(key.Namespace, key.Name).Set(unavailable)
	if d.Measured == nil {
		return
	}
	g.recommended.WithLabelValues(key.Namespace, key.Name).Set(float64(d.Recommended))
	g.megacyclesPerRequest.WithLabelValues(key.Namespace, key.Name).Set(d.Measured.MegacyclesPerRequest)
	g.requiredMHz.WithLabelValues(key.Namespace, key.Name).Set(d.Measured.RequiredMHz)
}
