package controllers

import (
	"strings"
	"testing"

	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/model"
)

func TestCertificateVerdict(t *testing.T) {
	farm := model.Farm{Sites: []model.Site{
		{Name: "blog", TLS: &model.SiteTLS{SecretName: "blog-tls"}},
		{Name: "plain"},
		{Name: "shop", TLS: &model.SiteTLS{SecretName: "shop-tls"}},
		{Name: "route:tenant.example", TLS: &model.SiteTLS{}}, // its listener's certificate serves it
	}, GatewayListeners: []model.TLSListener{
		{Name: "edge/https", SecretName: "wildcard-tls"}, {Name: "edge/https-2", ServerName: "a.example", SecretName: "wildcard-tls"},
	}}
	gateway := model.GatewayCertificateName("wildcard-tls")
	loaded := envoystats.Certificate{Loaded: 1}
	tests := []struct {
		name      string
		frontends []map[string]envoystats.Certificate
		ok        bool
		names     []string // in the message
	}{
		{"every frontend serving every certificate is ready", []map[string]envoystats.Certificate{
			{"blog": loaded, "shop": loaded, gateway: loaded}, {"blog": loaded, "shop": {Loaded: 2, Rejected: 1}, gateway: loaded}}, true, nil},
		{"a certificate one frontend rejected names its site and Secret", []map[string]envoystats.Certificate{
			{"blog": loaded, "shop": loaded, gateway: loaded}, {"blog": loaded, "shop": {Rejected: 3}, gateway: loaded}}, false, []string{"site shop (Secret shop-tls)"}},
		{"a certificate a frontend does not report is not ready", []map[string]envoystats.Certificate{{"shop": loaded, gateway: loaded}},
			false, []string{"site blog (Secret blog-tls)"}},
		{"a Gateway listeners' Secret that was not loaded is named once", []map[string]envoystats.Certificate{{"blog": loaded, "shop": loaded}},
			false, []string{"Gateway listeners (Secret wildcard-tls)"}},
		{"a renewal that failed after a valid certificate keeps the site ready: the old one is served", []map[string]envoystats.Certificate{
			{"blog": {Loaded: 1, Rejected: 1}, "shop": loaded, gateway: loaded}}, true, nil},
		{"without a ready frontend there is nothing to judge", nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason, message := certificateVerdict(farm.Certificates(), tt.frontends)
			if ok != tt.ok || (ok && reason != ReasonCertificatesLoaded) || (!ok && reason != ReasonInvalidCertificate) {
				t.Errorf("got %v %s, want %v", ok, reason, tt.ok)
			}
			for _, n := range tt.names {
				if !strings.Contains(message, n) {
					t.Errorf("message %q does not name %q", message, n)
				}
			}
			if strings.Contains(message, "plain") || strings.Contains(message, "route:") || strings.Count(message, "wildcard-tls") > 1 {
				t.Errorf("message %q names a site without a certificate of its own, or one Secret twice", message)
			}
		})
	}
}
