package controllers

import (
	"github.com/prometheus/client_golang/prometheus"

	"webfarm.dev/operator/internal/metrics"
)

// poolColdStart is what the activator reports of the pools it started.
var poolColdStart = metrics.PoolHistogram("webfarm_pool_cold_start_seconds",
	"Time from the request that started an idle pool to its first ready worker, as the activator saw it.",
	[]float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89})

// forgetPoolMetrics drops a deleted pool's series.
func forgetPoolMetrics(namespace, pool string) {
	metrics.ForgetPool(namespace, pool)
	poolRecycles.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "pool": pool})
}
