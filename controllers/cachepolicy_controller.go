package controllers

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/cachetier"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/vocabulary"
)

// CachePolicyReconciler runs a cache tier for each CachePolicy that routes use:
// an nginx cache Deployment, its nginx.conf ConfigMap and a Service. A policy
// no route names has no cache tier.
type CachePolicyReconciler struct {
	client.Client
	// APIReader reads what the operator's cache does not hold: the users'
	// content ConfigMaps (their resourceVersion is a pool's content revision).
	APIReader client.Reader
	Applier   *apply.Applier
	Platform  model.Platform
	Recorder  events.EventRecorder
	// Agents asks the cache pods' agents for purges (Port 0:
	// vocabulary.AgentAdminPort).
	Agents cacheadmin.Client
	// Observations holds the tiers' counters and use for their status, and
	// since when each policy is unreferenced (nil: none collected, and the
	// reconciler keeps its notes itself).
	Observations *observations.Store
	// Notifier, when set, names policies whose tier's figures are due.
	Notifier *observations.Notifier
	// Clock tells the time (nil: the real clock).
	Clock clock.PassiveClock

	// ownNotes keeps since when policies are unreferenced when Observations
	// is nil (a reconciler a test builds alone), so that their tiers are
	// still retired after the grace.
	ownNotes observations.Store
}

// +kubebuilder:rbac:groups=webfarm.dev,resources=cachepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=webfarm.dev,resources=cachepolicies/status,verbs=patch
// +kubebuilder:rbac:groups=webfarm.dev,resources=cachepolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=delete
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=delete

// Reconcile brings one CachePolicy's cache tier to the desired state and reports it.
func (r *CachePolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	policy := &v1.CachePolicy{}
	if err := r.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetCache(req.Namespace, req.Name)
			r.notes().ForgetCacheTier(req.NamespacedName)
			recordStartupBlocked("CachePolicy", req.Namespace, req.Name, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	metrics.KnowCache(policy.Namespace, policy.Name)
	before := policy.DeepCopy()
	if paused, err := syncPaused(ctx, r.Client, before, policy); paused || err != nil {
		return ctrl.Result{}, err
	}
	v, again, err := r.reconcile(ctx, policy)
	return ctrl.Result{RequeueAfter: again}, finish(ctx, r.Client, r.Recorder, before, policy, v, err, r.countCacheTier(before, policy))
}

// countCacheTier puts in the policy's status its tier's figures due from
// the cache statistics: it adds the counters grown since the status last
// took them and sets the current use. It returns what takes the counters out
// of the store once the status holds them (nil: no counter to add).
func (r *CachePolicyReconciler) countCacheTier(before, policy *v1.CachePolicy) func() {
	if r.Observations == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}
	due, ok := r.Observations.CacheTierDue(key)
	if !ok {
		return nil
	}
	st := &policy.Status
	if st.Counters == nil {
		st.Counters = &v1.CacheCounters{}
	}
	observations.AddCacheCounters(st.Counters, due.Grown)
	st.HitPercent = hitPercent(*st.Counters)
	st.Objects = &due.Objects
	st.MemoryUsed = resource.NewQuantity(due.MemoryBytes, resource.BinarySI)
	if before.Status.MemoryUsed != nil && before.Status.MemoryUsed.Cmp(*st.MemoryUsed) == 0 {
		st.MemoryUsed = before.Status.MemoryUsed
	}
	if due.Grown == (v1.CacheCounters{}) {
		return nil
	}
	return func() { r.Observations.CacheTierWritten(key, due) }
}

// hitPercent is hits as a share of every request, one decimal.
func hitPercent(c v1.CacheCounters) string {
	all := c.Hits + c.Misses + c.Bypasses
	if all == 0 {
		return ""
	}
	return strconv.FormatFloat(100*float64(c.Hits)/float64(all), 'f', 1, 64) + "%"
}

