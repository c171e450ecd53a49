package controllers

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/vocabulary"
)

// AppPoolReconciler turns an AppPool into its nginx workers: a Deployment, its
// nginx.conf ConfigMap, a Service and a PodDisruptionBudget.
type AppPoolReconciler struct {
	client.Client
	// APIReader reads what the operator's cache does not hold: the
	// ConfigMap or claim a pool's content names (nil: not checked).
	APIReader client.Reader
	Applier   *apply.Applier
	// Models are the operator's resolved farms and pools, shared with the
	// routing controller and the collectors (nil: each reconcile resolves
	// its pool with Platform).
	Models   *model.Models
	Platform model.Platform
	Recorder events.EventRecorder
	// Observations is what the collectors and the workers' pods showed of
	// the pools (nil: nothing collected; rapid-fail protection, CPU and
	// recycling limits and the autoscaler never act).
	Observations *observations.Store
	// ActivityWatched: the frontends' statistics run, so Observations knows
	// when each pool last got requests (false: no pool ever goes idle).
	ActivityWatched bool
	// Notifier, when set, names pools to look at again (new queue refusals,
	// a burst of 5xx, a CPU reading, a decision of the autoscaler).
	Notifier *observations.Notifier
	// Clock tells the time to decisions (nil: the real clock).
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=webfarm.dev,resources=apppools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=webfarm.dev,resources=apppools/status,verbs=patch
// +kubebuilder:rbac:groups=webfarm.dev,resources=apppools/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile brings one AppPool's children to the desired state and reports it.
func (r *AppPoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &v1.AppPool{}
	if err := r.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			if r.Observations != nil {
				r.Observations.ForgetPool(req.NamespacedName)
			}
			if r.Models != nil {
				r.Models.ForgetPool(req.NamespacedName)
			}
			forgetPoolMetrics(req.Namespace, req.Name)
			recordStartupBlocked("AppPool", req.Namespace, req.Name, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	metrics.KnowPool(pool.Namespace, pool.Name)
	before := pool.DeepCopy()
	if paused, err := syncPaused(ctx, r.Client, before, pool); paused || err != nil {
		return ctrl.Result{}, err
	}
	v, recheck, err := r.reconcile(ctx, pool)
	return ctrl.Result{RequeueAfter: recheck}, finish(ctx, r.Client, r.Recorder, before, pool, v, err, r.countRefusals(pool))
}

// countRefusals adds to status.queue the refusals the frontends counted
// since the status last took them. It returns what takes them out of the
// store once the status holds them (nil: none to add).
func (r *AppPoolReconciler) countRefusals(pool *v1.AppPool) func() {
	if r.Observations == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}
	n, ok := r.Observations.Refusals(key)
	if !ok {
		return nil
	}
	q := &pool.Status.Queue
	q.Rejected += n.Rejected
	q.TimedOut += n.TimedOut
	q.LastRejectionTime = &metav1.Time{Time: n.Last.Truncate(time.Second)}
	return func() { r.Observations.RefusalsWritten(key, n) }
}

// reconcile returns the pool's verdict and when to look at it again (0: on
// the next change). It reads straight down: resolve the spec, check what it
// names, gather the observations, decide, render and apply, report.
func (r *AppPoolReconciler) reconcile(ctx context.Context, pool *v1.AppPool) (verdict, time.Duration, error) {
	spec, err := r.PoolModel(pool)
	if err != nil {
		return verdict{Reason: v1.ReasonInvalidSpec, Message: err.Error()}, 0, nil
	}
	if r.APIReader != nil {
		// No worker is made for content that is not there: it would wait in
		// ContainerCreating, saying why only in its pod's events.
		missing, err := missingContent(ctx, r.Client, r.APIReader, pool, spec)
		if err != nil {
			v, err := failed(err)
			return v, 0, err
		}
		if missing != "" {
			if pool.Status.Phase == "" {
				pool.Status.Phase = v1.PoolPending
			}
			return verdict{Reason: v1.ReasonInvalidReference, Message: missing}, missingReferenceRecheck, nil
		}
	}
	now := readClock(r.Clock)
	observed, err := r.observe(ctx, pool, spec, now)
	if err != nil {
		v, err := failed(err)
		return v, 0, err
	}
	startAsked, _ := time.Parse(time.RFC3339Nano, pool.Annotations[v1.WakeAnnotation])
	d := lifecycle.Decide(lifecycle.Input{
		Pool: spec, Generation: pool.Generation, Status: pool.Status,
		Restart: pool.Annotations[v1.RestartAnnotation], StartAsked: startAsked,
		Observed: observed, Now: now,
	})
	if d.Recycle != nil {
		// Marked before the pool grows: the replacement never outlives a
		// failed mark.
		if err := markForRecycling(ctx, r.Client, pool.Namespace, *d.Recycle); err != nil {
			v, err := failed(err)
			return v, 0, err
		}
	}
	r.act(pool, d, now)
	pool.Status = d.Status

	deployment, err := r.applyChildren(ctx, spec.WithRuntime(d.Runtime()))
	if err != nil {
		v, err := failed(err)
		return v, 0, err
	}
	desired, ready, _ := replicaCounts(deployment)
	pool.Status.Replicas, pool.Status.ReadyReplicas = desired, ready
	pool.Status.Ready = readyCount(ready, desired)
	pool.Status.Queue.Concurrency, pool.Status.Queue.Length = ready*spec.MaxConcurrentRequests, spec.QueueLength
	pool.Status.Selector = labels.SelectorFromSet(k8s.SelectorLabels(vocabulary.ComponentPool, pool.Name)).String()
	if d.Stop != nil {
		return verdict{Reason: d.Stop.Reason, Message: d.Stop.Message}, 0, nil
	}
	pool.Status.Phase = poolPhase(desired, ready)
	v, err := observeWorkload(ctx, r.Client, "workers", deployment)
	if err != nil {
		v, err := failed(err)
		return v, 0, err
	}
	return v, d.Recheck, nil
}

// PoolModel is the model the reconciler renders the pool from (before its
// runtime state), or why its spec does not resolve.
func (r *AppPoolReconciler) PoolModel(pool *v1.AppPool) (model.Pool, error) {
	return modelsOr(r.Models, r.Platform).Pool(pool)
}

// observe gathers what the collectors saw of the pool.
func (r *AppPoolReconciler) observe(ctx context.Context, pool *v1.AppPool, spec model.Pool, now time.Time) (lifecycle.Observations, error) {
	key := types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}
	var o lifecycle.Observations
	if r.Observations != nil {
		o.Failures = r.Observations.RecentFailures(key, now, spec.RapidFail.Interval)
		o.CPU, o.CPUMonitored = r.Observations.CPU(key), true
		if r.ActivityWatched {
			o.LastActive, o.ActivityKnown = r.Observations.LastActive(key, now), true
		}
	}
	workers, err := poolWorkers(ctx, r.Client, key, r.Observations)
	if err != nil {
		return o, err
	}
	o.Workers = workers
	// Every pool's capacity is measured; only an autoscaled one follows it.
	if r.Observations != nil {
		if s, ok := r.Observations.Scale(key); ok {
			o.Scale = &lifecycle.Scale{Decision: s.Decision, At: s.At}
		}
	}
	if spec.Autoscaling == nil {
		return o, nil
	}
	var live appsv1.Deployment
	switch err := r.Get(ctx, types.NamespacedName{Namespace: pool.Namespace, Name: vocabulary.PoolName(pool.Name)}, &live); {
	case err == nil:
		n, _, _ := replicaCounts(&live)
		o.CurrentReplicas = &n
	case !apierrors.IsNotFound(err):
		return o, err
	}
	return o, nil
}

