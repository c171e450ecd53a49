package controllers

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	prommodel "github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/render/k8s"
)

// WorkerMemory reads, every Interval, the working set of each worker of the
// pools with a recycling memory limit from Prometheus (the kubelet's
// cAdvisor figures, all of a worker pod's containers together: IIS's
// private bytes of a worker process). Leader only; the AppPool controller
// looks at those pools as often (lifecycle's limitRecheck).
type WorkerMemory struct {
	Client     client.Client
	Prometheus promv1.API
	Interval   time.Duration
	Workers    *observations.Workers
}

// NeedLeaderElection: the leader's AppPool controller recycles.
func (m *WorkerMemory) NeedLeaderElection() bool { return true }

// Start reads until ctx ends.
func (m *WorkerMemory) Start(ctx context.Context) error {
	tick := time.NewTicker(m.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := m.read(ctx); err != nil {
				// Unknown is not zero: the readings stay as they were.
				ctrl.LoggerFrom(ctx).WithName("worker-memory").Info("reading the workers' memory", "error", err.Error())
			}
		}
	}
}

func (m *WorkerMemory) read(ctx context.Context) error {
	var pools v1.AppPoolList
	if err := m.Client.List(ctx, &pools); err != nil {
		return err
	}
	watched := slices.DeleteFunc(pools.Items, func(p v1.AppPool) bool { return p.Spec.Recycling.Memory == nil })
	if len(watched) == 0 {
		return nil
	}
	var namespaces []string
	for _, p := range watched {
		if !slices.Contains(namespaces, p.Namespace) {
			namespaces = append(namespaces, p.Namespace)
		}
	}
	// Namespace names are DNS labels: nothing in them needs escaping in a regex.
	query := fmt.Sprintf(`sum by (namespace, pod) (container_memory_working_set_bytes{container!="",container!="POD",namespace=~"%s"})`,
		strings.Join(namespaces, "|"))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	result, _, err := m.Prometheus.Query(ctx, query, time.Now())
	if err != nil {
		return err
	}
	vector, ok := result.(prommodel.Vector)
	if !ok {
		return fmt.Errorf("prometheus answered a %s, want a vector", result.Type())
	}
	byPool := map[types.NamespacedName]map[string]int64{}
	for _, p := range watched {
		byPool[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = map[string]int64{}
	}
	for _, s := range vector {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue // unknown, not zero
		}
		pod := string(s.Metric["pod"])
		pool, ok := poolOfWorker(pod)
		if !ok {
			continue
		}
		if figures, ok := byPool[types.NamespacedName{Namespace: string(s.Metric["namespace"]), Name: pool}]; ok {
			figures[pod] = int64(v)
		}
	}
	for key, figures := range byPool {
		m.Workers.SetMemory(key, figures)
	}
	return nil
}

// poolOfWorker is the pool a worker pod's name belongs to: its Deployment
// is "<pool>-pool" and the pod "<pool>-pool-<hash>-<suffix>".
func poolOfWorker(pod string) (string, bool) {
	i := strings.LastIndex(pod, k8s.PoolName("")+"-")
	if i <= 0 {
		return "", false
	}
	return pod[:i], true
}
