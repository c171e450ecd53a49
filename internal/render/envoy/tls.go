package envoy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	cookiestatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	httptypev3 "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
)

// HTTPS: the listener of the sites with TLS and its route configuration.
// Each TLS site has a filter chain of its own, chosen by the server name
// (SNI) the client sends, with the certificate of the site's Secret; a
// client that sends no server name, or one no site has, gets the default
// site's chain. The certificates never pass through the operator: the
// frontend pods mount the Secrets, and Envoy reads them through SDS from
// files, watching the mount so that a renewed certificate is served on the
// next handshake.
const (
	HTTPSPort            = 8443 // the farm's HTTPS traffic (listener delivered over xDS)
	HTTPSListenerName    = "farm-https"
	HTTPSRouteConfigName = "farm-https"
	// ConfigDir is where the frontend pods mount their ConfigMap: the
	// bootstrap and a SDS file per TLS site (SDSFiles).
	ConfigDir = "/etc/envoy"
	// CertMountDir holds a directory per TLS site with its Secret's tls.crt
	// and tls.key.
	CertMountDir = "/etc/webfarm/certs"
)

// certFetchTimeout: a site whose certificate cannot be read (a missing
// Secret, a malformed one) holds the listener back this long at most; then
// the listener serves the other sites, and handshakes for that site fail.
const certFetchTimeout = 2 * time.Second

// CertDir is where a certificate's Secret is mounted (model.Certificate's
// Name: an inline site's, or a Gateway listener Secret's).
func CertDir(cert string) string { return CertMountDir + "/" + cert }

// CertSecretName is the name of a certificate in Envoy (its SDS resource),
// which names its stats: sds.<name>.update_success and so on.
func CertSecretName(cert string) string { return "cert_" + cert }

// CertVolumeName is the pod volume of a certificate's Secret: a DNS label
// of at most 63 characters (a site name may have 63 on its own, a Gateway
// certificate's name has underscores).
func CertVolumeName(cert string) string {
	if name := "cert-" + cert; len(name) <= 63 && !strings.Contains(cert, "_") {
		return name
	}
	h := sha256.Sum256([]byte(cert))
	label := strings.ReplaceAll(cert, "_", "-")
	return "cert-" + strings.TrimRight(label[:min(len(label), 48)], "-") + "-" + hex.EncodeToString(h[:])[:8]
}

// sdsFileKey is the ConfigMap key (and the file in ConfigDir) of a
// certificate's SDS resource.
func sdsFileKey(cert string) string { return "sds-" + cert + ".json" }

// SDSFiles are the ConfigMap entries the frontend reads each certificate
// through: a SDS response with one Secret whose certificate and key are the
// files of the mounted Secret. They depend only on the certificates' names,
// never on a certificate.
func SDSFiles(f model.Farm) map[string]string {
	out := controlSDSFiles(f.Platform)
	if out == nil {
		out = map[string]string{}
	}
	for _, c := range f.Certificates() {
		dir := CertDir(c.Name)
		// The kubelet writes a Secret volume into a new directory and then
		// renames the "..data" link to it, which Envoy watches; the
		// "tls.crt" and "tls.key" links beside it come only after, when a
		// Secret first appears. Read through "..data", both files are
		// complete the moment the watch fires.
		data := dir + "/..data/"
		secret := &tlsv3.Secret{
			Name: CertSecretName(c.Name),
			Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
				CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: data + "tls.crt"}},
				PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: data + "tls.key"}},
				// A renewal swaps "..data": Envoy rereads both files together.
				WatchedDirectory: &corev3.WatchedDirectory{Path: dir},
			}},
		}
		// marshal, not protojson alone: its whitespace varies from build
		// to build, and the file's bytes feed the pods' config hash.
		doc, err := marshal(&discoveryv3.DiscoveryResponse{Resources: []*anypb.Any{mustAny(secret)}})
		if err != nil {
			panic(err) // a well-formed message always marshals
		}
		out[sdsFileKey(c.Name)] = string(doc)
	}
	return out
}

