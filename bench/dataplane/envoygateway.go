package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	// The types in egctl's config dump, for protojson to resolve.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/model"
)

// Envoy Gateway's configuration of the benchmark's case, to run on the
// same Envoy binary as the farm's frontend: testdata/envoygateway/xds.yaml
// is what Envoy Gateway's own translator (egctl experimental translate, at
// the version hack/lib/common.sh pins) makes of resources.yaml beside it,
// a Gateway with an HTTP and an HTTPS listener and an HTTPRoute for the
// site's host to the pool's Service. `make bench-dataplane-envoygateway`
// regenerates it. It is checked in so that the benchmark needs no build of
// Envoy Gateway (hundreds of modules, minutes) and so that a review sees
// the configuration that was measured.
//
// The translator's output is what Envoy Gateway's control plane serves
// over xDS: its bootstrap, and the listeners, routes, clusters and
// endpoints that the bootstrap fetches. envoyGatewayBootstrap inlines them
// statically, as the farm's bootstrap is inlined (envoy.StaticBootstrap),
// and changes nothing that a request goes through: only addresses, the
// xDS plumbing and the Secret's source.

//go:embed testdata/envoygateway/xds.yaml
var envoyGatewayXDS []byte

// envoyGatewayVersion is the egctl that translated xds.yaml (EGCTL_VERSION).
const envoyGatewayVersion = "v1.9.1"

// envoyGatewayOwnListeners prefixes the names of the listeners that Envoy
// Gateway adds for itself (readiness, Prometheus), beside the Gateway's.
const envoyGatewayOwnListeners = "envoy-gateway-proxy-"

// envoyGatewayLayout is where the Envoy with Envoy Gateway's configuration
// listens and what it proxies to.
type envoyGatewayLayout struct {
	HTTPPort, HTTPSPort, AdminPort, Upstream int
	TLS                                      *benchkit.ProxyTLS // nil: the HTTPS listener is left out
}

