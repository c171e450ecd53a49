package xds

import (
	"context"
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"webfarm.dev/operator/internal/identity"
)

// Snapshots are keyed by the node cluster an Envoy claims (envoy.NodeCluster:
// "namespace/name"). Over mutual TLS the claim must be the farm its client
// certificate names: a stream whose certificate names no farm, or that claims
// another farm's node cluster, is closed with PermissionDenied before its
// request reaches the snapshot cache, so it receives nothing.

// Why a stream was refused (the label of streamsRefused).
const (
	refusedNoIdentity = "no_identity"
	refusedOtherFarm  = "other_farm"
	refusedNoNode     = "no_node"
)

var streamsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "webfarm_xds_streams_refused_total",
	Help: "ADS streams closed with PermissionDenied, by reason: no_identity (no farm in the client certificate), other_farm (a node cluster not the certificate's farm), no_node (a first request naming no node).",
}, []string{"reason"})

func init() { metrics.Registry.MustRegister(streamsRefused) }

// refusal is a stream's refusal, counted and logged once.
func refusal(ctx context.Context, reason, message string, keysAndValues ...any) error {
	streamsRefused.WithLabelValues(reason).Inc()
	if p, ok := peer.FromContext(ctx); ok {
		keysAndValues = append(keysAndValues, "peer", p.Addr.String())
	}
	ctrl.Log.WithName("xds").Info("refused a stream: "+message, append(keysAndValues, "reason", reason)...)
	return status.Error(codes.PermissionDenied, message)
}

// streamFarm is the node cluster ("namespace/name") the stream's verified
// client certificate names.
func streamFarm(ctx context.Context) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return "", errors.New("not over TLS")
	}
	namespace, farm, err := identity.PeerFarm(&info.State)
	if err != nil {
		return "", err
	}
	return namespace + "/" + farm, nil
}

// claimRefused says why a request may not be served to the farm of the
// stream's certificate, or "" when it may: its node, when it names one, is
// of that farm, and the stream's first request names one (Envoy names its
// node in the first request only).
func claimRefused(farm string, node *corev3.Node, named bool) (reason string) {
	switch {
	case node == nil && !named:
		return refusedNoNode
	case node != nil && node.GetCluster() != farm:
		return refusedOtherFarm
	}
	return ""
}

// farmBound serves ADS to streams whose Envoys claim their certificate's farm.
type farmBound struct {
	discoveryv3.AggregatedDiscoveryServiceServer
}

func (f farmBound) StreamAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return serveBound(stream.Context(), func(b *binding) error {
		return f.AggregatedDiscoveryServiceServer.StreamAggregatedResources(sotwBound{stream, b})
	})
}

func (f farmBound) DeltaAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return serveBound(stream.Context(), func(b *binding) error {
		return f.AggregatedDiscoveryServiceServer.DeltaAggregatedResources(deltaBound{stream, b})
	})
}

// serveBound serves a stream bound to its certificate's farm; a refused
// request ends it with the refusal (go-control-plane ends a stream whose
// Recv fails without an error of its own, so the refusal also cancels the
// stream's context and is returned from here).
func serveBound(ctx context.Context, serve func(*binding) error) error {
	farm, err := streamFarm(ctx)
	if err != nil {
		return refusal(ctx, refusedNoIdentity, "the client certificate names no farm", "error", err.Error())
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b := &binding{ctx: ctx, cancel: cancel, farm: farm}
	err = serve(b)
	// Read through the context: the refusal was made on Recv's goroutine.
	if cause := context.Cause(ctx); status.Code(cause) == codes.PermissionDenied {
		return cause
	}
	return err
}

// binding is one stream's farm and whether its Envoy named its node yet.
type binding struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	farm    string
	named   bool
	refused error
}

// check admits a request's node or ends the stream.
func (b *binding) check(node *corev3.Node) error {
	if b.refused != nil {
		return b.refused
	}
	if reason := claimRefused(b.farm, node, b.named); reason != "" {
		b.refused = refusal(b.ctx, reason, fmt.Sprintf("the client certificate names farm %s, not node cluster %q", b.farm, node.GetCluster()),
			"identity", b.farm, "claimed", node.GetCluster())
		b.cancel(b.refused)
		return b.refused
	}
	b.named = true
	return nil
}

type sotwBound struct {
	discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer
	b *binding
}

func (s sotwBound) Context() context.Context { return s.b.ctx }

func (s sotwBound) Recv() (*discoveryv3.DiscoveryRequest, error) {
	req, err := s.AggregatedDiscoveryService_StreamAggregatedResourcesServer.Recv()
	if err == nil {
		err = s.b.check(req.GetNode())
	}
	if err != nil {
		return nil, err
	}
	return req, nil
}

type deltaBound struct {
	discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer
	b *binding
}

func (s deltaBound) Context() context.Context { return s.b.ctx }

func (s deltaBound) Recv() (*discoveryv3.DeltaDiscoveryRequest, error) {
	req, err := s.AggregatedDiscoveryService_DeltaAggregatedResourcesServer.Recv()
	if err == nil {
		err = s.b.check(req.GetNode())
	}
	if err != nil {
		return nil, err
	}
	return req, nil
}
