// Package workermemory reads the working set of each worker of the pools
// with a recycling memory limit from Prometheus (the kubelet's cAdvisor
// figures, all of a worker pod's containers together: IIS's private bytes
// of a worker process) into the observations.
package workermemory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/collect/prometheus"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// WorkerMemory reads the workers' memory every Interval. Leader only; the
// AppPool reconciler looks at those pools as often (lifecycle's
// limitRecheck).
type WorkerMemory struct {
	Client       client.Client
	Prometheus   promv1.API
	Interval     time.Duration
	Observations *observations.Store
}

// NeedLeaderElection: the leader's AppPool reconciler recycles.
func (m *WorkerMemory) NeedLeaderElection() bool { return true }

// Start reads until ctx ends.
func (m *WorkerMemory) Start(ctx context.Context) error {
	return prometheus.ReadEvery(ctx, m.Interval, "worker-memory", "reading the workers' memory", m.read)
}

// Query is the PromQL of the workers' memory in use, per pod, in the
// namespaces namespaceRegex matches: the kubelets' cAdvisor working set, as
// the kubelet counts it against the container's limit.
func Query(namespaceRegex string) string {
	return fmt.Sprintf(`sum by (namespace, pod) (container_memory_working_set_bytes{container!="",container!="POD",namespace=~"%s"})`, namespaceRegex)
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
	bytesByPod, err := prometheus.ByPod(ctx, m.Prometheus, Query(prometheus.NamespaceRegex(watched)))
	if err != nil {
		return err
	}
	byPool := map[types.NamespacedName]map[string]int64{}
	for _, p := range watched {
		byPool[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = map[string]int64{}
	}
	for pod, v := range bytesByPod {
		pool, ok := poolOfWorker(pod.Name)
		if !ok {
			continue
		}
		if figures, ok := byPool[types.NamespacedName{Namespace: pod.Namespace, Name: pool}]; ok {
			figures[pod.Name] = int64(v)
		}
	}
	for key, figures := range byPool {
		m.Observations.SetMemory(key, figures)
	}
	return nil
}

// poolOfWorker is the pool a worker pod's name belongs to: its Deployment
// is "<pool>-pool" and the pod "<pool>-pool-<hash>-<suffix>".
func poolOfWorker(pod string) (string, bool) {
	i := strings.LastIndex(pod, vocabulary.PoolName("")+"-")
	if i <= 0 {
		return "", false
	}
	return pod[:i], true
}
