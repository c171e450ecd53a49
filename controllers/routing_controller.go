package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/internal/xds"
)

// RoutingReconciler keeps each farm's xDS snapshot in step with the farm and
// the endpoints of its pools and cache tiers. It writes nothing to the API
// and runs on every replica of the operator, as each one serves xDS.
type RoutingReconciler struct {
	Client client.Client
	// Models are the operator's resolved farms and pools, shared with the
	// WebFarm and AppPool reconcilers and the collectors (nil: each
	// reconcile resolves with Platform).
	Models   *model.Models
	Platform model.Platform
	XDS      *xds.Server
	// GatewayAPI: farms also route their Gateways' routes, so the
	// controller watches Gateway API's objects.
	GatewayAPI bool
	// Translations of the Gateways, shared with the WebFarm and Gateway
	// controllers (nil: each reconcile translates).
	Translations *Translations
	// Clock tells the time (nil: the real clock).
	Clock clock.PassiveClock
	// DefaultNodeMHz is the clock rate of a node without
	// vocabulary.NodeMHzLabel (0: vocabulary.DefaultNodeMHz), as the
	// autoscaler counts it: a pool's workers get requests by their nodes' clocks.
	DefaultNodeMHz float64

	retired retiredClusters

	// lastFarms are the farms as last routed, by namespace/name: a paused
	// farm keeps its routes (its pools' endpoints still follow the pods).
	mu        sync.Mutex
	lastFarms map[string]model.Farm
	// hosts are each farm's rendered virtual hosts: a farm's routing
	// renders the sites that changed (one reconcile of a farm at a time).
	hosts map[string]*envoy.VirtualHosts
}

// retireAfter is how long a pool's cluster stays in a farm's snapshot after
// the last route to it went away. Envoy may apply a snapshot's clusters
// before its routes: removing the cluster in the same step would fail the
// requests that the old routes still send there.
const retireAfter = 30 * time.Second

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

func (r *RoutingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var farm v1.WebFarm
	if err := r.Client.Get(ctx, req.NamespacedName, &farm); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.lastFarms, req.String())
			delete(r.hosts, req.String())
			r.mu.Unlock()
			r.retired.forget(req.String() + " pools")
			r.retired.forget(req.String() + " caches")
			if r.Models != nil {
				r.Models.ForgetFarm(req.NamespacedName)
			}
			r.XDS.Remove(req.Namespace + "/" + req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	f, ok, err := r.FarmToRoute(ctx, &farm)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		// The farm's Envoys keep their last good routing; the WebFarm
		// controller reports the problem in the farm's status.
		return ctrl.Result{}, nil
	}
	at := readClock(r.Clock)
	var poolsRecheck, cachesRecheck time.Duration
	f.Pools, poolsRecheck = r.retired.withRetired(req.String()+" pools", f.Pools, at)
	f.CachePolicies, cachesRecheck = r.retired.withRetired(req.String()+" caches", f.CachePolicies, at)
	recheck := minPositive(poolsRecheck, cachesRecheck)
	pools, err := r.PoolsOf(ctx, f)
	if err != nil {
		return ctrl.Result{}, err
	}
	var endpointSlices discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &endpointSlices, client.InNamespace(f.Namespace),
		client.MatchingLabels{vocabulary.LabelManagedBy: vocabulary.ManagedBy}); err != nil {
		return ctrl.Result{}, err
	}
	backends, err := r.weightedByClock(ctx, f, endpoints.FromSlices(endpointSlices.Items))
	if err != nil {
		return ctrl.Result{}, err
	}
	routing, err := envoy.FarmRoutingReusing(f, pools, backends, r.virtualHosts(req.String()))
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: recheck}, r.XDS.Update(ctx, envoy.NodeCluster(f), routing)
}

// weightedByClock weighs the farm's pools' endpoints by the clock rates of
// the nodes they run on (the Nodes' vocabulary.NodeMHzLabel).
func (r *RoutingReconciler) weightedByClock(ctx context.Context, f model.Farm, b endpoints.Backends) (endpoints.Backends, error) {
	clusters := make([]string, len(f.Pools))
	for i, p := range f.Pools {
		clusters[i] = vocabulary.PoolCluster(p)
	}
	clocks := endpoints.Clocks{ByNode: map[string]float64{}, Default: cmp.Or(r.DefaultNodeMHz, vocabulary.DefaultNodeMHz)}
	for _, name := range b.Nodes(clusters) {
		n := nodeMetadata()
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				continue // gone: its endpoints go next
			}
			return nil, err
		}
		clocks.ByNode[name] = endpoints.NodeMHz(n.Labels, clocks.Default)
	}
	return b.WeightedByClock(clusters, clocks), nil
}

