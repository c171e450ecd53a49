package hostile_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	xffv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/xff/v3"

	"webfarm.dev/operator/internal/render/envoy"
)

// The front door's newer fields: each site's HTTPS, where the client's
// address comes from, the access log and the frontend's durations. Cases
// the API server admits use fields the earlier CRDs lack (newFields).

const secretPattern = `should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]`

// farmWithTLS is a farm whose one site, www, answers hosts (www.example.com
// when none) and has the tls section given (flow style).
func farmWithTLS(tls string, hosts ...string) string {
	if len(hosts) == 0 {
		hosts = []string{"www.example.com"}
	}
	return farm(`{sites: [{name: www, hosts: [` + qs(hosts) + `], routes: [{appPool: web}], tls: ` + tls + `}]}`)
}

// farmWithFrontend is a farm of one plain site with the frontend section given (flow style).
func farmWithFrontend(frontend string) string {
	return farm(`{frontend: ` + frontend + `, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)
}

// cidrList is n distinct /24 networks, in flow style.
func cidrList(n int) string {
	nets := make([]string, n)
	for i := range nets {
		nets[i] = fmt.Sprintf("10.0.%d.0/24", i)
	}
	return "[" + strings.Join(nets, ", ") + "]"
}

func frontendCases() []hostileCase {
	secret253 := strings.Join([]string{label63, strings.Repeat("b", 63), strings.Repeat("c", 63), strings.Repeat("d", 61)}, ".")
	return []hostileCase{
		// Each site's HTTPS.
		{
			name:      "a TLS Secret name with a slash, to reach another namespace, is refused",
			manifests: []string{farmWithTLS(`{secretName: kube-system/www-tls}`)},
			refused:   []string{invalid("spec.sites[0].tls.secretName", "kube-system/www-tls"), secretPattern},
		},
		{
			name:      "a TLS Secret name with a newline and Envoy JSON is refused",
			manifests: []string{farmWithTLS(`{secretName: ` + q("www-tls\n"+envoyInjection) + `}`)},
			refused:   []string{"spec.sites[0].tls.secretName: Invalid value", secretPattern},
		},
		{
			name:      "a TLS Secret name with a newline and YAML for the volume is refused",
			manifests: []string{farmWithTLS(`{secretName: ` + q("www-tls\nitems: [{key: token, path: ../../token}]") + `}`)},
			refused:   []string{invalid("spec.sites[0].tls.secretName", "www-tls\nitems: [{key: token, path: ../../token}]"), secretPattern},
		},
		{
			name:      "an uppercase TLS Secret name is refused",
			manifests: []string{farmWithTLS(`{secretName: WWW-TLS}`)},
			refused:   []string{invalid("spec.sites[0].tls.secretName", "WWW-TLS"), secretPattern},
		},
		{
			name:      "a TLS Secret name longer than 253 characters is refused",
			manifests: []string{farmWithTLS(`{secretName: ` + secret253 + `.ee}`)},
			refused:   []string{"spec.sites[0].tls.secretName: Too long: may not be more than 253"},
		},
		{
			name:      "an empty TLS Secret name is refused",
			manifests: []string{farmWithTLS(`{secretName: ""}`)},
			refused:   []string{"spec.sites[0].tls.secretName"},
		},
		{
			name:      "a site's tls without a Secret name is refused",
			manifests: []string{farmWithTLS(`{plainHTTP: Serve, hsts: {maxAgeSeconds: 60}}`)},
			refused:   []string{"spec.sites[0].tls.secretName: Required value"},
		},
		{
			name:      "a 253-character TLS Secret name is mounted as written and stays out of the Envoy config",
			manifests: []string{webPool, farmWithTLS(`{secretName: ` + secret253 + `}`)},
			absent:    []string{secret253},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				if got := r.farms["farm"].Sites[0].TLS.SecretName; got != secret253 {
					t.Errorf("the site's Secret is %q, want the manifest's", got)
				}
			},
		},
		{
			name:      "a negative HSTS max-age is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {maxAgeSeconds: -1}}`)},
			refused:   []string{invalid("spec.sites[0].tls.hsts.maxAgeSeconds", -1), "should be greater than or equal to 1"},
		},
		{
			name:      "an HSTS max-age of 0, which would tell browsers to forget the site's HTTPS, is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {maxAgeSeconds: 0}}`)},
			refused:   []string{invalid("spec.sites[0].tls.hsts.maxAgeSeconds", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "an HSTS max-age past an int32 is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {maxAgeSeconds: 9223372036854775807}}`)},
			refused:   []string{"spec.sites[0].tls.hsts.maxAgeSeconds: Invalid value", "should be less than or equal to 63072000"},
		},
		{
			name:      "an HSTS max-age past an int64 is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {maxAgeSeconds: 99999999999999999999}}`)},
			refused:   []string{"spec.sites[0].tls.hsts.maxAgeSeconds: Invalid value"},
		},
		{
			name:      "an HSTS max-age with a preload directive after it is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {maxAgeSeconds: "31536000; preload"}}`)},
			refused:   []string{"spec.sites[0].tls.hsts.maxAgeSeconds: Invalid value", "must be of type integer"},
		},
		{
			name:      "HSTS includeSubDomains written as a string is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {maxAgeSeconds: 60, includeSubDomains: "true; preload"}}`)},
			refused:   []string{"spec.sites[0].tls.hsts.includeSubDomains: Invalid value", "must be of type boolean"},
		},
		{
			name:      "HSTS without a max-age is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, hsts: {includeSubDomains: true}}`)},
			refused:   []string{"spec.sites[0].tls.hsts.maxAgeSeconds: Required value"},
		},
		{
			name:      "a plainHTTP mode in lowercase is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, plainHTTP: redirect}`)},
			refused:   []string{`spec.sites[0].tls.plainHTTP: Unsupported value: "redirect"`, `supported values: "Redirect", "Serve"`},
		},
		{
			name:      "a plainHTTP mode with a newline is refused",
			manifests: []string{farmWithTLS(`{secretName: www-tls, plainHTTP: ` + q("Serve\n") + `}`)},
			refused:   []string{"spec.sites[0].tls.plainHTTP: Unsupported value", `supported values: "Redirect", "Serve"`},
		},
		{
			name:      "a TLS minimum version written as a number is refused",
			manifests: []string{farm(`{frontend: {tls: {minVersion: 1.3}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			refused:   []string{"spec.frontend.tls.minVersion: Invalid value", "must be of type string"},
		},
		{
			name:      "a TLS minimum version of 1.0 is refused",
			manifests: []string{farm(`{frontend: {tls: {minVersion: "1.0"}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			refused:   []string{`spec.frontend.tls.minVersion: Unsupported value: "1.0"`, `supported values: "1.2", "1.3"`},
		},
		{
			name:      "a default TLS site with a newline and JSON is refused",
			manifests: []string{farm(`{frontend: {tls: {defaultSite: ` + q("www\n\"}],\"x\":{") + `}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			refused:   []string{"spec: Invalid value", "frontend.tls.defaultSite must name a site with tls"},
		},
		{
			name:      "a default TLS site name longer than 63 characters is refused",
			manifests: []string{farm(`{frontend: {tls: {defaultSite: ` + label63 + `x}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			refused:   []string{"spec.frontend.tls.defaultSite: Too long: may not be more than 63"},
		},
		{
			name:      "an empty default TLS site is refused",
			manifests: []string{farm(`{frontend: {tls: {defaultSite: ""}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			refused:   []string{"spec.frontend.tls.defaultSite"},
		},
		{
			name: "a default TLS site that is a plain HTTP site is refused",
			manifests: []string{farm(`{frontend: {tls: {defaultSite: plain}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}, ` +
				`{name: plain, hosts: [plain.example.com], routes: [{appPool: web}]}]}`)},
			refused: []string{"spec: Invalid value", "frontend.tls.defaultSite must name a site with tls"},
		},
		{
			name:      "an affinity cookie SameSite in lowercase is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {sameSite: none}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			refused:   []string{`spec.sessionAffinity.cookie.sameSite: Unsupported value: "none"`, `supported values: "Lax", "Strict", "None"`},
		},
		{
			name:      "an affinity cookie SameSite with a cookie attribute after it is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {sameSite: "Lax; Domain=evil.example"}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{`spec.sessionAffinity.cookie.sameSite: Unsupported value: "Lax; Domain=evil.example"`},
		},
		{
			name:      "SameSite None with a site that serves plain HTTP too is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {sameSite: None}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls, plainHTTP: Serve}}]}`)},
			refused:   []string{"spec: Invalid value", "sameSite None needs every site to have tls with plainHTTP Redirect"},
		},
		{
			name: "wildcard host names of HTTPS sites are matched by server name, each site on its own filter chain",
			manifests: []string{webPool, farm(`{frontend: {tls: {defaultSite: shop}}, sites: [` +
				`{name: www, hosts: [www.example.com, "*.example.com"], routes: [{appPool: web}], tls: {secretName: www-tls, hsts: {maxAgeSeconds: 63072000, includeSubDomains: true}}}, ` +
				`{name: shop, hosts: ["*.shop.example.com"], routes: [{appPool: web}], tls: {secretName: shop-tls, plainHTTP: Serve}}, ` +
				`{name: plain, hosts: [plain.example.com], routes: [{appPool: web}]}]}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				chains := map[string][]string{}
				for _, c := range listener(t, r, envoy.HTTPSListenerName).FilterChains {
					chains[c.Name] = c.GetFilterChainMatch().GetServerNames()
					if c.TransportSocket.GetName() != "envoy.transport_sockets.tls" {
						t.Errorf("HTTPS filter chain %s has no TLS", c.Name)
					}
				}
				want := map[string][]string{"site/shop": {"*.shop.example.com"}, "site/www": {"*.example.com", "www.example.com"}, "default/shop": nil}
				if !maps.EqualFunc(chains, want, slices.Equal) {
					t.Errorf("the HTTPS filter chains match server names %q, want %q", chains, want)
				}
				headers := map[string]string{}
				for _, vh := range r.routing["farm"].Routes[1].VirtualHosts {
					for _, h := range vh.ResponseHeadersToAdd {
						headers[vh.Name] += h.Header.Key + ": " + h.Header.Value
					}
				}
				if want := map[string]string{"www": "Strict-Transport-Security: max-age=63072000; includeSubDomains"}; !maps.Equal(headers, want) {
					t.Errorf("HTTPS response headers by site %q, want %q", headers, want)
				}
				plain := map[string]bool{}
				for _, vh := range r.routing["farm"].Routes[0].VirtualHosts {
					plain[vh.Name] = vh.Routes[0].GetRedirect().GetHttpsRedirect()
				}
				if want := map[string]bool{"www": true, "shop": false, "plain": false}; !maps.Equal(plain, want) {
					t.Errorf("plain HTTP redirects by site %v, want %v", plain, want)
				}
			},
		},
		{
			name: "an HTTPS site behind trusted proxies that send the PROXY protocol gets a filter chain per server name and source",
			manifests: []string{webPool, farm(`{frontend: {clientAddress: {proxyProtocol: true, trustedNetworks: [10.0.0.0/8, "2001:db8::/32"]}}, sites: [` +
				`{name: www, hosts: ["*.example.com"], routes: [{appPool: web}], tls: {secretName: www-tls}}]}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				var names []string
				for _, c := range listener(t, r, envoy.HTTPSListenerName).FilterChains {
					names = append(names, c.Name)
				}
				want := []string{"site/www", "site/www/trusted-proxies", "default/www", "default/www/trusted-proxies"}
				if !slices.Equal(names, want) {
					t.Errorf("the HTTPS filter chains are %q, want %q", names, want)
				}
				for _, l := range r.routing["farm"].Listeners {
					if f := l.ListenerFilters; len(f) == 0 || f[0].Name != "envoy.filters.listener.proxy_protocol" {
						t.Errorf("listener %s does not read the PROXY protocol first", l.Name)
					}
				}
			},
		},

		// Where the client's address comes from.
		{
			name:      "zero trusted hops are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedHops: 0}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedHops", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "eleven trusted hops are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedHops: 11}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedHops", 11), "should be less than or equal to 10"},
		},
		{
			name:      "negative trusted hops are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedHops: -1}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedHops", -1), "should be greater than or equal to 1"},
		},
		{
			name:      "trusted hops written as a string are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedHops: "1"}}`)},
			refused:   []string{"spec.frontend.clientAddress.trustedHops: Invalid value", "must be of type integer"},
		},
		{
			name:      "ten trusted hops with the PROXY protocol are rendered",
			manifests: []string{webPool, farmWithFrontend(`{clientAddress: {trustedHops: 10, proxyProtocol: true}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				l := listener(t, r, envoy.ListenerName)
				if len(l.FilterChains) != 1 {
					t.Fatalf("the listener has %d filter chains, want 1", len(l.FilterChains))
				}
				if h := chainHCM(t, l.FilterChains[0]); h.XffNumTrustedHops != 10 || !h.GetUseRemoteAddress().GetValue() {
					t.Errorf("the listener trusts %d hops (use_remote_address %v), want 10 and true", h.XffNumTrustedHops, h.GetUseRemoteAddress())
				}
			},
		},
		{
			name:      "a trusted network that is an address without a prefix length is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: [10.0.0.1]}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedNetworks[0]", "10.0.0.1"), "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name:      "a trusted network with a newline and Envoy JSON is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: [` + q("10.0.0.0/8\n"+envoyInjection) + `]}}`)},
			refused:   []string{"spec.frontend.clientAddress.trustedNetworks[0]", "may not be more than 43"},
		},
		{
			name:      "a trusted network with a newline and a short directive is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: [` + q("10.0.0.0/8\n}") + `]}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedNetworks[0]", "10.0.0.0/8\n}"), "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name:      "a trusted network with a prefix length past 32 is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: [10.0.0.0/33]}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedNetworks[0]", "10.0.0.0/33"), "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name:      "a trusted IPv6 network with a zone is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: ["fe80::1%eth0/64"]}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedNetworks[0]", "fe80::1%eth0/64"), "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name:      "an IPv4-mapped IPv6 trusted network is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: ["::ffff:10.0.0.0/104"]}}`)},
			refused:   []string{invalid("spec.frontend.clientAddress.trustedNetworks[0]", "::ffff:10.0.0.0/104"), "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name:      "trusting ::/0 believes the X-Forwarded-For of every IPv6 client, as documented",
			manifests: []string{webPool, farmWithFrontend(`{clientAddress: {trustedNetworks: ["::/0", 0.0.0.0/0]}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				checkTrustedNetworks(t, listener(t, r, envoy.ListenerName), []string{"0.0.0.0/0", "::/0"})
			},
		},
		{
			name:      "33 trusted networks are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: ` + cidrList(33) + `}}`)},
			refused:   []string{"spec.frontend.clientAddress.trustedNetworks: Too many: 33: must have at most 32 items"},
		},
		{
			name:      "no trusted networks are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: []}}`)},
			refused:   []string{"spec.frontend.clientAddress.trustedNetworks: Invalid value", "should have at least 1 items"},
		},
		{
			name:      "the same trusted network twice is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedNetworks: [10.0.0.0/8, 10.0.0.0/8]}}`)},
			refused:   []string{`spec.frontend.clientAddress.trustedNetworks[1]: Duplicate value: "10.0.0.0/8"`},
		},
		{
			name:      "trusted hops and trusted networks together are refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {trustedHops: 1, trustedNetworks: [10.0.0.0/8]}}`)},
			refused:   []string{"spec.frontend.clientAddress: Invalid value", "set trustedHops or trustedNetworks, not both"},
		},
		{
			name:      "the PROXY protocol written as a string is refused",
			manifests: []string{farmWithFrontend(`{clientAddress: {proxyProtocol: "v2"}}`)},
			refused:   []string{"spec.frontend.clientAddress.proxyProtocol: Invalid value", "must be of type boolean"},
		},
		{
			name: "trusted networks with host bits, written twice or nested, are rendered as one set of masked networks",
			manifests: []string{webPool, farmWithFrontend(`{clientAddress: {trustedNetworks: ` +
				`[10.1.2.3/8, 10.0.0.0/8, 10.1.0.0/16, 192.168.7.9/32, "2001:db8::1/32", "2001:DB8::/32", "fd00::1/128"]}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				want := []string{"10.0.0.0/8", "10.1.0.0/16", "192.168.7.9/32", "2001:db8::/32", "fd00::1/128"}
				checkTrustedNetworks(t, listener(t, r, envoy.ListenerName), want)
			},
		},
		{
			name:      "trusting 0.0.0.0/0 believes the X-Forwarded-For of every IPv4 client, as documented",
			manifests: []string{webPool, farmWithFrontend(`{clientAddress: {trustedNetworks: [0.0.0.0/0]}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				checkTrustedNetworks(t, listener(t, r, envoy.ListenerName), []string{"0.0.0.0/0"})
			},
		},

		// The access log.
		{
			name:      "an access log sample of 0 percent is refused",
			manifests: []string{farmWithFrontend(`{accessLog: {samplePercent: 0}}`)},
			refused:   []string{invalid("spec.frontend.accessLog.samplePercent", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "an access log sample of 101 percent is refused",
			manifests: []string{farmWithFrontend(`{accessLog: {samplePercent: 101}}`)},
			refused:   []string{invalid("spec.frontend.accessLog.samplePercent", 101), "should be less than or equal to 100"},
		},
		{
			name:      "a negative access log sample is refused",
			manifests: []string{farmWithFrontend(`{accessLog: {samplePercent: -1}}`)},
			refused:   []string{invalid("spec.frontend.accessLog.samplePercent", -1), "should be greater than or equal to 1"},
		},
		{
			name:      "an access log sample written with a percent sign is refused",
			manifests: []string{farmWithFrontend(`{accessLog: {samplePercent: "50%"}}`)},
			refused:   []string{"spec.frontend.accessLog.samplePercent: Invalid value", "must be of type integer"},
		},
		{
			name:      "the access log switch written as a string is refused",
			manifests: []string{farmWithFrontend(`{accessLog: {enabled: "false"}}`)},
			refused:   []string{"spec.frontend.accessLog.enabled: Invalid value", "must be of type boolean"},
		},
		{
			name:      "the debug headers switch written as a string is refused",
			manifests: []string{farmWithFrontend(`{debugHeaders: "X-Webfarm-Worker; Server"}`)},
			refused:   []string{"spec.frontend.debugHeaders: Invalid value", "must be of type boolean"},
		},
		{
			name:      "an access log sample of 1 percent draws each request on its own",
			manifests: []string{webPool, farmWithFrontend(`{accessLog: {samplePercent: 1}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				logs := chainHCM(t, listener(t, r, envoy.ListenerName).FilterChains[0]).AccessLog
				if len(logs) != 1 {
					t.Fatalf("the listener has %d access logs, want 1", len(logs))
				}
				rf := logs[0].GetFilter().GetRuntimeFilter()
				if rf.GetPercentSampled().GetNumerator() != 1 || !rf.GetUseIndependentRandomness() {
					t.Errorf("the access log samples %v, want 1 percent drawn independently", rf)
				}
			},
		},
		{
			name:      "a sampled access log that is off writes no log",
			manifests: []string{webPool, farmWithFrontend(`{accessLog: {enabled: false, samplePercent: 100}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				if logs := chainHCM(t, listener(t, r, envoy.ListenerName).FilterChains[0]).AccessLog; len(logs) != 0 {
					t.Errorf("the listener has %d access logs, want none", len(logs))
				}
			},
		},

		// The frontend's newer durations.
		{
			name:      "a WebSocket idle timeout of 0s, which would never close an idle WebSocket, is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: 0s}`)},
			refused:   []string{invalid("spec.frontend.webSocketIdleTimeout", "0s"), "webSocketIdleTimeout must be between 1s and 1h"},
		},
		{
			name:      "a negative WebSocket idle timeout is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: -5m}`)},
			refused:   []string{invalid("spec.frontend.webSocketIdleTimeout", "-5m"), durPattern},
		},
		{
			name:      "a WebSocket idle timeout just over 1h is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: 1h1ms}`)},
			refused:   []string{invalid("spec.frontend.webSocketIdleTimeout", "1h1ms"), "webSocketIdleTimeout must be between 1s and 1h"},
		},
		{
			name:      "a WebSocket idle timeout of the most hours the pattern takes is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: 999999h59m59s999ms}`)},
			refused:   []string{invalid("spec.frontend.webSocketIdleTimeout", "999999h59m59s999ms"), "webSocketIdleTimeout must be between 1s and 1h"},
		},
		{
			name:      "a WebSocket idle timeout without a unit is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: "300"}`)},
			refused:   []string{invalid("spec.frontend.webSocketIdleTimeout", "300"), durPattern},
		},
		{
			name:      "a WebSocket idle timeout written as a number is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: 300}`)},
			refused:   []string{"spec.frontend.webSocketIdleTimeout: Invalid value", "must be of type string"},
		},
		{
			name:      "an empty WebSocket idle timeout is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: ""}`)},
			refused:   []string{"spec.frontend.webSocketIdleTimeout", "should be at least 1 chars long"},
		},
		{
			name:      "a WebSocket idle timeout with a newline and Envoy JSON is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: ` + q("5m\n"+envoyInjection) + `}`)},
			refused:   []string{"spec.frontend.webSocketIdleTimeout", "may not be more than 32"},
		},
		{
			name:      "a WebSocket idle timeout in microseconds is refused",
			manifests: []string{farmWithFrontend(`{webSocketIdleTimeout: 1000000us}`)},
			refused:   []string{invalid("spec.frontend.webSocketIdleTimeout", "1000000us"), durPattern},
		},
		{
			name:      "a request timeout of 1h and a second is refused",
			manifests: []string{farmWithFrontend(`{requestTimeout: 1h0m1s}`)},
			refused:   []string{invalid("spec.frontend.requestTimeout", "1h0m1s"), "requestTimeout must be between 1s and 1h"},
		},
		{
			name:      "a request timeout under a second is refused",
			manifests: []string{farmWithFrontend(`{requestTimeout: 999ms}`)},
			refused:   []string{invalid("spec.frontend.requestTimeout", "999ms"), "requestTimeout must be between 1s and 1h"},
		},
		{
			name:      "a connection timeout with units out of order is refused",
			manifests: []string{farmWithFrontend(`{connectionTimeout: 30s1m}`)},
			refused:   []string{invalid("spec.frontend.connectionTimeout", "30s1m"), durPattern},
		},
		{
			name:      "WebSocket idle timeouts of 1s and 1h, written in other units, are rendered as written",
			manifests: []string{webPool, farmWithFrontend(`{webSocketIdleTimeout: 1000ms, requestTimeout: 59m60s, connectionTimeout: 3600s}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				fe := r.farms["farm"].Frontend
				if fe.WebSocketIdleTimeout != time.Second || fe.RequestTimeout != time.Hour || fe.ConnectionTimeout != time.Hour {
					t.Errorf("frontend durations %v, %v, %v, want 1s, 1h, 1h", fe.WebSocketIdleTimeout, fe.RequestTimeout, fe.ConnectionTimeout)
				}
				for _, vh := range r.routing["farm"].Routes[0].VirtualHosts {
					ws := vh.Routes[0]
					if ws.GetRoute().GetIdleTimeout().AsDuration() != time.Second || ws.GetMatch().GetHeaders()[0].GetName() != "upgrade" {
						t.Errorf("site %s's first route is not a WebSocket route idle for 1s: %v", vh.Name, ws)
					}
				}
			},
		},

		// What one client can take (frontend.clientLimits).
		{
			name:      "a request headers timeout of 0s, which would let slow headers hold a connection forever, is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {requestHeadersTimeout: 0s}}`)},
			refused:   []string{invalid("spec.frontend.clientLimits.requestHeadersTimeout", "0s"), "requestHeadersTimeout must be between 1s and 5m"},
		},
		{
			name:      "a request headers timeout over 5m is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {requestHeadersTimeout: 5m1s}}`)},
			refused:   []string{invalid("spec.frontend.clientLimits.requestHeadersTimeout", "5m1s"), "requestHeadersTimeout must be between 1s and 5m"},
		},
		{
			name:      "a request body timeout with a newline and Envoy JSON is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {requestBodyTimeout: ` + q("5m\n"+envoyInjection) + `}}`)},
			refused:   []string{"spec.frontend.clientLimits.requestBodyTimeout", "may not be more than 32"},
		},
		{
			name:      "a request body timeout over 1h is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {requestBodyTimeout: 1h0m1s}}`)},
			refused:   []string{invalid("spec.frontend.clientLimits.requestBodyTimeout", "1h0m1s"), "requestBodyTimeout must be between 1s and 1h"},
		},
		{
			name:      "a headers bound of 0 KiB is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {maxRequestHeadersKiB: 0}}`)},
			refused:   []string{invalid("spec.frontend.clientLimits.maxRequestHeadersKiB", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "a headers bound past Envoy's 96 KiB is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {maxRequestHeadersKiB: 8193}}`)},
			refused:   []string{invalid("spec.frontend.clientLimits.maxRequestHeadersKiB", 8193), "should be less than or equal to 96"},
		},
		{
			name:      "a rate per address without requests per second is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {perAddress: {burst: 10}}}`)},
			refused:   []string{"spec.frontend.clientLimits.perAddress.requestsPerSecond: Required value"},
		},
		{
			name:      "a rate per address of 0 requests per second is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {perAddress: {requestsPerSecond: 0}}}`)},
			refused:   []string{invalid("spec.frontend.clientLimits.perAddress.requestsPerSecond", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "a network's burst smaller than its rate is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {perClassC: {requestsPerSecond: 100, burst: 99}}}`)},
			refused:   []string{"spec.frontend.clientLimits.perClassC", "burst must be at least requestsPerSecond"},
		},
		{
			name:      "a rate written as a string is refused",
			manifests: []string{farmWithFrontend(`{clientLimits: {perClassC: {requestsPerSecond: "100"}}}`)},
			refused:   []string{"spec.frontend.clientLimits.perClassC.requestsPerSecond: Invalid value", "must be of type integer"},
		},
		{
			name:      "client limits at their bounds are rendered: the timeouts and size on the connection manager, a bucket per address and per network first in its chain",
			manifests: []string{webPool, farmWithFrontend(`{clientLimits: {requestHeadersTimeout: 5m, requestBodyTimeout: 1s, maxRequestHeadersKiB: 96, perAddress: {requestsPerSecond: 1000000, burst: 10000000}, perClassC: {requestsPerSecond: 1}}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				h := chainHCM(t, listener(t, r, envoy.ListenerName).FilterChains[0])
				if h.RequestHeadersTimeout.AsDuration() != 5*time.Minute || h.RequestTimeout.AsDuration() != time.Second || h.MaxRequestHeadersKb.GetValue() != 96 {
					t.Errorf("the connection manager's bounds %v, %v, %v KiB, want 5m, 1s, 96", h.RequestHeadersTimeout, h.RequestTimeout, h.MaxRequestHeadersKb)
				}
				var names []string
				for _, f := range h.HttpFilters[:2] {
					names = append(names, f.Name)
				}
				if want := []string{"envoy.filters.http.local_ratelimit/perAddress", "envoy.filters.http.local_ratelimit/perClassC"}; !slices.Equal(names, want) {
					t.Errorf("the first filters are %q, want %q", names, want)
				}
			},
		},
	}
}

// listener is the farm's listener named name.
func listener(t *testing.T, r *rendered, name string) *listenerv3.Listener {
	t.Helper()
	for _, l := range r.routing["farm"].Listeners {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("the farm has no listener %s", name)
	return nil
}

// chainHCM is the HTTP connection manager of a filter chain.
func chainHCM(t *testing.T, c *listenerv3.FilterChain) *hcmv3.HttpConnectionManager {
	t.Helper()
	var h hcmv3.HttpConnectionManager
	if len(c.Filters) != 1 {
		t.Fatalf("filter chain %s has %d filters, want the connection manager alone", c.Name, len(c.Filters))
	}
	if err := c.Filters[0].GetTypedConfig().UnmarshalTo(&h); err != nil {
		t.Fatal(err)
	}
	return &h
}

// checkTrustedNetworks fails unless the listener has a chain that finds
// the client by the connecting address (every source but want) and one,
// for connections from want, that reads X-Forwarded-For past want.
func checkTrustedNetworks(t *testing.T, l *listenerv3.Listener, want []string) {
	t.Helper()
	if len(l.FilterChains) != 2 {
		t.Fatalf("the listener has %d filter chains, want 2", len(l.FilterChains))
	}
	edge, proxies := l.FilterChains[0], l.FilterChains[1]
	if edge.FilterChainMatch != nil || !chainHCM(t, edge).GetUseRemoteAddress().GetValue() {
		t.Errorf("the first chain matches %v and uses the remote address %v; want every other connection, by its address", edge.FilterChainMatch, chainHCM(t, edge).GetUseRemoteAddress())
	}
	if proxies.Name != "trusted-proxies" {
		t.Errorf("the second chain is %q, want trusted-proxies", proxies.Name)
	}
	if got := cidrs(proxies.GetFilterChainMatch().GetSourcePrefixRanges()); !slices.Equal(got, want) {
		t.Errorf("the trusted proxies' chain matches sources %q, want %q", got, want)
	}
	ext := chainHCM(t, proxies).OriginalIpDetectionExtensions
	if len(ext) != 1 {
		t.Fatalf("the trusted proxies' chain has %d address detection extensions, want 1", len(ext))
	}
	var xff xffv3.XffConfig
	if err := ext[0].TypedConfig.UnmarshalTo(&xff); err != nil {
		t.Fatal(err)
	}
	if got := cidrs(xff.GetXffTrustedCidrs().GetCidrs()); !slices.Equal(got, want) {
		t.Errorf("X-Forwarded-For is read past %q, want %q", got, want)
	}
}

func cidrs(rs []*corev3.CidrRange) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s/%d", r.AddressPrefix, r.GetPrefixLen().GetValue()))
	}
	return out
}