func (r *CachePolicyReconciler) reconcile(ctx context.Context, policy *v1.CachePolicy) (verdict, time.Duration, error) {
	pools, err := r.poolsBehind(ctx, policy)
	if err != nil {
		return failedAgain(err)
	}
	d, err := r.decide(ctx, policy, pools)
	if err != nil {
		return failedAgain(err)
	}
	policy.Status.Pools = pools
	if d.Tier != cachetier.Serve {
		policy.Status.Ready = ""
		policy.Status.PoolContent = d.PoolContent
		if d.Tier == cachetier.Retire {
			if err := r.removeCacheTier(ctx, policy); err != nil {
				return failedAgain(err)
			}
		}
		return verdict{Reason: v1.ReasonNotReferenced, Message: "no route names this policy, so it runs no cache tier"}, d.Recheck, nil
	}
	upstreams, unresolved, err := r.poolAddresses(ctx, policy.Namespace, pools)
	if err != nil {
		return failedAgain(err)
	}
	m, err := model.ResolveCache(policy, upstreams, r.Platform)
	if err != nil {
		return verdict{Reason: v1.ReasonInvalidSpec, Message: err.Error()}, 0, nil
	}
	if m.AdminToken, err = r.tierAgentToken(ctx, policy.Namespace, policy.Name); err != nil {
		return failedAgain(err)
	}
	cache, err := r.applyCacheTier(ctx, m)
	if err != nil {
		return failedAgain(err)
	}
	if err := r.purge(ctx, policy, d); err != nil {
		return failedAgain(err)
	}
	desired, ready, _ := replicaCounts(cache)
	policy.Status.Ready = readyCount(ready, desired)
	v, err := observeWorkload(ctx, r.Client, "cache", cache)
	if err != nil {
		return failedAgain(err)
	}
	if len(unresolved) > 0 && v.Ready {
		v = verdict{Ready: true, Degraded: true, Reason: v1.ReasonPoolsNotReady,
			Message: "no Service yet for pools " + strings.Join(unresolved, ", ") + "; their cached routes answer 421"}
	}
	return v, d.Recheck, nil
}

// decide gathers what the tier's decision reads (the pools behind it, the
// purge annotation, the status, since when the policy is unreferenced, the
// time) and makes it; it notes since when the policy is unreferenced for the
// next decision.
func (r *CachePolicyReconciler) decide(ctx context.Context, policy *v1.CachePolicy, pools []string) (cachetier.Decision, error) {
	key := client.ObjectKeyFromObject(policy)
	in := cachetier.Input{PurgeToken: policy.Annotations[v1.PurgeAnnotation], Status: policy.Status, Now: readClock(r.Clock),
		Observed: cachetier.Observations{UnreferencedSince: r.notes().CacheTierUnreferencedSince(key)}}
	for _, pool := range pools {
		p, err := r.poolBehind(ctx, policy.Namespace, pool)
		if err != nil {
			return cachetier.Decision{}, err
		}
		in.Pools = append(in.Pools, p)
	}
	d := cachetier.Decide(in)
	r.notes().NoteCacheTierUnreferenced(key, d.UnreferencedSince)
	return d, nil
}

// notes is where the reconciler notes what it saw for its next decision:
// the shared store, or its own without one.
func (r *CachePolicyReconciler) notes() *observations.Store {
	if r.Observations != nil {
		return r.Observations
	}
	return &r.ownNotes
}

// failedAgain is failed for reconcilers that also say when to look again.
func failedAgain(err error) (verdict, time.Duration, error) {
	v, err := failed(err)
	return v, 0, err
}

// poolsBehind lists, sorted, the pools of every route in the namespace that
// names the policy.
func (r *CachePolicyReconciler) poolsBehind(ctx context.Context, policy *v1.CachePolicy) ([]string, error) {
	var farms v1.WebFarmList
	if err := r.List(ctx, &farms, client.InNamespace(policy.Namespace), client.MatchingFields{indexFarmPolicies: policy.Name}); err != nil {
		return nil, err
	}
	var pools []string
	for _, f := range farms.Items {
		for _, s := range f.Spec.Sites {
			for _, rt := range s.Routes {
				if string(rt.CachePolicy) == policy.Name {
					pools = append(pools, string(rt.AppPool))
				}
			}
		}
		for _, c := range f.Status.GatewayCachedPools {
			if c.CachePolicy == policy.Name {
				pools = append(pools, c.AppPool)
			}
		}
	}
	slices.Sort(pools)
	return slices.Compact(pools), nil
}

// poolAddresses looks up the Service address of each pool; it returns the
// pools whose Service has no address yet apart.
func (r *CachePolicyReconciler) poolAddresses(ctx context.Context, namespace string, pools []string) ([]model.Upstream, []string, error) {
	var upstreams []model.Upstream
	var unresolved []string
	for _, pool := range pools {
		svc := &corev1.Service{}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: vocabulary.PoolName(pool)}, svc)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && (svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone)):
			unresolved = append(unresolved, pool)
		case err != nil:
			return nil, nil, err
		default:
			upstreams = append(upstreams, model.Upstream{Pool: pool, Address: svc.Spec.ClusterIP, Port: 80})
		}
	}
	return upstreams, unresolved, nil
}