// httpsListener serves the TLS sites, each on the chains clientAddressChains
// gives (the client's address found as on the plain listener) with its
// certificate: an inline site's for its hosts, a Gateway listener's for its
// server name. Nil when the farm has no certificate.
func httpsListener(f model.Farm, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	if !f.ServesHTTPS() {
		return nil
	}
	hcm = proto.Clone(hcm).(*hcmv3.HttpConnectionManager)
	hcm.StatPrefix = "farm_https"
	hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: adsSource(), RouteConfigName: HTTPSRouteConfigName}}
	// ALPN offers h2: the codec takes HTTP/1.1 and HTTP/2 alike.
	hcm.CodecType = hcmv3.HttpConnectionManager_AUTO
	l := &listenerv3.Listener{
		Name:    HTTPSListenerName,
		Address: socketAddress("0.0.0.0", HTTPSPort),
		ListenerFilters: append(listenerFilters(f.Frontend.ClientAddress), &listenerv3.ListenerFilter{
			Name:       "envoy.filters.listener.tls_inspector",
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: mustAny(&tlsinspectorv3.TlsInspector{})},
		}),
	}
	// Envoy refuses a listener with two chains for one server name: the
	// first certificate named for one keeps it (inline sites come first, so
	// a Gateway never takes a farm's own host).
	taken := map[string]bool{}
	hasDefault := false
	for _, s := range f.TLSSites() {
		if s.TLS.SecretName == "" {
			continue // a Gateway route's: its listener's certificate serves it
		}
		chains := certificateChains(f, "site/"+s.Name, s.Name, hcm, s.Hosts)
		for _, h := range s.Hosts {
			taken[h] = true
		}
		if s.Name == f.Frontend.DefaultTLSSite {
			// No server names: any client no other chain matches, one
			// without SNI included.
			chains = append(chains, certificateChains(f, "default/"+s.Name, s.Name, hcm, nil)...)
			hasDefault = true
		}
		limitSiteConnections(chains, s.Name, s.MaxConnections)
		l.FilterChains = append(l.FilterChains, chains...)
	}
	for _, gl := range f.GatewayListeners {
		cert := model.GatewayCertificateName(gl.SecretName)
		switch {
		case gl.ServerName == "" && !hasDefault:
			l.FilterChains = append(l.FilterChains, certificateChains(f, "gateway/"+gl.Name, cert, hcm, nil)...)
			hasDefault = true
		case gl.ServerName != "" && !taken[gl.ServerName]:
			l.FilterChains = append(l.FilterChains, certificateChains(f, "gateway/"+gl.Name, cert, hcm, []string{gl.ServerName})...)
			taken[gl.ServerName] = true
		}
	}
	return l
}

// certificateChains are the HTTPS filter chains, named name, that serve a
// certificate for the server names given (none: the default chains).
func certificateChains(f model.Farm, name, cert string, hcm *hcmv3.HttpConnectionManager, serverNames []string) []*listenerv3.FilterChain {
	chains := clientAddressChains(hcm, f.Frontend.ClientAddress)
	for _, c := range chains {
		if c.FilterChainMatch == nil {
			c.FilterChainMatch = &listenerv3.FilterChainMatch{}
		}
		c.FilterChainMatch.ServerNames = serverNames
		if c.Name != "" {
			c.Name = name + "/" + c.Name
		} else {
			c.Name = name
		}
		c.TransportSocket = &corev3.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(downstreamTLS(f.Frontend.TLSMinVersion, cert))},
		}
	}
	return chains
}

// modernCiphers are the TLS 1.2 suites offered: forward secret AEADs only
// (TLS 1.3's suites are all of that kind and fixed by BoringSSL).
var modernCiphers = []string{
	"ECDHE-ECDSA-AES128-GCM-SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305",
	"ECDHE-RSA-CHACHA20-POLY1305",
}

