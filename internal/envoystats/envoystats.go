// Package envoystats reads what the operator needs from an Envoy frontend's
// Prometheus page: per pool cluster, the requests refused by a full queue or
// a queue timeout, the requests waiting and in progress, and the 5xx
// responses. Pure.
package envoystats

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	opmodel "webfarm.dev/operator/internal/model"
)

// PoolPrefix is how the frontend names a pool's cluster ("pool/<name>").
const PoolPrefix = "pool/"

// Query is the query string that keeps Envoy's page to the pool clusters'
// figures (the admin endpoint's filter is a regular expression on stat names).
var Query = url.Values{"filter": {
	`^cluster\.pool/.*\.(upstream_rq_pending_overflow|upstream_rq_pending_active|upstream_rq_active|upstream_rq_5xx|upstream_rq_total|upstream_rq_` +
		queueTimeoutCode + `|endpoint\..*\.rq_total)$`,
}}.Encode()

// queueTimeoutCode is the status a worker answers for a request that waited
// past the queue timeout (the client gets 503 from the frontend).
var queueTimeoutCode = strconv.Itoa(opmodel.QueueTimeoutStatus)

// Pool is one frontend's figures for one pool. Counters only grow while the
// Envoy runs; gauges are the current value.
type Pool struct {
	QueueRejected uint64 // counter: 503s because the queue was full
	QueueTimedOut uint64 // counter: 503s because a request waited past the queue timeout
	Responses5xx  uint64 // counter: 5xx answers from the pool's workers
	Requests      uint64 // counter: requests sent to the pool's workers
	Waiting       uint64 // gauge: requests in the queue
	Active        uint64 // gauge: requests at a worker
	// PerWorker are the requests sent to each worker, by its address
	// ("10.0.0.5:8080"), when the pool's cluster counts them (request-count
	// recycling); counters.
	PerWorker map[string]uint64
}

// Parse reads an Envoy Prometheus page into figures per pool name.
func Parse(r io.Reader) (map[string]Pool, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("envoy stats: %w", err)
	}
	pools := map[string]Pool{}
	read := func(name string, set func(p *Pool, v uint64), only ...string) {
		f := families[name]
		if f == nil {
			return
		}
		for _, m := range f.GetMetric() {
			pool, ok := poolOf(m, only)
			if !ok {
				continue
			}
			p := pools[pool]
			set(&p, value(m))
			pools[pool] = p
		}
	}
	read("envoy_cluster_upstream_rq_pending_overflow", func(p *Pool, v uint64) { p.QueueRejected = v })
	read("envoy_cluster_upstream_rq", func(p *Pool, v uint64) { p.QueueTimedOut = v }, "envoy_response_code", queueTimeoutCode)
	read("envoy_cluster_upstream_rq_xx", func(p *Pool, v uint64) { p.Responses5xx = v }, "envoy_response_code_class", "5")
	read("envoy_cluster_upstream_rq_total", func(p *Pool, v uint64) { p.Requests = v })
	read("envoy_cluster_upstream_rq_pending_active", func(p *Pool, v uint64) { p.Waiting = v })
	read("envoy_cluster_upstream_rq_active", func(p *Pool, v uint64) { p.Active = v })
	readPerWorker(families["envoy_cluster_endpoint_rq_total"], pools)
	return pools, nil
}

// readPerWorker reads the per-endpoint request counters into the pools.
func readPerWorker(f *dto.MetricFamily, pools map[string]Pool) {
	for _, m := range f.GetMetric() {
		pool, ok := poolOf(m, nil)
		if !ok {
			continue
		}
		var address string
		for _, l := range m.GetLabel() {
			if l.GetName() == "envoy_endpoint_address" {
				address = l.GetValue()
			}
		}
		if address == "" {
			continue
		}
		p := pools[pool]
		if p.PerWorker == nil {
			p.PerWorker = map[string]uint64{}
		}
		p.PerWorker[address] = value(m)
		pools[pool] = p
	}
}

// poolOf is the pool a series is about, if it is a pool cluster's and carries
// the label only names (a name and a value), when given.
func poolOf(m *dto.Metric, only []string) (string, bool) {
	pool, matches := "", len(only) == 0
	for _, l := range m.GetLabel() {
		switch {
		case l.GetName() == "envoy_cluster_name":
			name, ok := strings.CutPrefix(l.GetValue(), PoolPrefix)
			if !ok {
				return "", false
			}
			pool = name
		case len(only) == 2 && l.GetName() == only[0]:
			matches = l.GetValue() == only[1]
		}
	}
	return pool, pool != "" && matches
}

func value(m *dto.Metric) uint64 {
	var v float64
	switch {
	case m.GetCounter() != nil:
		v = m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		v = m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		v = m.GetUntyped().GetValue()
	}
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// Delta is how much a counter grew between two readings of one Envoy; a
// smaller reading means the Envoy restarted and counts from zero again.
func Delta(before, now uint64) uint64 {
	if now < before {
		return now
	}
	return now - before
}
