package envoy

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Control traffic (the xDS stream and requests held by the activator) goes
// over mutual TLS when the platform says so: the frontend presents its
// farm's identity, a certificate the operator issues into a Secret the pod
// mounts at IdentityDir, and accepts only the operator's Service name signed
// by the same CA. Envoy reads both through file-based SDS watching the
// mount, so a renewed identity is used from the next connection on, without
// a restart; open connections keep the certificate they were made with.
const (
	// IdentityDir is where the frontend pods mount their identity Secret.
	IdentityDir = "/etc/webfarm/identity"
	// identitySecret and trustedCASecret are the SDS resources of the
	// identity and of the CA that signs the operator's certificate.
	identitySecret  = "control_identity"
	trustedCASecret = "control_ca"
)

func controlSDSFileKey(name string) string { return "sds-" + name + ".json" }

// controlSDSFiles are the ConfigMap entries the control identity is read
// through (none without ControlTLS).
func controlSDSFiles(p model.Platform) map[string]string {
	if !p.ControlTLS {
		return nil
	}
	// Read through "..data", which the kubelet swaps at once (SDSFiles).
	data := IdentityDir + "/..data/"
	watch := &corev3.WatchedDirectory{Path: IdentityDir}
	file := func(name string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: data + name}}
	}
	secrets := map[string]*tlsv3.Secret{
		identitySecret: {Name: identitySecret, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: file(vocabulary.IdentityCertKey), PrivateKey: file(vocabulary.IdentityKeyKey), WatchedDirectory: watch,
		}}},
		trustedCASecret: {Name: trustedCASecret, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: file(vocabulary.IdentityCAKey), WatchedDirectory: watch,
		}}},
	}
	out := map[string]string{}
	for name, secret := range secrets {
		doc, err := marshal(&discoveryv3.DiscoveryResponse{Resources: []*anypb.Any{mustAny(secret)}})
		if err != nil {
			panic(err) // a well-formed message always marshals
		}
		out[controlSDSFileKey(name)] = string(doc)
	}
	return out
}

// controlSDS reads an SDS resource from its file, again whenever the
// identity's mount changes.
func controlSDS(name string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: &corev3.ConfigSource{
		ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{
			Path:             ConfigDir + "/" + controlSDSFileKey(name),
			WatchedDirectory: &corev3.WatchedDirectory{Path: IdentityDir},
		}},
	}}
}

// controlTLS is the transport of a cluster to the operator (alpn: what its
// server speaks), or nil without ControlTLS: TLS 1.3, the farm's identity
// presented, the server verified as the operator's Service name.
func controlTLS(p model.Platform, alpn ...string) *corev3.TransportSocket {
	if !p.ControlTLS {
		return nil
	}
	ctx := &tlsv3.UpstreamTlsContext{
		Sni: p.XDSHost,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams: &tlsv3.TlsParameters{
				TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
				TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
			},
			AlpnProtocols:                  alpn,
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{controlSDS(identitySecret)},
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
					SanType: tlsv3.SubjectAltNameMatcher_DNS,
					Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: p.XDSHost}},
				}}},
				ValidationContextSdsSecretConfig: controlSDS(trustedCASecret),
			}},
		},
	}
	return &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(ctx)},
	}
}