// envoyGatewayDump is the config dump egctl writes for the one Gateway.
func envoyGatewayDump(out []byte) (*adminv3.ConfigDump, error) {
	var doc struct {
		XDS map[string]json.RawMessage `json:"xds"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		return nil, err
	}
	if len(doc.XDS) != 1 {
		return nil, fmt.Errorf("egctl's output has %d gateways, want 1", len(doc.XDS))
	}
	dump := &adminv3.ConfigDump{}
	for _, raw := range doc.XDS {
		if err := protojson.Unmarshal(raw, dump); err != nil {
			return nil, fmt.Errorf("egctl's config dump: %w", err)
		}
	}
	return dump, nil
}

// dumpParts are the config dump's sections.
type dumpParts struct {
	bootstrap *bootstrapv3.Bootstrap
	listeners []*listenerv3.Listener
	routes    map[string]*routev3.RouteConfiguration
	clusters  []*clusterv3.Cluster
	endpoints map[string]*endpointv3.ClusterLoadAssignment
}

func splitDump(dump *adminv3.ConfigDump) (*dumpParts, error) {
	p := &dumpParts{routes: map[string]*routev3.RouteConfiguration{}, endpoints: map[string]*endpointv3.ClusterLoadAssignment{}}
	for _, c := range dump.Configs {
		m, err := c.UnmarshalNew()
		if err != nil {
			return nil, err
		}
		switch m := m.(type) {
		case *adminv3.BootstrapConfigDump:
			p.bootstrap = m.Bootstrap
		case *adminv3.ListenersConfigDump:
			for _, l := range m.DynamicListeners {
				var x listenerv3.Listener
				if err := l.GetActiveState().GetListener().UnmarshalTo(&x); err != nil {
					return nil, err
				}
				p.listeners = append(p.listeners, &x)
			}
		case *adminv3.RoutesConfigDump:
			for _, r := range m.DynamicRouteConfigs {
				var x routev3.RouteConfiguration
				if err := r.RouteConfig.UnmarshalTo(&x); err != nil {
					return nil, err
				}
				p.routes[x.Name] = &x
			}
		case *adminv3.ClustersConfigDump:
			for _, c := range m.DynamicActiveClusters {
				var x clusterv3.Cluster
				if err := c.Cluster.UnmarshalTo(&x); err != nil {
					return nil, err
				}
				p.clusters = append(p.clusters, &x)
			}
		case *adminv3.EndpointsConfigDump:
			for _, e := range m.DynamicEndpointConfigs {
				var x endpointv3.ClusterLoadAssignment
				if err := e.EndpointConfig.UnmarshalTo(&x); err != nil {
					return nil, err
				}
				p.endpoints[x.ClusterName] = &x
			}
		}
	}
	if p.bootstrap == nil || len(p.listeners) == 0 || len(p.clusters) == 0 {
		return nil, errors.New("egctl's config dump lacks its bootstrap, listeners or clusters")
	}
	return p, nil
}

// envoyGatewayBootstrap is Envoy Gateway's configuration as one static
// bootstrap on this host's ports. From Envoy Gateway's bootstrap it keeps
// what applies to every request (stats options, runtime, overload manager)
// and leaves out its xDS and the listeners and clusters that serve its
// control plane, its probes and Prometheus; the benchmark's readiness check
// is the admin's /ready, as for the minimal Envoy.
func envoyGatewayBootstrap(dump *adminv3.ConfigDump, l envoyGatewayLayout) (*bootstrapv3.Bootstrap, error) {
	p, err := splitDump(dump)
	if err != nil {
		return nil, err
	}
	b := proto.Clone(p.bootstrap).(*bootstrapv3.Bootstrap)
	b.DynamicResources = nil
	// The local cluster (zone-aware load balancing) comes over xDS only.
	b.ClusterManager = nil
	b.Admin.Address = loopback(l.AdminPort)
	static := &bootstrapv3.Bootstrap_StaticResources{}
	secrets := map[string]bool{}
	for _, x := range p.listeners {
		if strings.HasPrefix(x.Name, envoyGatewayOwnListeners) {
			continue
		}
		tls, err := listenerSecrets(x)
		if err != nil {
			return nil, err
		}
		port := l.HTTPPort
		if len(tls) > 0 {
			if l.TLS == nil {
				continue
			}
			port = l.HTTPSPort
		}
		for _, name := range tls {
			secrets[name] = true
		}
		x.Address = loopback(port)
		if err := inlineRoutes(x, p.routes); err != nil {
			return nil, err
		}
		static.Listeners = append(static.Listeners, x)
	}
	for _, c := range p.clusters {
		if err := staticCluster(c, p.endpoints, l.Upstream); err != nil {
			return nil, err
		}
		static.Clusters = append(static.Clusters, c)
	}
	for _, name := range sortedKeys(secrets) {
		static.Secrets = append(static.Secrets, fileSecret(name, l.TLS))
	}
	b.StaticResources = static
	return b, nil
}

// listenerSecrets names the certificates a listener's filter chains serve,
// and makes them static secrets of the bootstrap (referenced by name, with
// no SDS source) rather than Envoy Gateway's, which come over xDS.
func listenerSecrets(l *listenerv3.Listener) ([]string, error) {
	var names []string
	for _, fc := range l.FilterChains {
		ts := fc.GetTransportSocket()
		if ts == nil {
			continue
		}
		var ctx tlsv3.DownstreamTlsContext
		if err := ts.GetTypedConfig().UnmarshalTo(&ctx); err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		for _, s := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			s.SdsConfig = nil
			names = append(names, s.Name)
		}
		ts.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&ctx)}
	}
	return names, nil
}

// fileSecret is a certificate read from the benchmark's files.
func fileSecret(name string, files *benchkit.ProxyTLS) *tlsv3.Secret {
	file := func(path string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
	}
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: file(files.CertFile), PrivateKey: file(files.KeyFile),
	}}}
}

// inlineRoutes puts the route configuration that a listener's connection
// managers fetch over RDS into them.
func inlineRoutes(l *listenerv3.Listener, routes map[string]*routev3.RouteConfiguration) error {
	chains := slices.Clone(l.FilterChains)
	if l.DefaultFilterChain != nil {
		chains = append(chains, l.DefaultFilterChain)
	}
	for _, fc := range chains {
		for _, f := range fc.Filters {
			var hcm hcmv3.HttpConnectionManager
			if f.GetTypedConfig() == nil || !f.GetTypedConfig().MessageIs(&hcm) {
				continue
			}
			if err := f.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
				return err
			}
			rds := hcm.GetRds()
			if rds == nil {
				continue
			}
			rc, ok := routes[rds.RouteConfigName]
			if !ok {
				return fmt.Errorf("listener %s: no route configuration %q", l.Name, rds.RouteConfigName)
			}
			hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
			f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&hcm)}
		}
	}
	return nil
}

// staticCluster makes an EDS cluster static, with its endpoints from the
// dump moved to the pool worker on loopback (as localenvoy moves the
// farm's).
func staticCluster(c *clusterv3.Cluster, endpoints map[string]*endpointv3.ClusterLoadAssignment, upstream int) error {
	eds := c.GetEdsClusterConfig()
	if eds == nil {
		return nil
	}
	name := eds.ServiceName
	if name == "" {
		name = c.Name
	}
	la, ok := endpoints[name]
	if !ok {
		return fmt.Errorf("cluster %s: no endpoints %q", c.Name, name)
	}
	la = proto.Clone(la).(*endpointv3.ClusterLoadAssignment)
	la.ClusterName = c.Name
	for _, group := range la.Endpoints {
		for _, e := range group.LbEndpoints {
			if e.GetEndpoint() == nil {
				return fmt.Errorf("cluster %s: an endpoint without an address", c.Name)
			}
			e.GetEndpoint().Address = loopback(upstream)
		}
	}
	c.EdsClusterConfig = nil
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	c.LoadAssignment = la
	return nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// startEnvoyGateway starts Envoy with Envoy Gateway's configuration in
// front of the pool worker on the proxy hop's processor, with the farm's
// arguments: in clear text, or with the certificate one route per TLS
// protocol.
func startEnvoyGateway(ctx context.Context, o options, farm model.Farm, dir string, upstream int, cert *certificate, procs *servers) ([]*route, error) {
	ports, err := benchkit.FreePorts(3)
	if err != nil {
		return nil, err
	}
	l := envoyGatewayLayout{HTTPPort: ports[0], HTTPSPort: ports[1], AdminPort: ports[2], Upstream: upstream}
	if cert != nil {
		if l.TLS, err = cert.writeFiles(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dump, err := envoyGatewayDump(envoyGatewayXDS)
	if err != nil {
		return nil, err
	}
	b, err := envoyGatewayBootstrap(dump, l)
	if err != nil {
		return nil, err
	}
	args, err := writeBootstrap(dir, farm, b)
	if err != nil {
		return nil, err
	}
	s, err := benchkit.StartServer("envoy gateway's envoy", filepath.Join(dir, "envoy.log"), o.hopCPUs, append([]string{o.envoy}, args...)...)
	if err != nil {
		return nil, err
	}
	procs.add(s)
	if err := benchkit.WaitReady(ctx, s, fmt.Sprintf("http://127.0.0.1:%d/ready", l.AdminPort), "", readyTimeout); err != nil {
		return nil, err
	}
	base := route{name: envoyGatewayName, envoyGateway: true, args: args, front: s}
	if cert != nil {
		base.name, base.id, base.addr = envoyGatewayTLSName, "envoygateway-tls", fmt.Sprintf("127.0.0.1:%d", l.HTTPSPort)
		routes := httpsRoutes(base, cert)
		return routes, waitHTTPS(ctx, routes[0], s, o.workloads[0].files[0].path)
	}
	base.id, base.proto, base.url = "envoygateway", protoHTTP, fmt.Sprintf("http://127.0.0.1:%d", l.HTTPPort)
	return []*route{&base}, nil
}

// Names of the routes through Envoy Gateway's configuration in the report.
const (
	envoyGatewayName    = "Envoy Gateway's configuration (egctl " + envoyGatewayVersion + "): Envoy -> nginx"
	envoyGatewayTLSName = "Envoy Gateway's configuration with TLS (egctl " + envoyGatewayVersion + "): Envoy -> nginx"
)

// envoyGatewayAbout describes the path in the report.
const envoyGatewayAbout = "the same binary and arguments with Envoy Gateway's configuration of the same case: what `egctl experimental translate` (Envoy Gateway " +
	envoyGatewayVersion + ", its translator run offline) makes of a Gateway with an HTTP and an HTTPS listener and an HTTPRoute for the site's host to the pool's Service (bench/dataplane/testdata/envoygateway); " +
	"its listeners, routes, clusters and endpoints inlined into its own bootstrap, its Secret read from the same certificate's files; its default access log (a JSON line per request to stdout) kept"
