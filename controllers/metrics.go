package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// poolMetrics are the operator's metrics of each pool, labelled with its
// namespace and name; a deleted pool's series go with it.
var poolMetrics []interface{ DeleteLabelValues(...string) bool }

// poolLabels label every pool metric.
var poolLabels = []string{"namespace", "pool"}

// poolColdStart is what the activator reports of the pools it started.
var poolColdStart = poolHistogram("webfarm_pool_cold_start_seconds",
	"Time from the request that started an idle pool to its first ready worker, as the activator saw it.",
	[]float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89})

// poolCounter, poolGauge and poolHistogram make a pool metric, registered
// with the operator's metrics endpoint.
func poolCounter(name, help string) *prometheus.CounterVec {
	return registerPoolMetric(prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, poolLabels))
}

func poolGauge(name, help string) *prometheus.GaugeVec {
	return registerPoolMetric(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, poolLabels))
}

func poolHistogram(name, help string, buckets []float64) *prometheus.HistogramVec {
	return registerPoolMetric(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, poolLabels))
}

func registerPoolMetric[M interface {
	prometheus.Collector
	DeleteLabelValues(...string) bool
}](m M) M {
	metrics.Registry.MustRegister(m)
	poolMetrics = append(poolMetrics, m)
	return m
}

// forgetPoolMetrics drops a deleted pool's series.
func forgetPoolMetrics(namespace, pool string) {
	for _, m := range poolMetrics {
		m.DeleteLabelValues(namespace, pool)
	}
	poolRecycles.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "pool": pool})
}
