package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/model"
)

// The minimal Envoy is what the farm's frontend is measured against for
// its overhead: the same binary, arguments and worker count, and the least
// configuration that proxies the same requests to the same pool worker. An
// HTTP connection manager with one route and the router, nothing else: no
// request IDs, no access log, no Envoy headers added, every other field
// Envoy's default. Whatever the farm's frontend spends above it per request
// is the cost of the configuration this project renders.

// minimalLayout is where the minimal Envoy listens and what it proxies to.
type minimalLayout struct {
	Port, AdminPort, Upstream int
	TLS                       *benchkit.ProxyTLS // nil: HTTP in clear text
}

const minimalCluster = "pool"

// minimalBootstrap is the minimal Envoy's whole configuration.
func minimalBootstrap(l minimalLayout) *bootstrapv3.Bootstrap {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix:        "minimal",
		CodecType:         hcmv3.HttpConnectionManager_AUTO,
		GenerateRequestId: wrapperspb.Bool(false),
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "minimal",
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    "any",
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: minimalCluster}}},
				}},
			}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerv3.Router{SuppressEnvoyHeaders: true})},
		}},
	}
	chain := &listenerv3.FilterChain{Filters: []*listenerv3.Filter{{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
	}}}
	if l.TLS != nil {
		chain.TransportSocket = minimalTLS(l.TLS)
	}
	return &bootstrapv3.Bootstrap{
		Admin: &bootstrapv3.Admin{Address: loopback(l.AdminPort)},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: []*listenerv3.Listener{{Name: "minimal", Address: loopback(l.Port), FilterChains: []*listenerv3.FilterChain{chain}}},
			Clusters: []*clusterv3.Cluster{{
				Name:                 minimalCluster,
				ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
				ConnectTimeout:       durationpb.New(1e9),
				LoadAssignment: &endpointv3.ClusterLoadAssignment{
					ClusterName: minimalCluster,
					Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
						HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: loopback(l.Upstream)}},
					}}}},
				},
			}},
		},
	}
}

// minimalTLS serves TLS 1.3 only, as the farm's HTTPS listener does, with
// the certificate read from files and both HTTP versions offered by ALPN.
func minimalTLS(files *benchkit.ProxyTLS) *corev3.TransportSocket {
	file := func(path string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
	}
	return &corev3.TransportSocket{
		Name: "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams: &tlsv3.TlsParameters{
				TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
				TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
			},
			TlsCertificates: []*tlsv3.TlsCertificate{{CertificateChain: file(files.CertFile), PrivateKey: file(files.KeyFile)}},
			AlpnProtocols:   []string{"h2", "http/1.1"},
		}})},
	}
}

func loopback(port int) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       "127.0.0.1",
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

// startMinimal starts the minimal Envoy in front of the pool worker on the
// proxy hop's processor: in clear text, or with the certificate one route
// per TLS protocol.
func startMinimal(ctx context.Context, o options, farm model.Farm, dir string, upstream int, cert *certificate, procs *servers) ([]*route, error) {
	ports, err := benchkit.FreePorts(2)
	if err != nil {
		return nil, err
	}
	l := minimalLayout{Port: ports[0], AdminPort: ports[1], Upstream: upstream}
	if cert != nil {
		if l.TLS, err = cert.writeFiles(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b := minimalBootstrap(l)
	if o.exactBalance {
		balanceExactly(b)
	}
	args, err := writeBootstrap(dir, farm, b)
	if err != nil {
		return nil, err
	}
	if o.envoyWorkers > 0 {
		args = withConcurrency(args, o.envoyWorkers)
	}
	s, err := benchkit.StartServer("minimal envoy", filepath.Join(dir, "envoy.log"), o.hopCPUs, append([]string{o.envoy}, args...)...)
	if err != nil {
		return nil, err
	}
	procs.add(s)
	if err := benchkit.WaitReady(ctx, s, fmt.Sprintf("http://127.0.0.1:%d/ready", l.AdminPort), "", readyTimeout); err != nil {
		return nil, err
	}
	base := route{name: minimalName, minimal: true, args: args, front: s, admin: fmt.Sprintf("127.0.0.1:%d", l.AdminPort)}
	if cert != nil {
		base.name, base.id, base.addr = minimalTLSName, "minimal-tls", fmt.Sprintf("127.0.0.1:%d", l.Port)
		routes := httpsRoutes(base, cert)
		return routes, waitHTTPS(ctx, routes[0], s, o.workloads[0].files[0].path)
	}
	base.id, base.proto, base.url = "minimal", protoHTTP, fmt.Sprintf("http://127.0.0.1:%d", l.Port)
	return []*route{&base}, nil
}

// Names of the minimal Envoy's routes in the report.
const (
	minimalName    = "minimal Envoy (connection manager + router) -> nginx"
	minimalTLSName = "minimal Envoy with TLS (connection manager + router) -> nginx"
)
