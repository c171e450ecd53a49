package envoy

import (
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	connectionlimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

// FuzzFrontendSecurity builds a WebFarm whose front door is fuzzed (a
// site's TLS Secret, plain HTTP mode and HSTS, the default TLS site and
// version, the affinity cookie's SameSite, trusted hops and networks, the
// PROXY protocol, access log sampling, the WebSocket idle timeout,
// bandwidth and compression), resolves it as the controllers do and renders
// its routing. Whatever the model accepts renders only extensions the
// renderer emits for its golden files, each TLS site is chosen by exactly
// its host names, and the HSTS header is well formed; whatever the API
// server would admit (apiAdmitsFarm and apiAdmitsFrontend mirror the CRD
// schema) the model must accept, and its static bootstrap must pass the
// real `envoy --mode validate`.
func FuzzFrontendSecurity(f *testing.F) {
	// host, TLS Secret name, plainHTTP, HSTS max-age, includeSubDomains,
	// default TLS site, TLS minimum version, SameSite (empty: no cookie
	// affinity), a second plain site, trusted hops, trusted networks
	// (comma-separated; empty: none), PROXY protocol, access log on, sample
	// percent, WebSocket idle timeout, the site's bandwidth, compression,
	// the site's connection bound.
	f.Add("www.example.com", "www-tls", "", int32(0), false, "", "", "", false,
		int32(0), "", false, true, int32(0), "", int64(0), false, int32(0))
	f.Add("*.example.com", "www.example.com-tls", "Serve", int32(63072000), true, "www", "1.3", "Lax", true,
		int32(10), "", true, true, int32(1), "1h", int64(1024), true, int32(0))
	f.Add("*.0", "a", "Redirect", int32(1), false, "", "1.2", "None", false,
		int32(0), "10.1.2.3/8,10.0.0.0/8,2001:db8::1/32,fd00::1/128", true, false, int32(100), "1s", int64(9223372036854775807), false, int32(0))
	f.Add("127.0.0.1", strings.Repeat("a", 253), "", int32(31536000), true, "", "", "Strict", true,
		int32(1), "", false, true, int32(50), "1000ms", int64(2047), true, int32(0))
	// The hostile values, one field at a time.
	for _, name := range []string{"kube-system/www-tls", "www-tls\n" + `"},{"name":"envoy.filters.http.lua"}`, "www-tls\nitems: [{key: token}]",
		"WWW-TLS", strings.Repeat("a", 254), "", "\xff", "a..b", "-a", "a-"} {
		f.Add("www.example.com", name, "", int32(0), false, "", "", "", false, int32(0), "", false, true, int32(0), "", int64(0), false, int32(0))
	}
	for _, age := range []int32{-1, 0, 63072001, 2147483647, -2147483648} {
		f.Add("www.example.com", "www-tls", "Redirect", age, true, "", "", "", false, int32(0), "", false, true, int32(0), "", int64(0), false, int32(0))
	}
	for _, enum := range []string{"redirect", "Serve\n", "Drop", "1.1", "1.0", "none", "Lax; Domain=evil.example"} {
		f.Add("www.example.com", "www-tls", enum, int32(0), false, enum, enum, enum, false, int32(0), "", false, true, int32(0), "", int64(0), false, int32(0))
	}
	for _, hops := range []int32{0, 11, -1, 2147483647, -2147483648} {
		f.Add("www.example.com", "", "", int32(0), false, "", "", "", false, hops, "", true, true, int32(0), "", int64(0), false, int32(0))
	}
	for _, nets := range []string{"10.0.0.1", "10.0.0.0/8\n}", "10.0.0.0/8\n" + `"},{"name":"envoy.filters.http.lua"}`, "10.0.0.0/33",
		"0.0.0.0/0", "::/0", "::ffff:10.0.0.0/104", "fe80::1%eth0/64", "10.0.0.0/8,10.0.0.0/8", "2001:DB8::/32,2001:db8::/32",
		strings.Repeat("10.0.0.0/8,", 32) + "10.0.0.0/8", ","} {
		f.Add("www.example.com", "www-tls", "", int32(0), false, "", "", "", false, int32(0), nets, true, true, int32(0), "", int64(0), false, int32(0))
		f.Add("www.example.com", "", "", int32(0), false, "", "", "", false, int32(1), nets, false, true, int32(0), "", int64(0), false, int32(0))
	}
	for _, pct := range []int32{0, 101, -1, 1, 100, 2147483647} {
		f.Add("www.example.com", "", "", int32(0), false, "", "", "", false, int32(0), "", false, true, pct, "", int64(0), false, int32(0))
	}
	for _, d := range []string{"0s", "-5m", "1h1ms", "999999h59m59s999ms", "300", "1000000us", "5m\n}", "2562047h47m16.854775807s", "1ns"} {
		f.Add("www.example.com", "www-tls", "", int32(0), false, "", "", "", false, int32(0), "", false, true, int32(0), d, int64(0), false, int32(0))
	}
	for _, bw := range []int64{-1, 1023, 1024, 9223372036854775807, -9223372036854775808} {
		f.Add("www.example.com", "www-tls", "Serve", int32(0), false, "", "", "", false, int32(0), "", false, true, int32(0), "", bw, true, int32(0))
	}

	f.Fuzz(func(t *testing.T, host, secretName, plainHTTP string, hstsMaxAge int32, includeSubDomains bool,
		defaultSite, minVersion, sameSite string, plainSite bool, trustedHops int32, trustedNetworks string,
		proxyProtocol, logEnabled bool, samplePercent int32, webSocketIdle string, bandwidth int64, compression bool, maxConnections int32) {
		wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "farm", Namespace: "web"}}
		www := v1.Site{Name: "www", Hosts: []v1.Hostname{v1.Hostname(host)}, MaxBandwidthBytesPerSecond: bandwidth, MaxConnections: maxConnections,
			Routes: []v1.Route{{AppPool: "web"}},
			TLS:    v1.SiteTLS{SecretName: v1.SecretName(secretName), PlainHTTP: v1.PlainHTTP(plainHTTP)}}
		if hstsMaxAge != 0 {
			www.TLS.HSTS = v1.HSTS{MaxAgeSeconds: hstsMaxAge, IncludeSubDomains: &includeSubDomains}
		}
		wf.Spec.Sites = []v1.Site{www}
		if plainSite {
			wf.Spec.Sites = append(wf.Spec.Sites, v1.Site{Name: "plain", Hosts: []v1.Hostname{"plain.example"}, Routes: []v1.Route{{AppPool: "web"}}})
		}
		fe := &wf.Spec.Frontend
		fe.TLS = v1.FrontendTLS{MinVersion: v1.TLSVersion(minVersion), DefaultSite: defaultSite}
		if sameSite != "" {
			wf.Spec.SessionAffinity = v1.SessionAffinity{Type: v1.AffinityCookie, Cookie: &v1.AffinityCookieSpec{SameSite: v1.SameSite(sameSite)}}
		}
		fe.ClientAddress = v1.ClientAddress{TrustedHops: trustedHops, ProxyProtocol: &proxyProtocol}
		if trustedNetworks != "" {
			for _, n := range strings.Split(trustedNetworks, ",") {
				fe.ClientAddress.TrustedNetworks = append(fe.ClientAddress.TrustedNetworks, v1.CIDR(n))
			}
		}
		fe.AccessLog = v1.AccessLog{Enabled: &logEnabled, SamplePercent: samplePercent}
		fe.WebSocketIdleTimeout = v1.Duration(webSocketIdle)
		fe.Compression = &compression

		platform := model.Platform{XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000, ActivatorPort: 18081, ActivationTimeout: time.Minute}
		admitted := apiAdmitsFarm(wf) && apiAdmitsFrontend(wf)
		farm, r, rendered := renderWebFarm(t, wf, platform, admitted, "a farm")
		if !rendered {
			return
		}
		checkTLSChains(t, farm, r)
	})
}

