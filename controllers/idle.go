package controllers

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/activator"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
)

var poolColdStart = poolHistogram("webfarm_pool_cold_start_seconds",
	"Time from the request that started an idle pool to its first ready worker, as the activator saw it.",
	[]float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89})

// Activity is when each pool last got a request, as the leader's frontend
// statistics saw it; a pool first asked about counts as active then (a new
// leader does not idle pools it has not watched for their timeout).
type Activity struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// Touch records requests for a pool at.
func (a *Activity) Touch(key types.NamespacedName, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[types.NamespacedName]time.Time{}
	}
	if at.After(a.last[key]) {
		a.last[key] = at
	}
}

// TouchNamespace records requests for every pool known in a namespace.
func (a *Activity) TouchNamespace(namespace string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range a.last {
		if key.Namespace == namespace && at.After(a.last[key]) {
			a.last[key] = at
		}
	}
}

// LastActive is when the pool last got a request (now, the first time).
func (a *Activity) LastActive(key types.NamespacedName, now time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[types.NamespacedName]time.Time{}
	}
	if _, ok := a.last[key]; !ok {
		a.last[key] = now
	}
	return a.last[key]
}

// Forget drops a deleted pool.
func (a *Activity) Forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.last, key)
}

// clusterPools give the activator the pools as the operator's cache sees them.
type clusterPools struct {
	client client.Client
}

// ReadyWorker is a ready worker of the pool, from its EndpointSlices.
func (c clusterPools) ReadyWorker(ctx context.Context, namespace, pool string) (string, bool) {
	var slices discoveryv1.EndpointSliceList
	if err := c.client.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{
		k8s.LabelManagedBy: k8s.ManagedBy, k8s.LabelComponent: k8s.ComponentPool, k8s.LabelInstance: pool,
	}); err != nil {
		return "", false
	}
	for _, e := range backendsOf(slices.Items)[envoy.PoolCluster(pool)] {
		if e.State == envoy.EndpointReady {
			return net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))), true
		}
	}
	return "", false
}

// Start asks an idle pool to start: the wake annotation, once per idle spell.
func (c clusterPools) Start(ctx context.Context, namespace, pool string) (bool, error) {
	var p v1.AppPool
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pool}, &p); err != nil {
		return false, err
	}
	if p.Status.IdleSince == nil {
		return false, nil
	}
	if asked, err := time.Parse(time.RFC3339Nano, p.Annotations[v1.WakeAnnotation]); err == nil && asked.After(p.Status.IdleSince.Time) {
		return false, nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1.WakeAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	return true, c.client.Patch(ctx, &p, patch)
}

// ActivatorServer serves the activator on every replica of the operator:
// the frontends reach whichever their Service picks.
type ActivatorServer struct {
	Address string
	Handler *activator.Activator
}

// NeedLeaderElection: every replica holds and hands over requests.
func (s *ActivatorServer) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then lets held requests finish.
func (s *ActivatorServer) Start(ctx context.Context) error {
	srv := &http.Server{Addr: s.Address, Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServe() }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), s.Handler.Timeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newActivator is the activator over the operator's cache.
func newActivator(c client.Client, timeout time.Duration) *activator.Activator {
	return &activator.Activator{
		Pools: clusterPools{client: c}, Timeout: timeout, MaxWaiting: activatorMaxWaiting, Poll: 100 * time.Millisecond,
		ColdStart: func(namespace, pool string, took time.Duration) {
			poolColdStart.WithLabelValues(namespace, pool).Observe(took.Seconds())
		},
	}
}

// activatorMaxWaiting bounds the requests one operator replica holds per
// pool (IIS's default queue length).
const activatorMaxWaiting = 1000
