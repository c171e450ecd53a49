package xds

import (
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the xDS server, per farm ("namespace/name", the Envoys' node
// cluster), on the operator's /metrics.
var (
	connectedEnvoys = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "webfarm_xds_envoys",
		Help: "Envoy frontends of a farm connected to this replica's xDS server.",
	}, []string{"farm"})
	snapshotsSet = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webfarm_xds_snapshots_total",
		Help: "Routing snapshots (new versions) made for a farm's Envoys.",
	}, []string{"farm"})
	rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webfarm_xds_rejections_total",
		Help: "Configurations a farm's Envoys rejected (NACKs); each is also logged with Envoy's message.",
	}, []string{"farm"})
)

func init() { metrics.Registry.MustRegister(connectedEnvoys, snapshotsSet, rejections) }

// streamTracker counts the ADS streams per farm. Envoy names its node only in
// a stream's first request.
type streamTracker struct {
	mu      sync.Mutex
	streams map[int64]string // stream ID -> node cluster
}

func (t *streamTracker) callbacks() serverv3.CallbackFuncs {
	return serverv3.CallbackFuncs{
		StreamRequestFunc: func(id int64, req *discoveryv3.DiscoveryRequest) error {
			t.mu.Lock()
			farm, known := t.streams[id]
			if !known && req.GetNode() != nil {
				farm = req.GetNode().GetCluster()
				t.streams[id] = farm
				connectedEnvoys.WithLabelValues(farm).Inc()
			}
			t.mu.Unlock()
			if detail := req.GetErrorDetail(); detail != nil {
				rejections.WithLabelValues(farm).Inc()
				ctrl.Log.WithName("xds").Info("an Envoy rejected its configuration", "farm", farm,
					"type", req.GetTypeUrl(), "version", req.GetVersionInfo(), "message", detail.GetMessage())
			}
			return nil
		},
		StreamClosedFunc: func(id int64, _ *corev3.Node) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if farm, known := t.streams[id]; known {
				connectedEnvoys.WithLabelValues(farm).Dec()
				delete(t.streams, id)
			}
		},
	}
}
