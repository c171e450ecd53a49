package controllers

import (
	"fmt"
	"slices"
	"strings"

	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/model"
)

// CertificatesReady is the WebFarm condition that says whether every HTTPS
// site's certificate is served, as the frontends themselves report it.
const (
	ConditionCertificatesReady = "CertificatesReady"
	ReasonCertificatesLoaded   = "CertificatesLoaded"
	ReasonInvalidCertificate   = "InvalidCertificate"
)

// certificateVerdict decides CertificatesReady from each ready frontend's
// view of the sites' certificates: a site whose certificate a frontend never
// loaded (its Secret is missing, malformed, or its key does not match) is
// named with its Secret; the other sites serve regardless. ok is false when
// some site is named; message says which and what to do.
func certificateVerdict(sites []model.Site, frontends []map[string]envoystats.Certificate) (ok bool, reason, message string) {
	var bad []string
	for _, s := range sites {
		if s.TLS == nil {
			continue
		}
		if slices.ContainsFunc(frontends, func(f map[string]envoystats.Certificate) bool { return f[s.Name].Loaded == 0 }) {
			bad = append(bad, fmt.Sprintf("site %s (Secret %s)", s.Name, s.TLS.SecretName))
		}
	}
	if len(bad) > 0 {
		return false, ReasonInvalidCertificate, "no valid certificate for " + strings.Join(bad, ", ") +
			": the Secret must exist in the farm's namespace with a PEM tls.crt and its tls.key; the other sites serve"
	}
	return true, ReasonCertificatesLoaded, "every HTTPS site's certificate is served"
}
