package envoystats

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// CertificateQuery keeps Envoy's page to the figures of the TLS sites'
// certificates: their SDS resources, "cert_<site>" (envoy.CertSecretName).
var CertificateQuery = url.Values{"filter": {`^sds\.cert_.*\.(update_success|update_rejected)$`}}.Encode()

// Certificate is what one frontend did with a site's certificate files.
type Certificate struct {
	Loaded   uint64 // counter: times Envoy read a valid certificate and key
	Rejected uint64 // counter: times it could not (missing, malformed, key not matching)
}

// Certificates reads an Envoy Prometheus page into figures per TLS site.
func Certificates(r io.Reader) (map[string]Certificate, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("envoy stats: %w", err)
	}
	out := map[string]Certificate{}
	read := func(family string, set func(c *Certificate, v uint64)) {
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				site, ok := strings.CutPrefix(l.GetValue(), "cert_")
				if l.GetName() != "envoy_xds_resource_name" || !ok {
					continue
				}
				c := out[site]
				set(&c, value(m))
				out[site] = c
			}
		}
	}
	read("envoy_sds_update_success", func(c *Certificate, v uint64) { c.Loaded = v })
	read("envoy_sds_update_rejected", func(c *Certificate, v uint64) { c.Rejected = v })
	return out, nil
}
