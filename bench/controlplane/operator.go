package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/devcluster"
	"webfarm.dev/operator/internal/scheme"
)

// managerProcess is bin/manager running as a child process.
type managerProcess struct {
	*benchkit.Manager
	metricsAddr string
}

// startManager starts the manager against kubeconfig, its output going to logPath.
func startManager(path, kubeconfig, logPath string, f benchkit.ManagerFlags) (*managerProcess, error) {
	metricsAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	m := &managerProcess{metricsAddr: metricsAddr}
	m.Manager, err = benchkit.StartManager(path, logPath, probeAddr, append([]string{
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr,
		"--metrics-secure=false", // the benchmark scrapes it on loopback
		"--health-probe-bind-address", probeAddr,
	}, f.Args()...)...)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// observer plays the parts of the cluster the test control plane lacks and
// watches the outcome: a stand-in for the Deployment controller, and a cache of
// the webfarm.dev objects to judge readiness from.
type observer struct {
	mgr    ctrl.Manager
	marker *deploymentMarker
	cancel context.CancelFunc
	done   chan error
}

// startObserver runs a controller-runtime manager inside the benchmark, limited
// to namespace ns.
func startObserver(ctx context.Context, cfg *rest.Config, ns string, workers int) (*observer, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		return nil, err
	}
	marker := &deploymentMarker{Client: mgr.GetClient()}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("bench-deployment-status").
		For(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(marker)
	if err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{&v1.AppPool{}, &v1.CachePolicy{}, &v1.WebFarm{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{mgr: mgr, marker: marker, cancel: cancel, done: make(chan error, 1)}
	go func() { o.done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		o.stop()
		return nil, fmt.Errorf("the benchmark's cache did not sync")
	}
	return o, nil
}

func (o *observer) stop() {
	o.cancel()
	<-o.done
}

// deploymentMarker writes each Deployment's status as the Deployment controller
// would once every replica is ready and up to date: the test control plane
// runs no kube-controller-manager and no kubelet.
type deploymentMarker struct {
	client.Client
	seen, marked atomic.Int64
	firstSeen    sync.Map // Deployment keys seen so far
}

func (d *deploymentMarker) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dep := &appsv1.Deployment{}
	if err := d.Get(ctx, req.NamespacedName, dep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, loaded := d.firstSeen.LoadOrStore(req.NamespacedName, true); !loaded {
		d.seen.Add(1)
	}
	r := ptr.Deref(dep.Spec.Replicas, 1)
	s := dep.Status
	if s.ObservedGeneration == dep.Generation && s.Replicas == r && s.UpdatedReplicas == r && s.ReadyReplicas == r && s.AvailableReplicas == r {
		return ctrl.Result{}, nil
	}
	before := dep.DeepCopy()
	dep.Status.ObservedGeneration = dep.Generation
	dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = r, r, r, r
	// A merge patch without a resourceVersion: no conflicts with the operator's
	// writes. Should the operator change the spec meanwhile, the update event
	// brings the Deployment back here for its new generation.
	if err := d.Status().Patch(ctx, dep, client.MergeFrom(before)); err != nil {
		if ctx.Err() != nil {
			return ctrl.Result{}, nil // the benchmark is stopping
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	d.marked.Add(1)
	return ctrl.Result{}, nil
}

// readiness counts the webfarm.dev objects of a namespace and those that are
// Ready: condition Ready=True for the object's current generation.
type readiness struct {
	pools, poolsReady       int
	policies, policiesReady int
	farms, farmsReady       int
	degraded                int // Ready objects whose Degraded condition is True
}

func (r readiness) all(w workload) bool {
	return r.pools == w.poolCount() && r.poolsReady == r.pools &&
		r.policies == w.farms && r.policiesReady == r.policies &&
		r.farms == w.farms && r.farmsReady == r.farms
}

func (r readiness) String() string {
	return fmt.Sprintf("ready: pools %d/%d, cache policies %d/%d, farms %d/%d", r.poolsReady, r.pools, r.policiesReady, r.policies, r.farmsReady, r.farms)
}

func countReady(ctx context.Context, c client.Reader, ns string) (readiness, error) {
	var r readiness
	// Read-only use of the cache's objects: no copies, so that polling costs
	// the benchmark (and the shared CPUs) next to nothing.
	opts := []client.ListOption{client.InNamespace(ns), client.UnsafeDisableDeepCopy}
	var pools v1.AppPoolList
	if err := c.List(ctx, &pools, opts...); err != nil {
		return r, err
	}
	var policies v1.CachePolicyList
	if err := c.List(ctx, &policies, opts...); err != nil {
		return r, err
	}
	var farms v1.WebFarmList
	if err := c.List(ctx, &farms, opts...); err != nil {
		return r, err
	}
	judge := func(gen int64, conds []metav1.Condition) bool {
		c := meta.FindStatusCondition(conds, v1.ConditionReady)
		ok := c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
		if ok && meta.IsStatusConditionTrue(conds, v1.ConditionDegraded) {
			r.degraded++
		}
		return ok
	}
	r.pools, r.policies, r.farms = len(pools.Items), len(policies.Items), len(farms.Items)
	for i := range pools.Items {
		if judge(pools.Items[i].Generation, pools.Items[i].Status.Conditions) {
			r.poolsReady++
		}
	}
	for i := range policies.Items {
		if judge(policies.Items[i].Generation, policies.Items[i].Status.Conditions) {
			r.policiesReady++
		}
	}
	for i := range farms.Items {
		if judge(farms.Items[i].Generation, farms.Items[i].Status.Conditions) {
			r.farmsReady++
		}
	}
	return r, nil
}

// waitIdle polls the manager's metrics until its work queues are empty and no
// reconcile runs: the operator has finished reacting to what it saw.
func (m *managerProcess) waitIdle(ctx context.Context, timeout time.Duration) (samples, error) {
	var last samples
	err := devcluster.Poll(ctx, timeout, 250*time.Millisecond, func() error {
		if err := m.Running(); err != nil {
			return devcluster.Stop(err)
		}
		s, err := scrapeHTTP(ctx, "http://"+m.metricsAddr+"/metrics", "")
		if err != nil {
			return err
		}
		last = s
		depth, active := s.sum("workqueue_depth"), s.sum("controller_runtime_active_workers")
		if depth > 0 || active > 0 {
			return fmt.Errorf("%.0f queued, %.0f reconciling", depth, active)
		}
		return nil
	})
	return last, err
}
