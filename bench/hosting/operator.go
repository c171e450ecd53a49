package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"webfarm.dev/operator/internal/devcluster"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/scheme"
)

// managerStopGrace is longer than the manager's own graceful-shutdown limit
// (controller-runtime's default, 30 s), so that it ends by itself if it can.
const managerStopGrace = 45 * time.Second

// runOperator is the operator's run: setup, the 10-route load, the timed
// creation of the other routes, the loaded measurements and the changes.
func runOperator(ctx context.Context, o options, dir string, rep *report) (err error) {
	logf("operator: starting a control plane")
	cl, err := startCluster(dir, o)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cl.stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	if err := cl.createNamespaces(ctx, o.w); err != nil {
		return err
	}
	pools, err := startPoolServers(o.w.pools)
	if err != nil {
		return err
	}
	defer pools.stop()
	objs := append(o.w.setup(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: infraNS, Name: "content"}, Data: map[string]string{"index.html": "hosting\n"}})
	for p, port := range pools.ports {
		objs = append(objs, endpointSlice(p, pools.address, port))
	}
	for _, obj := range objs {
		if err := cl.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}

	mgr, err := startManager(o.managerPath, cl.kubeconfig, filepath.Join(dir, "manager.log"), o.mgr)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := mgr.Stop(managerStopGrace); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the manager: %w", stopErr)
		}
	}()
	if err := mgr.WaitReady(ctx, time.Minute); err != nil {
		return fmt.Errorf("waiting for the manager's /readyz: %w", err)
	}
	fe, err := startFrontend(o.envoyPath, dir, mgr.xdsAddr, o.envoyWorkers)
	if err != nil {
		return err
	}
	defer fe.Stop()
	probe := newProber(max(o.loadConns, 8))
	// The farm's inline site proves the path: xDS, Envoy, a pool's endpoint.
	if err := devcluster.Poll(ctx, time.Minute, 50*time.Millisecond, func() error {
		if err := firstOf(mgr.Running(), fe.Exited()); err != nil {
			return devcluster.Stop(err)
		}
		return probe.served(ctx, "www.provider.example", poolName(0))
	}); err != nil {
		return fmt.Errorf("the farm's own site is not served through Envoy: %w", err)
	}
	routes, err := watchRoutes(ctx, cl)
	if err != nil {
		return err
	}
	defer routes.stop()
	create := func(ctx context.Context, i int) error {
		if err := cl.client.Create(ctx, o.w.route(i)); err != nil {
			return fmt.Errorf("creating HTTPRoute %s: %w", routeName(i), err)
		}
		return nil
	}

	// One route per pool, then the same Envoy's requests/s with 10 routes.
	if err := parallel(ctx, o.createWorkers, 0, o.w.pools, create); err != nil {
		return err
	}
	if err := waitServed(ctx, o, mgr, fe, routes, probe, o.w.pools, time.Minute, nil); err != nil {
		return err
	}
	logf("operator: %d routes served; %s of load over them", o.w.pools, o.loadDuration)
	rep.loadSmall = probe.load(ctx, o.w, o.w.pools, o.loadConns, o.loadDuration)

	logf("operator: creating %d HTTPRoutes (%d workers), then waiting until every one is Accepted and served by Envoy", o.w.routes-o.w.pools, o.createWorkers)
	start := time.Now()
	progress := func() {
		rss, _ := procBytes(mgr.PID(), "VmRSS")
		a, _ := routes.accepted(ctx)
		logf("operator: %d/%d routes Accepted after %s; manager RSS %d MiB", a, o.w.routes, time.Since(start).Round(time.Second), rss>>20)
	}
	created := make(chan error, 1)
	go func() { created <- parallel(ctx, o.createWorkers, o.w.pools, o.w.routes, create) }()
	err = waitServed(ctx, o, mgr, fe, routes, probe, o.w.routes, o.timeout, progress)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// Measure all the same: where a run stalls, and at what cost, is
		// worth knowing.
		rep.stalled = stallOf(ctx, routes, probe, o.w, time.Since(start))
		if !routes.servedAt.IsZero() {
			rep.served, rep.sweep = routes.servedAt.Sub(start), routes.sweep
		}
		logf("operator: deadline passed: %s", rep.stalled)
		if rep.stalled.served < o.w.routes {
			return measureStalled(ctx, dir, mgr, fe, rep)
		}
		// Every route is served, their statuses lag: Envoy's figures and
		// the changes are measured while the operator still writes them.
		err = nil
	}
	if err != nil {
		return err
	}
	if err := <-created; err != nil {
		return err
	}
	if rep.stalled == nil {
		rep.accepted, rep.served = routes.acceptedAt.Sub(start), routes.servedAt.Sub(start)
		rep.sweep = routes.sweep
		logf("operator: every route Accepted after %s, served by Envoy after %s", rep.accepted.Round(time.Millisecond), rep.served.Round(time.Millisecond))
	}

	logf("operator: %s of load over the %d routes", o.loadDuration, o.w.routes)
	rep.loadFull = probe.load(ctx, o.w, o.w.routes, o.loadConns, o.loadDuration)
	if rep.envoyRSS, err = procBytes(fe.PID(), "VmRSS"); err != nil {
		return err
	}
	dump, err := fe.admin(ctx, "/config_dump")
	if err != nil {
		return err
	}
	rep.configBytes = len(dump)
	rep.virtualHosts = strings.Count(string(dump), `"domains"`)

	logf("operator: %d route changes, one at a time", o.changes)
	if rep.changes, err = timeChanges(ctx, o, cl.client, probe); err != nil {
		return err
	}
	if rep.peakRSS, err = procBytes(mgr.PID(), "VmHWM"); err != nil {
		return err
	}
	rep.reconciles, err = scrapeReconciles(ctx, mgr, filepath.Join(dir, "manager-metrics.txt"))
	return err
}

