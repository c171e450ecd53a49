package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/vocabulary"
)

// baselineResult is what a bare client needs to create the operator's children.
type baselineResult struct {
	wall    time.Duration
	applied int // server-side applies, one per child object
	// Config hashes of the first pool's and first farm's Deployments: the
	// operator's must be equal, showing that both runs made the same objects.
	poolHash, frontendHash string
}

// runBaseline renders every child object with the operator's own renderers and
// server-side applies it, workers at a time, with a client limited like the
// operator's. Each worker handles one parent at a time, applying its children in
// the order the reconcilers do. The cache tiers go last: their nginx.conf names
// the ClusterIP of the pool behind them, which the pool's Service apply returns.
// The namespace ns must exist.
func runBaseline(ctx context.Context, cfg *rest.Config, w workload, ns string, qps float64, burst, workers int, platform model.Platform) (baselineResult, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(qps), burst
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return baselineResult{}, err
	}
	pools, farms, policies := w.pools(ns), w.webFarms(ns), w.policies(ns)
	// Owner references need UIDs; the parents themselves are not created (no
	// garbage collector runs here, so the references are never followed).
	for _, p := range pools {
		p.UID = uuid.NewUUID()
	}
	for _, f := range farms {
		f.UID = uuid.NewUUID()
	}
	for _, p := range policies {
		p.UID = uuid.NewUUID()
	}

	var (
		mu         sync.Mutex
		clusterIPs = map[string]string{}
		applied    int
		res        baselineResult
	)
	applyAll := func(ctx context.Context, objs ...apply.Configuration) error {
		for _, o := range objs {
			if err := c.Apply(ctx, o, client.FieldOwner(apply.FieldOwner), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s/%s: %w", *o.GetNamespace(), *o.GetName(), err)
			}
		}
		mu.Lock()
		applied += len(objs)
		mu.Unlock()
		return nil
	}

	start := time.Now()
	// Pools and farms.
	err = parallel(ctx, workers, len(pools)+len(farms), func(ctx context.Context, i int) error {
		if i < len(pools) {
			m, err := model.ResolvePool(pools[i], platform)
			if err != nil {
				return err
			}
			conf, err := nginx.PoolConfig(m)
			if err != nil {
				return err
			}
			objs := k8s.Pool(m, conf)
			if i == 0 {
				res.poolHash = objs.Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey]
			}
			// The apply fills in the Service's ClusterIP.
			if err := applyAll(ctx, poolChildren(objs)...); err != nil {
				return err
			}
			if objs.Service.Spec == nil || objs.Service.Spec.ClusterIP == nil {
				return fmt.Errorf("service of pool %s has no ClusterIP", m.Name)
			}
			mu.Lock()
			clusterIPs[m.Name] = *objs.Service.Spec.ClusterIP
			mu.Unlock()
			return nil
		}
		m, err := model.ResolveFarm(farms[i-len(pools)], platform)
		if err != nil {
			return err
		}
		bootstrap, err := envoy.Bootstrap(m)
		if err != nil {
			return err
		}
		objs := k8s.Frontend(m, bootstrap)
		if i == len(pools) {
			res.frontendHash = objs.Deployment.Spec.Template.Annotations[vocabulary.ConfigHashKey]
		}
		return applyAll(ctx, frontendChildren(objs)...)
	})
	if err != nil {
		return res, err
	}
	// Cache tiers, in front of the pools' Services.
	err = parallel(ctx, workers, len(policies), func(ctx context.Context, f int) error {
		pool := cachedPool(f)
		mu.Lock()
		ip := clusterIPs[pool]
		mu.Unlock()
		m, err := model.ResolveCache(policies[f], []model.Upstream{{Pool: pool, Address: ip, Port: 80}}, platform)
		if err != nil {
			return err
		}
		conf, err := nginx.CacheConfig(m)
		if err != nil {
			return err
		}
		agentConf, err := nginx.CacheAgentConfig(m)
		if err != nil {
			return err
		}
		objs := k8s.Cache(m, conf, agentConf)
		return applyAll(ctx, cacheChildren(objs)...)
	})
	res.wall = time.Since(start)
	res.applied = applied
	return res, err
}

// The children of a pool, a farm's frontend and a cache tier, in the order
// their reconcilers apply them (controllers/*_controller.go).
func poolChildren(o k8s.PoolObjects) []apply.Configuration {
	return []apply.Configuration{o.ServiceAccount, o.ConfigMap, o.Service, o.PodDisruptionBudget, o.Deployment}
}

func frontendChildren(o k8s.FrontendObjects) []apply.Configuration {
	return []apply.Configuration{o.ServiceAccount, o.ConfigMap, o.Service, o.PodDisruptionBudget, o.Deployment}
}

func cacheChildren(o k8s.CacheObjects) []apply.Configuration {
	return []apply.Configuration{o.ConfigMap, o.Service, o.PodDisruptionBudget, o.Deployment}
}

// parallel runs do(0..n-1) on workers goroutines; the first error stops the rest.
func parallel(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, workers) {
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
	for i := range n {
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
