// Package envoy renders the Envoy frontend's bootstrap. Listeners, routes and
// clusters for the farm's sites arrive over xDS from the operator; the
// bootstrap only says who the Envoy is, where the operator is, and exposes
// readiness and metrics without exposing the admin interface.
package envoy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	downstreamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Ports the Kubernetes renderer exposes and probes (the status listener's
// port and paths are vocabulary.FrontendStatusPort and its paths).
const (
	HTTPPort         = 8080  // the farm's traffic (listener delivered over xDS)
	AdminPort        = 19000 // loopback only: the admin interface can stop Envoy
	xdsClusterName   = "xds"
	adminClusterName = "admin"
	// maxDownstreamConnections caps client connections per Envoy (overload manager).
	maxDownstreamConnections = 50000
)

// NodeCluster is the xDS node cluster of a farm's Envoys: the operator keeps one
// snapshot per node cluster.
func NodeCluster(f model.Farm) string { return f.Namespace + "/" + f.Name }

// NodeIDArgs are the Envoy command-line arguments that name the node: each pod
// uses its own name (the Deployment passes it in the POD_NAME variable).
func NodeIDArgs(podName string) []string { return []string{"--service-node", podName} }

// Bootstrap renders the Envoy bootstrap of a farm's frontend as indented JSON.
func Bootstrap(f model.Farm) ([]byte, error) {
	b := &bootstrapv3.Bootstrap{
		Node: &corev3.Node{Cluster: NodeCluster(f)},
		Admin: &bootstrapv3.Admin{
			Address: socketAddress("127.0.0.1", AdminPort),
		},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: []*listenerv3.Listener{statusListener()},
			Clusters: []*clusterv3.Cluster{
				staticCluster(adminClusterName, "127.0.0.1", AdminPort),
				xdsCluster(f.Platform),
			},
		},
		DynamicResources: &bootstrapv3.Bootstrap_DynamicResources{
			// Delta ADS: a change sends the resources that changed, and
			// the farm's virtual hosts come one by one (VHDS needs delta).
			AdsConfig: &corev3.ApiConfigSource{
				ApiType:                   corev3.ApiConfigSource_DELTA_GRPC,
				TransportApiVersion:       corev3.ApiVersion_V3,
				SetNodeOnFirstMessageOnly: true,
				GrpcServices: []*corev3.GrpcService{{
					TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: xdsClusterName}},
				}},
			},
			LdsConfig: adsSource(),
			CdsConfig: adsSource(),
		},
		OverloadManager: &overloadv3.OverloadManager{
			ResourceMonitors: []*overloadv3.ResourceMonitor{{
				Name: "envoy.resource_monitors.global_downstream_max_connections",
				ConfigType: &overloadv3.ResourceMonitor_TypedConfig{TypedConfig: mustAny(&downstreamv3.DownstreamConnectionsConfig{
					MaxActiveDownstreamConnections: maxDownstreamConnections,
				})},
			}},
		},
	}
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoy bootstrap: %w", err)
	}
	return marshal(b)
}

// marshal writes stable JSON: protojson deliberately varies its whitespace, so
// the output is re-indented by encoding/json.
func marshal(m proto.Message) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

// statusListener serves readiness and Prometheus metrics from the admin
// interface, and nothing else of it.
func statusListener() *listenerv3.Listener {
	route := func(path string) *routev3.Route {
		return &routev3.Route{
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: path}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: adminClusterName},
			}},
		}
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "status",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "status",
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    "status",
				Domains: []string{"*"},
				Routes:  []*routev3.Route{route(vocabulary.FrontendReadyPath), route(vocabulary.FrontendMetricsPath)},
			}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerv3.Router{SuppressEnvoyHeaders: true})},
		}},
	}
	return &listenerv3.Listener{
		Name:    "status",
		Address: socketAddress("0.0.0.0", vocabulary.FrontendStatusPort),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{{
				Name:       "envoy.filters.network.http_connection_manager",
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
			}},
		}},
		// The status port is not subject to the client connection cap.
		IgnoreGlobalConnLimit: true,
	}
}

// xdsCluster reaches the operator's xDS server: over mutual TLS with the
// farm's identity when the platform says so (gRPC asks for ALPN h2).
func xdsCluster(p model.Platform) *clusterv3.Cluster {
	c := staticCluster(xdsClusterName, p.XDSHost, uint32(p.XDSPort))
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
	c.TransportSocket = controlTLS(p, "h2")
	c.TypedExtensionProtocolOptions = upstreamHTTP2(&corev3.Http2ProtocolOptions{
		ConnectionKeepalive: &corev3.KeepaliveSettings{
			Interval: durationpb.New(30 * time.Second),
			Timeout:  durationpb.New(5 * time.Second),
		},
	})
	return c
}

func staticCluster(name, host string, port uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{{
					HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
						Address: socketAddress(host, port),
					}},
				}},
			}},
		},
	}
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// mustAny packs m deterministically: a map inside (a JSON log format) would
// otherwise change the bytes, and so the version, from one render to the next.
func mustAny(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		panic(err) // only for messages of this package, which always marshal
	}
	return a
}
