package xds

import (
	"context"
	"strings"
	"sync"
	"time"

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
	resourcesSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webfarm_xds_resources_sent_total",
		Help: "Resources sent to a farm's Envoys over delta ADS, by type (its type URL's last part): a site's change is one VirtualHost.",
	}, []string{"farm", "type"})
	rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webfarm_xds_rejections_total",
		Help: "Configurations a farm's Envoys rejected (NACKs); each is also logged with Envoy's message.",
	}, []string{"farm"})
)

func init() { metrics.Registry.MustRegister(connectedEnvoys, snapshotsSet, resourcesSent, rejections) }

// streamTracker follows the ADS streams: it counts them per farm, notes what
// each sent (the version of each response's nonce, the only thing a delta
// NACK names) and keeps each farm's last rejection. Envoy names its node
// only in a stream's first request. The state-of-the-world and delta
// servers number their streams each from 1.
type streamTracker struct {
	mu         sync.Mutex
	streams    map[streamID]*stream
	rejections map[string]Rejection // node cluster -> its last NACK
}

type streamID struct {
	delta bool
	id    int64
}

// stream is one Envoy's ADS stream.
type stream struct {
	farm, node string
	sent       map[string]sent // type URL -> the last response of that type
}

// sent is a response: its nonce and the snapshot version it carried.
type sent struct{ nonce, version string }

func newStreamTracker() *streamTracker {
	return &streamTracker{streams: map[streamID]*stream{}, rejections: map[string]Rejection{}}
}

func (t *streamTracker) callbacks() serverv3.CallbackFuncs {
	return serverv3.CallbackFuncs{
		StreamRequestFunc: func(id int64, req *discoveryv3.DiscoveryRequest) error {
			t.request(streamID{id: id}, req.GetNode(), req.GetTypeUrl(), req.GetResponseNonce(), req.GetErrorDetail() != nil, req.GetErrorDetail().GetMessage())
			return nil
		},
		StreamDeltaRequestFunc: func(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
			t.request(streamID{delta: true, id: id}, req.GetNode(), req.GetTypeUrl(), req.GetResponseNonce(), req.GetErrorDetail() != nil, req.GetErrorDetail().GetMessage())
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			t.response(streamID{id: id}, resp.GetTypeUrl(), resp.GetNonce(), resp.GetVersionInfo())
		},
		StreamDeltaResponseFunc: func(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
			farm := t.response(streamID{delta: true, id: id}, resp.GetTypeUrl(), resp.GetNonce(), resp.GetSystemVersionInfo())
			kind := resp.GetTypeUrl()[strings.LastIndex(resp.GetTypeUrl(), ".")+1:]
			resourcesSent.WithLabelValues(farm, kind).Add(float64(len(resp.GetResources())))
		},
		StreamClosedFunc:      func(id int64, _ *corev3.Node) { t.closed(streamID{id: id}) },
		DeltaStreamClosedFunc: func(id int64, _ *corev3.Node) { t.closed(streamID{delta: true, id: id}) },
	}
}

// request notes a stream's farm and node from its first request, and an
// ACK or NACK of a response (nonce) sent on it.
func (t *streamTracker) request(id streamID, node *corev3.Node, typeURL, nonce string, refused bool, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, known := t.streams[id]
	if !known {
		if node == nil {
			return // a stream whose Envoy has not named itself: no farm to note
		}
		s = &stream{farm: node.GetCluster(), node: node.GetId(), sent: map[string]sent{}}
		t.streams[id] = s
		connectedEnvoys.WithLabelValues(s.farm).Inc()
	}
	if nonce == "" {
		return // a subscription, not an answer
	}
	var version string
	if r := s.sent[typeURL]; r.nonce == nonce {
		version = r.version
	}
	if refused {
		t.rejections[s.farm] = Rejection{Node: s.node, TypeURL: typeURL, Version: version, Message: message, At: time.Now()}
		rejected(s.farm, s.node, typeURL, version, message)
		return
	}
	// The node that refused took a later version of what it refused.
	if r, ok := t.rejections[s.farm]; ok && r.Node == s.node && r.TypeURL == typeURL && version != "" && version != r.Version {
		delete(t.rejections, s.farm)
	}
}

// response notes what a stream sent; it returns the stream's farm.
func (t *streamTracker) response(id streamID, typeURL, nonce, version string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, known := t.streams[id]
	if !known {
		return ""
	}
	s.sent[typeURL] = sent{nonce: nonce, version: version}
	return s.farm
}

func (t *streamTracker) closed(id streamID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, known := t.streams[id]; known {
		connectedEnvoys.WithLabelValues(s.farm).Dec()
		delete(t.streams, id)
	}
}

// rejection is a farm's last NACK, if any.
func (t *streamTracker) rejection(farm string) (Rejection, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.rejections[farm]
	return r, ok
}

// forget drops a farm's rejection (its farm is gone).
func (t *streamTracker) forget(farm string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.rejections, farm)
}

// rejected counts and logs a NACK.
func rejected(farm, node, typeURL, version, message string) {
	rejections.WithLabelValues(farm).Inc()
	ctrl.Log.WithName("xds").Info("an Envoy rejected its configuration", "farm", farm, "node", node,
		"type", typeURL, "version", version, "message", message)
}