// virtualHosts is a farm's memory of its rendered virtual hosts.
func (r *RoutingReconciler) virtualHosts(farm string) *envoy.VirtualHosts {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hosts == nil {
		r.hosts = map[string]*envoy.VirtualHosts{}
	}
	if r.hosts[farm] == nil {
		r.hosts[farm] = &envoy.VirtualHosts{}
	}
	return r.hosts[farm]
}

// FarmToRoute is the farm as its frontends route it: its model with the
// sites of the Gateways it serves, or, while it is paused, as last routed
// (after a restart of the operator during a pause, as its spec says).
// false: its spec does not resolve. Its Pools and CachePolicies are the
// caller's to change.
func (r *RoutingReconciler) FarmToRoute(ctx context.Context, farm *v1.WebFarm) (model.Farm, bool, error) {
	key := client.ObjectKeyFromObject(farm).String()
	r.mu.Lock()
	last, known := r.lastFarms[key]
	r.mu.Unlock()
	if known && isPaused(farm) {
		// The caller adds retiring clusters to these lists: not to the stored farm's.
		last.Pools, last.CachePolicies = slices.Clone(last.Pools), slices.Clone(last.CachePolicies)
		return last, true, nil
	}
	f, err := modelsOr(r.Models, r.Platform).Farm(farm)
	if err != nil {
		return model.Farm{}, false, nil
	}
	if r.GatewayAPI {
		served, err := gatewaysServed(ctx, r.Client, r.Translations, farm)
		if err != nil {
			return model.Farm{}, false, err
		}
		f = withGateways(f, served)
	}
	r.mu.Lock()
	if r.lastFarms == nil {
		r.lastFarms = map[string]model.Farm{}
	}
	r.lastFarms[key] = f
	r.mu.Unlock()
	f.Pools, f.CachePolicies = slices.Clone(f.Pools), slices.Clone(f.CachePolicies)
	return f, true, nil
}

// withGateways adds what its Gateways give a farm to its model (a copy:
// the model is shared): their HTTPS listeners, their routes' sites and the
// pools these route to.
func withGateways(f model.Farm, served gatewayServing) model.Farm {
	f.GatewayListeners = slices.Concat(f.GatewayListeners, served.listeners)
	sites := served.sites
	if len(sites) == 0 {
		return f
	}
	f.Sites = slices.Concat(f.Sites, sites)
	pools := slices.Concat(f.Pools, gatewayPools(sites))
	slices.Sort(pools)
	f.Pools = slices.Compact(pools)
	policies := slices.Clone(f.CachePolicies)
	for _, c := range gatewayCachedPools(sites) {
		policies = append(policies, c.CachePolicy)
	}
	slices.Sort(policies)
	f.CachePolicies = slices.Compact(policies)
	return f
}

// minPositive is the smaller of two durations that are set (0: not set).
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// retiredClusters remembers, per farm, the pools (and cache tiers) its routes
// no longer use and since when, so that their clusters leave the snapshot
// only after retireAfter.
type retiredClusters struct {
	mu    sync.Mutex
	farms map[string]farmPools
}

type farmPools struct {
	routed  []string
	retired map[string]time.Time // pool -> when its last route went away
}

// withRetired returns the pools whose clusters the farm's snapshot keeps: the
// routed ones and those retired less than retireAfter ago, sorted; and when
// to look again (0 when nothing is retiring).
func (c *retiredClusters) withRetired(farm string, routed []string, now time.Time) ([]string, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.farms == nil {
		c.farms = map[string]farmPools{}
	}
	prev := c.farms[farm]
	next := farmPools{routed: routed, retired: map[string]time.Time{}}
	for _, p := range prev.routed {
		if !slices.Contains(routed, p) {
			next.retired[p] = now
		}
	}
	for p, since := range prev.retired {
		if !slices.Contains(routed, p) && now.Sub(since) < retireAfter {
			next.retired[p] = since
		}
	}
	c.farms[farm] = next
	keep := slices.Clone(routed)
	var recheck time.Duration
	for p, since := range next.retired {
		keep = append(keep, p)
		if left := retireAfter - now.Sub(since); recheck == 0 || left < recheck {
			recheck = left
		}
	}
	slices.Sort(keep)
	return keep, recheck
}

// forget drops a deleted farm's memory.
func (c *retiredClusters) forget(farm string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.farms, farm)
}