// act carries out what a decision asks of the operator besides the status:
// forget what a restart wiped, count a start on demand as activity, record
// the events and the stopped metric.
func (r *AppPoolReconciler) act(pool *v1.AppPool, d lifecycle.Decision, now time.Time) {
	key := types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}
	if d.Restarted {
		if r.Observations != nil {
			r.Observations.ForgetFailures(key)
			r.Observations.ForgetCPU(key)
		}
	}
	if d.StartedOnDemand && r.Observations != nil && r.ActivityWatched {
		r.Observations.Touch(key, now)
	}
	for _, e := range d.Events {
		r.Recorder.Eventf(pool, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	if d.Recycle != nil {
		poolRecycles.WithLabelValues(pool.Namespace, pool.Name, string(d.Recycle.Reason)).Inc()
	}
	stopped := 0.0
	if d.Stop != nil {
		stopped = 1
	}
	poolStopped.WithLabelValues(pool.Namespace, pool.Name).Set(stopped)
}

// applyChildren renders the pool and applies its children; it returns the live
// Deployment for status.
func (r *AppPoolReconciler) applyChildren(ctx context.Context, m model.Pool) (*appsv1.Deployment, error) {
	conf, err := nginx.PoolConfig(m)
	if err != nil {
		return nil, err
	}
	var peers model.Peers
	if m.Platform.Isolation != nil {
		if peers, err = peersOf(ctx, r.Client, m.Namespace, IndexFarmPools, m.Name, model.PoolPeers); err != nil {
			return nil, err
		}
	}
	// Before the workers exist: none is ever open to the whole cluster.
	key := client.ObjectKey{Namespace: m.Namespace, Name: vocabulary.PoolName(m.Name)}
	if err := applyNetworkPolicy(ctx, r.Applier, r.Client, key, k8s.PoolNetworkPolicy(m, peers)); err != nil {
		return nil, err
	}
	return applyWorkload(ctx, r.Applier, workload(k8s.Pool(m, conf)))
}

// SetupWithManager watches AppPools, the children they own, and their
// workers' pods for failures.
func (r *AppPoolReconciler) SetupWithManager(mgr ctrl.Manager, opts ControllerOptions) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1.AppPool{}, specOrMetadataChanged).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, workerFailureHandler{observations: r.Observations, clock: r.Clock})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, startupChangeHandler{component: vocabulary.ComponentPool}))
	if r.Notifier != nil {
		b = b.WatchesRawSource(r.Notifier)
	}
	return b.
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// Who routes to a pool decides whom its NetworkPolicy admits.
		Watches(&v1.WebFarm{}, handler.EnqueueRequestsFromMapFunc(poolsOfFarm), poolRoutesChanged).
		WithOptions(opts.controller()).
		Complete(r)
}

// poolsOfFarm maps a farm to the pools its routes send to, inline and its
// Gateways' (on an update the old and the new farm are both mapped, so a
// pool the farm no longer reaches is seen too).
func poolsOfFarm(_ context.Context, o client.Object) []reconcile.Request {
	farm := o.(*v1.WebFarm)
	names := referencedNames(farm, func(r v1.Route) v1.ObjectName { return r.AppPool })
	names = append(names, farm.Status.GatewayAppPools...)
	for _, c := range farm.Status.GatewayCachedPools {
		names = append(names, c.AppPool)
	}
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	reqs := make([]reconcile.Request, len(names))
	for i, n := range names {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: farm.Namespace, Name: n}}
	}
	return reqs
}
