package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
)

// cluster is a test control plane (kube-apiserver and etcd with the
// operator's and Gateway API's CRDs) and the benchmark's client of it.
type cluster struct {
	cp         *testutil.ControlPlane
	client     client.Client
	config     *rest.Config
	kubeconfig string
}

func startCluster(dir string, o options) (*cluster, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cp, err := testutil.StartControlPlane()
	if err != nil {
		return nil, err
	}
	cl := &cluster{cp: cp, config: rest.CopyConfig(cp.Config), kubeconfig: filepath.Join(dir, "kubeconfig")}
	cl.config.QPS, cl.config.Burst = float32(o.mgr.QPS), o.mgr.Burst
	doc, err := cp.KubeConfig()
	if err == nil {
		err = os.WriteFile(cl.kubeconfig, doc, 0o600)
	}
	if err == nil {
		cl.client, err = client.New(cl.config, client.Options{Scheme: scheme.New()})
	}
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cl, nil
}

func (cl *cluster) stop() error { return cl.cp.Stop() }

// createNamespaces makes the provider's and the tenants' namespaces.
func (cl *cluster) createNamespaces(ctx context.Context, w workload) error {
	for _, ns := range w.namespaceObjects() {
		if err := cl.client.Create(ctx, ns); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// baselineResult is the bare client's time to write what the operator's run
// ends with: every route, and its Accepted status.
type baselineResult struct {
	wall   time.Duration
	writes int
}

// runBaseline creates routes [pools, routes) and writes each one's status
// as the operator would, with as many workers as the operator's run creates
// routes with, on a control plane of its own. The first `pools` routes exist
// before the clock starts, as in the operator's run.
func runBaseline(ctx context.Context, o options, dir string) (res baselineResult, err error) {
	logf("baseline: starting a control plane of its own")
	cl, err := startCluster(dir, o)
	if err != nil {
		return res, err
	}
	defer func() {
		if stopErr := cl.stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	if err := cl.createNamespaces(ctx, o.w); err != nil {
		return res, err
	}
	write := func(ctx context.Context, i int) error {
		r := o.w.route(i)
		if err := cl.client.Create(ctx, r); err != nil {
			return fmt.Errorf("creating HTTPRoute %s/%s: %w", r.Namespace, r.Name, err)
		}
		r.Status.RouteStatus = acceptedStatus(r)
		if err := cl.client.Status().Update(ctx, r); err != nil {
			return fmt.Errorf("writing the status of HTTPRoute %s/%s: %w", r.Namespace, r.Name, err)
		}
		return nil
	}
	if err := parallel(ctx, o.createWorkers, 0, o.w.pools, write); err != nil {
		return res, err
	}
	logf("baseline: creating %d HTTPRoutes and writing their status, %d workers", o.w.routes-o.w.pools, o.createWorkers)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	start := time.Now()
	if err := parallel(ctx, o.createWorkers, o.w.pools, o.w.routes, write); err != nil {
		return res, err
	}
	res = baselineResult{wall: time.Since(start), writes: 2 * (o.w.routes - o.w.pools)}
	logf("baseline: %d writes in %s", res.writes, res.wall.Round(time.Millisecond))
	return res, nil
}

// parallel runs do for every i in [from, to) on workers goroutines and
// returns the first error (the others stop then).
func parallel(ctx context.Context, workers, from, to int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
