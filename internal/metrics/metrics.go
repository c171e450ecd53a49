// Package metrics makes the operator's per-pool, per-cache-tier and
// per-farm metrics, registered with its metrics endpoint, and forgets a
// deleted object's series. The collectors and the reconcilers both count into them.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// deleter is a metric vector whose series can be dropped by their labels.
type deleter interface{ DeleteLabelValues(...string) bool }

// poolMetrics, cacheMetrics and farmMetrics are labelled with their object's
// namespace and name; a deleted object's series go with it.
var poolMetrics, cacheMetrics, farmMetrics []deleter

// poolCounters and cacheCounters start at 0 for every object (KnowPool,
// KnowCache).
var poolCounters, cacheCounters []*prometheus.CounterVec

// poolLabels label every pool metric, cacheLabels every cache tier's.
var (
	poolLabels  = []string{"namespace", "pool"}
	cacheLabels = []string{"namespace", "cachepolicy"}
	farmLabels  = []string{"namespace", "farm"}
)

// WorkerFailures are the failures rapid-fail protection counted: the
// workers' pods and the frontends' bursts of 5xx responses both add to it.
var WorkerFailures = PoolCounter("webfarm_pool_worker_failures_total",
	"Worker failures (container restarts, failed health checks) rapid-fail protection counted, per pool.")

// PoolCounter, PoolGauge and PoolHistogram make a pool metric.
func PoolCounter(name, help string) *prometheus.CounterVec {
	c := register(&poolMetrics, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, poolLabels))
	poolCounters = append(poolCounters, c)
	return c
}

func PoolGauge(name, help string) *prometheus.GaugeVec {
	return register(&poolMetrics, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, poolLabels))
}

func PoolHistogram(name, help string, buckets []float64) *prometheus.HistogramVec {
	return register(&poolMetrics, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, poolLabels))
}

// CacheCounter and CacheGauge make a cache tier's metric.
func CacheCounter(name, help string) *prometheus.CounterVec {
	c := register(&cacheMetrics, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, cacheLabels))
	cacheCounters = append(cacheCounters, c)
	return c
}

func CacheGauge(name, help string) *prometheus.GaugeVec {
	return register(&cacheMetrics, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, cacheLabels))
}

// FarmGauge makes a farm's metric.
func FarmGauge(name, help string) *prometheus.GaugeVec {
	return register(&farmMetrics, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, farmLabels))
}

func register[M interface {
	prometheus.Collector
	deleter
}](into *[]deleter, m M) M {
	crmetrics.Registry.MustRegister(m)
	*into = append(*into, m)
	return m
}

// KnowPool exports every counter of a pool at 0 until it counts. Prometheus'
// increase() and rate() see only what a series gains after its first sample:
// a counter first scraped at 3 (three worker failures in one scrape interval)
// would show no increase, and the alert on it would never fire.
func KnowPool(namespace, pool string) {
	for _, c := range poolCounters {
		c.WithLabelValues(namespace, pool)
	}
}

// KnowCache exports every counter of a cache tier at 0, as KnowPool does.
func KnowCache(namespace, policy string) {
	for _, c := range cacheCounters {
		c.WithLabelValues(namespace, policy)
	}
}

// ForgetPool drops a deleted pool's series.
func ForgetPool(namespace, pool string) {
	for _, m := range poolMetrics {
		m.DeleteLabelValues(namespace, pool)
	}
}

// ForgetCache drops a deleted cache policy's series.
func ForgetCache(namespace, policy string) {
	for _, m := range cacheMetrics {
		m.DeleteLabelValues(namespace, policy)
	}
}

// ForgetFarm drops a farm's series: deleted, or its frontends no longer measured.
func ForgetFarm(namespace, farm string) {
	for _, m := range farmMetrics {
		m.DeleteLabelValues(namespace, farm)
	}
}