// chainConnectionBound is the connection limit before a chain's connection
// manager (0: none).
func chainConnectionBound(t *testing.T, c *listenerv3.FilterChain) uint32 {
	t.Helper()
	if len(c.Filters) < 2 {
		return 0
	}
	var limit connectionlimitv3.ConnectionLimit
	if err := c.Filters[0].GetTypedConfig().UnmarshalTo(&limit); err != nil {
		t.Fatalf("HTTPS filter chain %s: %v", c.Name, err)
	}
	return uint32(limit.GetMaxConnections().GetValue())
}

// hstsValue is the form of every Strict-Transport-Security header.
var hstsValue = regexp.MustCompile(`^max-age=[1-9][0-9]{0,7}(; includeSubDomains)?$`)

// checkTLSChains fails unless each TLS site's HTTPS filter chains match
// exactly its host names (the default site's also none), and every HSTS
// header is well formed.
func checkTLSChains(t *testing.T, f model.Farm, r Routing) {
	t.Helper()
	hosts, bounds := map[string][]string{}, map[string]uint32{}
	for _, s := range f.TLSSites() {
		hosts[s.Name], bounds[s.Name] = s.Hosts, s.MaxConnections
	}
	seen := map[string]bool{}
	for _, l := range r.Listeners {
		if l.Name != HTTPSListenerName {
			continue
		}
		for _, c := range l.FilterChains {
			kind, rest, _ := strings.Cut(c.Name, "/")
			site, _, _ := strings.Cut(rest, "/")
			got := c.GetFilterChainMatch().GetServerNames()
			if bound := chainConnectionBound(t, c); bound != bounds[site] {
				t.Fatalf("HTTPS filter chain %s bounds its connections at %d, want %d", c.Name, bound, bounds[site])
			}
			switch {
			case kind == "site" && slices.Equal(got, hosts[site]) && got != nil:
				seen[site] = true
			case kind == "default" && got == nil && site == f.Frontend.DefaultTLSSite:
			default:
				t.Fatalf("HTTPS filter chain %s matches server names %q", c.Name, got)
			}
		}
	}
	if len(seen) != len(hosts) {
		t.Fatalf("HTTPS filter chains for sites %v, want %v", seen, hosts)
	}
	for _, rc := range r.Routes {
		for _, vh := range rc.VirtualHosts {
			for _, h := range vh.ResponseHeadersToAdd {
				if h.Header.Key == "Strict-Transport-Security" && (rc.Name != HTTPSRouteConfigName || !hstsValue.MatchString(h.Header.Value)) {
					t.Fatalf("site %s answers %s with Strict-Transport-Security %q", vh.Name, rc.Name, h.Header.Value)
				}
			}
		}
	}
}