// stall is how far a run that missed its deadline got.
type stall struct {
	after            time.Duration
	accepted, served int // routes
	routes           int
}

func (s stall) String() string {
	return fmt.Sprintf("%d/%d routes Accepted and %d/%d served through Envoy after %s", s.accepted, s.routes, s.served, s.routes, s.after.Round(time.Second))
}

// stallOf counts the Accepted routes and, through Envoy, the served ones.
func stallOf(ctx context.Context, routes *routeWatch, probe prober, w workload, after time.Duration) *stall {
	s := &stall{after: after, routes: w.routes}
	s.accepted, _ = routes.accepted(ctx)
	for i := range w.routes {
		if probe.served(ctx, routeHost(i), w.routePool(i)) == nil {
			s.served++
		}
	}
	return s
}

// measureStalled takes the figures a stalled run still has: memory, Envoy's
// config size, the manager's reconciles.
func measureStalled(ctx context.Context, dir string, mgr *manager, fe *frontend, rep *report) (err error) {
	if rep.peakRSS, err = procBytes(mgr.PID(), "VmHWM"); err != nil {
		return err
	}
	if rep.envoyRSS, err = procBytes(fe.PID(), "VmRSS"); err != nil {
		return err
	}
	dump, err := fe.admin(ctx, "/config_dump")
	if err != nil {
		return err
	}
	rep.configBytes, rep.virtualHosts = len(dump), strings.Count(string(dump), `"domains"`)
	rep.reconciles, err = scrapeReconciles(ctx, mgr, filepath.Join(dir, "manager-metrics.txt"))
	return err
}

