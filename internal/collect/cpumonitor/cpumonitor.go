// Package cpumonitor is the IIS CPU monitor: it reads, from Prometheus (the
// kubelet's cAdvisor counters), the CPU of each pool that has a cpuLimit,
// into the observations, and tells the AppPool reconciler when a pool has
// stayed over its limit for the limit's interval, or no longer is.
package cpumonitor

import (
	"context"
	"fmt"
	"slices"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/collect/prometheus"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

var poolCPUPercent = metrics.PoolGauge("webfarm_pool_cpu_percent",
	"CPU a pool with a cpuLimit used, in percent of its workers' CPU limits (the CPU monitor's reading).")

// cpuWindow is the window of the CPU rate the monitor reads: long enough
// for a few scrapes of the kubelet's counters, short enough to act promptly.
const cpuWindow = "30s"

// CPUMonitor reads the pools' CPU every Interval. Leader only.
type CPUMonitor struct {
	Client       client.Client
	Prometheus   promv1.API
	Interval     time.Duration
	Observations *observations.Store
	Pools        *observations.Notifier
	// Models are the pools as their reconciler resolved them (nil: each
	// reading resolves them again, without the platform's facts, which the
	// CPU limit does not use).
	Models *model.Models
}

// NeedLeaderElection: the leader's AppPool reconciler acts on the readings.
func (m *CPUMonitor) NeedLeaderElection() bool { return true }

// Start reads until ctx ends.
func (m *CPUMonitor) Start(ctx context.Context) error {
	return prometheus.ReadEvery(ctx, m.Interval, "cpu-monitor", "reading the pools' CPU", m.check)
}

// Query is the PromQL of the workers' CPU in cores, per pod, in the
// namespaces namespaceRegex matches: the rate of the kubelets' cAdvisor CPU
// counter over cpuWindow.
func Query(namespaceRegex string) string {
	return fmt.Sprintf(`sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!="",container!="POD",namespace=~"%s"}[%s]))`,
		namespaceRegex, cpuWindow)
}

func (m *CPUMonitor) check(ctx context.Context) error {
	var pools v1.AppPoolList
	if err := m.Client.List(ctx, &pools); err != nil {
		return err
	}
	watched := slices.DeleteFunc(pools.Items, func(p v1.AppPool) bool {
		return p.Spec.CPULimit.Percent == 0 || p.Status.Phase == v1.PoolStopped
	})
	if len(watched) == 0 {
		return nil
	}
	used, err := prometheus.ByPod(ctx, m.Prometheus, Query(prometheus.NamespaceRegex(watched)))
	if err != nil {
		return err
	}
	now := time.Now()
	for _, p := range watched {
		resolved, err := m.PoolModel(&p)
		if err != nil || resolved.CPULimit == nil || resolved.CPULimit.Action == model.CPUThrottle {
			continue // an invalid spec (its reconciler reports it), or capped, not watched
		}
		usedCores, limitCores, known, err := m.poolCores(ctx, p, used)
		if err != nil {
			return err
		}
		if !known {
			continue // no worker has a figure: unknown, not zero; the last reading stays
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		percent := cpu.Percent(usedCores, limitCores)
		poolCPUPercent.WithLabelValues(p.Namespace, p.Name).Set(percent)
		if _, changed := m.Observations.ObserveCPU(key, percent, resolved.CPULimit.Percent, resolved.CPULimit.Interval, now); changed {
			m.Pools.Notify(key)
		}
	}
	return nil
}

// PoolModel is the model of the pool whose CPU limit the monitor reads
// against, or why its spec does not resolve.
func (m *CPUMonitor) PoolModel(p *v1.AppPool) (model.Pool, error) {
	return m.Models.Pool(p)
}

// poolCores sums what a pool's running workers use and may use; known is
// false when there are running workers and none of them has a figure (a pool
// without running workers uses nothing: that is known).
func (m *CPUMonitor) poolCores(ctx context.Context, p v1.AppPool, used map[types.NamespacedName]float64) (usedCores, limitCores float64, known bool, err error) {
	var pods corev1.PodList
	if err := m.Client.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabels{
		vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentPool, vocabulary.LabelInstance: p.Name,
	}); err != nil {
		return 0, 0, false, err
	}
	running, measured := 0, 0
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		running++
		if cores, ok := used[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]; ok {
			usedCores += cores
			measured++
		}
		for _, c := range pod.Spec.Containers {
			limitCores += c.Resources.Limits.Cpu().AsApproximateFloat64()
		}
	}
	known = running == 0 || measured > 0
	return usedCores, limitCores, known, nil
}
