package envoy

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	xffv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/xff/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/model"
)

// RealIPHeader carries the client's address, as the frontend found it, to
// the pools, the cache tiers and the activator; the frontend always
// overwrites it, so a client cannot choose it.
const RealIPHeader = "X-Real-IP"

// clientAddressChains are the listener's filter chains, each with the
// connection manager hcm and its own way of finding the client:
//   - by default, the connecting address (a client behind a Service); its
//     X-Forwarded-For is kept but not believed, and X-Forwarded-Proto is
//     the connection's own;
//   - trustedHops: the entry that many places from the right of
//     X-Forwarded-For, which the trusted proxies appended;
//   - trustedNetworks: connections from those networks get a chain of their
//     own that reads X-Forwarded-For from the right past the entries within
//     them, and believes their X-Forwarded-Proto; other connections get the
//     default.
//
// In every case the address the request came from is appended to
// X-Forwarded-For, and ClientIP and ClassC affinity hash the address found.
func clientAddressChains(hcm *hcmv3.HttpConnectionManager, c model.ClientAddress) []*listenerv3.FilterChain {
	edge := proto.Clone(hcm).(*hcmv3.HttpConnectionManager)
	edge.UseRemoteAddress = wrapperspb.Bool(true)
	edge.XffNumTrustedHops = c.TrustedHops
	if len(c.TrustedNetworks) == 0 {
		return []*listenerv3.FilterChain{httpFilterChain(edge)}
	}
	cidrs := make([]*corev3.CidrRange, len(c.TrustedNetworks))
	for i, n := range c.TrustedNetworks {
		cidrs[i] = cidrRange(n)
	}
	// The detection extension replaces use_remote_address (Envoy refuses
	// both); it appends the connecting address itself when told to.
	proxied := proto.Clone(hcm).(*hcmv3.HttpConnectionManager)
	proxied.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{{
		Name: "envoy.http.original_ip_detection.xff",
		TypedConfig: mustAny(&xffv3.XffConfig{
			XffTrustedCidrs: &xffv3.XffTrustedCidrs{Cidrs: cidrs},
			SkipXffAppend:   wrapperspb.Bool(false),
		}),
	}}
	fromProxies := httpFilterChain(proxied)
	fromProxies.Name = "trusted-proxies"
	fromProxies.FilterChainMatch = &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs}
	return []*listenerv3.FilterChain{httpFilterChain(edge), fromProxies}
}

func cidrRange(p netip.Prefix) *corev3.CidrRange {
	return &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))}
}

// listenerFilters read the PROXY protocol header (version 1 or 2) a load
// balancer puts before each connection's first byte; a connection without
// one is closed.
func listenerFilters(c model.ClientAddress) []*listenerv3.ListenerFilter {
	if !c.ProxyProtocol {
		return nil
	}
	return []*listenerv3.ListenerFilter{{
		Name:       "envoy.filters.listener.proxy_protocol",
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&proxyprotocolv3.ProxyProtocol{})},
	}}
}