// PoolsOf are the models of the farm's AppPools that exist and are valid,
// with where each stands at runtime; the others route to a cluster without
// workers (their own status says why).
func (r *RoutingReconciler) PoolsOf(ctx context.Context, f model.Farm) (map[string]model.Pool, error) {
	models := modelsOr(r.Models, r.Platform)
	pools := make(map[string]model.Pool, len(f.Pools))
	for _, name := range f.Pools {
		var ap v1.AppPool
		key := client.ObjectKey{Namespace: f.Namespace, Name: name}
		err := r.Client.Get(ctx, key, &ap)
		if apierrors.IsNotFound(err) {
			// Every replica serves xDS: a follower learns of a deleted
			// pool here, not from the AppPool reconciler.
			models.ForgetPool(key)
			continue
		}
		if err != nil {
			return nil, err
		}
		if p, err := models.Pool(&ap); err == nil {
			pools[name] = p.WithRuntime(lifecycle.Recorded(p, ap.Status))
		}
	}
	return pools, nil
}

// SetupWithManager runs the routing controller on every replica: it watches
// farms, their AppPools, the EndpointSlices of the operator's pools and
// cache tiers, and the clock rates of the Nodes their workers run on.
func (r *RoutingReconciler) SetupWithManager(mgr ctrl.Manager, opts ControllerOptions) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &discoveryv1.EndpointSlice{}, indexSliceNodes, slicePoolNodes); err != nil {
		return fmt.Errorf("indexing EndpointSlices by node: %w", err)
	}
	options := opts.controller()
	everyReplica := false
	options.NeedLeaderElection = &everyReplica
	b := ctrl.NewControllerManagedBy(mgr).
		Named("routing").
		For(&v1.WebFarm{}, routingInputsChanged).
		Watches(&v1.AppPool{}, handler.EnqueueRequestsFromMapFunc(r.farmsOfPool), poolRoutingChanged).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.farmsBehind)).
		// Only the Nodes' metadata: every replica caches it, and a Node's
		// status (its images, its conditions) is most of its size.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.farmsOnNode), builder.OnlyMetadata, nodeClockChanged)
	if r.GatewayAPI {
		b = watchFarmsOfGateways(b, r.Client)
	}
	return b.WithOptions(options).Complete(r)
}

// farmsOfPool maps an AppPool to the farms that route to it.
func (r *RoutingReconciler) farmsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	return r.farmsWith(ctx, o.GetNamespace(), IndexFarmPools, o.GetName())
}

// farmsBehind maps an EndpointSlice to the farms that route to its pool or cache tier.
func (r *RoutingReconciler) farmsBehind(ctx context.Context, o client.Object) []reconcile.Request {
	switch o.GetLabels()[vocabulary.LabelComponent] {
	case vocabulary.ComponentPool:
		return r.farmsWith(ctx, o.GetNamespace(), IndexFarmPools, o.GetLabels()[vocabulary.LabelInstance])
	case vocabulary.ComponentCache:
		return r.farmsWith(ctx, o.GetNamespace(), indexFarmPolicies, o.GetLabels()[vocabulary.LabelInstance])
	}
	return nil
}

// nodeMetadata is a Node's metadata, as the operator caches Nodes: their
// labels say their clock rates.
func nodeMetadata() *metav1.PartialObjectMetadata {
	n := &metav1.PartialObjectMetadata{}
	n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	return n
}

// indexSliceNodes indexes the EndpointSlices of pools by the nodes their
// endpoints run on, so that a node's new clock rate finds the farms to re-weigh.
const indexSliceNodes = "endpoints.nodeName"

// slicePoolNodes are the nodes of a pool's EndpointSlice's endpoints (none
// for a cache tier's, which the clocks do not weigh).
func slicePoolNodes(o client.Object) []string {
	s := o.(*discoveryv1.EndpointSlice)
	if s.Labels[vocabulary.LabelComponent] != vocabulary.ComponentPool {
		return nil
	}
	var nodes []string
	for _, e := range s.Endpoints {
		if e.NodeName != nil && *e.NodeName != "" {
			nodes = append(nodes, *e.NodeName)
		}
	}
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// farmsOnNode maps a Node to the farms that route to a pool with a worker on it.
func (r *RoutingReconciler) farmsOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	var endpointSlices discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &endpointSlices, client.MatchingFields{indexSliceNodes: o.GetName()}); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for i := range endpointSlices.Items {
		requests = append(requests, r.farmsBehind(ctx, &endpointSlices.Items[i])...)
	}
	slices.SortFunc(requests, func(a, b reconcile.Request) int { return cmp.Compare(a.String(), b.String()) })
	return slices.Compact(requests)
}

// farmsWith lists the farms whose index field holds value.
func (r *RoutingReconciler) farmsWith(ctx context.Context, namespace, index, value string) []reconcile.Request {
	var farms v1.WebFarmList
	if err := r.Client.List(ctx, &farms, client.InNamespace(namespace), client.MatchingFields{index: value}); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(farms.Items))
	for _, f := range farms.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&f)})
	}
	return requests
}
