package activator

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// requestsForbidden counts requests refused for want of a farm identity
// that routes to the pool asked for (not labelled by what a stranger asked:
// that would let anyone grow the series).
var requestsForbidden = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "webfarm_activator_requests_forbidden_total",
	Help: "Requests to the activator refused (403) because their client certificate names no farm that routes to the pool asked for.",
})

func init() { metrics.Registry.MustRegister(requestsForbidden) }
