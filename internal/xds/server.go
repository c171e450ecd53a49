// Package xds serves the farms' routing to their Envoy frontends over the
// aggregated discovery service (ADS), incremental (delta) since the farm's
// virtual hosts are resources of their own (Routing.FarmVirtualHosts, envoy.DeltaResources): a new
// snapshot sends each Envoy only the resources whose hash changed. The
// state-of-the-world protocol stays served for Envoys of an older bootstrap
// until their frontend rolls. Each farm's Envoys share one node
// cluster (envoy.NodeCluster: "namespace/name") and so one snapshot; a new
// snapshot reaches every connected Envoy of that farm at once, without a
// restart. Envoy keeps its last configuration while the operator is away.
package xds

import (
	"context"
	"crypto/tls"
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
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	ctrl "sigs.k8s.io/controller-runtime"

	"webfarm.dev/operator/internal/render/envoy"
)

// Server holds a snapshot per farm and serves it over gRPC. It runs on every
// replica of the operator (each one serves the Envoys that reach it).
type Server struct {
	addr  string
	cache cachev3.SnapshotCache
	// tls, when set, asks each Envoy for its farm's client certificate and
	// serves it only its own farm's snapshot (farmBound).
	tls *tls.Config

	mu      sync.Mutex
	current map[string]envoy.Routing // node cluster -> its snapshot's routing
	streams *streamTracker
}

// Rejection is the last configuration an Envoy of a farm refused (a NACK),
// as this server received it: each Envoy reaches one operator replica.
type Rejection struct {
	Node    string // the Envoy's node id: its frontend pod's name
	TypeURL string // the kind of resources it refused
	Version string // the version refused ("" when no longer known)
	Message string // Envoy's reason
	At      time.Time
}

// NewServer serves ADS on addr (host:port) once started: over mutual TLS
// with tlsConfig (identity.Authority's ServerTLS), each Envoy to its own
// farm only; plain to anyone when nil (tests on loopback).
func NewServer(addr string, tlsConfig *tls.Config) *Server {
	return &Server{addr: addr, tls: tlsConfig, cache: cachev3.NewSnapshotCache(true, byNodeCluster{}, nil), current: map[string]envoy.Routing{},
		streams: newStreamTracker()}
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
		resourcev3.RouteType:    resources(envoy.DeltaResources(r.Routes)),
		resourcev3.ClusterType:  resources(r.Clusters),
		resourcev3.EndpointType: resources(r.Endpoints),
	})
	if err != nil {
		return err
	}
	// The virtual hosts are kept encoded, a message go-control-plane cannot
	// name: they go in by their names.
	hosts := cachev3.Resources{Version: r.Version, Items: make(map[string]types.ResourceWithTTL, len(r.FarmVirtualHosts))}
	for _, vh := range r.FarmVirtualHosts {
		hosts.Items[vh.Name] = types.ResourceWithTTL{Resource: vh.Encoded}
	}
	snapshot.Resources[types.VirtualHost] = hosts
	if snapshot.VersionMap, err = versionMap(snapshot, r.FarmVirtualHosts); err != nil {
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
	s.streams.forget(nodeCluster)
	snapshotsSet.DeleteLabelValues(nodeCluster)
	rejections.DeleteLabelValues(nodeCluster)
	resourcesSent.DeletePartialMatch(prometheus.Labels{"farm": nodeCluster})
}

// Routing is what a node cluster's Envoys are being served.
func (s *Server) Routing(nodeCluster string) (envoy.Routing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.current[nodeCluster]
	return r, ok
}

// Rejection is the last configuration an Envoy of the node cluster refused
// on this server, until that Envoy accepts a later version of the same kind
// of resources.
func (s *Server) Rejection(nodeCluster string) (Rejection, bool) {
	return s.streams.rejection(nodeCluster)
}

// versionMap is what go-control-plane's delta protocol compares to send only
// what changed: a version per resource. The cache would marshal and hash
// every resource of every snapshot; the virtual hosts' versions are known
// from their rendering, so only the few other resources are hashed here.
func versionMap(snapshot *cachev3.Snapshot, hosts []envoy.VirtualHostResource) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for i, list := range snapshot.Resources {
		typeURL, err := cachev3.GetResponseTypeURL(types.ResponseType(i))
		if err != nil {
			return nil, err
		}
		versions := make(map[string]string, len(list.Items))
		if typeURL == resourcev3.VirtualHostType {
			for _, vh := range hosts {
				versions[vh.Name] = vh.Version
			}
		} else {
			for name, r := range list.Items {
				b, err := cachev3.MarshalResource(r.Resource)
				if err != nil {
					return nil, err
				}
				versions[name] = cachev3.HashResource(b)
			}
		}
		out[typeURL] = versions
	}
	return out, nil
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
	options := []grpc.ServerOption{
		// Envoy pings every 30 s (its bootstrap); allow that, and keep idle
		// streams open: a farm's routing may not change for days.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.MaxConcurrentStreams(10000),
	}
	var ads discoveryv3.AggregatedDiscoveryServiceServer = vhdsNamespaces{serverv3.NewServer(ctx, s.cache, s.streams.callbacks())}
	if s.tls != nil {
		options = append(options, grpc.Creds(credentials.NewTLS(s.tls)))
		ads = farmBound{ads}
	}
	grpcServer := grpc.NewServer(options...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(grpcServer, ads)
	ctrl.Log.WithName("xds").Info("serving", "address", listener.Addr().String(), "mutualTLS", s.tls != nil)
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

// vhdsNamespaces serves ADS, reading Envoy's VHDS subscription as what it
// means. Envoy subscribes to the virtual hosts of a route configuration by
// the configuration's name and takes every resource named "<name>/..." (xDS
// namespace matching), which go-control-plane's cache does not know: it
// would look for one resource of that name. A snapshot holds the virtual
// hosts of one route configuration only, so the subscription is all of
// them: the wildcard.
type vhdsNamespaces struct{ serverv3.Server }

func (v vhdsNamespaces) DeltaAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return v.Server.DeltaAggregatedResources(vhdsStream{stream})
}

type vhdsStream struct {
	discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer
}

func (s vhdsStream) Recv() (*discoveryv3.DeltaDiscoveryRequest, error) {
	req, err := s.AggregatedDiscoveryService_DeltaAggregatedResourcesServer.Recv()
	if err == nil && req.GetTypeUrl() == resourcev3.VirtualHostType {
		req.ResourceNamesSubscribe = wildcardFor(req.ResourceNamesSubscribe)
		req.ResourceNamesUnsubscribe = wildcardFor(req.ResourceNamesUnsubscribe)
	}
	return req, err
}

// wildcardFor replaces the farm route configuration's name (a namespace of
// virtual hosts) by the wildcard.
func wildcardFor(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n == envoy.RouteConfigName {
			n = "*"
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return names // nil stays nil: an ACK subscribes to nothing new
	}
	return out
}