// firstOf is the first error that is set.
func firstOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitServed waits until routes [0, to) are Accepted (recording when in
// routes.acceptedAt) and served through Envoy (routes.servedAt): when a
// sweep of every host through Envoy finds each one routed to its pool, and
// Envoy applied no route configuration during the sweep, they were all
// served from Envoy's last reload before the sweep. The sweep starts once
// the last route's host is served, so that the check costs little while the
// operator works.
func waitServed(ctx context.Context, o options, mgr *manager, fe *frontend, routes *routeWatch, probe prober,
	to int, timeout time.Duration, progress func()) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	routes.acceptedAt, routes.servedAt = time.Time{}, time.Time{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	report := time.NewTicker(o.progress)
	defer report.Stop()
	last := to - 1
	for routes.acceptedAt.IsZero() || routes.servedAt.IsZero() {
		select {
		case <-ctx.Done():
			a, _ := routes.accepted(context.Background())
			return fmt.Errorf("%d/%d routes Accepted, served: %t: %w", a, o.w.routes, !routes.servedAt.IsZero(), ctx.Err())
		case <-report.C:
			if progress != nil {
				progress()
			}
		case <-tick.C:
		}
		if err := firstOf(mgr.Running(), fe.Exited()); err != nil {
			return err
		}
		if routes.acceptedAt.IsZero() {
			if a, err := routes.accepted(ctx); err != nil {
				return err
			} else if a == to {
				routes.acceptedAt = time.Now()
			}
		}
		if routes.servedAt.IsZero() && probe.served(ctx, routeHost(last), o.w.routePool(last)) == nil {
			before, err := fe.lastReload(ctx)
			if err != nil {
				return err
			}
			sweepStart := time.Now()
			bad, err := probe.sweep(ctx, o.w, 0, to, 8)
			if bad >= 0 && !errors.Is(err, errNotServed) {
				return err // not a routing answer: a broken connection, a timeout
			}
			after, rerr := fe.lastReload(ctx)
			if rerr != nil {
				return rerr
			}
			if bad < 0 && after.Equal(before) {
				routes.servedAt, routes.sweep = before, time.Since(sweepStart)
			}
		}
	}
	return nil
}

// routeWatch is the benchmark's watch-fed cache of HTTPRoutes.
type routeWatch struct {
	cache                cache.Cache
	cancel               context.CancelFunc
	done                 chan error
	acceptedAt, servedAt time.Time
	sweep                time.Duration // how long the last sweep through Envoy took
}

func watchRoutes(ctx context.Context, cl *cluster) (*routeWatch, error) {
	c, err := cache.New(cl.config, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, &gwv1.HTTPRoute{}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	rw := &routeWatch{cache: c, cancel: cancel, done: make(chan error, 1)}
	go func() { rw.done <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		rw.stop()
		return nil, fmt.Errorf("the benchmark's cache of HTTPRoutes did not sync")
	}
	return rw, nil
}

func (rw *routeWatch) stop() {
	rw.cancel()
	<-rw.done
}

// accepted counts the routes the operator accepted for their current generation.
func (rw *routeWatch) accepted(ctx context.Context) (int, error) {
	var list gwv1.HTTPRouteList
	if err := rw.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if isAccepted(&list.Items[i]) {
			n++
		}
	}
	return n, nil
}

func isAccepted(r *gwv1.HTTPRoute) bool {
	for _, p := range r.Status.Parents {
		c := meta.FindStatusCondition(p.Conditions, "Accepted")
		if p.ControllerName == gateway.ControllerName && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == r.Generation {
			return true
		}
	}
	return false
}

// timeChanges changes o.changes routes' host names one after another, each
// time measuring from the update until Envoy serves the new host name.
func timeChanges(ctx context.Context, o options, c client.Client, probe prober) ([]time.Duration, error) {
	var took []time.Duration
	for k := range o.changes {
		i := o.w.pools + k*(o.w.routes-o.w.pools)/o.changes
		var r gwv1.HTTPRoute
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.w.routeNS(i), Name: routeName(i)}, &r); err != nil {
			return nil, err
		}
		r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(changedHost(k))}
		start := time.Now()
		if err := c.Update(ctx, &r); err != nil {
			return nil, err
		}
		if err := devcluster.Poll(ctx, 30*time.Second, 2*time.Millisecond, func() error {
			return probe.served(ctx, changedHost(k), o.w.routePool(i))
		}); err != nil {
			return nil, fmt.Errorf("change %d (HTTPRoute %s): %w", k, routeName(i), err)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(a, b int) bool { return took[a] < took[b] })
	return took, nil
}