func downstreamTLS(minVersion, cert string) *tlsv3.DownstreamTlsContext {
	oldest := tlsv3.TlsParameters_TLSv1_2
	if minVersion == "1.3" {
		oldest = tlsv3.TlsParameters_TLSv1_3
	}
	return &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{
			TlsMinimumProtocolVersion: oldest,
			TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
			CipherSuites:              modernCiphers,
		},
		AlpnProtocols: []string{"h2", "http/1.1"},
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{
			Name: CertSecretName(cert),
			SdsConfig: &corev3.ConfigSource{
				ResourceApiVersion:  corev3.ApiVersion_V3,
				InitialFetchTimeout: durationpb.New(certFetchTimeout),
				// The SDS file is reread when the Secret's mount changes:
				// a certificate that could not be read (a Secret missing
				// or malformed) is read again when the Secret is fixed.
				ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{
					Path:             ConfigDir + "/" + sdsFileKey(cert),
					WatchedDirectory: &corev3.WatchedDirectory{Path: CertDir(cert)},
				}},
			},
		}},
	}}
}

// plainHTTPRedirect answers every plain HTTP request of a site with 301 to
// the same host and path over HTTPS, on the Service's HTTPS port.
func plainHTTPRedirect(s model.Site, httpsPort int32) *routev3.VirtualHost {
	redirect := &routev3.RedirectAction{
		SchemeRewriteSpecifier: &routev3.RedirectAction_HttpsRedirect{HttpsRedirect: true},
		ResponseCode:           routev3.RedirectAction_MOVED_PERMANENTLY,
	}
	if httpsPort != 443 {
		redirect.PortRedirect = uint32(httpsPort)
	}
	return &routev3.VirtualHost{Name: s.Name, Domains: s.Hosts, Routes: []*routev3.Route{{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Redirect{Redirect: redirect},
	}}}
}

// hstsHeader is a site's Strict-Transport-Security value ("" for none).
func hstsHeader(t *model.SiteTLS) string {
	if t == nil || t.HSTSMaxAge <= 0 {
		return ""
	}
	v := "max-age=" + strconv.FormatInt(int64(t.HSTSMaxAge/time.Second), 10)
	if t.IncludeSubDomains {
		v += "; includeSubDomains"
	}
	return v
}

// httpsRouteConfig is the route configuration of the HTTPS listener: a
// virtual host per TLS site, with its HSTS header and Secure affinity
// cookies. A request for a host without TLS gets 404.
func httpsRouteConfig(f model.Farm, pools map[string]model.Pool, b endpoints.Backends) (*routev3.RouteConfiguration, error) {
	rc := emptyRouteConfig(HTTPSRouteConfigName, f.Frontend)
	for _, s := range f.TLSSites() {
		vh := redirectsKeepListenerPort(siteVirtualHost(f, pools, b, s), f.Frontend.HTTPSPort)
		if v := hstsHeader(s.TLS); v != "" {
			vh.ResponseHeadersToAdd = append(vh.ResponseHeadersToAdd, setHeader("Strict-Transport-Security", v))
		}
		for _, r := range vh.Routes {
			if err := secureCookie(r); err != nil {
				return nil, err
			}
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	if f.RejectWithReset {
		rc.VirtualHosts = append(rc.VirtualHosts, abortVirtualHost(f.Frontend.ClientLimits)())
	}
	return rc, nil
}

// secureCookie marks a route's affinity cookie Secure: over HTTPS browsers
// then never send it over plain HTTP.
func secureCookie(r *routev3.Route) error {
	cfg, ok := r.TypedPerFilterConfig[statefulSessionFilter]
	if !ok {
		return nil
	}
	var per statefulsessionv3.StatefulSessionPerRoute
	if err := cfg.UnmarshalTo(&per); err != nil {
		return err
	}
	state := per.GetStatefulSession().GetSessionState()
	var cookie cookiestatev3.CookieBasedSessionState
	if err := state.GetTypedConfig().UnmarshalTo(&cookie); err != nil {
		return fmt.Errorf("route affinity: %w", err)
	}
	cookie.Cookie.Attributes = append(cookie.Cookie.Attributes, &httptypev3.CookieAttribute{Name: "Secure"})
	state.TypedConfig = mustAny(&cookie)
	r.TypedPerFilterConfig[statefulSessionFilter] = mustAny(&per)
	return nil
}