// The CRD schema's rules for the front door's fields (api/v1alpha1's markers
// and CEL rules) that apiAdmitsFarm leaves out.
var secretName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func apiAdmitsFrontend(wf *v1.WebFarm) bool {
	s := wf.Spec
	tlsSite := map[string]bool{}
	allRedirect := true
	for _, site := range s.Sites {
		t := site.TLS
		if t == (v1.SiteTLS{}) {
			if site.MaxConnections != 0 {
				return false
			}
			allRedirect = false
			continue
		}
		if len(t.SecretName) < 1 || len(t.SecretName) > 253 || !secretName.MatchString(string(t.SecretName)) ||
			!slices.Contains([]v1.PlainHTTP{"", v1.PlainHTTPRedirect, v1.PlainHTTPServe}, t.PlainHTTP) ||
			t.HSTS != (v1.HSTS{}) && (t.HSTS.MaxAgeSeconds < 1 || t.HSTS.MaxAgeSeconds > 63072000) {
			return false
		}
		if site.MaxConnections != 0 && (site.MaxConnections < 1 || site.MaxConnections > 1000000 || t.PlainHTTP == v1.PlainHTTPServe) {
			return false
		}
		tlsSite[site.Name] = true
		allRedirect = allRedirect && t.PlainHTTP != v1.PlainHTTPServe
	}
	fe := s.Frontend
	if fe.TLS != (v1.FrontendTLS{}) && len(tlsSite) == 0 ||
		!slices.Contains([]v1.TLSVersion{"", "1.2", "1.3"}, fe.TLS.MinVersion) ||
		fe.TLS.DefaultSite != "" && (len(fe.TLS.DefaultSite) > 63 || !tlsSite[fe.TLS.DefaultSite]) {
		return false
	}
	if c := s.SessionAffinity.Cookie; c != nil &&
		(!slices.Contains([]v1.SameSite{"", "Lax", "Strict", "None"}, c.SameSite) || c.SameSite == "None" && !allRedirect) {
		return false
	}
	ca := fe.ClientAddress
	if ca.TrustedHops != 0 && (ca.TrustedHops < 1 || ca.TrustedHops > 10) ||
		ca.TrustedNetworks != nil && (len(ca.TrustedNetworks) > 32 || ca.TrustedHops != 0) {
		return false
	}
	seen := map[v1.CIDR]bool{}
	for _, n := range ca.TrustedNetworks {
		p, err := netip.ParsePrefix(string(n))
		if seen[n] || len(n) < 4 || len(n) > 43 || err != nil || p.Addr().Is4In6() {
			return false
		}
		seen[n] = true
	}
	return fe.AccessLog.SamplePercent >= 0 && fe.AccessLog.SamplePercent <= 100 &&
		durationIn(fe.WebSocketIdleTimeout, time.Second, time.Hour)
}
