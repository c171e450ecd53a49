// Package xds serves the farms' routing to their Envoy frontends over the
// aggregated discovery service (ADS). Each farm's Envoys share one node
// cluster (envoy.NodeCluster: "namespace/name") and so one snapshot; a new
// snapshot reaches every connected Envoy of that farm at once, without a
// restart. Envoy keeps its last configuration while the operator is away.
package xds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	ctrl "sigs.k8s.io/controller-runtime"

	"webfarm.dev/operator/internal/render/envoy"
)

// Server holds a snapshot per farm and serves it over gRPC. It runs on every
// replica of the operator (each one serves the Envoys that reach it).
type Server struct {
	addr  string
	cache cachev3.SnapshotCache

	mu      sync.Mutex
	current map[string]envoy.Routing // node cluster -> its snapshot's routing
}

// NewServer serves ADS on addr (host:port) once started.
func NewServer(addr string) *Server {
	return &Server{addr: addr, cache: cachev3.NewSnapshotCache(true, byNodeCluster{}, nil), current: map[string]envoy.Routing{}}
}

// byNodeCluster keys snapshots by the node cluster: all Envoys of a farm.
type byNodeCluster struct{}

func (byNodeCluster) ID(node *corev3.Node) string { return node.GetCluster() }

// Update makes routing the snapshot of a node cluster. An unchanged version
// is not sent again.
func (s *Server) Update(ctx context.Context, nodeCluster string, r envoy.Routing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current[nodeCluster].Version == r.Version {
		return nil
	}
	snapshot, err := cachev3.NewSnapshot(r.Version, map[resourcev3.Type][]types.Resource{
		resourcev3.ListenerType: resources(r.Listeners),
		resourcev3.RouteType:    resources(r.Routes),
		resourcev3.ClusterType:  resources(r.Clusters),
		resourcev3.EndpointType: resources(r.Endpoints),
	})
	if err != nil {
		return err
	}
	if err := snapshot.Consistent(); err != nil {
		return fmt.Errorf("inconsistent snapshot for %s: %w", nodeCluster, err)
	}
	if err := s.cache.SetSnapshot(ctx, nodeCluster, snapshot); err != nil {
		return err
	}
	s.current[nodeCluster] = r
	snapshotsSet.WithLabelValues(nodeCluster).Inc()
	return nil
}

// Remove forgets a node cluster's snapshot (its farm is gone).
func (s *Server) Remove(nodeCluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.ClearSnapshot(nodeCluster)
	delete(s.current, nodeCluster)
	snapshotsSet.DeleteLabelValues(nodeCluster)
	rejections.DeleteLabelValues(nodeCluster)
}

// Routing is what a node cluster's Envoys are being served.
func (s *Server) Routing(nodeCluster string) (envoy.Routing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.current[nodeCluster]
	return r, ok
}

func resources[T types.Resource](in []T) []types.Resource {
	out := make([]types.Resource, len(in))
	for i, r := range in {
		out[i] = r
	}
	return out
}

// Start serves until ctx ends (a manager.Runnable).
func (s *Server) Start(ctx context.Context) error {
	listener, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("xDS server: %w", err)
	}
	grpcServer := grpc.NewServer(
		// Envoy pings every 30 s (its bootstrap); allow that, and keep idle
		// streams open: a farm's routing may not change for days.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.MaxConcurrentStreams(10000),
	)
	tracker := &streamTracker{streams: map[int64]string{}}
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(grpcServer, serverv3.NewServer(ctx, s.cache, tracker.callbacks()))
	ctrl.Log.WithName("xds").Info("serving", "address", listener.Addr().String())
	done := make(chan error, 1)
	go func() { done <- grpcServer.Serve(listener) }()
	select {
	case <-ctx.Done():
		grpcServer.GracefulStop()
		return nil
	case err := <-done:
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil
		}
		return err
	}
}

// NeedLeaderElection is false: every replica serves xDS.
func (s *Server) NeedLeaderElection() bool { return false }