// applyCacheTier renders and applies the cache tier.
func (r *CachePolicyReconciler) applyCacheTier(ctx context.Context, m model.Cache) (*appsv1.Deployment, error) {
	conf, err := nginx.CacheConfig(m)
	if err != nil {
		return nil, err
	}
	agentConf, err := nginx.CacheAgentConfig(m)
	if err != nil {
		return nil, err
	}
	var peers model.Peers
	if m.Platform.Isolation != nil {
		if peers, err = peersOf(ctx, r.Client, m.Namespace, indexFarmPolicies, m.Name, model.CachePeers); err != nil {
			return nil, err
		}
	}
	// Before the tier's pods exist: none is ever open to the whole cluster.
	key := client.ObjectKey{Namespace: m.Namespace, Name: vocabulary.CacheName(m.Name)}
	if err := applyNetworkPolicy(ctx, r.Applier, r.Client, key, k8s.CacheNetworkPolicy(m, peers)); err != nil {
		return nil, err
	}
	objs := k8s.Cache(m, conf, agentConf)
	return applyWorkload(ctx, r.Applier, workload{ConfigMap: objs.ConfigMap, Service: objs.Service, Deployment: objs.Deployment, PodDisruptionBudget: objs.PodDisruptionBudget})
}

// removeCacheTier deletes the cache tier of a policy that no route uses any more.
func (r *CachePolicyReconciler) removeCacheTier(ctx context.Context, policy *v1.CachePolicy) error {
	name := vocabulary.CacheName(policy.Name)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{}} {
		err := r.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if owner := metav1.GetControllerOf(obj); owner == nil || owner.UID != policy.UID {
			continue // not ours: leave it alone
		}
		if _, err := r.Applier.Delete(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// SetupWithManager watches CachePolicies, their children, the farms whose
// routes name them, and the Services of the pools behind them.
func (r *CachePolicyReconciler) SetupWithManager(mgr ctrl.Manager, opts ControllerOptions) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1.CachePolicy{}, specOrMetadataChanged)
	if r.Notifier != nil {
		b = b.WatchesRawSource(r.Notifier)
	}
	return b.
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, startupChangeHandler{component: vocabulary.ComponentCache})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&v1.WebFarm{}, handler.EnqueueRequestsFromMapFunc(policiesOfFarm), routesChanged).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.policiesInFrontOfPool)).
		// A pool's rollout ends: its new content may need a purge.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.policiesInFrontOfPool)).
		WithOptions(opts.controller()).
		Complete(r)
}

// policiesOfFarm maps a farm to the policies its routes name, its own and its
// Gateway routes' (on an update the old and the new farm are both mapped, so
// a dropped reference is seen too).
func policiesOfFarm(_ context.Context, o client.Object) []reconcile.Request {
	farm := o.(*v1.WebFarm)
	names := referencedNames(farm, func(r v1.Route) v1.ObjectName { return r.CachePolicy })
	for _, c := range farm.Status.GatewayCachedPools {
		if !slices.Contains(names, c.CachePolicy) {
			names = append(names, c.CachePolicy)
		}
	}
	reqs := make([]reconcile.Request, len(names))
	for i, n := range names {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: n}}
	}
	return reqs
}

// policiesInFrontOfPool maps a pool's Service or Deployment to the policies
// of the routes to that pool: their cache tiers proxy to its address and
// hold its content.
func (r *CachePolicyReconciler) policiesInFrontOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	labels := o.GetLabels()
	if labels[vocabulary.LabelComponent] != "pool" {
		return nil
	}
	pool := labels[vocabulary.LabelInstance]
	var farms v1.WebFarmList
	if err := r.List(ctx, &farms, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexFarmPools: pool}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing farms", "pool", pool)
		return nil
	}
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for _, f := range farms.Items {
		for _, c := range f.Status.GatewayCachedPools {
			if c.AppPool == pool && !seen[c.CachePolicy] {
				seen[c.CachePolicy] = true
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: c.CachePolicy}})
			}
		}
		for _, s := range f.Spec.Sites {
			for _, rt := range s.Routes {
				if string(rt.AppPool) == pool && rt.CachePolicy != "" && !seen[string(rt.CachePolicy)] {
					seen[string(rt.CachePolicy)] = true
					reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: string(rt.CachePolicy)}})
				}
			}
		}
	}
	return reqs
}
